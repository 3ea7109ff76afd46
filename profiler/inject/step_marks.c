/* The ends of the process's optimizer steps on the device work's clock
 * (processes[].steps in FORMAT.md): python_sites.c registers a torch.optim
 * step post-hook that calls step_marks_record, and the exit hands the marks
 * to the aggregator. Bounded: the first STEP_MARKS_MAX ends, then every
 * other one kept, then every fourth, and so on. */
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>

#include "profiler/inject/inject.h"

#define STEP_MARKS_MAX 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t marks[STEP_MARKS_MAX];
static size_t kept;
static uint32_t stride = 1;
static uint64_t seen;

/* ADVISE_PROFILE_ALTERNATE=K (bench/overhead/step.py --alternate): the
 * profiler sleeps through every other block of K optimizer steps (steps
 * K..2K-1, 3K..4K-1, ...), so that one process times steps with and without
 * its per-launch cost and the difference is free of the spread between
 * processes. What stays on while dormant: CUPTI itself and the Python hook
 * that follows user frames. 0: off. */
static uint64_t alternate_every(void) {
    static int read;
    static uint64_t every;
    if (!read) {
        read = 1;
        const char *v = getenv("ADVISE_PROFILE_ALTERNATE");
        every = v ? strtoull(v, NULL, 10) : 0;
    }
    return every;
}

void step_marks_record(void) {
    if (!recording_callback_enter()) return; /* --steps: the steps after the window are not recorded */
    uint64_t now = 0;
    if (cuptiGetTimestamp(&now) != CUPTI_SUCCESS) {
        recording_callback_leave();
        return;
    }
    pthread_mutex_lock(&lock);
    if (seen % stride == 0 && kept == STEP_MARKS_MAX) { /* full: keep every other one, twice as far apart */
        for (size_t i = 0; i < STEP_MARKS_MAX / 2; i++) marks[i] = marks[2 * i];
        kept = STEP_MARKS_MAX / 2;
        stride *= 2;
    }
    if (seen % stride == 0) marks[kept++] = now;
    seen++;
    uint64_t every = alternate_every();
    bool toggle = every && seen % every == 0;
    bool dormant = every && (seen / every) % 2 == 1;
    pthread_mutex_unlock(&lock);
    if (toggle) inject_set_dormant(dormant);
    recording_callback_leave();
}

uint64_t step_marks_seen(void) {
    pthread_mutex_lock(&lock);
    uint64_t n = seen;
    pthread_mutex_unlock(&lock);
    return n;
}

void step_marks_flush(Aggregator *agg) {
    pthread_mutex_lock(&lock);
    if (kept) agg_steps(agg, marks, kept, stride, seen);
    pthread_mutex_unlock(&lock);
}
