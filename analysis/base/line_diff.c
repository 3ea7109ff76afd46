/* Myers' O((N+M)D) difference algorithm over lines (line_diff.h), keeping
 * each step's frontier to backtrack the edit script; texts further apart
 * than MAX_EDIT_DISTANCE lines get no script, so that memory stays bounded. */
#include "analysis/base/line_diff.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"

#define MAX_EDIT_DISTANCE 4000

DiffLine *line_diff_split(const char *s, size_t n, size_t *count) {
    size_t cap = 16, k = 0;
    DiffLine *lines = malloc(cap * sizeof *lines);
    if (!lines) return NULL;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n ? i > start : s[i] == '\n') {
            size_t end = i == n ? n : i + 1;
            if (!array_reserve(&lines, k, &cap, sizeof *lines, 16)) {
                free(lines);
                return NULL;
            }
            lines[k++] = (DiffLine){s + start, end - start};
            start = end;
        }
    }
    *count = k;
    return lines;
}

static bool same(const DiffLine *a, const DiffLine *b) { return a->len == b->len && memcmp(a->text, b->text, a->len) == 0; }

DiffOp *line_diff_script(const DiffLine *a, size_t n, const DiffLine *b, size_t m, size_t *op_count) {
    long max = (long)(n + m);
    long limit = max < MAX_EDIT_DISTANCE ? max : MAX_EDIT_DISTANCE;
    long width = 2 * limit + 3;
    long *v = calloc((size_t)width, sizeof *v);
    long **trace = calloc((size_t)limit + 2, sizeof *trace);
    if (!v || !trace) goto fail;
    long off = limit + 1, final_d = -1;
    for (long d = 0; d <= limit; d++) {
        trace[d] = malloc((size_t)width * sizeof **trace);
        if (!trace[d]) goto fail;
        for (long k = -d; k <= d; k += 2) {
            long x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
            long y = x - k;
            while (x < (long)n && y < (long)m && same(&a[x], &b[y])) x++, y++;
            v[off + k] = x;
            if (x >= (long)n && y >= (long)m) {
                final_d = d;
                break;
            }
        }
        memcpy(trace[d], v, (size_t)width * sizeof *v);
        if (final_d >= 0) break;
    }
    if (final_d < 0) goto fail;
    DiffOp *ops = malloc((n + m + 1) * sizeof *ops);
    if (!ops) goto fail;
    size_t count = 0;
    long x = (long)n, y = (long)m;
    for (long d = final_d; d > 0; d--) {
        long *pv = trace[d - 1];
        long k = x - y;
        long prev_k = (k == -d || (k != d && pv[off + k - 1] < pv[off + k + 1])) ? k + 1 : k - 1;
        long prev_x = pv[off + prev_k], prev_y = prev_x - prev_k;
        while (x > prev_x && y > prev_y) ops[count++] = DIFF_EQUAL, x--, y--;
        if (x == prev_x) ops[count++] = DIFF_INSERT, y--;
        else ops[count++] = DIFF_DELETE, x--;
    }
    while (x > 0 && y > 0) ops[count++] = DIFF_EQUAL, x--, y--;
    for (size_t i = 0; i < count / 2; i++) {
        DiffOp t = ops[i];
        ops[i] = ops[count - 1 - i];
        ops[count - 1 - i] = t;
    }
    for (long d = 0; d <= limit && trace[d]; d++) free(trace[d]);
    free(trace);
    free(v);
    *op_count = count;
    return ops;
fail:
    if (trace)
        for (long d = 0; d <= limit && trace[d]; d++) free(trace[d]);
    free(trace);
    free(v);
    return NULL;
}


uint32_t *line_diff_matches(const char *a, size_t alen, const char *b, size_t blen, size_t *a_count) {
    size_t n = 0, m = 0, count = 0;
    DiffLine *la = line_diff_split(a, alen, &n), *lb = line_diff_split(b, blen, &m);
    DiffOp *ops = la && lb ? line_diff_script(la, n, lb, m, &count) : NULL;
    uint32_t *to = ops ? calloc(n + 1, sizeof *to) : NULL;
    if (to) {
        size_t x = 0, y = 0;
        for (size_t k = 0; k < count; k++) {
            if (ops[k] == DIFF_EQUAL) to[++x] = (uint32_t)++y;
            else if (ops[k] == DIFF_DELETE) x++;
            else y++;
        }
        *a_count = n;
    }
    free(ops);
    free(la);
    free(lb);
    return to;
}
