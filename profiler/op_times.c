#include "profiler/op_times.h"

#include <string.h>

static uint32_t saturating_add(uint32_t a, uint64_t b) {
    uint64_t s = (uint64_t)a + b;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

/* doubles the width: bucket i takes buckets 2i and 2i + 1 (the origin stays) */
static void widen(OpTimes *o) {
    for (uint32_t i = 0; i < OP_TIME_BUCKETS / 2; i++)
        o->calls[i] = saturating_add(o->calls[2 * i], o->calls[2 * i + 1]);
    memset(o->calls + OP_TIME_BUCKETS / 2, 0, OP_TIME_BUCKETS / 2 * sizeof *o->calls);
    o->width *= 2;
    o->used = (o->used + 1) / 2;
}

void op_times_add(OpTimes *o, uint64_t at, uint32_t weight) {
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
        o->origin -= need * o->width;
        o->used += (uint32_t)need;
    }
    uint64_t index = at < o->origin ? 0 : (at - o->origin) / o->width;
    while (index >= OP_TIME_BUCKETS) {
        widen(o);
        index = (at - o->origin) / o->width;
    }
    o->calls[index] = saturating_add(o->calls[index], weight ? weight : 1);
    if (index + 1 > o->used) o->used = (uint32_t)index + 1;
}

double op_times_calls_in(const OpTimes *o, double (*share)(void *ctx, uint64_t from, uint64_t to), void *ctx) {
    double calls = 0;
    for (uint32_t i = 0; i < o->used; i++)
        if (o->calls[i]) {
            uint64_t from = o->origin + i * o->width, to = from + o->width;
            if (from < o->first) from = o->first;
            if (to > o->last + 1) to = o->last + 1;
            if (to <= from) to = from + 1;
            calls += o->calls[i] * share(ctx, from, to);
        }
    return calls;
}
