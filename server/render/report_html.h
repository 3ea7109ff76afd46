/* `advise report --format html`: the report as one self-contained page
 * (inline CSS and SVG, no scripts, nothing fetched): a header, each GPU's
 * busy and idle time with its largest idle gaps drawn where they happened,
 * the top kernels, device memory over time with the lines holding it
 * (report_memory.h), and the findings ranked by cost with their evidence.
 * Every string from a profile or a finding is HTML-escaped. */
#ifndef ADVISE_REPORT_HTML_H
#define ADVISE_REPORT_HTML_H

#include <stdbool.h>
#include <stdio.h>

#include "server/render/report_text.h"

/* Writes the page; false when writing failed. */
bool report_html_write(FILE *out, const ReportInput *in);

/* Writes s with &, <, >, " and ' replaced by entities (safe in text and in
 * quoted attributes). NULL writes nothing. */
void report_html_escape(FILE *out, const char *s);

/* Writes "<code>samples/cuda/transpose.cu:156</code>" for a site (escaped),
 * or a note when it names no line of the project. */
void report_html_site(FILE *out, const Profile *p, int site);
/* A figure card of the header and the memory section: label, value, and a tooltip when title is not NULL. */
void report_html_card(FILE *out, const char *label, const char *value, const char *title);

#endif
