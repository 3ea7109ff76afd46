/* Findings and fixes: what a rule reports, as plain structs in byte offsets.
 * The server and the CLI turn them into LSP, JSON or text. */
#ifndef ADVISE_FINDING_H
#define ADVISE_FINDING_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "analysis/evidence.h"

typedef enum { /* the LSP DiagnosticSeverity values */
    SEVERITY_ERROR = 1,
    SEVERITY_WARNING = 2,
    SEVERITY_INFO = 3,
    SEVERITY_HINT = 4,
} Severity;

const char *severity_name(Severity s);
/* Parses "error", "warning", "info" (or "information"), "hint"; false if unknown. */
bool severity_parse(const char *text, Severity *out);

typedef struct {
    size_t start, end; /* byte offsets, end exclusive */
} ByteRange;

typedef struct {
    ByteRange range;
    char *new_text;
} TextEdit;

typedef struct {
    char *title;
    bool safe; /* behaviour-preserving: `advise check --fix` applies only these */
    TextEdit *edits;
    size_t edit_count;
    size_t edit_cap; /* room in edits (array_reserve) */
} Fix;

typedef struct {
    ByteRange range; /* in the same document */
    char *message;
} RelatedLocation;

/* Estimated gain; only filled when a profile gives a measurement. */
typedef struct {
    bool present;
    double seconds;
    const char *scope; /* "program" or "kernel" */
    Evidence model;    /* how it was estimated (kind EVIDENCE_MODEL); text NULL when unsaid */
    /* counted over the steady training steps only (start-up, warm-up,
     * evaluation and checkpoints left out): its share per step is per
     * steady step (ranked_finding_gain_per_step) */
    bool steady_steps;
} Gain;

typedef struct {
    const char *code; /* static strings owned by the rule */
    const char *name;
    Severity severity;
    ByteRange range;
    char *message;
    Evidence *evidence; /* in the order added: the rule's notes, then what a profile measured */
    size_t evidence_count;
    size_t evidence_cap; /* room in evidence (array_reserve) */
    Gain gain;
    /* What to do, in one line, for a finding whose fixes (if any) do not
     * say it: the reports' "what to do first" shows it. A static string
     * (the rule's), never freed; NULL: none. */
    const char *advice;
    Fix *fixes;
    size_t fix_count;
    size_t fix_cap; /* room in fixes (array_reserve) */
    bool fixes_withheld; /* a measurement showed the fixes would not help; they were dropped */
    RelatedLocation *related;
    size_t related_count;
    size_t related_cap; /* room in related (array_reserve) */
    /* The language server's: the diagnostic it last published for this
     * finding, whose JSON it reuses when this finding is an unchanged copy
     * of that one (lsp_worker.c keeps it on such copies only); 0: none. */
    unsigned long published_id;
} Finding; /* moved whole (memmove, *g = *f) between lists: the caps go with their arrays */

typedef struct {
    Finding *items;
    size_t count, capacity;
} FindingList;

void finding_list_init(FindingList *list);
void finding_list_free(FindingList *list);
/* Appends a zeroed finding and returns it (NULL when memory runs out). */
Finding *finding_list_push(FindingList *list);
/* Removes item i, freeing it. */
void finding_list_remove(FindingList *list, size_t i);
/* Sorts by start offset, then code. */
void finding_list_sort(FindingList *list);
void finding_free(Finding *f);
/* Removes every fix of f and marks them withheld (a measurement showed
 * they would not help). */
void finding_drop_fixes(Finding *f);
/* Removes the fixes that hold no edit (a rule that could not build its
 * edit): a code action that changes nothing must never be offered. */
void finding_drop_empty_fixes(Finding *f);

/* Builders; all copy their strings. Return false when memory runs out. */
/* An item of evidence: fmt and values as evidence_append's ("{}" where
 * each figure goes). The shorthands below name the kind:
 *   finding_note(f, "the dimensions are the last two only for rank %d", r);
 *   finding_measured(f, QV(q_ns(mean), q_ns(max)), "each wait: mean {}, longest {}"); */
bool finding_evidence(Finding *f, EvidenceKind kind, const Quantity *values, size_t count, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define finding_note(f, ...) finding_evidence((f), EVIDENCE_NOTE, NO_VALUES, __VA_ARGS__)
#define finding_caveat(f, ...) finding_evidence((f), EVIDENCE_CAVEAT, NO_VALUES, __VA_ARGS__)
#define finding_measured(f, ...) finding_evidence((f), EVIDENCE_MEASURED, __VA_ARGS__)
#define finding_model(f, ...) finding_evidence((f), EVIDENCE_MODEL, __VA_ARGS__)
/* Moves an item built with evidence_append in; *e is left empty either way. */
bool finding_take_evidence(Finding *f, Evidence *e);
/* Sets the estimated gain (scope a static string: "program" or "kernel")
 * and its model, built as finding_evidence builds an item. */
bool finding_set_gain(Finding *f, double seconds, const char *scope, const Quantity *values, size_t count,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The same with a model already built (moved in, *model left empty). */
bool finding_take_gain(Finding *f, double seconds, const char *scope, Evidence *model);
/* Marks the gain as counted over the steady training steps only (Gain.steady_steps). */
void finding_gain_over_steady_steps(Finding *f);
bool finding_add_related(Finding *f, ByteRange range, const char *message);
Fix *finding_add_fix(Finding *f, const char *title, bool safe);
bool fix_add_edit(Fix *fix, size_t start, size_t end, const char *new_text);

#endif
