/* Busy time and activities in doubling buckets (time_buckets.h). */
#include "profiler/time_buckets.h"

#include <string.h>

void time_buckets_init(TimeBuckets *b, uint64_t origin) {
    memset(b, 0, sizeof *b);
    b->origin = origin;
    b->width = TIME_BUCKET_FIRST_WIDTH;
}

/* Twice as wide: bucket i takes what 2i and 2i+1 held. */
static void widen(TimeBuckets *b) {
    size_t half = (b->used + 1) / 2;
    for (size_t i = 0; i < half; i++) {
        b->busy[i] = b->busy[2 * i] + (2 * i + 1 < b->used ? b->busy[2 * i + 1] : 0);
        b->activities[i] = b->activities[2 * i] + (2 * i + 1 < b->used ? b->activities[2 * i + 1] : 0);
    }
    for (size_t i = half; i < b->used; i++) b->busy[i] = b->activities[i] = 0;
    b->used = half;
    b->width *= 2;
}

/* The bucket holding `at`, widening until one does (times before the origin go to the first). */
static size_t bucket_of(TimeBuckets *b, uint64_t at) {
    uint64_t offset = at > b->origin ? at - b->origin : 0;
    while (offset / b->width >= TIME_BUCKETS) widen(b);
    size_t i = (size_t)(offset / b->width);
    if (i + 1 > b->used) b->used = i + 1;
    return i;
}

void time_buckets_add_busy(TimeBuckets *b, uint64_t start, uint64_t end, uint64_t weight) {
    if (start < b->origin) start = b->origin;
    if (end <= start) return;
    bucket_of(b, end - 1); /* widen first: the buckets below stay put after it */
    for (size_t i = bucket_of(b, start); start < end; i++) {
        uint64_t bucket_end = b->origin + (uint64_t)(i + 1) * b->width;
        uint64_t upto = end < bucket_end ? end : bucket_end;
        b->busy[i] += (double)(upto - start) * (double)weight;
        start = upto;
    }
}

void time_buckets_add_activity(TimeBuckets *b, uint64_t at, uint64_t weight) {
    b->activities[bucket_of(b, at)] += (double)weight;
}

/* The part of each bucket's value that falls in [from, to), as if spread evenly over the bucket. */
static double between(const TimeBuckets *b, const double *values, uint64_t from, uint64_t to) {
    if (from < b->origin) from = b->origin;
    if (to <= from) return 0;
    double sum = 0;
    size_t first = (size_t)((from - b->origin) / b->width);
    for (size_t i = first; i < b->used; i++) {
        uint64_t a = b->origin + (uint64_t)i * b->width, z = a + b->width;
        if (a >= to) break;
        uint64_t lo = from > a ? from : a, hi = to < z ? to : z;
        if (hi > lo) sum += values[i] * (double)(hi - lo) / (double)b->width;
    }
    return sum;
}

double time_buckets_busy_between(const TimeBuckets *b, uint64_t from, uint64_t to) {
    return between(b, b->busy, from, to);
}

double time_buckets_activities_between(const TimeBuckets *b, uint64_t from, uint64_t to) {
    return between(b, b->activities, from, to);
}
