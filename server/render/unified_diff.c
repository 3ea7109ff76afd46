/* Myers' O((N+M)D) difference algorithm over lines, keeping each step's
 * frontier to backtrack the edit script; big diffs fall back to a single
 * replace-all hunk so that memory stays bounded. */
#include "server/render/unified_diff.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"

#define CONTEXT 3
#define MAX_EDIT_DISTANCE 4000

typedef struct {
    const char *text;
    size_t len; /* including the terminator */
} Line;

typedef enum { OP_EQUAL, OP_DELETE, OP_INSERT } Op;

static Line *split_lines(const char *s, size_t n, size_t *count) {
    size_t cap = 16, k = 0;
    Line *lines = malloc(cap * sizeof *lines);
    if (!lines) return NULL;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n ? i > start : s[i] == '\n') {
            size_t end = i == n ? n : i + 1;
            if (!array_reserve(&lines, k, &cap, sizeof *lines, 16)) {
                free(lines);
                return NULL;
            }
            lines[k++] = (Line){s + start, end - start};
            start = end;
        }
    }
    *count = k;
    return lines;
}

static bool same(const Line *a, const Line *b) { return a->len == b->len && memcmp(a->text, b->text, a->len) == 0; }

/* returns the edit script (ops) or NULL when the distance is too large */
static Op *myers(const Line *a, size_t n, const Line *b, size_t m, size_t *op_count) {
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
    Op *ops = malloc((n + m + 1) * sizeof *ops);
    if (!ops) goto fail;
    size_t count = 0;
    long x = (long)n, y = (long)m;
    for (long d = final_d; d > 0; d--) {
        long *pv = trace[d - 1];
        long k = x - y;
        long prev_k = (k == -d || (k != d && pv[off + k - 1] < pv[off + k + 1])) ? k + 1 : k - 1;
        long prev_x = pv[off + prev_k], prev_y = prev_x - prev_k;
        while (x > prev_x && y > prev_y) ops[count++] = OP_EQUAL, x--, y--;
        if (x == prev_x) ops[count++] = OP_INSERT, y--;
        else ops[count++] = OP_DELETE, x--;
    }
    while (x > 0 && y > 0) ops[count++] = OP_EQUAL, x--, y--;
    for (size_t i = 0; i < count / 2; i++) {
        Op t = ops[i];
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

static void put_line(FILE *out, char mark, const Line *l) {
    fputc(mark, out);
    fwrite(l->text, 1, l->len, out);
    if (l->len == 0 || l->text[l->len - 1] != '\n') fputs("\n\\ No newline at end of file\n", out);
}

static size_t hunk_count(size_t n) { return n; }

bool unified_diff_write(FILE *out, const char *label_a, const char *label_b, const char *a, size_t alen,
                        const char *b, size_t blen) {
    if (alen == blen && memcmp(a, b, alen) == 0) return true;
    size_t n = 0, m = 0;
    Line *la = split_lines(a, alen, &n), *lb = split_lines(b, blen, &m);
    if (!la || !lb) {
        free(la);
        free(lb);
        return false;
    }
    size_t count = 0;
    Op *ops = myers(la, n, lb, m, &count);
    if (!ops) { /* too different: one hunk replacing everything */
        ops = malloc((n + m + 1) * sizeof *ops);
        if (!ops) {
            free(la);
            free(lb);
            return false;
        }
        for (size_t i = 0; i < n; i++) ops[count++] = OP_DELETE;
        for (size_t i = 0; i < m; i++) ops[count++] = OP_INSERT;
    }
    fprintf(out, "--- %s\n+++ %s\n", label_a, label_b);
    size_t i = 0;
    /* positions in a and b at each op index */
    size_t *ai = malloc((count + 1) * sizeof *ai), *bi = malloc((count + 1) * sizeof *bi);
    if (!ai || !bi) goto done;
    ai[0] = bi[0] = 0;
    for (size_t k = 0; k < count; k++) {
        ai[k + 1] = ai[k] + (ops[k] != OP_INSERT);
        bi[k + 1] = bi[k] + (ops[k] != OP_DELETE);
    }
    while (i < count) {
        while (i < count && ops[i] == OP_EQUAL) i++;
        if (i >= count) break;
        size_t start = i >= CONTEXT ? i - CONTEXT : 0;
        /* extend the hunk while the next change is within 2*CONTEXT equal lines */
        size_t end = i;
        for (;;) {
            while (end < count && ops[end] != OP_EQUAL) end++;
            size_t eq = end;
            while (eq < count && ops[eq] == OP_EQUAL && eq - end <= 2 * CONTEXT) eq++;
            if (eq < count && ops[eq] != OP_EQUAL && eq - end <= 2 * CONTEXT) {
                end = eq;
                continue;
            }
            break;
        }
        size_t stop = end + CONTEXT < count ? end + CONTEXT : count;
        while (stop > end && ops[stop - 1] != OP_EQUAL) stop--;
        size_t a_from = ai[start], a_len = ai[stop] - ai[start];
        size_t b_from = bi[start], b_len = bi[stop] - bi[start];
        fprintf(out, "@@ -%zu,%zu +%zu,%zu @@\n", a_len ? a_from + 1 : a_from, hunk_count(a_len),
                b_len ? b_from + 1 : b_from, hunk_count(b_len));
        for (size_t k = start; k < stop; k++) {
            if (ops[k] == OP_EQUAL) put_line(out, ' ', &la[ai[k]]);
            else if (ops[k] == OP_DELETE) put_line(out, '-', &la[ai[k]]);
            else put_line(out, '+', &lb[bi[k]]);
        }
        i = stop;
    }
done:
    free(ai);
    free(bi);
    free(ops);
    free(la);
    free(lb);
    return true;
}
