/* Applying text edits and choosing which fixes to apply together. */
#ifndef ADVISE_EDITS_H
#define ADVISE_EDITS_H

#include "analysis/finding.h"

/* Applies edits (any order, none overlapping) to text. Returns a new
 * NUL-terminated buffer, or NULL when edits overlap, fall outside the text or
 * memory runs out. */
char *edits_apply(const char *text, size_t length, const TextEdit *edits, size_t count, size_t *out_length);

/* Picks the first fix of each finding (safe ones only unless include_unsafe),
 * skipping any fix that overlaps one already picked, and applies them.
 * Returns the new text (NULL on failure) and stores how many fixes went in. */
char *fixes_apply(const char *text, size_t length, const FindingList *findings, bool include_unsafe,
                  size_t *out_length, size_t *applied);

#endif
