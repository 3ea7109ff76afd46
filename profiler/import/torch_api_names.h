/* What a CUDA runtime or driver API function does, by its name as a
 * torch.profiler trace spells it ("cudaStreamSynchronize",
 * "cuMemAlloc_v2", "cudaLaunchKernel_v7000", "cudaMemcpyAsync_ptsz"):
 * suffixes after the first '_' (API generation, CUDA version, per-thread
 * default stream) are ignored. */
#ifndef ADVISE_TORCH_API_NAMES_H
#define ADVISE_TORCH_API_NAMES_H

#include "profiler/profile.h"

/* cudaDeviceSynchronize/cuCtxSynchronize: context; cudaStreamSynchronize/
 * cuStreamSynchronize: stream; cudaEventSynchronize/cuEventSynchronize:
 * event; cudaStreamWaitEvent/cuStreamWaitEvent: stream-wait-event.
 * PROF_SYNC_UNKNOWN for every other function. */
ProfSyncKind torch_api_sync_kind(const char *name);

/* The memory an allocation function hands out: device (cudaMalloc,
 * cudaMallocAsync, cudaMallocPitch, cudaMalloc3D, cudaMallocFromPoolAsync,
 * cuMemAlloc, cuMemAllocPitch, cuMemAllocAsync, cuMemAllocFromPoolAsync),
 * pinned (cudaMallocHost, cudaHostAlloc, cuMemAllocHost, cuMemHostAlloc),
 * managed (cudaMallocManaged, cuMemAllocManaged). PROF_MEM_UNKNOWN when
 * the function allocates nothing. */
ProfMemKind torch_api_alloc_kind(const char *name);

#endif
