/* Suppression comments, read from a document's comments:
 *
 *   x.item()  # advise: ignore[PY001]            this line
 *   # advise: ignore[host-sync-in-loop, PY004]   on a line of its own: the next line too
 *   # advise: ignore                             every rule (this line / the next)
 *   # advise: ignore-file[PY009]                 the whole file
 *
 * C, C++ and CUDA use `//` or block comments with the same words. */
#ifndef ADVISE_SUPPRESSION_H
#define ADVISE_SUPPRESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/document.h"

typedef struct {
    size_t line;      /* 0-based line the suppression covers */
    bool whole_file;
    bool all_rules;
    char **selectors; /* rule codes or names as written */
    size_t selector_count;
    size_t selector_cap; /* room in selectors (array_reserve) */
} Suppression;

typedef struct {
    Suppression *items;
    size_t count;
    size_t cap; /* room in items (array_reserve) */
} Suppressions;

/* Reads one comment's text [start, end) of doc and records what it
 * suppresses. own_line: nothing but whitespace precedes the comment. */
void suppressions_add_comment(Suppressions *s, const Document *doc, size_t start, size_t end, bool own_line);
/* Finds `//` and block comments in C-family text (skipping string and
 * character literals) and records their suppressions. */
void suppressions_scan_c_family(Suppressions *s, const Document *doc);
bool suppressions_cover(const Suppressions *s, size_t line, const char *code, const char *name);
void suppressions_free(Suppressions *s);

#endif
