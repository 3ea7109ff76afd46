#include "analysis/edits.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"

static int compare_edits(const void *a, const void *b) {
    const TextEdit *x = *(const TextEdit *const *)a, *y = *(const TextEdit *const *)b;
    if (x->range.start != y->range.start) return x->range.start < y->range.start ? -1 : 1;
    /* an insertion at p goes before a replacement that starts at p */
    return (x->range.end > y->range.end) - (x->range.end < y->range.end);
}

char *edits_apply(const char *text, size_t length, const TextEdit *edits, size_t count, size_t *out_length) {
    const TextEdit **order = malloc((count ? count : 1) * sizeof *order);
    if (!order) return NULL;
    size_t total = length;
    for (size_t i = 0; i < count; i++) {
        order[i] = &edits[i];
        if (edits[i].range.start > edits[i].range.end || edits[i].range.end > length) {
            free(order);
            return NULL;
        }
        total += strlen(edits[i].new_text);
    }
    qsort(order, count, sizeof *order, compare_edits);
    for (size_t i = 1; i < count; i++)
        if (order[i]->range.start < order[i - 1]->range.end) {
            free(order);
            return NULL;
        }
    char *out = malloc(total + 1);
    if (!out) {
        free(order);
        return NULL;
    }
    size_t at = 0, n = 0;
    for (size_t i = 0; i < count; i++) {
        const TextEdit *e = order[i];
        memcpy(out + n, text + at, e->range.start - at);
        n += e->range.start - at;
        size_t len = strlen(e->new_text);
        memcpy(out + n, e->new_text, len);
        n += len;
        at = e->range.end;
    }
    memcpy(out + n, text + at, length - at);
    n += length - at;
    out[n] = '\0';
    free(order);
    if (out_length) *out_length = n;
    return out;
}

static bool overlaps(const TextEdit *a, const TextEdit *b) {
    /* two insertions at the same point conflict too: their order is undefined */
    if (a->range.start == b->range.start) return true;
    return a->range.start < b->range.end && b->range.start < a->range.end;
}

char *fixes_apply(const char *text, size_t length, const FindingList *findings, bool include_unsafe,
                  size_t *out_length, size_t *applied) {
    size_t cap = 16, count = 0, fixes = 0;
    TextEdit *chosen = malloc(cap * sizeof *chosen);
    if (!chosen) return NULL;
    for (size_t i = 0; i < findings->count; i++) {
        const Finding *f = &findings->items[i];
        if (f->fix_count == 0) continue;
        const Fix *fix = &f->fixes[0];
        if (!fix->safe && !include_unsafe) continue;
        bool clash = false;
        for (size_t e = 0; e < fix->edit_count && !clash; e++)
            for (size_t c = 0; c < count && !clash; c++)
                clash = overlaps(&fix->edits[e], &chosen[c]);
        for (size_t e = 0; e < fix->edit_count && !clash; e++)
            for (size_t k = e + 1; k < fix->edit_count && !clash; k++)
                clash = fix->edits[e].range.start < fix->edits[k].range.end &&
                        fix->edits[k].range.start < fix->edits[e].range.end;
        if (clash) continue;
        if (!array_reserve_n(&chosen, count, fix->edit_count, &cap, sizeof *chosen, 16)) {
            free(chosen);
            return NULL;
        }
        /* a fix may hold no edits (fix->edits NULL): memcpy's source must not be NULL even for 0 bytes */
        if (fix->edit_count) memcpy(chosen + count, fix->edits, fix->edit_count * sizeof *chosen);
        count += fix->edit_count;
        fixes++;
    }
    char *out = edits_apply(text, length, chosen, count, out_length);
    free(chosen);
    if (out && applied) *applied = fixes;
    return out;
}
