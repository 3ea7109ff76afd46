/* Aggregation: turns a stream of activity records (kernels, copies, memsets,
 * syncs, API calls, allocations) into a bounded Profile, in the profiled
 * process itself (injection library) or from an imported trace.
 *
 * Memory stays bounded whatever the run's length: one entry per distinct
 * kernel configuration and per (site, operation) key up to the caps in
 * profile.h (further keys are counted as dropped), a fixed reservoir per
 * entry for the median, and the largest idle gaps only.
 *
 * Thread safety: every function takes the aggregator's lock; records may
 * arrive from any thread. Records need not arrive in time order: the busy
 * and idle figures are computed from batches sorted by start time, and an
 * interval that arrives after a later batch has been swept only adds the part
 * of it that lies beyond what was already counted busy (see aggregate.c).
 * The same sweep keeps the union of compute (non-NCCL kernels, copies,
 * memsets) and of communication (NCCL kernels, comm_kernels.h) per device. */
#ifndef ADVISE_AGGREGATE_H
#define ADVISE_AGGREGATE_H

#include <stdint.h>

#include "profiler/profile.h"

typedef struct Aggregator Aggregator;

Aggregator *agg_new(void);
void agg_free(Aggregator *agg);

/* Interns a call site (file relative to the project root). Returns the site
 * index, or -1 when the site cap is reached. */
int agg_site(Aggregator *agg, const char *file, uint32_t line, const char *function);
/* As agg_site, for a site only known to the function (imported traces). */
int agg_function_site(Aggregator *agg, const char *file, uint32_t line, const char *function);
/* A native site not yet resolved to a line (see ProfFrame). */
int agg_native_site(Aggregator *agg, const ProfFrame *frames, size_t count);

typedef struct {
    uint32_t device;
    const char *name;           /* copied */
    uint32_t grid[3], block[3];
    uint32_t registers, static_shared, dynamic_shared, local_per_thread;
    uint64_t start_ns, end_ns;
    uint64_t launch_ns;         /* when the host's launch call began, same clock; 0: unknown */
    int site;                   /* from agg_site, or -1 */
    uint32_t window, weight;    /* trace window tag and weight (0 or 1: itself) */
} AggKernel;

typedef struct {
    uint32_t device;
    ProfCopyKind copy;
    ProfMemKind src, dst;
    uint64_t bytes;
    uint64_t start_ns, end_ns;
    uint64_t launch_ns;         /* as AggKernel's */
    int site;
    uint32_t window, weight;    /* trace window tag and weight (0 or 1: itself) */
} AggCopy;

typedef struct {
    uint32_t device;
    ProfMemKind dst;
    uint64_t bytes;
    uint64_t start_ns, end_ns;
    uint64_t launch_ns;         /* as AggKernel's */
    int site;
    uint32_t window, weight;    /* trace window tag and weight (0 or 1: itself) */
} AggMemset;

void agg_kernel(Aggregator *agg, const AggKernel *k);
void agg_memcpy(Aggregator *agg, const AggCopy *c);
void agg_memset(Aggregator *agg, const AggMemset *m);
/* Host time waiting in a synchronization. */
void agg_sync(Aggregator *agg, ProfSyncKind kind, uint64_t duration_ns, int site);
/* Critical path (FORMAT.md `critical_ns`): from now on the records carry
 * their launch times and agg_host_wait is told the host's waits for the GPU,
 * so the profile's kernels and operations get their time on the critical
 * path. Without it (imported traces) that time is left unknown. */
void agg_track_critical_path(Aggregator *agg);
/* The host waited for the GPU from enter_ns to exit_ns (the device work's
 * clock): a synchronization, a blocking copy or launch. */
void agg_host_wait(Aggregator *agg, uint64_t enter_ns, uint64_t exit_ns);
/* An allocation API call: host time and bytes asked for. */
void agg_alloc(Aggregator *agg, ProfMemKind kind, uint64_t bytes, uint64_t duration_ns, int site);
/* Host time in one CUDA API function (name copied). */
void agg_api(Aggregator *agg, const char *name, uint64_t duration_ns);
/* count calls at once (names[i] took durations[i]), under one lock */
void agg_api_batch(Aggregator *agg, const char *const *names, const uint64_t *durations, size_t count);
void agg_overhead(Aggregator *agg, const char *kind, uint64_t duration_ns);
/* Device facts (copied; the device's ordinal is dev->id). */
void agg_device(Aggregator *agg, const ProfDevice *dev);

/* The process's optimizer step ends, on the device work's clock, ascending
 * or not (copied; replaces earlier ones): count marks, stride steps apart,
 * total steps in all. agg_to_profile splits the run into step phases with
 * them (step_phases.h) and gives each idle gap its phase. */
void agg_steps(Aggregator *agg, const uint64_t *marks, size_t count, uint32_t stride, uint64_t total);

/* Builds the profile of one process (process index 0) from everything
 * recorded so far. The aggregator stays usable. NULL when out of memory. */
Profile *agg_to_profile(Aggregator *agg, const ProfProcess *proc);

#endif
