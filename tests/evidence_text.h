/* Test helper: an evidence item (analysis/evidence.h) in words, as the
 * renderers write it, for string assertions. Each call returns one of a
 * few static buffers, so several may appear in one assertion. */
#ifndef ADVISE_TEST_EVIDENCE_TEXT_H
#define ADVISE_TEST_EVIDENCE_TEXT_H

#include <stdio.h>
#include <stdlib.h>

#include "analysis/evidence.h"

static inline const char *ev(const Evidence *e) {
    static char buffers[8][4096];
    static unsigned next;
    char *b = buffers[next++ % 8];
    char *text = evidence_render(e);
    snprintf(b, sizeof buffers[0], "%s", text ? text : "");
    free(text);
    return b;
}

#endif
