/* elementwise_chain.cu: per-particle features, then scale, bias, ReLU and a max-pool.

   For 2^20 particles (float x, y, z, as a simulation writes them) it computes
   the distance from the origin, maps it through 2 r - 1 and a ReLU, one small
   kernel per step, and max-pools the features in groups of 4. The feature
   buffer starts with a constant-1 "bias feature" for a downstream linear
   model, so the particle features start at feat + 1. The host recomputes
   everything; the last line: the sum of the pooled features, "ok" or "MISMATCH".

       nvcc -arch=sm_90 -lineinfo -o elementwise_chain elementwise_chain.cu

   What `advise check` should report in this file:

     CU005 misaligned-vector-access     line 78   Particle q = p[i]: a 12-byte struct read per
                                                  thread (three 4-byte loads) -> a structure of
                                                  arrays (info; padding measured slower)
     CU005 misaligned-vector-access     line 112  reinterpret_cast<const float4 *>(feat + 1): offset
                                                  1 is never 16-byte aligned, so the float4 path
                                                  never runs -> start the features at feat + 4
     CU011 unchecked-cuda-error         line 138  radius<<<...>>>: no error check after the launch
     CU010 unfused-elementwise-kernels  line 139  scale<<<...>>> after radius<<<...>>>: same grid,
                                                  block and buffer (d_feat + 1) -> fuse
     CU011 unchecked-cuda-error         line 139  scale<<<...>>>: no error check after the launch
     CU010 unfused-elementwise-kernels  line 140  add_bias<<<...>>> after scale<<<...>>> -> fuse
     CU011 unchecked-cuda-error         line 140  add_bias<<<...>>>: no error check after the launch
     CU010 unfused-elementwise-kernels  line 141  relu<<<...>>> after add_bias<<<...>>> -> fuse
     CU011 unchecked-cuda-error         line 141  relu<<<...>>>: no error check after the launch
     CU011 unchecked-cuda-error         line 142  pool4<<<...>>>: no error check after the launch
     CU011 unchecked-cuda-error         line 145  cudaMemcpy(h_pooled, ...): result dropped, and it
                                                  is the call that would report a failed kernel
     CU011 unchecked-cuda-error         line 160  cudaFree(d_p): result dropped
     CU011 unchecked-cuda-error         line 161  cudaFree(d_feat): result dropped
     CU011 unchecked-cuda-error         line 162  cudaFree(d_pooled): result dropped

   Each launch that could be fused into the launch before it gets its own
   CU010, so the chain of four launches gives three findings.

   Look-alikes that are deliberately correct and must NOT be reported:

     - reinterpret_cast<uintptr_t>(feat + 1) in pool4(): a cast to an
       integer for the alignment test, not a vector access              CU005
     - the scalar fallback's loads from feat + 1 + 4 * j: a stride of one
       16-byte group, so the warp's loads cover one contiguous span     CU004
     - pool4<<<...>>> follows relu<<<...>>> but is not an elementwise map
       (4 inputs per output) and has another grid                       CU010
     - cudaMalloc() and the cudaMemcpy() calls to the device in CHECK()   CU011
     - 256 threads per block; grids of 4096 and 1024 blocks              CU009
*/
#include <cmath>
#include <cstdint>
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

constexpr int N = 1 << 20;  // particles; a multiple of 4
constexpr int THREADS = 256;

struct Particle {
    float x, y, z;
};

__global__ void radius(const Particle *p, float *r, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        Particle q = p[i];
        r[i] = sqrtf(q.x * q.x + q.y * q.y + q.z * q.z);
    }
}

__global__ void scale(float *x, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * s;
}

__global__ void add_bias(float *x, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] + b;
}

__global__ void relu(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = fmaxf(x[i], 0.0f);
}

// pooled[j] = the largest of features 4j .. 4j + 3 (the features start at feat + 1).
__global__ void pool4(const float *feat, float *pooled, int groups)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= groups)
        return;
    float4 v;
    if (reinterpret_cast<uintptr_t>(feat + 1) % 16 == 0) {  // one 16-byte load when aligned
        v = reinterpret_cast<const float4 *>(feat + 1)[j];
    } else {
        const float *f = feat + 1 + 4 * j;
        v = make_float4(f[0], f[1], f[2], f[3]);
    }
    pooled[j] = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}

int main()
{
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> coord(-1.0f, 1.0f);
    std::vector<Particle> h_p(N);
    for (Particle &q : h_p)
        q = Particle{coord(rng), coord(rng), coord(rng)};
    const float one = 1.0f;

    Particle *d_p;
    float *d_feat, *d_pooled;
    CHECK(cudaMalloc(&d_p, N * sizeof(Particle)));
    CHECK(cudaMalloc(&d_feat, (N + 1) * sizeof(float)));
    CHECK(cudaMalloc(&d_pooled, N / 4 * sizeof(float)));
    CHECK(cudaMemcpy(d_p, h_p.data(), N * sizeof(Particle), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_feat, &one, sizeof one, cudaMemcpyHostToDevice));  // the bias feature

    const int blocks = (N + THREADS - 1) / THREADS;
    radius<<<blocks, THREADS>>>(d_p, d_feat + 1, N);
    scale<<<blocks, THREADS>>>(d_feat + 1, 2.0f, N);
    add_bias<<<blocks, THREADS>>>(d_feat + 1, -1.0f, N);
    relu<<<blocks, THREADS>>>(d_feat + 1, N);
    pool4<<<(N / 4 + THREADS - 1) / THREADS, THREADS>>>(d_feat, d_pooled, N / 4);

    std::vector<float> h_pooled(N / 4);
    cudaMemcpy(h_pooled.data(), d_pooled, N / 4 * sizeof(float), cudaMemcpyDeviceToHost);

    bool ok = true;
    double sum = 0.0;
    for (int j = 0; j < N / 4; ++j) {
        float want = 0.0f;
        for (int k = 0; k < 4; ++k) {
            const Particle &q = h_p[4 * j + k];
            float r = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z);
            want = std::fmax(want, std::fmax(2.0f * r - 1.0f, 0.0f));
        }
        ok = ok && std::fabs(h_pooled[j] - want) <= 1e-5f;
        sum += h_pooled[j];
    }
    printf("elementwise_chain: %d particles, pooled sum %.3f %s\n", N, sum, ok ? "ok" : "MISMATCH");
    cudaFree(d_p);
    cudaFree(d_feat);
    cudaFree(d_pooled);
    return ok ? 0 : 1;
}
