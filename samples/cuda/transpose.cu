/* transpose.cu: transpose a 1536 x 2048 float matrix on the GPU, four ways.

   A benchmark as people write it while learning CUDA: a copy through shared
   memory (the bandwidth baseline), the naive kernel, "one warp per tile" and
   the classic 32 x 32 tiled kernel, each checked against a host transpose.
   The last line: a checksum of the tiled kernel's output, "ok" or "MISMATCH".

       nvcc -arch=sm_90 -lineinfo -o transpose transpose.cu && ./transpose

   What `advise check` should report in this file:

     CU004 uncoalesced-access           line 83   out[x * rows + (y + j)] in transpose_naive(): x
                                                  follows threadIdx.x and is the slow index, so
                                                  neighbouring threads write 6 KiB apart
     CU003 shared-bank-conflict         line 90   tile[TILE][TILE] in transpose_tiled(), read as
                                                  tile[threadIdx.x][threadIdx.y + j] at line 99: a
                                                  32-way conflict -> tile[TILE][TILE + 1]
     CU003 shared-bank-conflict         line 105  tile[TILE][TILE] in transpose_warp(), read as
                                                  tile[lane][r] at line 112 -> tile[TILE][TILE + 1]
     (no CU001 at line 112: the loops leave it unclear to advise which thread
      owns each element, so it stays silent; the missing barrier between the
      writes at line 110 and the reads at line 112 is real all the same)

   The CU003 findings point at the __shared__ declaration, where the fix goes.
   transpose_warp() relies on the warp running in lockstep. Its loops never
   diverge, so in practice the warp stays converged and the program prints ok,
   but nothing has guaranteed lockstep since Volta (independent scheduling).

   Look-alikes that are deliberately correct and must NOT be reported:

     - copy_shared() reads its tile back with no barrier, but each thread
       reads only the elements it wrote itself                          CU001
     - copy_shared()'s tile[TILE][TILE] has threadIdx.x in the column    CU003
     - transpose_tiled(): tile written, __syncthreads(), then read       CU001
     - in[(y + j) * cols + x] in transpose_naive() and every global access
       of the other kernels: threadIdx.x is in the fast index           CU004
     - blocks of 32 x 8 and of 32 threads; a grid of 64 x 48 blocks      CU009
     - one launch at a time, none of them an elementwise map            CU010
     - every call in CHECK(), every launch followed by
       CHECK(cudaGetLastError())                                        CU011
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

// Reads rows of in, writes columns of out.
__global__ void transpose_naive(float *out, const float *in, int rows, int cols)
{
    int x = blockIdx.x * TILE + threadIdx.x;  // column of in
    int y = blockIdx.y * TILE + threadIdx.y;  // row of in
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        float v = in[(y + j) * cols + x];
        out[x * rows + (y + j)] = v;
    }
}

// Both global accesses go along rows; the transpose happens in shared memory.
__global__ void transpose_tiled(float *out, const float *in, int rows, int cols)
{
    __shared__ float tile[TILE][TILE];
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

// One warp per tile: "a warp runs in lockstep, so it needs no barrier".
__global__ void transpose_warp(float *out, const float *in, int rows, int cols)
{
    __shared__ float tile[TILE][TILE];
    const int lane = threadIdx.x;
    const int x0 = blockIdx.x * TILE;
    const int y0 = blockIdx.y * TILE;
    for (int r = 0; r < TILE; ++r)
        tile[r][lane] = in[(y0 + r) * cols + x0 + lane];
    for (int r = 0; r < TILE; ++r)
        out[(x0 + r) * rows + y0 + lane] = tile[lane][r];
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
        transpose_naive<<<grid, block>>>(d_out, d_in, ROWS, COLS);
        CHECK(cudaGetLastError());
    });
    report("transpose_naive", ms, h_ref);

    CHECK(cudaMemset(d_out, 0, bytes));
    ms = time_ms([&] {
        transpose_warp<<<grid, TILE>>>(d_out, d_in, ROWS, COLS);
        CHECK(cudaGetLastError());
    });
    report("transpose_warp", ms, h_ref);

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
