/* The report's device-memory section, for profiles recorded with `advise
 * profile --memory`: for each process and GPU, memory over time (allocated
 * and reserved, the peak marked), the peak and the run's maxima, whether
 * the recorded window covered the whole run, the lines holding the most at
 * the peak, the lines growing step after step, and an out-of-memory error
 * with what was live then. Text (report_memory_text.c: a sparkline) and
 * HTML (report_memory_html.c: inline SVG); nothing is written for profiles
 * without memory. */
#ifndef ADVISE_REPORT_MEMORY_H
#define ADVISE_REPORT_MEMORY_H

#include <stdbool.h>
#include <stdio.h>

#include "server/render/report_text.h"

#define REPORT_MEMORY_TOP 5 /* lines listed per table */

/* Whether a profile of the report holds device memory. */
bool report_has_memory(const ReportInput *in);

/* The section; nothing when no profile holds memory. */
void report_memory_text(FILE *out, const ReportInput *in);
void report_memory_html(FILE *out, const ReportInput *in);

/* The length of the picture's time axis: the last sample, the peak or the
 * out-of-memory error, whichever came last. */
uint64_t report_memory_span_ns(const ProfMemory *m);
/* Its height: the most allocated or reserved of the samples and the peak. */
uint64_t report_memory_top_bytes(const ProfMemory *m);
/* Live memory's change per step, signed: "+75.5 MB" (buf holds UNITS_BUF + 1). */
const char *report_memory_per_step(const ProfMemory *m, char *buf, size_t size);

#endif
