/* transpose_fixed.cu: the corrected version of transpose.cu.

   advise should report nothing in this file.

   Transposes the same 1536 x 2048 iota matrix and prints the same last line
   as transpose.cu (the timings differ). What changed:

     - the naive kernel is gone: every global access now has threadIdx.x in
       its fast index, reads and writes alike (transpose.cu's CU004);
     - transpose_tiled()'s tile is padded to [TILE][TILE + 1], so reading a
       column of it no longer hits one bank 32 times (CU003);
     - the "one warp per tile" kernel, which read the tile without a barrier,
       is gone; the tiled kernel calls __syncthreads() between writing the
       tile and reading other threads' elements of it (CU001).

   copy_shared() stays as the bandwidth baseline: its unpadded tile is read
   row-wise, and each thread reads back only what it wrote, so it needs
   neither padding nor a barrier.

       nvcc -arch=sm_90 -lineinfo -o transpose_fixed transpose_fixed.cu
*/
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                             \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,       \
                    cudaGetErrorString(err_));                                  \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

constexpr int ROWS = 1536;     // the input is ROWS x COLS, row-major
constexpr int COLS = 2048;
constexpr int TILE = 32;
constexpr int BLOCK_ROWS = 8;  // a 32 x 8 block moves a 32 x 32 tile, 4 elements per thread
constexpr int REPS = 20;

// Bandwidth baseline: moves every tile through shared memory without transposing it.
__global__ void copy_shared(float *out, const float *in, int rows, int cols)
{
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    // each thread reads back only what it wrote itself
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        out[(y + j) * cols + x] = tile[threadIdx.y + j][threadIdx.x];
}

// Both global accesses go along rows; the transpose happens in shared memory.
// The extra column puts tile[i][j] and tile[i + 1][j] in different banks, so a
// column of the tile reads without conflicts.
__global__ void transpose_tiled(float *out, const float *in, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;  // column of out
    y = blockIdx.x * TILE + threadIdx.y;  // row of out
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Milliseconds per launch, the mean of REPS launches.
template <typename Launch>
static float time_ms(Launch launch)
{
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    launch();  // warm-up
    CHECK(cudaEventRecord(start));
    for (int r = 0; r < REPS; ++r)
        launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    return ms / REPS;
}

int main()
{
    const size_t count = (size_t)ROWS * COLS;
    const size_t bytes = count * sizeof(float);
    std::vector<float> h_in(count), h_ref(count), h_out(count);
    for (size_t i = 0; i < count; ++i)
        h_in[i] = (float)i;  // iota: exact in a float, since count < 2^24
    for (int r = 0; r < ROWS; ++r)
        for (int c = 0; c < COLS; ++c)
            h_ref[(size_t)c * ROWS + r] = h_in[(size_t)r * COLS + c];

    float *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, bytes));
    CHECK(cudaMalloc(&d_out, bytes));
    CHECK(cudaMemcpy(d_in, h_in.data(), bytes, cudaMemcpyHostToDevice));

    const dim3 grid(COLS / TILE, ROWS / TILE);  // 64 x 48 tiles
    const dim3 block(TILE, BLOCK_ROWS);
    bool ok = true;
    // copies d_out back, compares it with want and prints the kernel's figures
    auto report = [&](const char *name, float ms, const std::vector<float> &want) {
        CHECK(cudaMemcpy(h_out.data(), d_out, bytes, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < count; ++i)
            bad += h_out[i] != want[i];
        printf("  %-16s %8.3f ms %8.1f GB/s%s\n", name, ms, 2.0 * bytes / (ms * 1e6),
               bad ? "  wrong" : "");
        ok = ok && bad == 0;
    };

    CHECK(cudaMemset(d_out, 0, bytes));
    float ms = time_ms([&] {
        copy_shared<<<grid, block>>>(d_out, d_in, ROWS, COLS);
        CHECK(cudaGetLastError());
    });
    report("copy_shared", ms, h_in);

    CHECK(cudaMemset(d_out, 0, bytes));
    ms = time_ms([&] {
        transpose_tiled<<<grid, block>>>(d_out, d_in, ROWS, COLS);
        CHECK(cudaGetLastError());
    });
    report("transpose_tiled", ms, h_ref);

    double checksum = 0.0;  // of the tiled kernel's output, still in h_out
    for (size_t i = 0; i < count; ++i)
        checksum += (double)h_out[i] * (double)(i % 7 + 1);
    printf("transpose %dx%d: checksum %.0f %s\n", ROWS, COLS, checksum, ok ? "ok" : "MISMATCH");
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    return ok ? 0 : 1;
}
