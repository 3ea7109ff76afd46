#include "profiler/import/torch_stacks.h"

#include <stdlib.h>

/* How many non-enclosing user spans one moment may step over (only spans
 * that do not nest produce any) */
#define MAX_STALE_HOPS 64

typedef struct {
    int64_t pid, tid;
    uint64_t ts_ns;
    size_t index;       /* into the caller's moments */
} SortedMoment;

static int cmp_thread(int64_t pid_a, int64_t tid_a, int64_t pid_b, int64_t tid_b) {
    if (pid_a != pid_b) return pid_a < pid_b ? -1 : 1;
    if (tid_a != tid_b) return tid_a < tid_b ? -1 : 1;
    return 0;
}

/* by thread, then start ascending, then end descending (outer first) */
static int by_span(const void *a, const void *b) {
    const TorchSpan *x = a, *y = b;
    int c = cmp_thread(x->pid, x->tid, y->pid, y->tid);
    if (c) return c;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns) return x->end_ns > y->end_ns ? -1 : 1;
    return 0;
}

static int by_moment(const void *a, const void *b) {
    const SortedMoment *x = a, *y = b;
    int c = cmp_thread(x->pid, x->tid, y->pid, y->tid);
    if (c) return c;
    if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

typedef struct {
    size_t *span;       /* span index of each open entry */
    long *user_below;   /* stack position of the nearest user entry at or below, or -1 */
    size_t depth;
} Stack;

static void push(Stack *s, const TorchSpan *spans, size_t i) {
    long below = s->depth ? s->user_below[s->depth - 1] : -1;
    s->span[s->depth] = i;
    s->user_below[s->depth] = spans[i].frame >= 0 ? (long)s->depth : below;
    s->depth++;
}

static void pop_ended_before(Stack *s, const TorchSpan *spans, uint64_t t) {
    while (s->depth && spans[s->span[s->depth - 1]].end_ns < t) s->depth--;
}

static int answer(const Stack *s, const TorchSpan *spans, uint64_t t) {
    if (!s->depth) return -1;
    long pos = s->user_below[s->depth - 1];
    for (int hops = 0; pos >= 0 && hops < MAX_STALE_HOPS; hops++) {
        const TorchSpan *sp = &spans[s->span[pos]];
        if (sp->start_ns <= t && t <= sp->end_ns) return sp->frame;
        pos = pos > 0 ? s->user_below[pos - 1] : -1;
    }
    return -1;
}

bool torch_stacks_resolve(TorchSpan *spans, size_t span_count, TorchMoment *moments, size_t moment_count) {
    for (size_t i = 0; i < moment_count; i++) moments[i].frame = -1;
    if (!span_count || !moment_count) return true;
    SortedMoment *order = malloc(moment_count * sizeof *order);
    Stack s = {malloc(span_count * sizeof *s.span), malloc(span_count * sizeof *s.user_below), 0};
    if (!order || !s.span || !s.user_below) {
        free(order);
        free(s.span);
        free(s.user_below);
        return false;
    }
    for (size_t i = 0; i < moment_count; i++) order[i] = (SortedMoment){moments[i].pid, moments[i].tid, moments[i].ts_ns, i};
    qsort(spans, span_count, sizeof *spans, by_span);
    qsort(order, moment_count, sizeof *order, by_moment);

    size_t next = 0; /* the first span not yet pushed */
    for (size_t m = 0; m < moment_count; m++) {
        const SortedMoment *q = &order[m];
        if (m == 0 || cmp_thread(q->pid, q->tid, order[m - 1].pid, order[m - 1].tid) != 0) {
            s.depth = 0;
            while (next < span_count && cmp_thread(spans[next].pid, spans[next].tid, q->pid, q->tid) < 0) next++;
        }
        while (next < span_count && cmp_thread(spans[next].pid, spans[next].tid, q->pid, q->tid) == 0 &&
               spans[next].start_ns <= q->ts_ns) {
            pop_ended_before(&s, spans, spans[next].start_ns);
            push(&s, spans, next++);
        }
        pop_ended_before(&s, spans, q->ts_ns);
        moments[q->index].frame = answer(&s, spans, q->ts_ns);
    }
    free(order);
    free(s.span);
    free(s.user_below);
    return true;
}
