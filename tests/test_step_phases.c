/* Training steps split into phases (profiler/step_phases.c), and the
 * aggregator giving a process its steps and each idle gap its phase. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/aggregate.h"
#include "profiler/profile_json.h"
#include "profiler/step_phases.h"
#include "tests/cli_harness.h"

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
/* The run of training_marks() in agg: a kernel from line 20 from 0 to the
 * first step's end, then one in each interval [start + 4 ms, end), the
 * 500 ms one's from line 30 (the evaluation) in [start + 400 ms, end). */
static size_t training_run(Aggregator *agg, int *fwd, int *eval, uint64_t *marks) {
    *fwd = agg_site(agg, "train.py", 20, NULL);
    *eval = agg_site(agg, "train.py", 30, NULL);
    size_t n = training_marks(marks);
    AggKernel k = {.device = 0, .name = "gemm", .grid = {1, 1, 1}, .block = {256, 1, 1}, .site = *fwd};
    k.start_ns = 0;
    k.end_ns = marks[0];
    agg_kernel(agg, &k);
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t d = marks[i + 1] - marks[i];
        k.site = d == 500 * MS ? *eval : *fwd;
        k.start_ns = marks[i] + (d == 500 * MS ? 400 * MS : 4 * MS);
        k.end_ns = marks[i + 1];
        agg_kernel(agg, &k);
    }
    agg_steps(agg, marks, n, 1, n);
    return n;
}

Test(step_phases, the_aggregator_labels_gaps_by_phase) {
    Aggregator *agg = agg_new();
    cr_assert_not_null(agg);
    int fwd, eval;
    uint64_t marks[32];
    size_t n = training_run(agg, &fwd, &eval, marks);
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
    /* the idle time by phase: 4 ms in each of the 2 warm-up and 20 steady steps, 400 ms in the evaluation */
    const ProfSteps *s = &p->processes[0].steps;
    cr_assert(s->phase_idle_known);
    cr_expect_eq(s->idle_ns[PROF_PHASE_FIRST], 0);
    cr_expect_eq(s->idle_ns[PROF_PHASE_WARMUP], 8 * MS);
    cr_expect_eq(s->idle_ns[PROF_PHASE_STEADY], 80 * MS);
    cr_expect_eq(s->idle_ns[PROF_PHASE_SLOW], 400 * MS);
    cr_expect_eq(s->idle_ns[PROF_PHASE_AFTER], 0);
    cr_expect_eq(s->activities[PROF_PHASE_FIRST], 1);
    cr_expect_eq(s->activities[PROF_PHASE_WARMUP], 2);
    cr_expect_eq(s->activities[PROF_PHASE_STEADY], 20);
    cr_expect_eq(s->activities[PROF_PHASE_SLOW], 1);
    profile_free(p);
    agg_free(agg);
}

/* A 1 s first step, then 2,000 steady steps of 5 ms, each idle its first
 * 1 ms: marks (2,001 of them) and kernels into agg. With traced_every K > 1,
 * only one step in K is recorded, its kernel in a sampled window weighing K
 * (trace_sampling.c). Returns the number of marks; *end gets the last. */
static size_t steady_steps(Aggregator *agg, uint64_t *marks, uint32_t traced_every, uint64_t *end) {
    int site = agg_site(agg, "train.py", 20, NULL);
    size_t n = 0;
    uint64_t t = 1000 * MS;
    marks[n++] = t;
    AggKernel k = {.device = 0, .name = "gemm", .grid = {1, 1, 1}, .block = {256, 1, 1}, .site = site,
                   .start_ns = 0, .end_ns = t};
    agg_kernel(agg, &k);
    for (uint32_t i = 0; i < 2000; i++) {
        if (i % traced_every == 0) {
            k.start_ns = t + 1 * MS;
            k.end_ns = t + 5 * MS;
            k.window = traced_every > 1 ? i / traced_every % 4095 + 1 : 0;
            k.weight = traced_every;
            agg_kernel(agg, &k);
        }
        marks[n++] = t += 5 * MS;
    }
    *end = t;
    return n;
}

/* A run longer than the buckets' first reach (4,096 x 1 ms): 2,000 steady
 * steps of 5 ms, each idle its first 1 ms, after a 1 s first step, then a
 * 2 s checkpoint. The buckets widen to 4 ms; the steady idle time is still
 * within a bucket's width of 2 s per 2,000 steps, and the checkpoint's. */
