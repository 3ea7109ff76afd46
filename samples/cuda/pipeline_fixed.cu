/* pipeline_fixed.cu: the corrected version of pipeline.cu.

   advise should report nothing in this file.

   Streams the same 16 chunks through the GPU on 4 streams and prints the same
   last line as pipeline.cu. What changed:

     - the host buffers come from cudaMallocHost() and go back with
       cudaFreeHost(): the copies run asynchronously and overlap the kernels
       of the other streams (pipeline.cu's CU006);
     - the device buffers are allocated once, one pair per stream, before the
       chunk loop; a stream reuses its pair for every chunk it gets, which is
       safe because the work of one stream runs in order (CU008);
     - the host reads h_out only after every stream has been synchronized
       (CU007): the checksum is taken after the loop.

       nvcc -arch=sm_90 -lineinfo -o pipeline_fixed pipeline_fixed.cu
*/
#include <cstdio>
#include <cstdlib>
#include <random>
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

constexpr int CHUNK = 1 << 18;  // floats per chunk
constexpr int CHUNKS = 16;
constexpr int STREAMS = 4;
constexpr int THREADS = 256;
constexpr float THRESHOLD = 250000.0f;

// y = x * x + 1, and *above counts the results over THRESHOLD.
__global__ void square_plus_one(const float *x, float *y, unsigned *above, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] * x[i] + 1.0f;
        y[i] = v;
        if (v > THRESHOLD)
            atomicAdd(above, 1u);
    }
}

int main()
{
    const size_t total = (size_t)CHUNKS * CHUNK;
    float *h_in, *h_out;
    unsigned *h_above;
    CHECK(cudaMallocHost(&h_in, total * sizeof(float)));
    CHECK(cudaMallocHost(&h_out, total * sizeof(float)));
    CHECK(cudaMallocHost(&h_above, CHUNKS * sizeof(unsigned)));
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> value(0, 999);
    for (size_t i = 0; i < total; ++i)
        h_in[i] = (float)value(rng);

    float *d_buf;  // STREAMS pairs of CHUNK floats: x, then y
    unsigned *d_above;
    CHECK(cudaMalloc(&d_buf, (size_t)STREAMS * 2 * CHUNK * sizeof(float)));
    CHECK(cudaMalloc(&d_above, CHUNKS * sizeof(unsigned)));
    CHECK(cudaMemset(d_above, 0, CHUNKS * sizeof(unsigned)));
    cudaStream_t streams[STREAMS];
    for (int s = 0; s < STREAMS; ++s)
        CHECK(cudaStreamCreate(&streams[s]));

    for (int c = 0; c < CHUNKS; ++c) {
        const int s = c % STREAMS;
        const size_t off = (size_t)c * CHUNK;
        float *d_x = d_buf + (size_t)s * 2 * CHUNK, *d_y = d_x + CHUNK;
        CHECK(cudaMemcpyAsync(d_x, h_in + off, CHUNK * sizeof(float),
                              cudaMemcpyHostToDevice, streams[s]));
        square_plus_one<<<CHUNK / THREADS, THREADS, 0, streams[s]>>>(d_x, d_y, d_above + c, CHUNK);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(h_out + off, d_y, CHUNK * sizeof(float),
                              cudaMemcpyDeviceToHost, streams[s]));
        CHECK(cudaMemcpyAsync(h_above + c, d_above + c, sizeof(unsigned),
                              cudaMemcpyDeviceToHost, streams[s]));
    }
    for (int s = 0; s < STREAMS; ++s)
        CHECK(cudaStreamSynchronize(streams[s]));

    bool ok = true;
    double running = 0.0, checksum = 0.0;
    unsigned above = 0, want_above = 0;
    for (size_t i = 0; i < total; ++i) {
        const float want = h_in[i] * h_in[i] + 1.0f;
        ok = ok && h_out[i] == want;
        running += h_out[i];
        checksum += want;
        want_above += want > THRESHOLD;
    }
    for (int c = 0; c < CHUNKS; ++c)
        above += h_above[c];
    ok = ok && running == checksum && above == want_above;
    printf("pipeline: %d chunks x %d floats on %d streams: checksum %.0f, %u above %.0f %s\n",
           CHUNKS, CHUNK, STREAMS, running, above, THRESHOLD, ok ? "ok" : "MISMATCH");

    for (int s = 0; s < STREAMS; ++s)
        CHECK(cudaStreamDestroy(streams[s]));
    CHECK(cudaFree(d_buf));
    CHECK(cudaFree(d_above));
    CHECK(cudaFreeHost(h_in));
    CHECK(cudaFreeHost(h_out));
    CHECK(cudaFreeHost(h_above));
    return ok ? 0 : 1;
}
