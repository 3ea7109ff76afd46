#include "profiler/sass_lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t index;
    const SassRecord *r;
} Key;

static int by_function_and_pc(const void *a, const void *b) {
    const Key *p = a, *q = b;
    const SassRecord *x = p->r, *y = q->r;
    if (x->cubin != y->cubin) return x->cubin < y->cubin ? -1 : 1;
    int c = strcmp(x->function ? x->function : "", y->function ? y->function : "");
    if (c) return c;
    if (x->pc != y->pc) return x->pc < y->pc ? -1 : 1;
    return p->index < q->index ? -1 : 1;
}

static bool same_function(const SassRecord *x, const SassRecord *y) {
    return x->cubin == y->cubin && strcmp(x->function ? x->function : "", y->function ? y->function : "") == 0;
}

bool sass_charge_inlined(const SassRecord *records, size_t n, long *charged_to) {
    for (size_t i = 0; i < n; i++) charged_to[i] = SASS_KEEP;
    if (n == 0) return true;
    Key *order = malloc(n * sizeof *order);
    long *before = malloc(n * sizeof *before), *after = malloc(n * sizeof *after);
    if (!order || !before || !after) {
        free(order);
        free(before);
        free(after);
        return false;
    }
    for (size_t i = 0; i < n; i++) order[i] = (Key){i, &records[i]};
    qsort(order, n, sizeof *order, by_function_and_pc);
    /* the nearest project record before and after each position, within its function */
    long last = -1;
    for (size_t k = 0; k < n; k++) {
        if (k > 0 && !same_function(order[k].r, order[k - 1].r)) last = -1;
        before[k] = last;
        if (order[k].r->mapping == SASS_PROJECT) last = (long)k;
    }
    last = -1;
    for (size_t k = n; k-- > 0;) {
        if (k + 1 < n && !same_function(order[k].r, order[k + 1].r)) last = -1;
        after[k] = last;
        if (order[k].r->mapping == SASS_PROJECT) last = (long)k;
    }
    for (size_t k = 0; k < n; k++) {
        const SassRecord *h = order[k].r;
        if (h->mapping != SASS_HEADER) continue;
        long b = before[k], a = after[k];
        long pick = b;
        if (b < 0 || (a >= 0 && order[a].r->pc - h->pc < h->pc - order[b].r->pc)) pick = a;
        charged_to[order[k].index] = pick < 0 ? SASS_NO_PROJECT : (long)order[pick].index;
    }
    free(order);
    free(before);
    free(after);
    return true;
}

const char *sass_outside_path(const char *real_path, char *buf, size_t size) {
    if (!size) return buf;
    const char *slash = real_path ? strrchr(real_path, '/') : NULL;
    const char *name = slash ? slash + 1 : real_path ? real_path : "";
    bool cuda = real_path && strstr(real_path, "/cuda") && strstr(real_path, "/include/");
    size_t need = strlen(name) + 20;
    if (need > size) name = "header";
    snprintf(buf, size, "%s/%s", cuda ? "<cuda-headers>" : "<outside-project>", *name ? name : "header");
    return buf;
}
