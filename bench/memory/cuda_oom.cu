// A native CUDA program that runs out of device memory, for PR018 with
// `advise profile --memory` (CUPTI's memory activity and the failing call's
// return code, profiler/mem_trace.h):
//
//   line 25  kept   1 GiB, alive when the next call fails
//   line 27  huge   1 TiB, fails with cudaErrorMemoryAllocation
//
// advise should report line 27 (1.10 TB asked for) with 1.07 GB of device
// buffers allocated, all from line 25.
//
//   nvcc -arch=sm_90 -g -lineinfo -o cuda_oom cuda_oom.cu
#include <cstdio>
#include <cuda_runtime.h>

__global__ void touch(unsigned char *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)i;
}

int main() {
    const size_t GiB = 1ull << 30;
    unsigned char *kept = nullptr, *huge = nullptr;
    if (cudaFree(0) != cudaSuccess) return 1;
    // the buffer alive when the allocation below fails
    if (cudaMalloc(&kept, GiB) != cudaSuccess) return 1;
    touch<<<264, 256>>>(kept, GiB);
    cudaError_t e = cudaMalloc(&huge, 1024 * GiB);
    printf("cuda_oom: cudaMalloc of 1 TiB: %s\n", cudaGetErrorString(e));
    cudaGetLastError(); // clear it
    cudaDeviceSynchronize();
    cudaFree(kept);
    return e == cudaErrorMemoryAllocation ? 0 : 1;
}
