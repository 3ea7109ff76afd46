/* Turns CUPTI activity records into aggregator calls. */
#include <cupti.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profiler/inject/inject.h"

static ProfMemKind mem_kind(uint8_t kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return PROF_MEM_PAGEABLE;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return PROF_MEM_PINNED;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return PROF_MEM_DEVICE;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return PROF_MEM_MANAGED;
    default: return PROF_MEM_UNKNOWN;
    }
}

static ProfCopyKind copy_kind(uint8_t kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return PROF_COPY_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return PROF_COPY_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return PROF_COPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return PROF_COPY_HTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return PROF_COPY_PTOP;
    default: return PROF_COPY_UNKNOWN;
    }
}

static const char *overhead_name(CUpti_ActivityOverheadKind kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "cupti_resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "module_loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "lazy_function_loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "command_buffer_full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "activity_buffer_request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "uvm_activity_init";
    default: return "other";
    }
}

/* ADVISE_PROFILE_DUMP_KERNELS=FILE: every kernel record as CUPTI gave it, one
 * line each, after the process id (a diagnostic for records whose times look
 * wrong; not a format). Appended, a line a write: the processes of one run
 * (loader workers, ranks) share the file without truncating each other's. */
static FILE *dump;
static pthread_once_t dump_once = PTHREAD_ONCE_INIT;

static void open_dump(void) {
    const char *path = getenv("ADVISE_PROFILE_DUMP_KERNELS");
    if (!path || !*path || !(dump = fopen(path, "a"))) return;
    setvbuf(dump, NULL, _IOLBF, 0); /* complete up to the last record, however the process ends */
    fputs("pid start end duration correlation window launch graph node stream device name\n", dump);
}

static FILE *kernel_dump(void) {
    pthread_once(&dump_once, open_dump);
    return dump;
}

static void on_kernel(const CUpti_ActivityKernel10 *k) {
    uint32_t window;
    uint64_t launch;
    int site = correlation_get(k->correlationId, &window, &launch);
    FILE *dump = kernel_dump();
    if (dump)
        fprintf(dump, "%d %llu %llu %lld %u %u %llu %u %llu %u %u %.80s\n", (int)getpid(), (unsigned long long)k->start,
                (unsigned long long)k->end, (long long)(k->end - k->start), k->correlationId, window,
                (unsigned long long)launch, k->graphId, (unsigned long long)k->graphNodeId, k->streamId,
                k->deviceId, k->name ? k->name : "?");
    AggKernel rec = {
        .device = k->deviceId, .name = k->name,
        .grid = {(uint32_t)k->gridX, (uint32_t)k->gridY, (uint32_t)k->gridZ},
        .block = {(uint32_t)k->blockX, (uint32_t)k->blockY, (uint32_t)k->blockZ},
        .registers = k->registersPerThread, .static_shared = (uint32_t)k->staticSharedMemory,
        .dynamic_shared = (uint32_t)k->dynamicSharedMemory, .local_per_thread = k->localMemoryPerThread,
        .start_ns = k->start, .end_ns = k->end, .launch_ns = launch, .site = site,
        .window = window, .weight = trace_sampling_weight(window)};
    agg_kernel(inject_agg, &rec);
}

static void on_device(const CUpti_ActivityDevice5 *d) {
    ProfDevice dev = {
        .id = d->id, .name = (char *)d->name, .sm_count = d->numMultiprocessors,
        .cc_major = d->computeCapabilityMajor, .cc_minor = d->computeCapabilityMinor,
        .memory_bytes = d->globalMemorySize,
        .bandwidth_bytes_per_s = d->globalMemoryBandwidth * 1000ull, /* CUPTI gives KB/s */
        .max_warps_per_sm = d->maxWarpsPerMultiprocessor,
        .max_blocks_per_sm = d->maxBlocksPerMultiprocessor,
        .max_registers_per_sm = d->maxRegistersPerMultiprocessor,
        .max_shared_per_sm = d->maxSharedMemoryPerMultiprocessor,
        .max_registers_per_block = d->maxRegistersPerBlock,
        .max_shared_per_block = d->maxSharedMemoryPerBlock,
        .max_threads_per_block = d->maxThreadsPerBlock, .l2_bytes = d->l2CacheSize};
    agg_device(inject_agg, &dev);
}

/* `--memory`: device memory allocated and released (CUDA's own allocations;
 * pinned host and managed memory are left out: they are not device memory). */
static void on_memory(const CUpti_ActivityMemory4 *m) {
    if (!inject_mem) return;
    switch (m->memoryKind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: break;
    default: return;
    }
    if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
        mem_trace_alloc(inject_mem, m->deviceId, m->address, m->bytes, m->timestamp,
                        correlation_get(m->correlationId, NULL, NULL));
    else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        mem_trace_release(inject_mem, m->deviceId, m->address, m->bytes, m->timestamp);
}

static void consume(CUpti_Activity *record) {
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        on_kernel((CUpti_ActivityKernel10 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)record;
        uint32_t window;
        uint64_t launch;
        int site = correlation_get(m->correlationId, &window, &launch);
        AggCopy rec = {.device = m->deviceId, .copy = copy_kind(m->copyKind), .src = mem_kind(m->srcKind),
                       .dst = mem_kind(m->dstKind), .bytes = m->bytes, .start_ns = m->start,
                       .end_ns = m->end, .launch_ns = launch, .site = site, .window = window,
                       .weight = trace_sampling_weight(window)};
        agg_memcpy(inject_agg, &rec);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)record;
        uint32_t window;
        uint64_t launch;
        int site = correlation_get(m->correlationId, &window, &launch);
        AggMemset rec = {.device = m->deviceId, .dst = mem_kind((uint8_t)m->memoryKind), .bytes = m->bytes,
                         .start_ns = m->start, .end_ns = m->end, .launch_ns = launch, .site = site,
                         .window = window,
                         .weight = trace_sampling_weight(window)};
        agg_memset(inject_agg, &rec);
        break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        CUpti_ActivityOverhead3 *o = (CUpti_ActivityOverhead3 *)record;
        agg_overhead(inject_agg, overhead_name(o->overheadKind), o->end > o->start ? o->end - o->start : 0);
        break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE:
        on_device((CUpti_ActivityDevice5 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        on_memory((CUpti_ActivityMemory4 *)record);
        break;
    default:
        break;
    }
}

void records_consume(uint8_t *buffer, size_t valid_size) {
    CUpti_Activity *record = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) consume(record);
}
