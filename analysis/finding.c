#include "analysis/finding.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/base/growable.h"

const char *severity_name(Severity s) {
    switch (s) {
    case SEVERITY_ERROR: return "error";
    case SEVERITY_WARNING: return "warning";
    case SEVERITY_INFO: return "info";
    case SEVERITY_HINT: return "hint";
    }
    return "unknown";
}

bool severity_parse(const char *text, Severity *out) {
    static const struct { const char *name; Severity s; } names[] = {
        {"error", SEVERITY_ERROR}, {"warning", SEVERITY_WARNING}, {"warn", SEVERITY_WARNING},
        {"info", SEVERITY_INFO},   {"information", SEVERITY_INFO}, {"hint", SEVERITY_HINT},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcasecmp(text, names[i].name) == 0) {
            *out = names[i].s;
            return true;
        }
    return false;
}

void finding_list_init(FindingList *list) { memset(list, 0, sizeof *list); }

static void fix_free(Fix *fix) {
    free(fix->title);
    for (size_t k = 0; k < fix->edit_count; k++) free(fix->edits[k].new_text);
    free(fix->edits);
}

void finding_drop_fixes(Finding *f) {
    for (size_t i = 0; i < f->fix_count; i++) fix_free(&f->fixes[i]);
    free(f->fixes);
    f->fixes = NULL;
    f->fix_count = f->fix_cap = 0;
    f->fixes_withheld = true;
}

void finding_drop_empty_fixes(Finding *f) {
    size_t kept = 0;
    for (size_t i = 0; i < f->fix_count; i++) {
        if (f->fixes[i].edit_count == 0)
            fix_free(&f->fixes[i]);
        else
            f->fixes[kept++] = f->fixes[i];
    }
    f->fix_count = kept;
}

void finding_free(Finding *f) {
    free(f->message);
    for (size_t i = 0; i < f->evidence_count; i++) evidence_free(&f->evidence[i]);
    free(f->evidence);
    evidence_free(&f->gain.model);
    for (size_t i = 0; i < f->fix_count; i++) fix_free(&f->fixes[i]);
    free(f->fixes);
    for (size_t i = 0; i < f->related_count; i++) free(f->related[i].message);
    free(f->related);
    memset(f, 0, sizeof *f);
}

void finding_list_free(FindingList *list) {
    for (size_t i = 0; i < list->count; i++) finding_free(&list->items[i]);
    free(list->items);
    memset(list, 0, sizeof *list);
}

Finding *finding_list_push(FindingList *list) {
    if (!array_reserve(&list->items, list->count, &list->capacity, sizeof *list->items, 8)) return NULL;
    Finding *f = &list->items[list->count++];
    memset(f, 0, sizeof *f);
    return f;
}

void finding_list_remove(FindingList *list, size_t i) {
    if (i >= list->count) return;
    finding_free(&list->items[i]);
    memmove(&list->items[i], &list->items[i + 1], (list->count - i - 1) * sizeof *list->items);
    list->count--;
}

static int compare_findings(const void *a, const void *b) {
    const Finding *x = a, *y = b;
    if (x->range.start != y->range.start) return x->range.start < y->range.start ? -1 : 1;
    int c = strcmp(x->code, y->code);
    if (c) return c;
    return x->range.end < y->range.end ? -1 : x->range.end > y->range.end;
}

void finding_list_sort(FindingList *list) {
    if (list->count > 1) qsort(list->items, list->count, sizeof *list->items, compare_findings);
}

bool finding_take_evidence(Finding *f, Evidence *e) {
    if (!e->text || !array_reserve(&f->evidence, f->evidence_count, &f->evidence_cap, sizeof *f->evidence, 4)) {
        bool empty = !e->text;
        evidence_free(e);
        return empty;
    }
    f->evidence[f->evidence_count++] = *e;
    *e = evidence_new(e->kind);
    return true;
}

bool finding_evidence(Finding *f, EvidenceKind kind, const Quantity *values, size_t count, const char *fmt, ...) {
    Evidence e = evidence_new(kind);
    va_list ap;
    va_start(ap, fmt);
    bool ok = evidence_vappend(&e, values, count, fmt, ap);
    va_end(ap);
    return ok ? finding_take_evidence(f, &e) : false;
}

bool finding_take_gain(Finding *f, double seconds, const char *scope, Evidence *model) {
    evidence_free(&f->gain.model);
    f->gain = (Gain){.present = true, .seconds = seconds, .scope = scope, .model = *model};
    f->gain.model.kind = EVIDENCE_MODEL;
    *model = evidence_new(EVIDENCE_MODEL);
    return true;
}

void finding_gain_over_steady_steps(Finding *f) {
    if (f->gain.present) f->gain.steady_steps = true;
}

bool finding_set_gain(Finding *f, double seconds, const char *scope, const Quantity *values, size_t count,
                      const char *fmt, ...) {
    Evidence model = evidence_new(EVIDENCE_MODEL);
    va_list ap;
    va_start(ap, fmt);
    bool ok = evidence_vappend(&model, values, count, fmt, ap);
    va_end(ap);
    return ok && finding_take_gain(f, seconds, scope, &model);
}

bool finding_add_related(Finding *f, ByteRange range, const char *message) {
    if (!array_reserve(&f->related, f->related_count, &f->related_cap, sizeof *f->related, 4)) return false;
    char *m = strdup(message);
    if (!m) return false;
    f->related[f->related_count++] = (RelatedLocation){range, m};
    return true;
}

Fix *finding_add_fix(Finding *f, const char *title, bool safe) {
    if (!array_reserve(&f->fixes, f->fix_count, &f->fix_cap, sizeof *f->fixes, 2)) return NULL;
    char *t = strdup(title);
    if (!t) return NULL;
    Fix *fix = &f->fixes[f->fix_count++];
    *fix = (Fix){.title = t, .safe = safe};
    return fix;
}

bool fix_add_edit(Fix *fix, size_t start, size_t end, const char *new_text) {
    if (!array_reserve(&fix->edits, fix->edit_count, &fix->edit_cap, sizeof *fix->edits, 4)) return false;
    char *t = strdup(new_text ? new_text : "");
    if (!t) return false;
    fix->edits[fix->edit_count++] = (TextEdit){{start, end}, t};
    return true;
}
