/* Where the lines of a profiled text went after edits (line_map.h). */
#include "analysis/line_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool line_map_start(LineMap *map, const Document *doc, const char *sha256_hex) {
    memset(map, 0, sizeof *map);
    map->baseline_line = malloc(doc->line_count * sizeof *map->baseline_line);
    if (!map->baseline_line) return false;
    for (size_t i = 0; i < doc->line_count; i++) map->baseline_line[i] = (uint32_t)(i + 1);
    map->count = doc->line_count;
    map->baseline_count = (uint32_t)doc->line_count;
    snprintf(map->baseline_sha256, sizeof map->baseline_sha256, "%s", sha256_hex);
    return true;
}

void line_map_free(LineMap *map) {
    free(map->baseline_line);
    memset(map, 0, sizeof *map);
}

void line_map_copy(LineMap *to, const LineMap *from) {
    memset(to, 0, sizeof *to);
    if (!line_map_valid(from)) return;
    to->baseline_line = malloc((from->count ? from->count : 1) * sizeof *to->baseline_line);
    if (!to->baseline_line) return;
    memcpy(to->baseline_line, from->baseline_line, from->count * sizeof *to->baseline_line);
    to->count = from->count;
    to->baseline_count = from->baseline_count;
    memcpy(to->baseline_sha256, from->baseline_sha256, sizeof to->baseline_sha256);
}

bool line_map_valid(const LineMap *map) { return map->baseline_line && map->baseline_sha256[0]; }

bool line_map_is_identity(const LineMap *map) {
    if (map->count != map->baseline_count) return false;
    for (size_t i = 0; i < map->count; i++)
        if (map->baseline_line[i] != i + 1) return false;
    return true;
}

static size_t newlines_in(const char *text, size_t length) {
    size_t n = 0;
    for (size_t i = 0; i < length; i++) n += text[i] == '\n';
    return n;
}

bool line_map_replace(LineMap *map, const Document *doc, size_t start, size_t end, const char *text, size_t length) {
    if (!line_map_valid(map)) return true;
    if (map->count != doc->line_count || start > end || end > doc->length) {
        line_map_free(map); /* out of step with the text: nothing can be trusted */
        return true;
    }
    size_t first = document_line_of(doc, start), last = document_line_of(doc, end);
    size_t removed_newlines = last - first, added_newlines = newlines_in(text, length);
    /* Whole lines inserted or removed at a line start leave the line they
     * stand before as it was: [a, b) from a line start to a line start,
     * replaced by text that is whole lines. */
    bool at_line_starts = start == doc->line_starts[first] && end == doc->line_starts[last] &&
                          (length == 0 || text[length - 1] == '\n');
    size_t keep_before = first, keep_after_from = at_line_starts ? last : last + 1;
    size_t fresh = at_line_starts ? added_newlines : added_newlines + 1;
    (void)removed_newlines;
    size_t count = keep_before + fresh + (map->count - keep_after_from);
    uint32_t *lines = malloc((count ? count : 1) * sizeof *lines);
    if (!lines) {
        line_map_free(map);
        return false;
    }
    memcpy(lines, map->baseline_line, keep_before * sizeof *lines);
    for (size_t i = 0; i < fresh; i++) lines[keep_before + i] = 0;
    memcpy(lines + keep_before + fresh, map->baseline_line + keep_after_from,
           (map->count - keep_after_from) * sizeof *lines);
    free(map->baseline_line);
    map->baseline_line = lines;
    map->count = count;
    return true;
}

uint32_t *line_map_baseline_to_current(const LineMap *map) {
    uint32_t *to = calloc((size_t)map->baseline_count + 1, sizeof *to);
    if (!to) return NULL;
    for (size_t i = 0; i < map->count; i++)
        if (map->baseline_line[i] && map->baseline_line[i] <= map->baseline_count)
            to[map->baseline_line[i]] = (uint32_t)(i + 1);
    return to;
}
