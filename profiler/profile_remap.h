/* A profile moved onto an edited text: the sites and per-line metrics of
 * one file follow its lines through the edits made since it was profiled
 * (analysis/line_map.h says where each line went), so that every reader of
 * the profile (the merge, lenses, hovers, heat maps) sees figures on the
 * lines they belong to, and none on lines an edit changed. */
#ifndef ADVISE_PROFILE_REMAP_H
#define ADVISE_PROFILE_REMAP_H

#include <stdint.h>

#include "profiler/profile.h"

/* A deep copy of p in which file's sites and line metrics sit on the lines
 * to[] gives: to[old] is the new 1-based line of old line `old` (1..to_count),
 * 0 when it changed or went (its figures then stand on no line). The file's
 * sha256 becomes sha256_hex, the edited text's. NULL when out of memory or
 * file is not one of p's. */
Profile *profile_remap_lines(const Profile *p, int file, const uint32_t *to, uint32_t to_count,
                             const char *sha256_hex);

#endif
