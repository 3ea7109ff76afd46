/* Which findings of a file `advise check` reports, for pull-request checks
 * (docs/ci.md): with --diff-base, only those on lines added or changed
 * since a git commit (git_changes.h); with --baseline, only those whose
 * fingerprint the baseline does not hold (baseline.h); with
 * --write-baseline, every finding is recorded for the baseline file.
 *
 * The rule that decides whether a finding is on the change, in one place
 * (finding_on_change): a line of its primary range, or of one of its
 * related locations, was added or changed. A finding that speaks for a
 * whole program (a profile's run-wide figures, a fact from another module)
 * still sits on lines of this file; its related locations name the other
 * lines it is about (the rest of a launch-bound run, the write a race
 * reads, the softmax of an attention), so a change to any of them counts.
 *
 * Fingerprints are computed over a file's whole list of findings, before
 * any is dropped, so that a finding keeps the fingerprint a full run gives
 * it (the occurrence index counts the findings dropped too).
 *
 * One filter serves a whole run; its calls may come from several threads. */
#ifndef ADVISE_CHECK_FILTER_H
#define ADVISE_CHECK_FILTER_H

#include <stdbool.h>

#include "analysis/document.h"
#include "analysis/finding.h"
#include "profiler/sha256.h"
#include "server/render/baseline.h"
#include "server/render/check_output.h"
#include "server/workspace/git_changes.h"

typedef struct CheckFilter CheckFilter;

typedef struct {
    const char *root;     /* the project root (absolute): baseline paths are relative to it */
    GitChanges *changes;  /* --diff-base: taken over (freed with the filter), or NULL */
    const char *diff_ref; /* the revision as given, for the summary */
    Baseline *baseline;   /* --baseline: taken over, or NULL */
    bool record;          /* --write-baseline: keep every finding for check_filter_write_baseline */
} CheckFilterOptions;

/* NULL when memory runs out. */
CheckFilter *check_filter_new(const CheckFilterOptions *options);
void check_filter_free(CheckFilter *f);

typedef enum {
    FILTER_CHECK,  /* analyse it */
    FILTER_SKIP,   /* no line of it changed since --diff-base: nothing of it would be reported */
    FILTER_REFUSE, /* outside the git repository: --diff-base cannot say what changed (*error set) */
} FilterVerdict;

/* Before analysing path. */
FilterVerdict check_filter_file(CheckFilter *f, const char *path, char **error);

/* Drops from findings (of path, read into doc) those not reported, and
 * returns the fingerprints of those kept (heap, [i] for findings->items[i];
 * NULL when memory ran out: then nothing was dropped). parsed_cleanly:
 * only a file that parsed cleanly can show that a baseline finding is gone. */
char (*check_filter_findings(CheckFilter *f, const char *path, const Document *doc, FindingList *findings,
                             bool parsed_cleanly))[SHA256_HEX_CHARS + 1];

/* A document's lines as git numbers them: split at '\n' only (a lone '\r'
 * ends a line for the Document, not for git). */
typedef struct {
    size_t *newlines; /* offsets of the '\n's */
    size_t count;
} GitLineIndex;

/* False when memory runs out. */
bool git_line_index_init(GitLineIndex *index, const Document *doc);
void git_line_index_free(GitLineIndex *index);

/* Is the finding on the change: does a line of its primary range, or of
 * one of its related locations, count as changed in lines (NULL: none)? */
bool finding_on_change(const GitLineIndex *index, const Finding *finding, const ChangedLines *lines);

/* Puts the run's counts into s (diff_base, outside_changes, files_unchanged,
 * baseline, baseline_known, baseline_fixed). */
void check_filter_summarise(CheckFilter *f, CheckSummary *s);

/* --write-baseline: writes what was recorded; false with *error. *count:
 * the findings written. */
bool check_filter_write_baseline(CheckFilter *f, const char *file, size_t *count, char **error);

#endif
