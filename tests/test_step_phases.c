/* Training steps split into phases (profiler/step_phases.c), and the
 * aggregator giving a process its steps and each idle gap its phase. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "profiler/aggregate.h"
#include "profiler/step_phases.h"

#define MS 1000000ull

/* A run whose first step ends at 1 s: two warm-up steps (100 and 60 ms), ten
 * steady 16 ms steps, one 500 ms step (an evaluation between two steps), ten
 * steady steps. Returns the number of marks written. */
static size_t training_marks(uint64_t *marks) {
    size_t n = 0;
    uint64_t t = 1000 * MS;
    marks[n++] = t;
    marks[n++] = t += 100 * MS;
    marks[n++] = t += 60 * MS;
    for (int i = 0; i < 10; i++) marks[n++] = t += 16 * MS;
    marks[n++] = t += 500 * MS;
    for (int i = 0; i < 10; i++) marks[n++] = t += 16 * MS;
    return n;
}

Test(step_phases, warmup_steady_and_slow_steps) {
    uint64_t marks[32];
    size_t n = training_marks(marks);
    /* out of order: a second thread's step can land first */
    uint64_t swap = marks[5];
    marks[5] = marks[6];
    marks[6] = swap;
    StepTimeline t;
    cr_assert(step_timeline_build(&t, marks, n, 1, n));
    cr_expect_eq(t.median, 16 * MS);
    cr_expect_eq(step_timeline_phase_at(&t, 10 * MS), PROF_PHASE_FIRST);
    cr_expect_eq(step_timeline_phase_at(&t, 1050 * MS), PROF_PHASE_WARMUP);
    cr_expect_eq(step_timeline_phase_at(&t, 1130 * MS), PROF_PHASE_WARMUP);
    cr_expect_eq(step_timeline_phase_at(&t, 1170 * MS), PROF_PHASE_STEADY);
    cr_expect_eq(step_timeline_phase_at(&t, 1400 * MS), PROF_PHASE_SLOW, "the evaluation");
    cr_expect_eq(step_timeline_phase_at(&t, 1830 * MS), PROF_PHASE_STEADY);
    cr_expect_eq(step_timeline_phase_at(&t, 1990 * MS), PROF_PHASE_AFTER);
    ProfSteps s;
    step_timeline_summary(&t, 200 * MS, 2000 * MS, &s);
    cr_expect_eq(s.count, 24);
    cr_expect_eq(s.median_ns, 16 * MS);
    cr_expect_eq(s.first_ns, 800 * MS);
    cr_expect_eq(s.warmup_steps, 2);
    cr_expect_eq(s.warmup_ns, 160 * MS);
    cr_expect_eq(s.steady_steps, 20);
    cr_expect_eq(s.steady_ns, 20 * 16 * MS);
    cr_expect_eq(s.slow_steps, 1);
    cr_expect_eq(s.slow_ns, 500 * MS);
    cr_expect_eq(s.after_ns, 2000 * MS - marks[n - 1]);
    step_timeline_free(&t);
}

Test(step_phases, kept_marks_stand_for_stride_steps) {
    uint64_t marks[8];
    for (size_t i = 0; i < 8; i++) marks[i] = (1 + i) * 64 * MS; /* every 4th of 16 ms steps */
    StepTimeline t;
    cr_assert(step_timeline_build(&t, marks, 8, 4, 30));
    ProfSteps s;
    step_timeline_summary(&t, 0, 600 * MS, &s);
    cr_expect_eq(s.count, 30);
    cr_expect_eq(s.median_ns, 16 * MS, "a step, not a kept interval");
    cr_expect_eq(s.steady_steps, 28);
    cr_expect_eq(s.warmup_steps + s.slow_steps, 0);
    step_timeline_free(&t);
}

Test(step_phases, one_step_and_none) {
    uint64_t mark = 500 * MS;
    StepTimeline t;
    cr_assert(step_timeline_build(&t, &mark, 1, 1, 1));
    cr_expect_eq(step_timeline_phase_at(&t, 100 * MS), PROF_PHASE_FIRST);
    cr_expect_eq(step_timeline_phase_at(&t, 600 * MS), PROF_PHASE_AFTER);
    ProfSteps s;
    step_timeline_summary(&t, 0, 700 * MS, &s);
    cr_expect_eq(s.count, 1);
    cr_expect_eq(s.first_ns, 500 * MS);
    cr_expect_eq(s.after_ns, 200 * MS);
    cr_expect_eq(s.steady_steps + s.warmup_steps + s.slow_steps, 0);
    step_timeline_free(&t);
    cr_expect_not(step_timeline_build(&t, NULL, 0, 1, 0));
    cr_expect_eq(step_timeline_phase_at(&t, 1), PROF_PHASE_UNKNOWN);
}

/* A device busy in each steady step with a 4 ms idle gap, and idle 400 ms in
 * the evaluation step: the gaps get their phases, the process its steps. */
Test(step_phases, the_aggregator_labels_gaps_by_phase) {
    Aggregator *agg = agg_new();
    cr_assert_not_null(agg);
    int fwd = agg_site(agg, "train.py", 20, NULL), eval = agg_site(agg, "train.py", 30, NULL);
    uint64_t marks[32];
    size_t n = training_marks(marks);
    /* kernels: one from 0 to the first step end, then in each interval [start + 4 ms, end) */
    AggKernel k = {.device = 0, .name = "gemm", .grid = {1, 1, 1}, .block = {256, 1, 1}, .site = fwd};
    k.start_ns = 0;
    k.end_ns = marks[0];
    agg_kernel(agg, &k);
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t d = marks[i + 1] - marks[i];
        k.site = d == 500 * MS ? eval : fwd;
        k.start_ns = marks[i] + (d == 500 * MS ? 400 * MS : 4 * MS);
        k.end_ns = marks[i + 1];
        agg_kernel(agg, &k);
    }
    agg_steps(agg, marks, n, 1, n);
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_not_null(p);
    cr_expect_eq(p->processes[0].steps.count, n);
    cr_expect_eq(p->processes[0].steps.slow_steps, 1);
    bool saw_slow = false, saw_steady = false;
    for (size_t g = 0; g < p->gap_count; g++) {
        const ProfGap *gap = &p->gaps[g];
        if (gap->duration_ns == 400 * MS) {
            cr_expect_eq(gap->phase, PROF_PHASE_SLOW);
            cr_expect_eq(gap->after_site, eval);
            saw_slow = true;
        } else if (gap->duration_ns == 4 * MS && gap->start_ns > marks[3]) {
            cr_expect_eq(gap->phase, PROF_PHASE_STEADY, "gap at %llu", (unsigned long long)gap->start_ns);
            saw_steady = true;
        }
    }
    cr_expect(saw_slow && saw_steady);
    profile_free(p);
    agg_free(agg);
}
