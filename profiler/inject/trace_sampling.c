/* Which kernel launches CUPTI traces, and what the profiler costs per launch.
 *
 * Tracing a kernel's start and end (CUPTI's activity API) costs the launching
 * thread a few microseconds per launch on Hopper, which no call-site work can
 * remove: on a launch-bound training loop it was most of the profiler's
 * overhead (bench/overhead). So after a prefix traced in full (short runs and
 * a loop's warm-up stay exact), device activity (kernels, copies, memsets) is
 * traced in windows: one window of about WINDOW launches in every `every`,
 * the window's length varied so that it does not lock onto a loop's period.
 * The callbacks still see every launch, so sites and launch counts stay
 * exact; each traced record carries its window's tag, and the aggregator
 * counts a record of a sampled window `every` times (an unbiased estimate of
 * totals) and measures idle gaps only between records of one window.
 *
 * Calibration: the launching thread's time inside launch calls is summed
 * apart for traced and untraced launches (their difference is what tracing
 * adds per launch), and the callbacks' own time is summed too, so that rules
 * can take the profiler's cost out of the idle time they turn into gains.
 *
 * CUDA graphs end the sampling: from the first graph launch on, device
 * activity stays traced in full, under a tag of its own (FULL_TAG, weight 1:
 * the prefix's tag 0 again would let a device whose last record came from
 * the prefix measure one idle gap over the whole sampled stretch), and the
 * dormant alternation no longer turns it off. CUPTI's records of
 * a graph's kernels that were still queued or running when kernel tracing was
 * turned off carry an end time from when it was turned back on: on the H200
 * (2026-12-03, a graphed LSTM) 141 records of two graph launches lasted
 * ~226 ms each instead of microseconds, and the profile's kernel time came to
 * 52 times the run's length. A graph's launch is one call for many kernels,
 * so tracing it in full costs the launching thread little. */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/inject/inject.h"

#define PREFIX_LAUNCHES 8192u   /* traced in full before sampling starts */
#define WINDOW 256u             /* launches per window, on average */
#define DEFAULT_EVERY 8u
#define MAX_EVERY 1024u
#define WINDOW_TAGS 4094u       /* sampled windows' tags: 1..4094 (12 bits beside the site, inject_main.c) */
#define FULL_TAG 4095u          /* traced in full after a graph launch */

static const CUpti_ActivityKind device_kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                  CUPTI_ACTIVITY_KIND_MEMSET};

static uint32_t every = 1;          /* 1: trace everything */
static bool kernels_traced, copies_traced, memsets_traced; /* as ADVISE_PROFILE_ACTIVITY says */
static pthread_mutex_t toggle_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t launches;           /* every launch seen, atomically */
static uint64_t window_end;         /* launches at which the current window ends (under toggle_lock) */
static uint64_t window_index;       /* windows since the prefix, under toggle_lock */
static uint32_t current_tag;        /* 0: the prefix; else the traced window's tag; atomically */
static bool tracing = true;         /* device activity enabled (under toggle_lock) */
static bool dormant;                /* trace_sampling_set_dormant: nothing traced, whatever the window (under toggle_lock) */
static bool graphs_seen;            /* a CUDA graph was launched: traced in full from then on (set under toggle_lock) */
static uint64_t rng = 0x2545F4914F6CDD1Dull;

/* calibration sums, atomically */
static uint64_t traced_launches, traced_api_ns, untraced_launches, untraced_api_ns, self_ns, timed_launches;

uint32_t trace_sampling_weight(uint32_t window) { return window && window != FULL_TAG ? every : 1; }

void trace_sampling_start(bool kernels, bool copies, bool memsets) {
    kernels_traced = kernels;
    copies_traced = copies;
    memsets_traced = memsets;
    const char *mode = getenv("ADVISE_PROFILE_TRACE");
    if (mode && strcmp(mode, "all") == 0) return;
    every = DEFAULT_EVERY;
    uint64_t prefix = PREFIX_LAUNCHES;
    /* sample:K or sample:K:PREFIX (tests and benchmarks) */
    if (mode && strncmp(mode, "sample:", 7) == 0) {
        char *end;
        unsigned long k = strtoul(mode + 7, &end, 10);
        unsigned long long p = prefix;
        if (*end == ':') p = strtoull(end + 1, &end, 10);
        if (!*end && k >= 1 && k <= MAX_EVERY && p <= (1ull << 40)) {
            every = (uint32_t)k;
            prefix = p;
        }
    }
    window_end = prefix;
}

