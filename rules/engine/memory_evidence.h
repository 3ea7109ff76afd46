/* The memory a --memory profile saw at a static finding's lines (Rule.memory_evidence). */
#ifndef ADVISE_MEMORY_EVIDENCE_H
#define ADVISE_MEMORY_EVIDENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/finding.h"
#include "profiler/profile_view.h"

/* Adds measured evidence to f for the profile's memory lines in file
 * (an index into the profile's files) from line first to last: bytes live
 * at the peak, allocations in the recorded window, growth per step. Nothing
 * when the profile has no memory there. False when memory runs out. */
bool memory_evidence_add(const ProfileView *view, int file, Finding *f, uint32_t first, uint32_t last);

#endif
