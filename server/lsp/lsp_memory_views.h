/* Device memory in the editor (profiles recorded with `advise profile
 * --memory`): the words the hover, the code lens and the heat map's
 * `advise/lineCosts` (metric "memory") give one line, from its figures
 * (server/render/line_memory.h). No state: the callers find the line. */
#ifndef ADVISE_LSP_MEMORY_VIEWS_H
#define ADVISE_LSP_MEMORY_VIEWS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "profiler/profile.h"
#include "server/render/line_memory.h"

/* The hover's paragraph (markdown, heap), "Device memory:" and one item per
 * kind the line has: "- live at the memory peak: 1.28 GB (37% of the peak
 * 3.44 GB)", growth per optimizer step, allocations in the recorded window,
 * what was live at an out-of-memory error. NULL when there is nothing to
 * say or memory runs out. p: the profile the figures come from. */
char *lsp_memory_hover(const Profile *p, const LineMemory *l);

/* The code lens's words for a line worth one (line_memory_worth_lens):
 * "1.28 GB live at peak (37%)"; false (buf empty) otherwise. */
bool lsp_memory_lens_title(const LineMemory *l, char *buf, size_t size);

/* One line of `advise/lineCosts` with "metric": "memory" (docs/lsp.md):
 * {line (0-based), share, peak_bytes, growth_bytes_per_step, allocations,
 * allocated_bytes}; NULL when out of memory. */
json_t *lsp_memory_line_json(const LineMemory *l);

/* What a memory line's share divides by, in words. */
#define LSP_MEMORY_SHARE_DENOMINATOR "the device memory allocated at the peak (of the GPU where the line holds most)"

#endif
