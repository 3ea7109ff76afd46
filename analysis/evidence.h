/* One item of a finding's evidence: what it is (a static note, a measured
 * figure, the model behind an estimate, a caveat), its words with
 * placeholders, and its figures as numbers with units (units.h). The words
 * are put together where the finding is shown (evidence_render), so that
 * every face of advise writes a figure the same way and JSON carries the
 * numbers themselves.
 *
 * Building one, printf-style, with "{}" where each figure goes, in order:
 *
 *   evidence_append(&e, QV(q_count(n), q_ns(total)), "`%s` ran {} times: {}", name);
 *
 * The stored template numbers the figures ("`f` ran {0} times: {1}") and
 * doubles the braces that are text ("{{", "}}"), wherever they came from
 * (a name with a brace in it stays text). Without figures (NO_VALUES) every
 * brace is text. */
#ifndef ADVISE_EVIDENCE_H
#define ADVISE_EVIDENCE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "analysis/units.h"

typedef enum {
    EVIDENCE_NOTE,     /* a static fact about the code (a rule's remark) */
    EVIDENCE_MEASURED, /* a figure a profile measured */
    EVIDENCE_MODEL,    /* how an estimate was made, or why there is none */
    EVIDENCE_CAVEAT,   /* what limits the figures or the advice */
} EvidenceKind;

typedef struct {
    EvidenceKind kind;
    char *text;        /* the template; NULL: no evidence */
    Quantity *values;  /* {0}, {1}, ... */
    size_t value_count;
} Evidence;

/* The figures of one append: QV(q_ns(t), q_ratio(s)) or NO_VALUES. */
#define QV(...) ((const Quantity[]){__VA_ARGS__}), (sizeof((const Quantity[]){__VA_ARGS__}) / sizeof(Quantity))
#define NO_VALUES NULL, 0

/* "note", "measured", "model", "caveat" (the JSON `kind`, and the label
 * the CLI and the editor put before an item). */
const char *evidence_kind_name(EvidenceKind kind);

/* An empty item of the kind. */
Evidence evidence_new(EvidenceKind kind);
/* Appends printf(fmt, ...) with "{}" standing for values[0..count) in
 * order. False when memory runs out (e keeps what it had). */
bool evidence_append(Evidence *e, const Quantity *values, size_t count, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool evidence_vappend(Evidence *e, const Quantity *values, size_t count, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* A deep copy; false when memory runs out (*to is then empty). */
bool evidence_copy(Evidence *to, const Evidence *from);
void evidence_free(Evidence *e);

/* The words, figures filled in by units_format: heap, NULL when memory
 * runs out. A placeholder without a figure reads "?". */
char *evidence_render(const Evidence *e);

#endif
