/* The CUPTI injection library's shared state (internal to profiler/inject/).
 *
 * Loaded into the user's process by the CUDA driver through
 * CUDA_INJECTION64_PATH, it records activity through CUPTI, attributes each
 * launch, copy, sync and allocation to the user's source line, aggregates in
 * the process (aggregate.h) and writes one profile part at exit into
 * $ADVISE_PROFILE_PARTS_DIR. The `advise profile` parent merges the parts.
 *
 * This folder is the only code in advise that includes cupti.h. */
#ifndef ADVISE_INJECT_H
#define ADVISE_INJECT_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/aggregate.h"
#include "profiler/mem_trace.h"

extern Aggregator *inject_agg;
/* Device memory from CUPTI's memory activity (`advise profile --memory`); NULL when off. */
extern MemTrace *inject_mem;
/* The project root (absolute, no trailing slash) and its length. */
extern const char *inject_root;
extern size_t inject_root_len;

/* A note for the user about what this process could not record (empty when none). */
extern char inject_note[512];

/* Is path (absolute) inside the project and not an installed package? */
bool inject_path_is_user(const char *path);
/* path relative to the project root (points into path). */
const char *inject_relative(const char *path);

/* ---- call sites: the source line in the user's code making the current
 * CUDA call on this thread; -1 when none is found. */
int callsite_current(void);

/* Correlation id of an API call -> its call site, read back when the
 * activity record of the same id arrives (possibly on another thread). */
void correlation_put(uint32_t correlation, int site, uint32_t window, uint64_t launch_ns);
/* window (may be NULL) gets the call's trace window tag, 0 when unknown;
 * launch_ns (may be NULL) when the call began on CUPTI's clock, 0 when unknown */
int correlation_get(uint32_t correlation, uint32_t *window, uint64_t *launch_ns);

/* ---- which device work is traced (trace_sampling.c) */
void trace_sampling_start(bool kernels, bool copies, bool memsets);
/* A launch, copy or memset call begins (graph: a whole CUDA graph's launch):
 * its window tag, and whether CUPTI traces it. */
uint32_t trace_sampling_on_launch(bool graph, bool *traced);
/* ... ends: host time inside the call and the callbacks' own time on it */
void trace_sampling_launch_time(bool traced, uint64_t api_ns, uint64_t callback_ns);
/* the weight of a record of window tag w: 1 in the prefix, trace_every in a sampled window */
uint32_t trace_sampling_weight(uint32_t window);
void trace_sampling_fill(ProfCalibration *c);
/* dormant: no device work traced, whatever the window (inject_set_dormant) */
void trace_sampling_set_dormant(bool dormant);

/* bench/overhead's alternation (ADVISE_PROFILE_ALTERNATE=K, step_marks.c):
 * dormant, no callback of ours runs and no device work is traced. */
void inject_set_dormant(bool dormant);

/* `advise profile --steps N` (recording_window.c): after the Nth optimizer
 * step the profiler detaches from CUPTI for good. start reads
 * ADVISE_PROFILE_STEPS. The step hook asks due() after each step's mark and
 * calls detach() on the thread that stepped, outside CUPTI's callbacks and
 * graph captures; false when CUPTI could not be detached (it stays on, with
 * no callback of ours). Once detaching, nothing may call CUPTI again (a call
 * would attach it anew): each CUPTI callback, and each step mark, runs only
 * between recording_callback_enter() (false: do nothing) and _leave(). */
void recording_window_start(CUpti_SubscriberHandle subscriber, uint64_t start_ns);
void recording_window_forget(void);      /* a forked child: never detaches */
uint64_t recording_window_steps(void);   /* N, 0 when the whole run is recorded */
bool recording_window_due(uint64_t steps_seen);
bool recording_window_detach(void);
bool recording_detached(void);           /* the detach began */
bool recording_window_finished(void);    /* ... and CUPTI was finalized */
bool recording_callback_enter(void);
void recording_callback_leave(void);
size_t recording_window_dropped(void);   /* CUPTI's dropped records, read before the detach */
uint64_t recording_window_wall_ns(void); /* process start to the detach */
uint64_t step_marks_seen(void);          /* optimizer steps so far */

/* Python programs: a profile hook keeps the innermost user frame of each
 * thread; python_site reads its current line. */
void python_sites_start(void);
bool python_sites_active(void);
int python_site(void);

/* Optimizer step ends (step_marks.c): recorded by the torch.optim hook
 * python_sites.c registers; handed to the aggregator at exit. */
void step_marks_record(void);
void step_marks_flush(Aggregator *agg);

/* Native programs: the first frames of the stack in user modules. */
void native_sites_start(void);
bool native_sites_wanted(void);
int native_site(void);

/* API call durations, batched per thread (api_times.c); flush_all hands
 * every thread's batch to the aggregator (at exit). */
void api_time_add(const char *name, uint64_t duration_ns);
void api_times_flush_all(void);

/* Activity buffers: feed every record of a completed buffer to the aggregator. */
void records_consume(uint8_t *buffer, size_t valid_size);

#endif
