#include "profiler/import/torch_api_names.h"

#include <string.h>

/* name without its suffixes equals base */
static bool is(const char *name, const char *base) {
    size_t n = strcspn(name, "_");
    return strlen(base) == n && strncmp(name, base, n) == 0;
}

ProfSyncKind torch_api_sync_kind(const char *name) {
    if (is(name, "cudaDeviceSynchronize") || is(name, "cuCtxSynchronize")) return PROF_SYNC_CONTEXT;
    if (is(name, "cudaStreamSynchronize") || is(name, "cuStreamSynchronize")) return PROF_SYNC_STREAM;
    if (is(name, "cudaEventSynchronize") || is(name, "cuEventSynchronize")) return PROF_SYNC_EVENT;
    if (is(name, "cudaStreamWaitEvent") || is(name, "cuStreamWaitEvent")) return PROF_SYNC_STREAM_WAIT_EVENT;
    return PROF_SYNC_UNKNOWN;
}

ProfMemKind torch_api_alloc_kind(const char *name) {
    static const char *const device[] = {"cudaMalloc", "cudaMallocAsync", "cudaMallocPitch", "cudaMalloc3D",
                                         "cudaMallocFromPoolAsync", "cuMemAlloc", "cuMemAllocPitch",
                                         "cuMemAllocAsync", "cuMemAllocFromPoolAsync"};
    static const char *const pinned[] = {"cudaMallocHost", "cudaHostAlloc", "cuMemAllocHost", "cuMemHostAlloc"};
    static const char *const managed[] = {"cudaMallocManaged", "cuMemAllocManaged"};
    for (size_t i = 0; i < sizeof device / sizeof *device; i++)
        if (is(name, device[i])) return PROF_MEM_DEVICE;
    for (size_t i = 0; i < sizeof pinned / sizeof *pinned; i++)
        if (is(name, pinned[i])) return PROF_MEM_PINNED;
    for (size_t i = 0; i < sizeof managed / sizeof *managed; i++)
        if (is(name, managed[i])) return PROF_MEM_MANAGED;
    return PROF_MEM_UNKNOWN;
}
