/* pipeline.cu: stream 16 chunks through the GPU on 4 streams.

   Each chunk of 2^18 floats is copied to the GPU, mapped through x * x + 1
   (which also counts the results above a threshold) and copied back, on
   streams taken in turn, so that the copies of one chunk can overlap the
   kernel of another. The inputs are integers below 1000, so every result is
   exact. The host checks everything; the last line: the checksum and the count,
   "ok" or "MISMATCH".

       nvcc -arch=sm_90 -lineinfo -o pipeline pipeline.cu && ./pipeline

   What `advise check` should report in this file:

     CU008 sync-or-alloc-in-loop        line 103  cudaMalloc(&d_buf, ...) on every chunk -> allocate
                                                  the buffers once, one per stream, before the loop
     CU006 pageable-async-copy          line 105  cudaMemcpyAsync from h_in.data() + off: h_in is a
                                                  std::vector (pageable), so the copy is staged and
                                                  does not overlap -> pinned memory (cudaMallocHost)
     CU006 pageable-async-copy          line 109  cudaMemcpyAsync to h_out + off: h_out comes from
                                                  malloc() at line 89 -> cudaMallocHost() and
                                                  cudaFreeHost()
     CU007 unsynchronized-host-read     line 114  h_out[off + i] is read while the copy at line 109
                                                  may still be filling it -> insert
                                                  cudaStreamSynchronize(stream) before line 113
     (the CU008 finding at line 103 names the cudaFree(d_buf) at line 115 as
      its second place: it also waits for the whole device every chunk)

   It prints ok only because a copy into pageable memory returns after the
   copy has finished in practice (the CUDA documentation now says it "might be
   synchronous"). Pin h_out for CU006 without the synchronization for CU007
   and the checksum reads data that has not arrived yet.

   Look-alikes that are deliberately correct and must NOT be reported:

     - cudaMemcpyAsync into h_above + c: h_above comes from cudaMallocHost  CU006
     - h_out and h_above are read again after the loop, once every stream
       has been synchronized                                                CU007
     - cudaStreamSynchronize() in the loop over the streams after the chunk
       loop: no launch in that loop, one wait per stream                    CU008
     - cudaMalloc(&d_above, ...) and cudaMallocHost() happen once, outside
       any loop                                                             CU008
     - x[i] and y[i] with i = blockIdx.x * blockDim.x + threadIdx.x         CU004
     - 256 threads per block, 1024 blocks per chunk                          CU009
     - every call in CHECK(), the launch followed by
       CHECK(cudaGetLastError())                                            CU011
*/
#include <cstdio>
#include <cstdlib>
#include <random>
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
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> value(0, 999);
    std::vector<float> h_in(total);
    for (float &v : h_in)
        v = (float)value(rng);
    float *h_out = (float *)malloc(total * sizeof(float));
    unsigned *h_above, *d_above;
    CHECK(cudaMallocHost(&h_above, CHUNKS * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_above, CHUNKS * sizeof(unsigned)));
    CHECK(cudaMemset(d_above, 0, CHUNKS * sizeof(unsigned)));
    cudaStream_t streams[STREAMS];
    for (int s = 0; s < STREAMS; ++s)
        CHECK(cudaStreamCreate(&streams[s]));

    double running = 0.0;  // checksum, accumulated as the chunks come back
    for (int c = 0; c < CHUNKS; ++c) {
        cudaStream_t stream = streams[c % STREAMS];
        const size_t off = (size_t)c * CHUNK;
        float *d_buf;
        CHECK(cudaMalloc(&d_buf, 2 * CHUNK * sizeof(float)));
        float *d_x = d_buf, *d_y = d_buf + CHUNK;
        CHECK(cudaMemcpyAsync(d_x, h_in.data() + off, CHUNK * sizeof(float),
                              cudaMemcpyHostToDevice, stream));
        square_plus_one<<<CHUNK / THREADS, THREADS, 0, stream>>>(d_x, d_y, d_above + c, CHUNK);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(h_out + off, d_y, CHUNK * sizeof(float),
                              cudaMemcpyDeviceToHost, stream));
        CHECK(cudaMemcpyAsync(h_above + c, d_above + c, sizeof(unsigned),
                              cudaMemcpyDeviceToHost, stream));
        for (int i = 0; i < CHUNK; ++i)
            running += h_out[off + i];
        CHECK(cudaFree(d_buf));
    }
    for (int s = 0; s < STREAMS; ++s)
        CHECK(cudaStreamSynchronize(streams[s]));

    bool ok = true;
    double checksum = 0.0;
    unsigned above = 0, want_above = 0;
    for (size_t i = 0; i < total; ++i) {
        const float want = h_in[i] * h_in[i] + 1.0f;
        ok = ok && h_out[i] == want;
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
    CHECK(cudaFree(d_above));
    CHECK(cudaFreeHost(h_above));
    free(h_out);
    return ok ? 0 : 1;
}