Test(step_phases, idle_by_phase_over_a_long_run) {
    Aggregator *agg = agg_new();
    cr_assert_not_null(agg);
    static uint64_t marks[2100];
    uint64_t t;
    size_t n = steady_steps(agg, marks, 1, &t);
    AggKernel k = {.device = 0, .name = "gemm", .grid = {1, 1, 1}, .block = {256, 1, 1}, .site = 0};
    k.start_ns = t + 2000 * MS; /* the checkpoint: 2 s idle */
    k.end_ns = t + 2005 * MS;
    agg_kernel(agg, &k);
    marks[n++] = t += 2005 * MS;
    agg_steps(agg, marks, n, 1, n);
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_not_null(p);
    const ProfSteps *s = &p->processes[0].steps;
    cr_assert(s->phase_idle_known);
    cr_expect_eq(s->steady_steps, 2000);
    cr_expect_eq(s->slow_steps, 1);
    double steady = (double)s->idle_ns[PROF_PHASE_STEADY], slow = (double)s->idle_ns[PROF_PHASE_SLOW];
    cr_expect(steady > 1990.0 * MS && steady < 2010.0 * MS, "steady idle %.3f ms, 2000 expected", steady / MS);
    cr_expect(slow > 1990.0 * MS && slow < 2010.0 * MS, "checkpoint idle %.3f ms, 2000 expected", slow / MS);
    cr_expect_eq(s->activities[PROF_PHASE_STEADY] + s->activities[PROF_PHASE_SLOW] + s->activities[PROF_PHASE_FIRST],
                 2002);
    profile_free(p);
    agg_free(agg);
}

/* The H200 recording of bench/steps/phases.py (2026-12-03): 300 AdamW steps
 * of an MLP whose host-timed median step was 1.730 ms, evaluations after
 * steps 100, 200 and 300 and checkpoints after 150 and 300, under a 6 s
 * start-up (CUDA's initialization, the first step's 446 ms). */
Test(step_phases, the_h200_recording_of_a_run_with_evaluations_and_checkpoints, .timeout = 120) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/phases_h200.json", PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error ? error : "");
    const ProfSteps *s = &p->processes[0].steps;
    cr_expect_eq(s->count, 300);
    cr_expect(s->median_ns > 1700000 && s->median_ns < 1760000, "median %llu ns, the host saw 1.730 ms",
              (unsigned long long)s->median_ns);
    cr_expect_eq(s->warmup_steps + s->steady_steps + s->slow_steps, 299, "every interval but the first step's");
    cr_expect_geq(s->slow_steps, 5, "the 3 evaluations and 2 checkpoints");
    cr_expect_leq(s->slow_steps, 10);
    cr_expect_gt(s->first_ns, 5000000000ull, "start-up and the first step: over 5 s");
    size_t first = 0, steady = 0;
    for (size_t i = 0; i < p->gap_count; i++) {
        if (p->gaps[i].phase == PROF_PHASE_FIRST) first++;
        if (p->gaps[i].phase == PROF_PHASE_STEADY) steady++;
    }
    cr_expect_gt(first, 0, "the start-up's gaps are the largest");
    cr_expect_eq(steady, 0, "no steady step holds one of the 16 largest gaps");
    profile_free(p);

    /* PR003 reports the start-up's gap, with no gain: none of it fell in the steady steps */
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--select", "PR003", "--format", "json",
                                "--profile", "tests/fixtures/profiles/phases_h200.json", "bench/steps/phases.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"code\": \"PR003\""), "%s", r.out);
    cr_expect_null(strstr(r.out, "\"gain\": {"), "a phase is not a gain: %s", r.out);
    cr_expect(strstr(r.out, "0 ns in the steady steps"), "%s", r.out);
    run_result_free(&r);
}

/* Sampled tracing, as after the first 8,192 launches: one step in 8 traced
 * (its records weigh 8), the others not recorded at all. 2,000 steady steps
 * of 5 ms, each idle its first 1 ms: 2 s of idle time. Per step, a traced
 * step reads as 8x busier than it is long and an untraced one as idle
 * throughout; only the phase's sums make an estimate. */