/* CUPTI's device activity kinds that ADVISE_PROFILE_ACTIVITY asked for, on or off */
static void enable_device_kinds(bool on) {
    for (size_t i = 0; i < sizeof device_kinds / sizeof *device_kinds; i++) {
        if ((device_kinds[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !kernels_traced) ||
            (device_kinds[i] == CUPTI_ACTIVITY_KIND_MEMCPY && !copies_traced) ||
            (device_kinds[i] == CUPTI_ACTIVITY_KIND_MEMSET && !memsets_traced))
            continue;
        if (on) cuptiActivityEnable(device_kinds[i]);
        else cuptiActivityDisable(device_kinds[i]);
    }
}

/* Called under toggle_lock. */
static void set_device_activity(bool on) {
    if (!dormant) enable_device_kinds(on);
    __atomic_store_n(&tracing, on, __ATOMIC_RELEASE);
}

/* Dormant (inject_set_dormant): no device work traced; awake again, the
 * window's own state comes back. A launch callback already running on
 * another thread when the callbacks went off can still move the window:
 * it then changes `tracing` only, under the same lock. */
void trace_sampling_set_dormant(bool now_dormant) {
    pthread_mutex_lock(&toggle_lock);
    /* after a graph launch, turning kernel tracing off would give the graphs
     * in flight wrong end times again: dormant blocks are traced too */
    dormant = now_dormant && !graphs_seen;
    enable_device_kinds(!dormant && __atomic_load_n(&tracing, __ATOMIC_ACQUIRE));
    pthread_mutex_unlock(&toggle_lock);
}

/* xorshift64: the windows' lengths, reproducible from run to run */
static uint64_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Moves to the window that holds launch n (called under toggle_lock). A cycle
 * is one traced window of WINDOW/2..3*WINDOW/2 launches and an untraced
 * stretch (every-1) times as long. */
static void advance(uint64_t n) {
    while (n >= window_end) {
        uint64_t cycle = window_index / 2;
        bool traced_window = window_index % 2 == 0;
        static uint64_t length;
        if (traced_window) length = WINDOW / 2 + next_random() % WINDOW;
        window_end += traced_window ? length : length * (every - 1);
        window_index++;
        if (traced_window != tracing) set_device_activity(traced_window);
        /* tags 1..WINDOW_TAGS, never 0 (the prefix): tags of nearby windows differ */
        __atomic_store_n(&current_tag, traced_window ? (uint32_t)(cycle % WINDOW_TAGS) + 1u : 0u, __ATOMIC_RELEASE);
    }
}

/* The first graph launch: tracing goes on for good (called under toggle_lock). */
static void trace_in_full(void) {
    __atomic_store_n(&graphs_seen, true, __ATOMIC_RELEASE);
    __atomic_store_n(&window_end, UINT64_MAX, __ATOMIC_RELEASE);
    bool was_dormant = dormant; /* the alternation's dormant block: traced from now on too */
    dormant = false;
    if (!tracing || was_dormant) set_device_activity(true);
    __atomic_store_n(&current_tag, FULL_TAG, __ATOMIC_RELEASE);
}

uint32_t trace_sampling_on_launch(bool graph, bool *traced) {
    uint64_t n = __atomic_fetch_add(&launches, 1, __ATOMIC_RELAXED);
    if (every == 1) {
        *traced = true;
        return 0;
    }
    if (graph && !__atomic_load_n(&graphs_seen, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&toggle_lock);
        if (!graphs_seen) trace_in_full();
        pthread_mutex_unlock(&toggle_lock);
    }
    /* window_end only grows, so a stale read just takes the lock */
    if (n >= __atomic_load_n(&window_end, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&toggle_lock);
        advance(n);
        pthread_mutex_unlock(&toggle_lock);
    }
    bool on = __atomic_load_n(&tracing, __ATOMIC_ACQUIRE);
    *traced = on;
    return on ? __atomic_load_n(&current_tag, __ATOMIC_ACQUIRE) : 0;
}

void trace_sampling_launch_time(bool traced, uint64_t api_ns, uint64_t callback_ns) {
    __atomic_fetch_add(traced ? &traced_launches : &untraced_launches, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(traced ? &traced_api_ns : &untraced_api_ns, api_ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&self_ns, callback_ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&timed_launches, 1, __ATOMIC_RELAXED);
}

void trace_sampling_fill(ProfCalibration *c) {
    c->trace_every = every;
    c->launches = __atomic_load_n(&launches, __ATOMIC_RELAXED);
    c->traced_launches = __atomic_load_n(&traced_launches, __ATOMIC_RELAXED);
    c->traced_launch_api_ns = __atomic_load_n(&traced_api_ns, __ATOMIC_RELAXED);
    c->untraced_launches = __atomic_load_n(&untraced_launches, __ATOMIC_RELAXED);
    c->untraced_launch_api_ns = __atomic_load_n(&untraced_api_ns, __ATOMIC_RELAXED);
    c->callback_ns = __atomic_load_n(&self_ns, __ATOMIC_RELAXED);
}
