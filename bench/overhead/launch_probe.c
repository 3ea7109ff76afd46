/* What each CUPTI state costs one cuLaunchKernel call, in one process: an
 * empty kernel launched 10 x 1000 times per state (plain; kernel activity
 * on; off again; a launch callback on, with and without activity; dormant;
 * after cuptiFinalize), the host time per launch printed per state; "cycles"
 * interleaves the states and times attaching and detaching, "in-callback"
 * tries the detach inside a launch's exit callback.
 *
 * Written to test one explanation of RESULTS.md's "Where pytorch-cifar's
 * profiler cost lies": that launches keep paying for kernel tracing after
 * cuptiActivityDisable, which would hide that cost from the in-process
 * alternation's dormant blocks. First run 2026-12-05 (RESULTS.md, "The
 * profiler's cost across processes, 2026-12-05"). Build here, carry, run
 * there as `launch_probe [activity-first|callbacks-first] [LAUNCHES]`:
 *
 *   gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I/usr/local/cuda/include \
 *       bench/overhead/launch_probe.c -o .carry/launch_probe -L/usr/local/cuda/lib64 -lcupti \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -Wl,-rpath,/usr/local/cuda/lib64
 */
#include <cuda.h>
#include <cupti.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry empty()\n{\n ret;\n}\n";
static CUfunction fn;
static CUstream st;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }

static int per_rep = 1000;

static void phase(const char *name) {
    double best = 1e30, total = 0;
    for (int rep = 0; rep < 10; rep++) {
        double t0 = now();
        for (int i = 0; i < per_rep; i++) cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL);
        double t = (now() - t0) / per_rep;
        cuStreamSynchronize(st);
        total += t;
        if (t < best) best = t;
    }
    printf("%-44s best %6.2f us  mean %6.2f us per launch\n", name, best / 1e3, total / 10 / 1e3);
}

static long kernel_records; /* kernel records delivered, to show tracing still works after a detach */

static void CUPTIAPI req(uint8_t **b, size_t *s, size_t *m) { *b = aligned_alloc(8, 8 << 20); *s = 8 << 20; *m = 0; }
static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid) {
    (void)c; (void)s; (void)size;
    CUpti_Activity *r = NULL;
    while (valid && cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) kernel_records++;
    free(b);
}
static void CUPTIAPI cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data) { (void)u; (void)d; (void)id; (void)data; }

/* ---- "cycles": the states interleaved, so that drift over the process's
 * life (plain launches differ by 40% between processes and move within one)
 * falls on all of them alike. Each round: plain (nothing attached), then
 * subscribed with a launch callback and kernel tracing on, then tracing off
 * again (the residue), then cuptiFinalize and a fresh subscription with the
 * launch callback only (what a profiler that detaches between its traced
 * windows would leave on), then unsubscribed. The attach and the detach are
 * timed, the detach once with the queue empty and once behind 1000 queued
 * launches (cuptiFinalize synchronizes every context). */
static double block(void) { /* host ns per launch over per_rep launches, then drained */
    double t0 = now();
    for (int i = 0; i < per_rep; i++) cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL);
    double t = (now() - t0) / per_rep;
    cuStreamSynchronize(st);
    return t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define ROUNDS 20
enum { PLAIN, TRACED, RESIDUE, REATTACHED, STATES };
static const char *const state_name[STATES] = {"plain (nothing attached)", "callback + kernel tracing on",
                                                "callback, tracing off again (residue)",
                                                "callback only, after cuptiFinalize"};

static CUpti_SubscriberHandle attach_callback(void) {
    CUpti_SubscriberHandle sub;
    cuptiSubscribe(&sub, cb, NULL);
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    return sub;
}

static void cycles(void) {
    double per[STATES][ROUNDS], attach[ROUNDS], detach_empty[ROUNDS], detach_queued[ROUNDS], enable[ROUNDS];
    block();
    for (int r = 0; r < ROUNDS; r++) {
        per[PLAIN][r] = block();
        double t0 = now();
        CUpti_SubscriberHandle sub = attach_callback();
        cuptiActivityRegisterCallbacks(req, done);
        attach[r] = now() - t0;
        t0 = now();
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        enable[r] = now() - t0;
        per[TRACED][r] = block();
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        per[RESIDUE][r] = block();
        /* half the rounds detach behind a full queue */
        bool queued = r % 2;
        if (queued)
            for (int i = 0; i < 1000; i++) cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL);
        t0 = now();
        cuptiUnsubscribe(sub);
        cuptiActivityFlushAll(1);
        cuptiFinalize();
        (queued ? detach_queued : detach_empty)[r / 2] = now() - t0;
        sub = attach_callback();
        per[REATTACHED][r] = block();
        cuptiUnsubscribe(sub);
    }
    for (int s = 0; s < STATES; s++) {
        double v[ROUNDS];
        memcpy(v, per[s], sizeof v);
        double lo = v[0], hi = v[0];
        for (int r = 0; r < ROUNDS; r++) lo = v[r] < lo ? v[r] : lo, hi = v[r] > hi ? v[r] : hi;
        printf("%-40s median %6.2f us per launch (rounds %.2f..%.2f)\n", state_name[s], median(v, ROUNDS) / 1e3,
               lo / 1e3, hi / 1e3);
    }
    double d[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) d[r] = per[RESIDUE][r] - per[REATTACHED][r];
    printf("%-40s median %+6.2f us per launch\n", "residue minus re-attached, same round", median(d, ROUNDS) / 1e3);
    for (int r = 0; r < ROUNDS; r++) d[r] = per[REATTACHED][r] - per[PLAIN][r];
    printf("%-40s median %+6.2f us per launch\n", "re-attached minus plain, same round", median(d, ROUNDS) / 1e3);
    printf("%-40s median %8.1f us\n", "attach (subscribe, callback, buffers)", median(attach, ROUNDS) / 1e3);
    printf("%-40s median %8.1f us\n", "cuptiActivityEnable(kernels)", median(enable, ROUNDS) / 1e3);
    printf("%-40s median %8.1f us\n", "detach, queue empty", median(detach_empty, ROUNDS / 2) / 1e3);
    printf("%-40s median %8.1f us\n", "detach behind 1000 queued launches", median(detach_queued, ROUNDS / 2) / 1e3);
    printf("kernel records delivered: %ld (of %d traced launches)\n", kernel_records, ROUNDS * per_rep);
}

