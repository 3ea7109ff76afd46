/* `advise report` as text for a terminal, what the report shows (ReportInput,
 * shared with the HTML face in report_html.h), and the column padding of
 * figures shared by the report and `advise diff` (the figures themselves
 * are written by analysis/units.h). */
#ifndef ADVISE_REPORT_TEXT_H
#define ADVISE_REPORT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/units.h"
#include "profiler/profile.h"
#include "server/render/ranked_findings.h"

/* One profile a report draws on. */
typedef struct {
    const Profile *profile;
    const char *path;                /* shown in the header, or NULL */
} ReportProfile;

/* What a report shows; nothing here is owned by the report. */
typedef struct {
    /* The profiles that measured the findings' files, newest first (a folder
     * gives each file the newest profile that mentions it); none: findings
     * are not ranked by measured cost. */
    const ReportProfile *profiles;
    size_t profile_count;
    const RankedFindings *findings;  /* ranked by cost, most costly first */
} ReportInput;

/* The printf width that gives s width columns: figures hold "µs", two bytes
 * in one column. */
int report_pad(const char *s, int width);

/* The run's length as profile_view_run_ns has it: the longest process wall
 * time, else the longest device span. */
uint64_t report_run_ns(const Profile *p);

/* One kernel's figures summed over its configurations and processes. */
typedef ProfKernelTotal ReportKernel;

/* The kernels by GPU time, largest first; *count set. Heap, NULL when the
 * profile has none or memory ran out. */
ReportKernel *report_top_kernels(const Profile *p, size_t *count);

/* Writes the text report; false when writing failed. */
bool report_text_write(FILE *out, const ReportInput *in);

#endif
