/* Busy time and activity counts over a device's timeline, in a bounded
 * number of equal buckets whose width doubles (neighbours merged) when the
 * run outgrows them. The training steps are known only when the run ends,
 * while the busy time is swept as records arrive: the buckets keep enough
 * of the timeline's shape to split its idle time and its activities by step
 * phase afterwards (aggregate.c, step_phases.h). Within a bucket, time and
 * activities count as spread evenly. Pure C, no allocation after init. */
#ifndef ADVISE_TIME_BUCKETS_H
#define ADVISE_TIME_BUCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIME_BUCKETS 4096
#define TIME_BUCKET_FIRST_WIDTH 1000000ull /* 1 ms: the first 4 s of a run at that grain */

typedef struct {
    uint64_t origin;                   /* the time bucket 0 starts at */
    uint64_t width;                    /* ns per bucket */
    size_t used;                       /* buckets holding anything, from 0 */
    double busy[TIME_BUCKETS];         /* weighted busy ns */
    double activities[TIME_BUCKETS];   /* weighted activity starts */
} TimeBuckets;

void time_buckets_init(TimeBuckets *b, uint64_t origin);

/* [start, end) was busy, weight times over (an estimate from a sampled window) */
void time_buckets_add_busy(TimeBuckets *b, uint64_t start, uint64_t end, uint64_t weight);
/* an activity (a kernel, copy or memset) started at `at`, weight times over */
void time_buckets_add_activity(TimeBuckets *b, uint64_t at, uint64_t weight);

/* The busy time and the activities within [from, to). */
double time_buckets_busy_between(const TimeBuckets *b, uint64_t from, uint64_t to);
double time_buckets_activities_between(const TimeBuckets *b, uint64_t from, uint64_t to);

#endif
