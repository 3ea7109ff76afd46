/* Unified diffs over the edit script of analysis/base/line_diff.h; texts
 * too far apart for a script get a single replace-all hunk. */
#include "server/render/unified_diff.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/base/line_diff.h"

#define CONTEXT 3

static void put_line(FILE *out, char mark, const DiffLine *l) {
    fputc(mark, out);
    fwrite(l->text, 1, l->len, out);
    if (l->len == 0 || l->text[l->len - 1] != '\n') fputs("\n\\ No newline at end of file\n", out);
}

static size_t hunk_count(size_t n) { return n; }

bool unified_diff_write(FILE *out, const char *label_a, const char *label_b, const char *a, size_t alen,
                        const char *b, size_t blen) {
    if (alen == blen && memcmp(a, b, alen) == 0) return true;
    size_t n = 0, m = 0;
    DiffLine *la = line_diff_split(a, alen, &n), *lb = line_diff_split(b, blen, &m);
    if (!la || !lb) {
        free(la);
        free(lb);
        return false;
    }
    size_t count = 0;
    DiffOp *ops = line_diff_script(la, n, lb, m, &count);
    if (!ops) { /* too different: one hunk replacing everything */
        ops = malloc((n + m + 1) * sizeof *ops);
        if (!ops) {
            free(la);
            free(lb);
            return false;
        }
        for (size_t i = 0; i < n; i++) ops[count++] = DIFF_DELETE;
        for (size_t i = 0; i < m; i++) ops[count++] = DIFF_INSERT;
    }
    fprintf(out, "--- %s\n+++ %s\n", label_a, label_b);
    size_t i = 0;
    /* positions in a and b at each op index */
    size_t *ai = malloc((count + 1) * sizeof *ai), *bi = malloc((count + 1) * sizeof *bi);
    if (!ai || !bi) goto done;
    ai[0] = bi[0] = 0;
    for (size_t k = 0; k < count; k++) {
        ai[k + 1] = ai[k] + (ops[k] != DIFF_INSERT);
        bi[k + 1] = bi[k] + (ops[k] != DIFF_DELETE);
    }
    while (i < count) {
        while (i < count && ops[i] == DIFF_EQUAL) i++;
        if (i >= count) break;
        size_t start = i >= CONTEXT ? i - CONTEXT : 0;
        /* extend the hunk while the next change is within 2*CONTEXT equal lines */
        size_t end = i;
        for (;;) {
            while (end < count && ops[end] != DIFF_EQUAL) end++;
            size_t eq = end;
            while (eq < count && ops[eq] == DIFF_EQUAL && eq - end <= 2 * CONTEXT) eq++;
            if (eq < count && ops[eq] != DIFF_EQUAL && eq - end <= 2 * CONTEXT) {
                end = eq;
                continue;
            }
            break;
        }
        size_t stop = end + CONTEXT < count ? end + CONTEXT : count;
        while (stop > end && ops[stop - 1] != DIFF_EQUAL) stop--;
        size_t a_from = ai[start], a_len = ai[stop] - ai[start];
        size_t b_from = bi[start], b_len = bi[stop] - bi[start];
        fprintf(out, "@@ -%zu,%zu +%zu,%zu @@\n", a_len ? a_from + 1 : a_from, hunk_count(a_len),
                b_len ? b_from + 1 : b_from, hunk_count(b_len));
        for (size_t k = start; k < stop; k++) {
            if (ops[k] == DIFF_EQUAL) put_line(out, ' ', &la[ai[k]]);
            else if (ops[k] == DIFF_DELETE) put_line(out, '-', &la[ai[k]]);
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
