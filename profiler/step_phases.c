#include "profiler/step_phases.h"

#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

bool step_timeline_build(StepTimeline *t, const uint64_t *marks, size_t count, uint32_t stride, uint64_t total_steps) {
    memset(t, 0, sizeof *t);
    if (!count) return false;
    t->marks = malloc(count * sizeof *t->marks);
    t->phase = malloc(count * sizeof *t->phase); /* count - 1 intervals; one spare keeps count 1 simple */
    t->steady_before = malloc(count * sizeof *t->steady_before);
    uint64_t *sorted = count > 1 ? malloc((count - 1) * sizeof *sorted) : NULL;
    if (!t->marks || !t->phase || !t->steady_before || (count > 1 && !sorted)) {
        free(sorted);
        step_timeline_free(t);
        return false;
    }
    memcpy(t->marks, marks, count * sizeof *marks);
    qsort(t->marks, count, sizeof *t->marks, by_value);
    t->count = count;
    t->stride = stride ? stride : 1;
    t->total_steps = total_steps > count ? total_steps : count;
    for (size_t i = 0; i + 1 < count; i++) sorted[i] = t->marks[i + 1] - t->marks[i];
    if (count > 1) {
        qsort(sorted, count - 1, sizeof *sorted, by_value);
        t->median = sorted[(count - 2) / 2];
    }
    free(sorted);
    /* slow: longer than 1.5x the median; the slow run before the first steady interval is the warm-up */
    bool warming = true;
    for (size_t i = 0; i + 1 < count; i++) {
        uint64_t d = t->marks[i + 1] - t->marks[i];
        bool slow = (double)d > STEP_SLOW_RATIO * (double)t->median;
        if (!slow) warming = false;
        t->phase[i] = (uint8_t)(!slow ? PROF_PHASE_STEADY : warming ? PROF_PHASE_WARMUP : PROF_PHASE_SLOW);
    }
    t->steady_before[0] = 0;
    for (size_t i = 0; i + 1 < count; i++)
        t->steady_before[i + 1] =
            t->steady_before[i] + (t->phase[i] == PROF_PHASE_STEADY ? t->marks[i + 1] - t->marks[i] : 0);
    return true;
}

static size_t interval_at(const StepTimeline *t, uint64_t when) {
    size_t lo = 0, hi = t->count - 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->marks[mid] <= when) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* the steady steps' time from marks[0] to `when` */
static uint64_t steady_until(const StepTimeline *t, uint64_t when) {
    if (when <= t->marks[0]) return 0;
    if (when >= t->marks[t->count - 1]) return t->steady_before[t->count - 1];
    size_t i = interval_at(t, when);
    return t->steady_before[i] + (t->phase[i] == PROF_PHASE_STEADY ? when - t->marks[i] : 0);
}

uint64_t step_timeline_steady_ns(const StepTimeline *t, uint64_t from, uint64_t to) {
    if (!t->count || to <= from) return 0;
    return steady_until(t, to) - steady_until(t, from);
}

void step_timeline_free(StepTimeline *t) {
    free(t->marks);
    free(t->phase);
    free(t->steady_before);
    memset(t, 0, sizeof *t);
}

/* the interval i with marks[i] <= when < marks[i + 1]; when must lie in [marks[0], marks[count - 1]) */
ProfPhase step_timeline_phase_at(const StepTimeline *t, uint64_t when) {
    if (!t->count) return PROF_PHASE_UNKNOWN;
    if (when < t->marks[0]) return PROF_PHASE_FIRST;
    if (when >= t->marks[t->count - 1]) return PROF_PHASE_AFTER;
    return (ProfPhase)t->phase[interval_at(t, when)];
}

void step_timeline_summary(const StepTimeline *t, uint64_t first, uint64_t last, ProfSteps *out) {
    memset(out, 0, sizeof *out);
    if (!t->count) return;
    out->count = t->total_steps;
    out->median_ns = t->median / t->stride;
    out->first_ns = t->marks[0] > first ? t->marks[0] - first : 0;
    out->after_ns = last > t->marks[t->count - 1] ? last - t->marks[t->count - 1] : 0;
    for (size_t i = 0; i + 1 < t->count; i++) {
        uint64_t d = t->marks[i + 1] - t->marks[i];
        switch ((ProfPhase)t->phase[i]) {
        case PROF_PHASE_WARMUP: out->warmup_steps += t->stride; out->warmup_ns += d; break;
        case PROF_PHASE_SLOW: out->slow_steps += t->stride; out->slow_ns += d; break;
        default: out->steady_steps += t->stride; out->steady_ns += d; break;
        }
    }
}

void step_timeline_ranges(const StepTimeline *t, uint64_t first, uint64_t last,
                          void (*range)(void *ctx, ProfPhase phase, uint64_t from, uint64_t to), void *ctx) {
    if (!t->count || last <= first) return;
    if (t->marks[0] > first) range(ctx, PROF_PHASE_FIRST, first, t->marks[0] < last ? t->marks[0] : last);
    for (size_t i = 0; i + 1 < t->count; i++) {
        uint64_t from = t->marks[i] > first ? t->marks[i] : first, to = t->marks[i + 1] < last ? t->marks[i + 1] : last;
        if (to > from) range(ctx, (ProfPhase)t->phase[i], from, to);
    }
    uint64_t end = t->marks[t->count - 1] > first ? t->marks[t->count - 1] : first;
    if (last > end) range(ctx, PROF_PHASE_AFTER, end, last);
}
