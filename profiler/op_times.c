#include "profiler/op_times.h"

#include <string.h>

static uint32_t saturating_add(uint32_t a, uint64_t b) {
    uint64_t s = (uint64_t)a + b;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

/* doubles the width: bucket i takes buckets 2i and 2i + 1 (the origin stays) */
static void widen(OpTimes *o) {
    for (uint32_t i = 0; i < OP_TIME_BUCKETS / 2; i++) {
        o->calls[i] = saturating_add(o->calls[2 * i], o->calls[2 * i + 1]);
        o->idle[i] = o->idle[2 * i] + o->idle[2 * i + 1];
    }
    memset(o->calls + OP_TIME_BUCKETS / 2, 0, OP_TIME_BUCKETS / 2 * sizeof *o->calls);
    memset(o->idle + OP_TIME_BUCKETS / 2, 0, OP_TIME_BUCKETS / 2 * sizeof *o->idle);
    o->width *= 2;
    o->used = (o->used + 1) / 2;
}

/* The bucket that holds `at`, the buckets moved or widened to reach it. */
static uint64_t bucket_for(OpTimes *o, uint64_t at) {
    if (o->width == 0) {
        o->origin = o->first = o->last = at;
        o->width = OP_TIME_FIRST_WIDTH;
    }
    if (at < o->first) o->first = at;
    if (at > o->last) o->last = at;
    /* an earlier start (records arrive out of order across streams): move the
     * origin back by whole buckets, widening first where they would not fit */
    while (at < o->origin) {
        uint64_t need = (o->origin - at + o->width - 1) / o->width;
        if (need > o->origin / o->width) break; /* before the clock's zero: the first bucket takes it */
        if (o->used + need > OP_TIME_BUCKETS) {
            widen(o);
            continue;
        }
        memmove(o->calls + need, o->calls, o->used * sizeof *o->calls);
        memset(o->calls, 0, need * sizeof *o->calls);
        memmove(o->idle + need, o->idle, o->used * sizeof *o->idle);
        memset(o->idle, 0, need * sizeof *o->idle);
        o->origin -= need * o->width;
        o->used += (uint32_t)need;
    }
    uint64_t index = at < o->origin ? 0 : (at - o->origin) / o->width;
    while (index >= OP_TIME_BUCKETS) {
        widen(o);
        index = (at - o->origin) / o->width;
    }
    if (index + 1 > o->used) o->used = (uint32_t)index + 1;
    return index;
}

void op_times_add(OpTimes *o, uint64_t at, uint32_t weight) {
    uint64_t index = bucket_for(o, at);
    o->calls[index] = saturating_add(o->calls[index], weight ? weight : 1);
}

void op_times_add_idle(OpTimes *o, uint64_t at, double ns) {
    uint64_t index = bucket_for(o, at);
    o->idle[index] += (float)ns;
}

/* sums one of the histograms, each bucket's part by share() over the
 * bucket's time between the first and the last start */
static double sum_in(const OpTimes *o, bool idle, double (*share)(void *ctx, uint64_t from, uint64_t to), void *ctx) {
    double sum = 0;
    for (uint32_t i = 0; i < o->used; i++) {
        double v = idle ? (double)o->idle[i] : (double)o->calls[i];
        if (v == 0) continue;
        uint64_t from = o->origin + i * o->width, to = from + o->width;
        if (from < o->first) from = o->first;
        if (to > o->last + 1) to = o->last + 1;
        if (to <= from) to = from + 1;
        sum += v * share(ctx, from, to);
    }
    return sum;
}

double op_times_calls_in(const OpTimes *o, double (*share)(void *ctx, uint64_t from, uint64_t to), void *ctx) {
    return sum_in(o, false, share, ctx);
}

double op_times_idle_in(const OpTimes *o, double (*share)(void *ctx, uint64_t from, uint64_t to), void *ctx) {
    return sum_in(o, true, share, ctx);
}
