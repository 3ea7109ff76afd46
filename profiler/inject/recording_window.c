/* `advise profile --steps N`: each process records its first N optimizer
 * steps, then the profiler detaches from CUPTI and the rest of the run goes
 * at full speed.
 *
 * Why detach rather than turn tracing off: on the H200 a launch keeps
 * paying 0.36-0.54 µs more than plain after kernel tracing is turned off,
 * until cuptiFinalize (bench/RESULTS.md, "Detaching between traced
 * windows?"), and a subscribed callback alone still costs 0.06-0.16 µs.
 * cuptiFinalize costs about 3 ms and synchronizes every context, so it is
 * done once.
 *
 * Where: at the end of the Nth step, in the torch.optim step hook
 * (step_marks.c), on the thread that stepped, between its CUDA calls. Not
 * inside a CUPTI callback: detaching there crashed on the H200
 * (launch_probe in-callback). The callbacks check recording_detached()
 * first, so one running on another thread while the detach begins returns
 * at once; nothing calls CUPTI after the detach, since any CUPTI call would
 * attach it again. The process's CUDA work since the last step is waited
 * for (its records complete), flushed into the aggregator, and the profile
 * part written at exit covers the recorded span only. */
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler/inject/inject.h"

static uint64_t steps_wanted;       /* 0: the whole run */
static CUpti_SubscriberHandle subscriber;
static bool detached;               /* atomically */
static uint64_t started_ns, detached_ns; /* CLOCK_MONOTONIC */
static size_t dropped;              /* CUPTI's dropped records, read before the detach */

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void recording_window_start(CUpti_SubscriberHandle sub, uint64_t start_ns) {
    subscriber = sub;
    started_ns = start_ns;
    const char *v = getenv("ADVISE_PROFILE_STEPS");
    char *end = NULL;
    unsigned long long n = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
    steps_wanted = end && !*end ? n : 0;
}

uint64_t recording_window_steps(void) { return steps_wanted; }

bool recording_detached(void) { return __atomic_load_n(&detached, __ATOMIC_ACQUIRE); }

/* Waits for the calling thread's context, so that the records of work still
 * queued complete before the flush (cuptiFinalize then waits for every
 * context). The driver is loaded in any process CUPTI runs in. */
static void wait_for_the_device(void) {
    CUresult (*ctx_synchronize)(void) = (CUresult(*)(void))dlsym(RTLD_DEFAULT, "cuCtxSynchronize");
    if (ctx_synchronize) ctx_synchronize();
}

void recording_window_step(uint64_t steps_seen) {
    if (!steps_wanted || steps_seen != steps_wanted || recording_detached()) return;
    __atomic_store_n(&detached, true, __ATOMIC_RELEASE);
    cuptiEnableAllDomains(0, subscriber);
    wait_for_the_device();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
    cuptiUnsubscribe(subscriber);
    cuptiFinalize();
    detached_ns = monotonic_ns();
}

size_t recording_window_dropped(void) { return dropped; }

uint64_t recording_window_wall_ns(void) { return detached_ns - started_ns; }
