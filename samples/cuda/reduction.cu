/* reduction.cu: sum 8 batches of 2^20 floats with a shared-memory reduction.

   Each batch is copied to the GPU, summed into one partial sum per block, and
   the partial sums are added up on the host. The values are small integers,
   so every partial sum is exact and any summation order gives the same total.
   The last line: the grand total, "ok" or "MISMATCH".

       nvcc -arch=sm_90 -lineinfo -o reduction reduction.cu && ./reduction

   What `advise check` should report in this file:

     CU002 divergent-barrier            line 73   __syncthreads() under if (tid < THREADS) at line
                                                  71: the condition depends on threadIdx.x (error)
     CU008 sync-or-alloc-in-loop        line 102  cudaMalloc(&d_in, ...) on every iteration of the
                                                  batch loop -> allocate once before the loop
     CU009 launch-config                line 105  block_sum<<<BLOCKS, THREADS>>>: 250 threads per
                                                  block is not a multiple of 32 (the last warp is
                                                  26/32 full); the kernel guards its index -> 256
     (the constant grid of 64 blocks leaves 68 of the H200's 132 SMs idle;
      advise does not report it here: the index is built through `tid`)
     (no CU008 for the cudaDeviceSynchronize() at line 107: the blocking
      cudaMemcpy right after it waits anyway; the finding at line 102 names
      the cudaFree(d_in) at line 110 as its second place)


   The CU009 finding is on the launch's block size. The guard
   at line 71 is true for every thread of this program's launches (blockDim.x
   == THREADS), so the program prints ok; launched with more than THREADS
   threads per block, the kernel deadlocks or sums garbage.

   Look-alikes that are deliberately correct and must NOT be reported:

     - the __syncthreads() at the end of each step of the tree loop is
       outside the if (tid < len / 2) that guards the addition          CU002
     - sdata[tid + half] is read after the barrier that follows its
       write, and sdata[0] after the loop's last barrier                 CU001
     - in[i] with i = blockIdx.x * blockDim.x + threadIdx.x, grid-stride  CU004
     - cudaMalloc(&d_partial, ...) happens once, before the loop          CU008
     - every call in CHECK(), the launch followed by
       CHECK(cudaGetLastError())                                         CU011
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

constexpr int N = 1 << 20;    // floats per batch
constexpr int BATCHES = 8;
constexpr int THREADS = 250;  // "1000 floats per block per sweep, a round number"
constexpr int BLOCKS = 64;

// partial[blockIdx.x] = the sum of the elements this block visits in in[0..n).
__global__ void block_sum(const float *in, float *partial, int n)
{
    __shared__ float sdata[THREADS];
    const unsigned tid = threadIdx.x;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += gridDim.x * blockDim.x)
        acc += in[i];
    if (tid < THREADS) {  // sdata has room for THREADS values
        sdata[tid] = acc;
        __syncthreads();
    }
    // tree reduction that also works for a block size that is not a power of two
    for (unsigned len = blockDim.x; len > 1; len = (len + 1) / 2) {
        const unsigned half = (len + 1) / 2;
        if (tid < len / 2)
            sdata[tid] += sdata[tid + half];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = sdata[0];
}

int main()
{
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> digit(0, 15);
    std::vector<float> h_in((size_t)BATCHES * N);
    for (float &v : h_in)
        v = (float)digit(rng);  // a batch sums to at most 15 * 2^20 < 2^24: exact in a float

    std::vector<float> h_partial(BLOCKS);
    float *d_partial;
    CHECK(cudaMalloc(&d_partial, BLOCKS * sizeof(float)));

    bool ok = true;
    long long total = 0;
    for (int b = 0; b < BATCHES; ++b) {
        float *d_in;
        CHECK(cudaMalloc(&d_in, N * sizeof(float)));
        CHECK(cudaMemcpy(d_in, h_in.data() + (size_t)b * N, N * sizeof(float),
                         cudaMemcpyHostToDevice));
        block_sum<<<BLOCKS, THREADS>>>(d_in, d_partial, N);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(h_partial.data(), d_partial, BLOCKS * sizeof(float),
                         cudaMemcpyDeviceToHost));
        CHECK(cudaFree(d_in));

        double gpu = 0.0;
        for (float p : h_partial)
            gpu += p;
        double cpu = 0.0;
        for (size_t i = 0; i < (size_t)N; ++i)
            cpu += h_in[(size_t)b * N + i];
        ok = ok && gpu == cpu;
        total += (long long)gpu;
    }
    printf("reduction: %d batches x %d floats: total %lld %s\n", BATCHES, N, total,
           ok ? "ok" : "MISMATCH");
    CHECK(cudaFree(d_partial));
    return ok ? 0 : 1;
}
