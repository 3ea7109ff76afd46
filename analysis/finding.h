/* Findings and fixes: what a rule reports, as plain structs in byte offsets.
 * The server and the CLI turn them into LSP, JSON, SARIF or text. */
#ifndef ADVISE_FINDING_H
#define ADVISE_FINDING_H

#include <stdbool.h>
#include <stddef.h>

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
    char *model;       /* how it was estimated, in words */
} Gain;

typedef struct {
    const char *code; /* static strings owned by the rule */
    const char *name;
    Severity severity;
    ByteRange range;
    char *message;
    char **evidence;
    size_t evidence_count;
    Gain gain;
    Fix *fixes;
    size_t fix_count;
    bool fixes_withheld; /* a measurement showed the fixes would not help; they were dropped */
    RelatedLocation *related;
    size_t related_count;
} Finding;

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

/* Builders; all copy their strings. Return false when memory runs out. */
bool finding_add_evidence(Finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool finding_add_related(Finding *f, ByteRange range, const char *message);
Fix *finding_add_fix(Finding *f, const char *title, bool safe);
bool fix_add_edit(Fix *fix, size_t start, size_t end, const char *new_text);

/* printf into a fresh heap string (NULL when memory runs out). */
char *format_string(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
