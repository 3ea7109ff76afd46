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
 * Where: at the end of the Nth step, from the torch.optim step hook
 * (python_sites.c), on the thread that stepped, between its CUDA calls and
 * not while it captures a CUDA graph. Not inside a CUPTI callback:
 * detaching there crashed on the H200 (launch_probe in-callback). Any CUPTI
 * call after cuptiFinalize would attach CUPTI again, so the callbacks count
 * themselves in and out (recording_callback_enter/leave) and the detach
 * waits until those already running on other threads have left. Then the
 * device is waited for (the records of the step's work complete), the
 * records are flushed into the aggregator, and the profile part written at
 * exit covers the recorded span. */
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler/inject/inject.h"

#define LEAVE_WAIT_NS 2000000000ull /* callbacks leave in microseconds; past this something is wrong */

static uint64_t steps_wanted;       /* 0: the whole run */
static bool counting;               /* steps_wanted != 0: callbacks count themselves in and out */
static CUpti_SubscriberHandle subscriber;
static bool detaching;              /* set first: callbacks entering from then on do nothing */
static bool detached;               /* CUPTI finalized; set last */
static uint32_t in_flight;          /* callbacks running (when counting) */
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
    counting = steps_wanted != 0;
}

void recording_window_forget(void) {
    steps_wanted = 0;
    counting = false;
}

uint64_t recording_window_steps(void) { return steps_wanted; }

bool recording_detached(void) { return __atomic_load_n(&detaching, __ATOMIC_ACQUIRE); }

bool recording_window_finished(void) { return __atomic_load_n(&detached, __ATOMIC_ACQUIRE); }

bool recording_window_due(uint64_t steps_seen) {
    return steps_wanted && steps_seen >= steps_wanted && !recording_detached();
}

/* The callback counts itself in, then looks whether the detach began; the
 * detach says it began, then looks whether a callback is in. Both sequentially
 * consistent: one of the two sees the other. */
bool recording_callback_enter(void) {
    if (!counting) return true;
    __atomic_add_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&detaching, __ATOMIC_SEQ_CST)) return true;
    __atomic_sub_fetch(&in_flight, 1, __ATOMIC_RELEASE);
    return false;
}

void recording_callback_leave(void) {
    if (counting) __atomic_sub_fetch(&in_flight, 1, __ATOMIC_RELEASE);
}

static bool callbacks_left(void) {
    uint64_t until = monotonic_ns() + LEAVE_WAIT_NS;
    while (__atomic_load_n(&in_flight, __ATOMIC_SEQ_CST)) {
        if (monotonic_ns() > until) return false;
        struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
    }
    return true;
}

/* The driver calls the wait needs, looked up in libcuda (the runtime loads
 * it with RTLD_LOCAL, so look in it first). The _v2 names are the ones
 * cuda.h's macros give. */
typedef struct {
    CUresult (*ctx_synchronize)(void);
    CUresult (*device_count)(int *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_state)(CUdevice, unsigned int *, int *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*primary_release)(CUdevice);
    CUresult (*push)(CUcontext);
    CUresult (*pop)(CUcontext *);
} DriverCalls;

static void *driver_symbol(void *driver, const char *name) {
    void *f = driver ? dlsym(driver, name) : NULL;
    return f ? f : dlsym(RTLD_DEFAULT, name);
}

/* Waits for the calling thread's context, then for the primary context of
 * every other device in use (a process that drives several GPUs), so that
 * the records of work still queued anywhere complete before the flush.
 * Only contexts already active are visited: retaining an inactive primary
 * context would create one (a cudaDeviceReset between the two calls makes
 * the retain create one, which the release then tears down: time lost, no
 * harm). (cuptiFinalize waits for every context too, but after the flush.)
 * The caller holds no GIL (python_sites.c). A synchronize is not allowed
 * while another thread captures a graph in global mode (docs/profiling.md). */
static void wait_for_the_device(void) {
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    DriverCalls cu;
    *(void **)&cu.ctx_synchronize = driver_symbol(driver, "cuCtxSynchronize");
    *(void **)&cu.device_count = driver_symbol(driver, "cuDeviceGetCount");
    *(void **)&cu.device_get = driver_symbol(driver, "cuDeviceGet");
    *(void **)&cu.primary_state = driver_symbol(driver, "cuDevicePrimaryCtxGetState");
    *(void **)&cu.primary_retain = driver_symbol(driver, "cuDevicePrimaryCtxRetain");
    *(void **)&cu.primary_release = driver_symbol(driver, "cuDevicePrimaryCtxRelease_v2");
    *(void **)&cu.push = driver_symbol(driver, "cuCtxPushCurrent_v2");
    *(void **)&cu.pop = driver_symbol(driver, "cuCtxPopCurrent_v2");
    if (cu.ctx_synchronize) cu.ctx_synchronize();
    int devices = 0;
    bool walk = cu.ctx_synchronize && cu.device_count && cu.device_get && cu.primary_state && cu.primary_retain &&
                cu.primary_release && cu.push && cu.pop && cu.device_count(&devices) == CUDA_SUCCESS;
    for (int i = 0; walk && i < devices; i++) {
        CUdevice device;
        unsigned int flags = 0;
        int active = 0;
        CUcontext ctx = NULL, popped = NULL;
        if (cu.device_get(&device, i) != CUDA_SUCCESS ||
            cu.primary_state(device, &flags, &active) != CUDA_SUCCESS || !active)
            continue;
        if (cu.primary_retain(&ctx, device) != CUDA_SUCCESS) continue;
        if (cu.push(ctx) == CUDA_SUCCESS) {
            cu.ctx_synchronize();
            cu.pop(&popped);
        }
        cu.primary_release(device);
    }
    if (driver) dlclose(driver);
}

bool recording_window_detach(void) {
    if (recording_detached()) return recording_window_finished();
    __atomic_store_n(&detaching, true, __ATOMIC_SEQ_CST);
    cuptiEnableAllDomains(0, subscriber);
    /* a callback that never leaves: CUPTI stays attached (with no callback
     * of ours on), rather than torn down under it */
    if (!callbacks_left()) return false;
    wait_for_the_device();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    api_times_flush_all(); /* their names are CUPTI's strings */
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
    cuptiUnsubscribe(subscriber);
    cuptiFinalize();
    detached_ns = monotonic_ns();
    __atomic_store_n(&detached, true, __ATOMIC_RELEASE);
    return true;
}

size_t recording_window_dropped(void) { return dropped; }

uint64_t recording_window_wall_ns(void) { return detached_ns - started_ns; }
