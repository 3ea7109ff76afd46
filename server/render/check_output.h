/* How `advise check` shows findings: text for people, JSON for programs,
 * SARIF, GitHub annotations and GitLab Code Quality for pull-request checks
 * (check_pr_output.h). All receive the same calls from cli_check.c. */
#ifndef ADVISE_CHECK_OUTPUT_H
#define ADVISE_CHECK_OUTPUT_H

#include <stdio.h>

#include "analysis/document.h"
#include "analysis/finding.h"
#include "profiler/sha256.h"

typedef struct {
    size_t files_checked;
    size_t by_severity[5]; /* indexed by Severity */
    size_t findings;
    size_t fixable_safe;   /* findings whose first fix is safe */
    size_t fixable_unsafe; /* findings whose first fix is unsafe */
    size_t fixed;          /* fixes written (--fix) or shown (--diff) */
    size_t files_fixed;
    size_t suppressed;
    size_t errors;         /* files or paths that could not be checked */
    size_t parse_failures; /* files checked in part: they did not parse cleanly */
    size_t fixes_withheld; /* fixes --fix does not apply: their files did not parse cleanly */
    bool diff_mode;
    bool fix_mode;
    /* CUDA files not analysed: the toolkit is missing (cuda_toolkit_missing says why) */
    size_t cuda_skipped;
    char *cuda_skip_reason;       /* the first file's reason; owned by the caller */
    /* --diff-base REF (check_filter.h): only findings on lines changed since REF are counted above */
    const char *diff_base;        /* REF as given, or NULL */
    const char *diff_base_commit; /* the commit it names */
    size_t outside_changes;       /* findings left out: on lines REF already had */
    size_t files_unchanged;       /* files not analysed: no line changed since REF */
    /* --baseline FILE: only findings it does not hold are counted above */
    bool baseline;
    size_t baseline_known; /* findings left out: the baseline holds them */
    size_t baseline_fixed; /* its findings gone from files checked in this run */
    /* --write-baseline FILE */
    const char *baseline_written; /* FILE once written, else NULL */
    size_t baseline_recorded;
} CheckSummary;

typedef struct CheckOutput CheckOutput;

typedef enum { FORMAT_TEXT, FORMAT_JSON, FORMAT_SARIF, FORMAT_GITHUB, FORMAT_GITLAB } OutputFormat;

/* "text", "json", "sarif", "github", "gitlab"; false if unknown. */
bool output_format_parse(const char *name, OutputFormat *out);

typedef struct {
    bool show_source;         /* text: the source line and a caret under each finding */
    const char *root;         /* the project root (absolute): SARIF's %SRCROOT%, relative paths; may be NULL */
    const char *step_summary; /* github: a file to append a Markdown summary to ($GITHUB_STEP_SUMMARY), or NULL */
} CheckOutputOptions;

/* The JSON output's format_version (docs/json-evidence.md): 2 since the
 * evidence items carry their kind and figures. */
#define CHECK_JSON_FORMAT_VERSION 2

CheckOutput *check_output_new(OutputFormat format, FILE *out, const CheckOutputOptions *options);
/* Findings of one file, already sorted. */
void check_output_file(CheckOutput *o, const char *path, const Document *doc, const FindingList *findings);
/* The same with their fingerprints (SARIF, GitLab) given: [i] for
 * findings->items[i], computed over the file's whole list before a filter
 * dropped some (check_filter.h); NULL: computed from findings. */
void check_output_file_fingerprinted(CheckOutput *o, const char *path, const Document *doc,
                                     const FindingList *findings, const char (*fingerprints)[SHA256_HEX_CHARS + 1]);
/* A file or path that could not be checked (also goes to stderr in text mode). */
void check_output_error(CheckOutput *o, const char *path, const char *message);
/* A file that was checked in part: it did not parse cleanly, and its
 * findings cover what did (stderr in text mode; "parse_failures" in JSON).
 * line and column are 1-based. */
void check_output_parse_failure(CheckOutput *o, const char *path, size_t line, size_t column, const char *message);
void check_output_finish(CheckOutput *o, const CheckSummary *summary);
void check_output_free(CheckOutput *o);

/* 1-based line and column (in code points) of a byte offset, as shown to people. */
void display_position(const Document *doc, size_t offset, size_t *line, size_t *column);

#endif
