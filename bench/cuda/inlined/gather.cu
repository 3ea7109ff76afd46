// The same strided gather built twice, with float and with __nv_bfloat16
// elements (nvcc -DBF16): CUPTI maps the bf16 build's loads into
// cuda_bf16.hpp (the inlined conversion of `(float)x[...]`). advise charges
// them back to line GATHER_LINE; both builds must show the load there, with
// the same excess over the ideal sectors (bench/cuda/inlined/run.sh).
#include <cstdio>
#include <cstdlib>
#include <cuda_bf16.h>

#ifdef BF16
typedef __nv_bfloat16 floatX;
#else
typedef float floatX;
#endif

__global__ void gather(const floatX *x, float *out, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (float)x[(size_t)i * stride]; // GATHER_LINE
}

int main() {
    const int n = 1 << 22, stride = 16;
    floatX *x;
    float *out;
    if (cudaMalloc(&x, (size_t)n * stride * sizeof *x) != cudaSuccess || cudaMalloc(&out, (size_t)n * sizeof *out))
        return 1;
    cudaMemset(x, 0x3c, (size_t)n * stride * sizeof *x); // 0x3c3c...: finite values in both types
    for (int r = 0; r < 5; r++) gather<<<(n + 255) / 256, 256>>>(x, out, n, stride);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "gather: %s\n", cudaGetErrorString(e));
        return 1;
    }
    printf("gather: %d elements of %zu bytes, stride %d\n", n, sizeof(floatX), stride);
    return 0;
}