Test(step_phases, idle_by_phase_under_sampled_tracing) {
    Aggregator *agg = agg_new();
    cr_assert_not_null(agg);
    static uint64_t marks[2100];
    uint64_t t;
    size_t n = steady_steps(agg, marks, 8, &t);
    agg_steps(agg, marks, n, 1, n);
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_not_null(p);
    const ProfSteps *s = &p->processes[0].steps;
    cr_assert(s->phase_idle_known);
    double steady = (double)s->idle_ns[PROF_PHASE_STEADY];
    cr_expect(steady > 1900.0 * MS && steady < 2100.0 * MS, "steady idle %.1f ms, about 2000 expected", steady / MS);
    cr_expect_eq(s->activities[PROF_PHASE_STEADY], 2000, "250 traced kernels weighing 8");
    /* the launch's own count in the steady steps weighs its records too: its
     * 2,000 steady calls and the first step's one, less a bucket's blur */
    cr_assert_eq(p->op_count, 1);
    cr_expect(p->ops[0].steady.known);
    cr_expect(p->ops[0].steady.count >= 1980 && p->ops[0].steady.count <= 2000, "%llu of %llu",
              (unsigned long long)p->ops[0].steady.count, (unsigned long long)p->ops[0].stats.count);
    profile_free(p);
    agg_free(agg);
}

/* a profile from agg with what a written profile must have */
static Profile *written(Aggregator *agg) {
    ProfProcess proc = {.pid = 42, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 3000 * MS};
    Profile *p = agg_to_profile(agg, &proc);
    cr_assert_not_null(p);
    p->name = strdup("t");
    p->source = strdup("cupti");
    p->created = strdup("2026-12-03T00:00:00Z");
    p->tool = strdup("advise test");
    return p;
}

/* Each launch knows how many of its calls ran in the steady steps
 * (ops[].steady_count): the forward line's 20 of its 23, the evaluation's
 * none; the count goes through the JSON and back, and the reader refuses a
 * count above the calls. */
Test(step_phases, each_launch_counts_its_calls_in_the_steady_steps) {
    Aggregator *agg = agg_new();
    cr_assert_not_null(agg);
    int fwd, eval;
    uint64_t marks[32];
    training_run(agg, &fwd, &eval, marks);
    Profile *p = written(agg);
    cr_assert_eq(p->op_count, 2);
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        cr_assert(op->steady.known);
        if (op->site == fwd) {
            cr_expect_eq(op->stats.count, 23, "the first step's, 2 warm-up and 20 steady steps'");
            /* a bucket (op_times.h: 1/128 of the line's 1.7 s, about one 16 ms step) that holds a
             * phase boundary is split by time, not by its calls: one call may be blurred */
            cr_expect(op->steady.count >= 19 && op->steady.count <= 20, "%llu", (unsigned long long)op->steady.count);
        } else {
            cr_expect_eq(op->steady.count, 0, "the evaluation ran in a slow step");
        }
    }
    char *error = NULL;
    char *text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_assert_not_null(text, "%s", error);
    Profile *back = profile_from_json(text, strlen(text), PROFILE_FINAL, &error);
    cr_assert_not_null(back, "%s", error);
    for (size_t i = 0; i < p->op_count; i++)
        cr_expect(back->ops[i].steady.known && back->ops[i].steady.count == p->ops[i].steady.count);
    profile_free(back);
    /* the reader: more calls in the steady steps than the calls */
    char *at = strstr(text, "\"steady_count\":20");
    if (!at) at = strstr(text, "\"steady_count\":19");
    cr_assert_not_null(at, "%s", text);
    memcpy(at + strlen("\"steady_count\":"), "90", 2);
    error = NULL;
    cr_expect_null(profile_from_json(text, strlen(text), PROFILE_FINAL, &error));
    cr_expect(error && strstr(error, "steady_count: 90 is more than stats.count (23)"), "%s", error ? error : "(none)");
    free(error);
    free(text);
    /* the writer refuses it on a synchronization */
    agg_sync(agg, PROF_SYNC_STREAM, 100, fwd);
    Profile *q = written(agg);
    for (size_t i = 0; i < q->op_count; i++)
        if (q->ops[i].kind == PROF_OP_SYNC) {
            cr_expect(!q->ops[i].steady.known, "a synchronization has no GPU work to count");
            q->ops[i].steady = (SteadyCount){.known = true};
        }
    error = NULL;
    cr_expect_null(profile_to_json(q, PROFILE_FINAL, &error));
    cr_expect(error && strstr(error, "steady_count: only launches, copies and memsets"), "%s", error ? error : "(none)");
    free(error);
    profile_free(q);
    profile_free(p);
    agg_free(agg);
}
