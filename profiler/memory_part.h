/* The memory part one PyTorch process writes under `advise profile --memory`
 * (profiler/python/advise_memory.py: memory-PID.json beside the CUPTI
 * parts), turned into the profile's memory and memory_lines. The text is
 * checked as hostile: types, ranges, paths and the profile's caps. */
#ifndef ADVISE_MEMORY_PART_H
#define ADVISE_MEMORY_PART_H

#include <stdbool.h>
#include <stddef.h>

#include "profiler/profile.h"

#define MEMORY_PART_FORMAT "advise-memory-part"
#define MEMORY_PART_MAX_BYTES (4u << 20)

/* Adds the devices of one part to p, for the process of p with the part's
 * pid. False with *error set (heap) when the part is malformed, names no
 * process of p, or reports that it could not record; p then holds none of
 * its memory entries or lines (files and sites it named may stay, unused). */
bool profile_add_memory_part(Profile *p, const char *text, size_t length, char **error);

#endif
