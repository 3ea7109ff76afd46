/* What each CUPTI state costs one cuLaunchKernel call, in one process: an
 * empty kernel launched 10 x 1000 times per state (plain; kernel activity
 * on; off again; a launch callback on, with and without activity; dormant;
 * after cuptiFinalize), the host time per launch printed per state.
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

static void CUPTIAPI req(uint8_t **b, size_t *s, size_t *m) { *b = aligned_alloc(8, 8 << 20); *s = 8 << 20; *m = 0; }
static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid) { (void)c; (void)s; (void)size; (void)valid; free(b); }
static void CUPTIAPI cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data) { (void)u; (void)d; (void)id; (void)data; }

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
