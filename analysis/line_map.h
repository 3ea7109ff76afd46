/* Where the lines of a profiled text went after edits: figures recorded
 * for the text a profile measured (its sha256 matched) follow the code
 * through the edits made since, and lines an edit touched lose theirs.
 * The language server keeps one per open document (through didChange);
 * `advise check --fix` builds one from the fixes it wrote. */
#ifndef ADVISE_LINE_MAP_H
#define ADVISE_LINE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/document.h"

typedef struct {
    /* for each line of the current text (0-based index), the 1-based line of
     * the baseline text it is, or 0 when an edit made or changed it */
    uint32_t *baseline_line;
    size_t count;
    uint32_t baseline_count; /* lines of the baseline text */
    char baseline_sha256[65]; /* hex of the baseline text ("" when none) */
} LineMap;

/* The identity over doc's lines, baseline doc's text with that sha256. False
 * when out of memory (*map is then empty). */
bool line_map_start(LineMap *map, const Document *doc, const char *sha256_hex);
void line_map_free(LineMap *map);
/* *to becomes a copy of from (empty when from is, or memory runs out). */
void line_map_copy(LineMap *to, const LineMap *from);
bool line_map_valid(const LineMap *map);
/* True when no line moved or changed. */
bool line_map_is_identity(const LineMap *map);

/* Records the replacement of [start, end) of doc (the text before the edit)
 * by text (length bytes). The lines the edit touches lose their baseline
 * line, except whole lines inserted or removed at a line start, which move
 * the lines after them. False when out of memory: the map is then emptied
 * (figures are shown stale rather than on the wrong line). */
bool line_map_replace(LineMap *map, const Document *doc, size_t start, size_t end, const char *text, size_t length);

/* For each baseline line (index 1..baseline_count), the 1-based current line,
 * or 0 when it changed or went: a heap array of baseline_count + 1 entries
 * (index 0 unused); NULL when out of memory. */
uint32_t *line_map_baseline_to_current(const LineMap *map);

#endif