/* ---- "in-callback": the detach that CUPTI's documentation recommends (at
 * an API's exit, inside the callback), followed in the same callback by a
 * fresh subscription, as a profiler would do it at the end of a traced
 * window; then tracing is turned on again from a later launch's callback.
 * Shows whether that sequence works (no hang: an alarm ends the probe) and
 * whether records still come. */
static volatile int detach_now, enable_now;
static CUpti_SubscriberHandle live;
static void CUPTIAPI detaching_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data);

static void subscribe_detaching(void) {
    cuptiSubscribe(&live, detaching_cb, NULL);
    cuptiEnableCallback(1, live, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    cuptiActivityRegisterCallbacks(req, done);
}

static void CUPTIAPI detaching_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data) {
    (void)u; (void)d; (void)id;
    const CUpti_CallbackData *info = data;
    if (info->callbackSite != CUPTI_API_EXIT) return;
    if (enable_now) {
        enable_now = 0;
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    } else if (detach_now) {
        detach_now = 0;
        cuptiActivityFlushAll(1);
        CUptiResult f = cuptiFinalize();
        subscribe_detaching();
        if (f != CUPTI_SUCCESS) printf("cuptiFinalize in the callback: error %d\n", (int)f);
    }
}

static void in_callback(void) {
    alarm(60);
    subscribe_detaching();
    enable_now = 1;
    for (int r = 0; r < ROUNDS; r++) {
        long before = kernel_records;
        double traced = block();
        detach_now = 1;
        double t0 = now();
        cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL); /* its exit detaches */
        double detach = now() - t0;
        double after = block();
        cuptiActivityFlushAll(1);
        printf("round %2d: traced %.2f us, detach in callback %.1f us, after %.2f us per launch, records %ld\n", r,
               traced / 1e3, detach / 1e3, after / 1e3, kernel_records - before);
        enable_now = 1;
    }
    alarm(0);
}

/* ORDER "activity-first" (the default) traces kernels before any callback is
 * on; "callbacks-first" turns a launch callback on and off before any
 * activity, to tell what subscribing costs from what tracing leaves behind.
 * LAUNCHES: launches per repetition (1000). */
int main(int argc, char **argv) {
    bool callbacks_first = argc > 1 && strcmp(argv[1], "callbacks-first") == 0;
    if (argc > 2) per_rep = atoi(argv[2]) > 0 ? atoi(argv[2]) : 1000;
    CUdevice dev; CUcontext ctx; CUmodule mod;
    cuInit(0); cuDeviceGet(&dev, 0); cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);
    if (cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&fn, mod, "empty")) { puts("module failed"); return 1; }
    cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
    if (argc > 1 && strcmp(argv[1], "cycles") == 0) {
        cycles();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "in-callback") == 0) {
        in_callback();
        return 0;
    }
    phase("warm-up");
    phase("A plain");
    if (callbacks_first) {
        CUpti_SubscriberHandle sub;
        cuptiSubscribe(&sub, cb, NULL);
        phase("S subscribed, no callback on");
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
        phase("D launch callback on (empty), no activity ever");
        cuptiEnableCallback(0, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
        phase("G0 callback off again, no activity ever");
        cuptiActivityRegisterCallbacks(req, done);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        phase("B kernel activity on (subscribed)");
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        phase("C kernel activity off again");
        cuptiUnsubscribe(sub);
        cuptiActivityFlushAll(1);
        cuptiFinalize();
        phase("H after cuptiFinalize");
        return 0;
    }
    cuptiActivityRegisterCallbacks(req, done);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    phase("B kernel activity on");
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    phase("C kernel activity off again");
    cuptiActivityFlushAll(0);
    phase("C2 off, after a flush");
    CUpti_SubscriberHandle sub;
    cuptiSubscribe(&sub, cb, NULL);
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    phase("D launch callback on (empty), no activity");
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    phase("E launch callback on, kernel activity on");
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    phase("F launch callback on, activity off again");
    cuptiEnableCallback(0, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    phase("G callback off, activity off (dormant)");
    cuptiUnsubscribe(sub);
    cuptiActivityFlushAll(1);
    cuptiFinalize();
    phase("H after cuptiFinalize");
    return 0;
}
