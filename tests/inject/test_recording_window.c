/* `advise profile --steps N` (profiler/inject/recording_window.c and
 * step_marks.c) against stand-ins for CUPTI and the driver: the Nth
 * optimizer step detaches the profiler once, in an order that loses no
 * record (callbacks off, the device waited for, the buffers flushed, then
 * CUPTI finalized), and nothing calls CUPTI afterwards, since any call
 * would attach it again. Built only where cupti.h is found. */
#include <criterion/criterion.h>
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "profiler/inject/inject.h"

static char calls[512]; /* the CUPTI and driver calls, in order */
static int timestamps;  /* cuptiGetTimestamp calls */
static size_t kept_marks;

static void note(const char *call) {
    strncat(calls, call, sizeof calls - strlen(calls) - 2);
    strcat(calls, " ");
}

CUptiResult cuptiGetTimestamp(uint64_t *t) {
    *t = 1000u * (uint64_t)++timestamps;
    return CUPTI_SUCCESS;
}
CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle s) {
    (void)s;
    note(enable ? "enable-all" : "callbacks-off");
    return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    note(flag == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED ? "flush-forced" : "flush");
    return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t stream, size_t *dropped) {
    (void)c;
    (void)stream;
    note("dropped");
    *dropped = 7;
    return CUPTI_SUCCESS;
}
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) {
    (void)s;
    note("unsubscribe");
    return CUPTI_SUCCESS;
}
CUptiResult cuptiFinalize(void) {
    note("finalize");
    return CUPTI_SUCCESS;
}
/* found by dlsym (the test is linked with its symbols exported) */
CUresult cuCtxSynchronize(void) {
    note("sync");
    return CUDA_SUCCESS;
}
/* the devices of the process: how many, and which have an active primary context */
static int device_count;
static unsigned active_devices; /* bit i: device i */
static int pushed = -1;         /* the device whose primary context is pushed */
CUresult cuDeviceGetCount(int *count) {
    *count = device_count;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    *device = ordinal;
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int *flags, int *active) {
    *flags = 0;
    *active = (active_devices >> device) & 1;
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device) {
    char word[32];
    snprintf(word, sizeof word, "retain%d", device);
    note(word);
    *ctx = (CUcontext)(intptr_t)(device + 1);
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    char word[32];
    snprintf(word, sizeof word, "release%d", device);
    note(word);
    return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    pushed = (int)(intptr_t)ctx - 1;
    note("push");
    return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
    *ctx = (CUcontext)(intptr_t)(pushed + 1);
    pushed = -1;
    note("pop");
    return CUDA_SUCCESS;
}
void inject_set_dormant(bool dormant) { note(dormant ? "dormant" : "awake"); }
void api_times_flush_all(void) { note("api-times"); }
void agg_steps(Aggregator *agg, const uint64_t *marks, size_t count, uint32_t stride, uint64_t total) {
    (void)agg;
    (void)marks;
    (void)stride;
    (void)total;
    kept_marks = count;
}

/* n steps as the torch.optim hook (python_sites.c) takes them */
static void steps(int n) {
    for (int i = 0; i < n; i++) {
        step_marks_record();
        if (recording_window_due(step_marks_seen())) recording_window_detach();
    }
}

#define DETACH "callbacks-off sync flush-forced api-times dropped unsubscribe finalize "

/* Each test runs in its own process (Criterion), so the modules' state starts fresh. */
Test(recording_window, without_steps_the_whole_run_is_recorded) {
    unsetenv("ADVISE_PROFILE_STEPS");
    recording_window_start(NULL, 0);
    steps(100);
    cr_assert_eq(recording_window_steps(), 0);
    cr_assert(!recording_detached());
    cr_assert_str_empty(calls, "no detach: %s", calls);
    cr_assert_eq(timestamps, 100, "every step is marked");
}

Test(recording_window, the_nth_step_detaches_once_in_an_order_that_loses_no_record) {
    setenv("ADVISE_PROFILE_STEPS", "3", 1);
    recording_window_start(NULL, 0);
    steps(2);
    cr_assert(!recording_detached(), "two steps of three: still recording");
    cr_assert_str_empty(calls);
    steps(1);
    cr_assert(recording_detached(), "the third step's end detaches");
    cr_assert_str_eq(calls, DETACH);
    cr_assert(recording_window_finished());
    cr_assert_eq(recording_window_dropped(), 7, "CUPTI's dropped records are read before the detach");
    steps(50);
    cr_assert_str_eq(calls, DETACH, "after the detach nothing calls CUPTI: %s", calls);
    cr_assert(!recording_callback_enter(), "a CUPTI callback after the detach does nothing");
    cr_assert_eq(timestamps, 3, "the steps after the window are not marked (%d clock reads)", timestamps);
    cr_assert_eq(step_marks_seen(), 3);
    step_marks_flush(NULL);
    cr_assert_eq(kept_marks, 3, "the profile holds the recorded steps");
}

Test(recording_window, every_device_in_use_is_waited_for_before_the_flush) {
    device_count = 3;
    active_devices = 0x5; /* devices 0 and 2 in use, device 1 never touched */
    setenv("ADVISE_PROFILE_STEPS", "1", 1);
    recording_window_start(NULL, 0);
    steps(1);
    cr_assert_str_eq(calls,
                     "callbacks-off sync retain0 push sync pop release0 retain2 push sync pop release2 "
                     "flush-forced api-times dropped unsubscribe finalize ",
                     "the current context, then each active primary context, before the flush; "
                     "no context is made for device 1: %s",
                     calls);
}

Test(recording_window, a_value_that_is_no_count_records_the_whole_run) {
    static const char *const bad[] = {"", "x", "3x", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("ADVISE_PROFILE_STEPS", bad[i], 1);
        recording_window_start(NULL, 0);
        cr_assert_eq(recording_window_steps(), 0, "'%s'", bad[i]);
    }
}

/* a callback still running on another thread when the detach begins: CUPTI
 * is torn down only after it has left */
static void *slow_callback(void *started) {
    cr_assert(recording_callback_enter());
    __atomic_store_n((bool *)started, true, __ATOMIC_RELEASE);
    struct timespec pause = {0, 50000000};
    nanosleep(&pause, NULL);
    note("callback-left");
    recording_callback_leave();
    return NULL;
}

Test(recording_window, the_detach_waits_for_callbacks_running_elsewhere) {
    setenv("ADVISE_PROFILE_STEPS", "1", 1);
    recording_window_start(NULL, 0);
    bool started = false;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, slow_callback, &started), 0);
    while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE)) sched_yield();
    steps(1);
    pthread_join(t, NULL);
    cr_assert_str_eq(calls, "callbacks-off callback-left sync flush-forced api-times dropped unsubscribe finalize ",
                     "%s", calls);
}

Test(recording_window, a_forked_child_never_detaches) {
    setenv("ADVISE_PROFILE_STEPS", "2", 1);
    recording_window_start(NULL, 0);
    recording_window_forget();
    steps(5);
    cr_assert(!recording_detached());
    cr_assert_str_empty(calls);
}
