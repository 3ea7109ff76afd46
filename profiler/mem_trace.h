/* Device memory over time from CUDA's own allocations (cudaMalloc/cudaFree,
 * cuMemAlloc/cuMemFree and friends, as CUPTI's memory activity reports them),
 * aggregated in the profiled process into the profile's `memory` and
 * `memory_lines` (FORMAT.md): `advise profile --memory` for programs that are
 * not PyTorch's (native CUDA, or any process without a PyTorch memory part).
 *
 * Bounded whatever the run's length: per device, the live allocations
 * (address -> bytes and allocating site; at most MEM_TRACE_MAX_LIVE, beyond
 * which new allocations are counted in the totals but not by line), per-site
 * totals (at most MEM_TRACE_MAX_SITES sites), the per-site live bytes at the
 * peak, and at most PROFILE_MAX_MEMORY_SAMPLES samples: each sample is the
 * highest point of a stretch of events, and when the samples are full,
 * neighbouring stretches merge two by two (keeping the higher point), so the
 * peak always stays.
 *
 * For raw allocations allocated = reserved = live bytes. Records may come
 * from any thread (every function takes the trace's lock); a time earlier
 * than the last one counts as the last one, so samples never go back. */
#ifndef ADVISE_MEM_TRACE_H
#define ADVISE_MEM_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "profiler/profile.h"

#define MEM_TRACE_MAX_DEVICES 64u
#define MEM_TRACE_MAX_LIVE (1u << 20)   /* live allocations tracked by address, per device */
#define MEM_TRACE_MAX_SITES 100000u     /* as PROFILE_MAX_SITES */
#define MEM_TRACE_MAX_LINES 64u         /* memory_lines of each kind per device, largest first */

typedef struct MemTrace MemTrace;

MemTrace *mem_trace_new(void);
void mem_trace_free(MemTrace *t);

/* bytes of device memory at address, allocated at time_ns (any clock, ns)
 * by site (a site index of the profile the trace is written into, or -1). */
void mem_trace_alloc(MemTrace *t, uint32_t device, uint64_t address, uint64_t bytes, uint64_t time_ns, int site);
/* The allocation at address is released. An address the trace does not hold
 * (allocated before recording, or beyond MEM_TRACE_MAX_LIVE) lowers the
 * untracked bytes by at most what was counted as untracked, never below 0. */
void mem_trace_release(MemTrace *t, uint32_t device, uint64_t address, uint64_t bytes, uint64_t time_ns);

/* An allocation of bytes on device, asked for by site, failed for lack of
 * memory at time_ns (the records' clock). The first one of each device is
 * kept, with the bytes live by line at that moment: taken when the trace
 * reaches that time (records arrive in buffers, after the call has
 * returned), or at the end. */
void mem_trace_oom(MemTrace *t, uint32_t device, uint64_t bytes, uint64_t time_ns, int site);

/* Releases of addresses the trace did not hold, over all devices. */
uint64_t mem_trace_unknown_releases(const MemTrace *t);

/* Appends one memory entry (source PROF_MEM_SOURCE_CUPTI) per device that
 * allocated, for process `process` of p, with its "peak" and "allocs" lines
 * (and its out-of-memory error with the "oom" lines live then).
 * Sites must be p's. The trace stays usable. False when out of memory (p
 * then holds none of the trace's entries). */
bool mem_trace_to_profile(MemTrace *t, Profile *p, int process);

#endif
