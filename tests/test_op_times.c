/* When an operation's GPU work started (profiler/op_times.c), and the steady
 * steps' time between two instants (step_timeline_steady_ns), which together
 * give each operation its calls in the steady steps (ops[].steady_count). */
#include <criterion/criterion.h>
#include <string.h>

#include "profiler/op_times.h"
#include "profiler/step_phases.h"

#define MS 1000000ull

static uint64_t split_at; /* share(): the part of [from, to) at or after it */

static double after_split(void *ctx, uint64_t from, uint64_t to) {
    (void)ctx;
    if (to <= split_at) return 0;
    if (from >= split_at) return 1;
    return (double)(to - split_at) / (double)(to - from);
}

static double everything(void *ctx, uint64_t from, uint64_t to) {
    (void)ctx, (void)from, (void)to;
    return 1;
}

Test(op_times, calls_on_each_side_of_an_instant) {
    OpTimes o = {0};
    for (int i = 0; i < 1000; i++) op_times_add(&o, 1000 * MS + (uint64_t)i * MS, 1); /* 1 s of starts */
    for (int i = 0; i < 500; i++) op_times_add(&o, 3000 * MS + (uint64_t)i * MS, 1);  /* later, 0.5 s */
    cr_expect_eq(op_times_calls_in(&o, everything, NULL), 1500);
    split_at = 2500 * MS; /* between the two: exact, whatever the width */
    cr_expect_float_eq(op_times_calls_in(&o, after_split, NULL), 500, 1e-9);
    cr_expect(o.width > OP_TIME_FIRST_WIDTH, "2.5 s of starts widened the buckets");
    cr_expect(o.used <= OP_TIME_BUCKETS);
    split_at = 1500 * MS; /* inside the first run: blurred by at most one bucket */
    double after = op_times_calls_in(&o, after_split, NULL);
    double bucket_calls = (double)o.width / MS; /* one start per ms */
    cr_expect(after >= 1000 - bucket_calls && after <= 1000 + bucket_calls, "%f (bucket %f calls)", after, bucket_calls);
}

Test(op_times, the_span_ends_are_exact) {
    /* one bucket holds all: its time is taken from the first start to the last */
    OpTimes o = {0};
    for (int i = 0; i < 10; i++) op_times_add(&o, 5 * MS + (uint64_t)i * 1000, 1);
    split_at = 5 * MS + 4500; /* 5 of the 10 starts after it */
    double after = op_times_calls_in(&o, after_split, NULL);
    cr_expect(after > 4.0 && after < 6.0, "%f", after);
    split_at = 5 * MS + 10000; /* after the last start: none, though the bucket reaches past it */
    cr_expect_float_eq(op_times_calls_in(&o, after_split, NULL), 0, 1e-9);
}

Test(op_times, weights_and_starts_out_of_order) {
    OpTimes o = {0};
    op_times_add(&o, 100 * MS, 8);    /* a sampled window's record stands for 8 calls */
    op_times_add(&o, 40 * MS, 1);     /* an earlier start arrives later */
    op_times_add(&o, 900 * MS, 0);    /* weight 0 counts as 1 */
    cr_expect_eq(o.first, 40 * MS);
    cr_expect_eq(o.last, 900 * MS);
    cr_expect(o.origin <= 40 * MS);
    cr_expect_float_eq(op_times_calls_in(&o, everything, NULL), 10, 1e-9);
    split_at = 70 * MS;
    double after = op_times_calls_in(&o, after_split, NULL);
    cr_expect(after >= 8.5 && after <= 9.0, "%f: the 8 at 100 ms and the one at 900 ms", after);
}

Test(op_times, a_start_before_the_clocks_zero_counts_in_the_first_bucket) {
    OpTimes o = {0};
    op_times_add(&o, 1000, 1);
    op_times_add(&o, 10, 1);
    op_times_add(&o, 0, 1);
    cr_expect_float_eq(op_times_calls_in(&o, everything, NULL), 3, 1e-9);
    cr_expect(o.used >= 1 && o.used <= OP_TIME_BUCKETS);
}

Test(op_times, counts_saturate) {
    OpTimes o = {0};
    op_times_add(&o, 1000, UINT32_MAX);
    op_times_add(&o, 1000, UINT32_MAX);
    cr_expect_eq(o.calls[0], UINT32_MAX);
}

Test(step_timeline, steady_time_between_two_instants) {
    /* marks at 100, 110, 120, 170, 180 ms: steady 10 ms intervals, one slow
     * (50 ms) between 120 and 170 */
    uint64_t marks[] = {100 * MS, 110 * MS, 120 * MS, 170 * MS, 180 * MS};
    StepTimeline t;
    cr_assert(step_timeline_build(&t, marks, 5, 1, 5));
    cr_expect_eq(step_timeline_steady_ns(&t, 0, 100 * MS), 0, "the first phase");
    cr_expect_eq(step_timeline_steady_ns(&t, 0, 1000 * MS), 30 * MS, "three steady steps");
    cr_expect_eq(step_timeline_steady_ns(&t, 105 * MS, 115 * MS), 10 * MS);
    cr_expect_eq(step_timeline_steady_ns(&t, 125 * MS, 165 * MS), 0, "inside the slow step");
    cr_expect_eq(step_timeline_steady_ns(&t, 160 * MS, 175 * MS), 5 * MS);
    cr_expect_eq(step_timeline_steady_ns(&t, 180 * MS, 200 * MS), 0, "after the last step");
    cr_expect_eq(step_timeline_steady_ns(&t, 150 * MS, 150 * MS), 0);
    step_timeline_free(&t);
}
