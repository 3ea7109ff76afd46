/* Training steps on a process's device timeline: the ends of its optimizer
 * steps split the run into phases (ProfSteps, ProfPhase in profile.h), so
 * that time spent starting up, warming up, evaluating or saving between
 * steps is told apart from the steady steps, whose idle time a change to the
 * training loop can recover.
 *
 * A step interval is the time from one step end to the next (with a stride
 * above 1, from one kept mark to the next, stride steps). The median
 * interval sets the pace; an interval longer than 1.5x it is slow. Slow
 * intervals before the first steady one are the warm-up, later ones are
 * slow steps: the step plus whatever ran between two steps (evaluation,
 * checkpoints, logging). Pure C over profile.h. */
#ifndef ADVISE_STEP_PHASES_H
#define ADVISE_STEP_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"

#define STEP_SLOW_RATIO 1.5

typedef struct {
    uint64_t *marks;      /* step ends, ascending (a sorted copy) */
    size_t count;
    uint32_t stride;      /* steps from one mark to the next (>= 1) */
    uint64_t total_steps; /* steps seen, kept or not */
    uint64_t median;      /* the median interval; 0 with fewer than 2 marks */
    uint8_t *phase;       /* ProfPhase of interval i (marks[i] to marks[i + 1]) */
    uint64_t *steady_before; /* the steady steps' time from marks[0] to marks[i] */
} StepTimeline;

/* From marks (any order; copied). False when memory runs out or there are
 * no marks (t is then empty, and phase_at answers unknown). */
bool step_timeline_build(StepTimeline *t, const uint64_t *marks, size_t count, uint32_t stride, uint64_t total_steps);
void step_timeline_free(StepTimeline *t);

/* The phase at an instant on the marks' clock. */
ProfPhase step_timeline_phase_at(const StepTimeline *t, uint64_t when);

/* How much of [from, to) lay in steady steps (log time in the marks). */
uint64_t step_timeline_steady_ns(const StepTimeline *t, uint64_t from, uint64_t to);

/* Calls range(ctx, phase, from, to) for each stretch of [first, last) in
 * time order: the first phase up to the first mark, each interval between
 * two marks, and the time after the last mark. Empty stretches are left out. */
void step_timeline_ranges(const StepTimeline *t, uint64_t first, uint64_t last,
                          void (*range)(void *ctx, ProfPhase phase, uint64_t from, uint64_t to), void *ctx);

/* The process's figures, first and last being its first and last device
 * activity on the same clock. */
void step_timeline_summary(const StepTimeline *t, uint64_t first, uint64_t last, ProfSteps *out);

#endif
