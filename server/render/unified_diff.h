/* Unified diffs between two texts, for `advise check --diff`. */
#ifndef ADVISE_UNIFIED_DIFF_H
#define ADVISE_UNIFIED_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Writes the unified diff (3 lines of context) of a -> b with the given
 * file labels; writes nothing when the texts are equal. */
bool unified_diff_write(FILE *out, const char *label_a, const char *label_b, const char *a, size_t alen,
                        const char *b, size_t blen);

#endif
