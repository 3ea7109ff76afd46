/* Busy time and activities in doubling buckets (profiler/time_buckets.c). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "profiler/time_buckets.h"

#define MS 1000000ull

static TimeBuckets *fresh(uint64_t origin) {
    TimeBuckets *b = malloc(sizeof *b);
    cr_assert_not_null(b);
    time_buckets_init(b, origin);
    return b;
}

Test(time_buckets, busy_time_is_split_at_bucket_edges) {
    TimeBuckets *b = fresh(10 * MS);
    time_buckets_add_busy(b, 10 * MS + MS / 2, 12 * MS + MS / 4, 1); /* 1.75 ms over buckets 0, 1 and 2 */
    cr_expect_float_eq(time_buckets_busy_between(b, 10 * MS, 11 * MS), 0.5 * MS, 1);
    cr_expect_float_eq(time_buckets_busy_between(b, 11 * MS, 12 * MS), 1.0 * MS, 1);
    cr_expect_float_eq(time_buckets_busy_between(b, 12 * MS, 13 * MS), 0.25 * MS, 1);
    cr_expect_float_eq(time_buckets_busy_between(b, 0, 100 * MS), 1.75 * MS, 1);
    /* half a bucket counts half of it */
    cr_expect_float_eq(time_buckets_busy_between(b, 11 * MS, 11 * MS + MS / 2), 0.5 * MS, 1);
    cr_expect_float_eq(time_buckets_busy_between(b, 13 * MS, 20 * MS), 0, 1e-9);
    free(b);
}

Test(time_buckets, weights_and_activities) {
    TimeBuckets *b = fresh(0);
    time_buckets_add_busy(b, 0, MS, 8); /* a record of a window sampled one in 8 */
    time_buckets_add_activity(b, MS / 2, 8);
    time_buckets_add_activity(b, 3 * MS, 1);
    cr_expect_float_eq(time_buckets_busy_between(b, 0, MS), 8.0 * MS, 1);
    cr_expect_float_eq(time_buckets_activities_between(b, 0, MS), 8, 1e-9);
    cr_expect_float_eq(time_buckets_activities_between(b, 0, 10 * MS), 9, 1e-9);
    free(b);
}

/* Past 4,096 buckets the width doubles as often as needed and every total is kept. */
Test(time_buckets, widening_keeps_the_totals) {
    TimeBuckets *b = fresh(0);
    double busy = 0;
    for (uint64_t i = 0; i < 20000; i++) { /* 20 s, 0.25 ms busy per ms */
        time_buckets_add_busy(b, i * MS, i * MS + MS / 4, 1);
        time_buckets_add_activity(b, i * MS, 1);
        busy += MS / 4;
    }
    cr_expect_geq(b->width, 8 * MS, "20 s over 4,096 buckets: at least 8 ms each");
    cr_expect_leq(b->used, TIME_BUCKETS);
    cr_expect_float_eq(time_buckets_busy_between(b, 0, 20000 * MS), busy, 1);
    cr_expect_float_eq(time_buckets_activities_between(b, 0, 20000 * MS), 20000, 1e-6);
    /* a stretch of whole buckets: exact; 10 s of 20 */
    cr_expect_float_eq(time_buckets_busy_between(b, 0, 10240 * MS), 10240.0 * MS / 4, 1);
    /* an interval that itself spans the widening, and one before the origin */
    time_buckets_add_busy(b, 0, 100000 * MS, 1);
    cr_expect_float_eq(time_buckets_busy_between(b, 0, 100000 * MS), busy + 100000.0 * MS, 10);
    free(b);
}

Test(time_buckets, times_before_the_origin_count_at_it) {
    TimeBuckets *b = fresh(5 * MS);
    time_buckets_add_busy(b, 0, 6 * MS, 1); /* only [5, 6) ms lies in the buckets */
    time_buckets_add_activity(b, 1 * MS, 1);
    cr_expect_float_eq(time_buckets_busy_between(b, 0, 100 * MS), 1.0 * MS, 1);
    cr_expect_float_eq(time_buckets_activities_between(b, 5 * MS, 6 * MS), 1, 1e-9);
    time_buckets_add_busy(b, 2 * MS, 3 * MS, 1); /* wholly before: nothing */
    cr_expect_float_eq(time_buckets_busy_between(b, 0, 100 * MS), 1.0 * MS, 1);
    free(b);
}
