/* reduction_fixed.cu: the corrected version of reduction.cu.

   advise should report nothing in this file.

   Sums the same 8 batches of 2^20 small integers and prints the same last
   line as reduction.cu. What changed:

     - the shared store needs no guard: sdata is sized by THREADS, the block
       size every launch uses, and the first __syncthreads() is reached by
       every thread of the block (reduction.cu's CU002);
     - 256 threads per block, a multiple of 32; the grid is 4 blocks per SM,
       read from the device, instead of a constant 64 (CU009);
     - the input and the partial sums are allocated once, before the loop
       (CU008);
     - no cudaDeviceSynchronize() in the loop: the launches queue up on the
       default stream and the one cudaMemcpy after the loop waits for all of
       them (CU008).

       nvcc -arch=sm_90 -lineinfo -o reduction_fixed reduction_fixed.cu
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
constexpr int THREADS = 256;  // every launch of block_sum uses this block size

// partial[blockIdx.x] = the sum of the elements this block visits in in[0..n).
__global__ void block_sum(const float *in, float *partial, int n)
{
    __shared__ float sdata[THREADS];
    const unsigned tid = threadIdx.x;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += gridDim.x * blockDim.x)
        acc += in[i];
    sdata[tid] = acc;
    __syncthreads();
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

    int device = 0, sms = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int blocks = 4 * sms;  // enough blocks to keep every SM busy

    float *d_in, *d_partial;
    CHECK(cudaMalloc(&d_in, h_in.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_partial, (size_t)BATCHES * blocks * sizeof(float)));
    CHECK(cudaMemcpy(d_in, h_in.data(), h_in.size() * sizeof(float), cudaMemcpyHostToDevice));
    for (int b = 0; b < BATCHES; ++b) {
        block_sum<<<blocks, THREADS>>>(d_in + (size_t)b * N, d_partial + (size_t)b * blocks, N);
        CHECK(cudaGetLastError());
    }
    std::vector<float> h_partial((size_t)BATCHES * blocks);
    CHECK(cudaMemcpy(h_partial.data(), d_partial, h_partial.size() * sizeof(float),
                     cudaMemcpyDeviceToHost));

    bool ok = true;
    long long total = 0;
    for (int b = 0; b < BATCHES; ++b) {
        double gpu = 0.0;
        for (int p = 0; p < blocks; ++p)
            gpu += h_partial[(size_t)b * blocks + p];
        double cpu = 0.0;
        for (size_t i = 0; i < (size_t)N; ++i)
            cpu += h_in[(size_t)b * N + i];
        ok = ok && gpu == cpu;
        total += (long long)gpu;
    }
    printf("reduction: %d batches x %d floats: total %lld %s\n", BATCHES, N, total,
           ok ? "ok" : "MISMATCH");
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_partial));
    return ok ? 0 : 1;
}
