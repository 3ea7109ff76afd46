/* Keeps a merged profile within the caps of profile.h: the parts of many
 * processes can hold more kernels or operations together than one file may.
 * What costs least goes first, and is counted in `dropped`. */
#include <stdlib.h>
#include <string.h>

#include "profiler/profile.h"

typedef struct {
    size_t index;
    uint64_t total;
} Ranked;

static int by_total_desc(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Keeps the `keep` entries with the largest totals, in their original order. */
static bool *choose(const uint64_t *totals, size_t count, size_t keep) {
    bool *kept = calloc(count ? count : 1, sizeof *kept);
    Ranked *r = malloc((count ? count : 1) * sizeof *r);
    if (!kept || !r) {
        free(kept);
        free(r);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) r[i] = (Ranked){i, totals[i]};
    qsort(r, count, sizeof *r, by_total_desc);
    for (size_t i = 0; i < count && i < keep; i++) kept[r[i].index] = true;
    free(r);
    return kept;
}

bool profile_trim_to_caps(Profile *p) {
    if (p->kernel_count > PROFILE_MAX_KERNELS) {
        uint64_t *totals = malloc(p->kernel_count * sizeof *totals);
        if (!totals) return false;
        for (size_t i = 0; i < p->kernel_count; i++) totals[i] = p->kernels[i].stats.total_ns;
        bool *kept = choose(totals, p->kernel_count, PROFILE_MAX_KERNELS);
        free(totals);
        int *map = kept ? malloc(p->kernel_count * sizeof *map) : NULL;
        if (!map) {
            free(kept);
            return false;
        }
        size_t n = 0;
        for (size_t i = 0; i < p->kernel_count; i++) {
            if (kept[i]) {
                map[i] = (int)n;
                p->kernels[n++] = p->kernels[i];
            } else {
                map[i] = -1;
                free(p->kernels[i].name);
                p->dropped_kernels++;
            }
        }
        p->kernel_count = n;
        /* launches of a dropped kernel go with it */
        size_t ops = 0;
        for (size_t i = 0; i < p->op_count; i++) {
            ProfOp op = p->ops[i];
            if (op.kind == PROF_OP_LAUNCH) {
                if (op.kernel < 0 || map[op.kernel] < 0) {
                    p->dropped_ops++;
                    continue;
                }
                op.kernel = map[op.kernel];
            }
            p->ops[ops++] = op;
        }
        p->op_count = ops;
        free(map);
        free(kept);
    }
    if (p->op_count > PROFILE_MAX_OPS) {
        uint64_t *totals = malloc(p->op_count * sizeof *totals);
        if (!totals) return false;
        for (size_t i = 0; i < p->op_count; i++) totals[i] = p->ops[i].stats.total_ns;
        bool *kept = choose(totals, p->op_count, PROFILE_MAX_OPS);
        free(totals);
        if (!kept) return false;
        size_t n = 0;
        for (size_t i = 0; i < p->op_count; i++) {
            if (kept[i]) p->ops[n++] = p->ops[i];
            else p->dropped_ops++;
        }
        p->op_count = n;
        free(kept);
    }
    if (p->line_metric_count > PROFILE_MAX_LINE_METRICS) {
        /* the lines that moved least memory go first */
        uint64_t *totals = malloc(p->line_metric_count * sizeof *totals);
        if (!totals) return false;
        for (size_t i = 0; i < p->line_metric_count; i++) {
            const ProfLineMetrics *m = &p->line_metrics[i];
            totals[i] = m->global_sectors + m->shared_wavefronts + m->local_sectors;
        }
        bool *kept = choose(totals, p->line_metric_count, PROFILE_MAX_LINE_METRICS);
        free(totals);
        if (!kept) return false;
        size_t n = 0;
        for (size_t i = 0; i < p->line_metric_count; i++) {
            if (kept[i]) p->line_metrics[n++] = p->line_metrics[i];
            else free(p->line_metrics[i].kernel);
        }
        p->line_metric_count = n;
        free(kept);
    }
    return true;
}
