// Known device allocations for `advise profile --memory` on a native CUDA
// program (CUPTI's memory activity, profiler/mem_trace.h):
//
//   line 34  weights   64 MiB, kept to the end
//   line 38  act      256 MiB, allocated and freed 8 times
//   line 39  tmp       32 MiB, allocated and freed 8 times
//   line 48  big      128 MiB, once, after the loop
//
// The peak is inside the loop: 64 + 256 + 32 = 352 MiB (369098752 bytes),
// held by lines 38 (256 MiB), 34 (64 MiB) and 39 (32 MiB). It prints what
// cudaMemGetInfo saw used at that point, to compare.
//
//   nvcc -arch=sm_90 -g -lineinfo -o cuda_alloc cuda_alloc.cu
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x)                                                                            \
    do {                                                                                    \
        cudaError_t e = (x);                                                                \
        if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } \
    } while (0)

__global__ void touch(unsigned char *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)i;
}

int main() {
    const size_t MiB = 1 << 20;
    size_t free0, total, free1;
    CHECK(cudaFree(0)); // the context, before measuring
    CHECK(cudaMemGetInfo(&free0, &total));
    unsigned char *weights, *act, *tmp, *big;
    CHECK(cudaMalloc(&weights, 64 * MiB));
    size_t peak_used = 0;
    for (int step = 0; step < 8; ++step) {
        // the per-step buffers: the peak of the run is here
        CHECK(cudaMalloc(&act, 256 * MiB));
        CHECK(cudaMalloc(&tmp, 32 * MiB));
        touch<<<264, 256>>>(act, 256 * MiB);
        touch<<<264, 256>>>(tmp, 32 * MiB);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemGetInfo(&free1, &total));
        if (free0 - free1 > peak_used) peak_used = free0 - free1;
        CHECK(cudaFree(tmp));
        CHECK(cudaFree(act));
    }
    CHECK(cudaMalloc(&big, 128 * MiB));
    touch<<<264, 256>>>(big, 128 * MiB);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(big));
    CHECK(cudaFree(weights));
    printf("cuda_alloc: expected peak %zu bytes; cudaMemGetInfo used at the peak %zu bytes (total %zu)\n",
           (size_t)352 * MiB, peak_used, total);
    return 0;
}
