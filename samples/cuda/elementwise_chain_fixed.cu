/* elementwise_chain_fixed.cu: the corrected version of elementwise_chain.cu.

   advise should report nothing in this file.

   Computes the same features of the same 2^20 particles and prints the same
   last line as elementwise_chain.cu. What changed:

     - Particle is declared __align__(16): one vector load per thread instead
       of three scalar loads, but a third more bytes (measured slower alone);
     - the bias feature takes a 16-byte slot, so the particle features start at
       feat + 4 and pool4() always reads them as aligned float4s (CU005);
     - radius, scale, add_bias and relu are one kernel, features(): one pass
       over the buffer instead of four (CU010). With s = 2 the product r * s is
       exact, so the fused r * s + b rounds exactly as the separate kernels did;
     - every call is checked, every launch is followed by
       CHECK(cudaGetLastError()) (CU011).

       nvcc -arch=sm_90 -lineinfo -o elementwise_chain_fixed elementwise_chain_fixed.cu
*/
#include <cmath>
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
constexpr int HEAD = 4;     // the bias feature's slot, padded to 16 bytes

struct __align__(16) Particle {
    float x, y, z;
};

// feat[i] = relu(s * |p[i]| + b): the four elementwise steps in one pass.
__global__ void features(const Particle *p, float *feat, float s, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        Particle q = p[i];
        float r = sqrtf(q.x * q.x + q.y * q.y + q.z * q.z);
        feat[i] = fmaxf(r * s + b, 0.0f);
    }
}

// pooled[j] = the largest of features 4j .. 4j + 3 (the features start at feat + 4).
__global__ void pool4(const float *feat, float *pooled, int groups)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= groups)
        return;
    const float4 v = reinterpret_cast<const float4 *>(feat + 4)[j];
    pooled[j] = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}

int main()
{
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> coord(-1.0f, 1.0f);
    std::vector<Particle> h_p(N);
    for (Particle &q : h_p)
        q = Particle{coord(rng), coord(rng), coord(rng)};
    const float head[HEAD] = {1.0f, 0.0f, 0.0f, 0.0f};

    Particle *d_p;
    float *d_feat, *d_pooled;
    CHECK(cudaMalloc(&d_p, N * sizeof(Particle)));
    CHECK(cudaMalloc(&d_feat, (N + HEAD) * sizeof(float)));
    CHECK(cudaMalloc(&d_pooled, N / 4 * sizeof(float)));
    CHECK(cudaMemcpy(d_p, h_p.data(), N * sizeof(Particle), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_feat, head, sizeof head, cudaMemcpyHostToDevice));  // the bias feature

    const int blocks = (N + THREADS - 1) / THREADS;
    features<<<blocks, THREADS>>>(d_p, d_feat + HEAD, 2.0f, -1.0f, N);
    CHECK(cudaGetLastError());
    pool4<<<(N / 4 + THREADS - 1) / THREADS, THREADS>>>(d_feat, d_pooled, N / 4);
    CHECK(cudaGetLastError());

    std::vector<float> h_pooled(N / 4);
    CHECK(cudaMemcpy(h_pooled.data(), d_pooled, N / 4 * sizeof(float), cudaMemcpyDeviceToHost));

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
    CHECK(cudaFree(d_p));
    CHECK(cudaFree(d_feat));
    CHECK(cudaFree(d_pooled));
    return ok ? 0 : 1;
}
