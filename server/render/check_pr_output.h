/* `advise check` for pull-request checks: SARIF 2.1.0 (code scanning),
 * GitHub workflow-command annotations (with a step summary) and GitLab Code
 * Quality reports. check_output.c hands these formats the same calls it
 * gets from cli_check.c (docs/ci.md describes the output). */
#ifndef ADVISE_CHECK_PR_OUTPUT_H
#define ADVISE_CHECK_PR_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/document.h"
#include "analysis/finding.h"
#include "profiler/sha256.h"
#include "server/render/check_output.h"

typedef enum { PR_SARIF, PR_GITHUB, PR_GITLAB } PrFormat;

/* GitHub shows at most this many annotations of each type (error,
 * warning, notice) per step. */
#define GITHUB_ANNOTATION_CAP 10

typedef struct PrOutput PrOutput;

/* root: the project root (absolute), against which paths are made
 * relative (SARIF's %SRCROOT%); step_summary: a file to append a Markdown
 * summary to (GitHub's $GITHUB_STEP_SUMMARY), or NULL. */
PrOutput *pr_output_new(PrFormat format, FILE *out, const char *root, const char *step_summary);
/* fingerprints: [i] for findings->items[i] (check_output_file_fingerprinted), or NULL */
void pr_output_file(PrOutput *o, const char *path, const Document *doc, const FindingList *findings,
                    const char (*fingerprints)[SHA256_HEX_CHARS + 1]);
void pr_output_error(PrOutput *o, const char *path, const char *message);
/* line and column: 1-based, column in code points */
void pr_output_parse_failure(PrOutput *o, const char *path, size_t line, size_t column, const char *message);
/* summary: the run's counts (files checked; --diff-base and --baseline) */
void pr_output_finish(PrOutput *o, const CheckSummary *summary);
void pr_output_free(PrOutput *o);

/* The stable fingerprint of each finding of one file (hex[i] for
 * findings->items[i]): SHA-256 of the rule code, the finding's lines with
 * their whitespace trimmed, and the number of earlier findings of the file
 * with the same code and lines. Neither the path nor the line number goes
 * in: the fingerprint survives lines inserted above and renames, and two
 * identical findings of one file still differ. */
void finding_fingerprints(const Document *doc, const FindingList *findings, char (*hex)[SHA256_HEX_CHARS + 1]);

/* Escapes s for a workflow command: % \r \n as %25 %0D %0A, and for a
 * property value (property true) : and , as %3A and %2C too. Heap. */
char *github_escape(const char *s, bool property);

#endif
