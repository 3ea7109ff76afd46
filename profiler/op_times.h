/* When one operation's GPU work started, kept in a bounded histogram over
 * the operation's own span, so that once the run's training steps are known
 * (only when it ends) its calls can be split by step phase: a line whose
 * launches all came after the last optimizer step (a sampling loop, an
 * evaluation) is told apart from one that ran in every steady step, without
 * keeping every timestamp. The buckets start at the operation's first
 * start and their width doubles (neighbours merged) when its span outgrows
 * them: at most 1/OP_TIME_BUCKETS of its span is ever blurred. Pure C, no
 * allocation. */
#ifndef ADVISE_OP_TIMES_H
#define ADVISE_OP_TIMES_H

#include <stdbool.h>
#include <stdint.h>

#define OP_TIME_BUCKETS 128
#define OP_TIME_FIRST_WIDTH 65536ull /* ns: an operation that lasts 8 ms keeps its starts to 64 us */

typedef struct {
    uint64_t origin, width;           /* bucket i is [origin + i * width, + width) */
    uint64_t first, last;             /* the earliest and latest start seen */
    uint32_t used;                    /* buckets holding anything are below it */
    uint32_t calls[OP_TIME_BUCKETS];  /* weighted: a record of a sampled window stands for `weight` calls */
    float idle[OP_TIME_BUCKETS];      /* ns the GPU sat idle just before those calls' work (weighted) */
} OpTimes;

/* A start at `at` standing for `weight` calls (0 counts as 1). A start
 * before the first bucket that the buckets cannot reach counts in the first. */
void op_times_add(OpTimes *o, uint64_t at, uint32_t weight);

/* The GPU sat idle `ns` (already weighted) right before a start at `at`:
 * it waited for this call's work. */
void op_times_add_idle(OpTimes *o, uint64_t at, double ns);

/* The calls, each bucket's counted by the share of its time that
 * share(ctx, from, to) gives (in [0, 1]): the calls in a phase where share
 * answers how much of [from, to) lay in it. A bucket's time is taken
 * between the first and the last start seen, so that the ends of the span
 * are exact. */
double op_times_calls_in(const OpTimes *o, double (*share)(void *ctx, uint64_t from, uint64_t to), void *ctx);
/* ... and the idle time before them, likewise. */
double op_times_idle_in(const OpTimes *o, double (*share)(void *ctx, uint64_t from, uint64_t to), void *ctx);

#endif
