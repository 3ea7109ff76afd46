/* Differences between two texts, line by line: the edit script behind
 * `advise check --diff`'s unified diffs, and which lines of a text survive
 * an edit unchanged (profile figures follow them after `advise check --fix`). */
#ifndef ADVISE_LINE_DIFF_H
#define ADVISE_LINE_DIFF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *text;
    size_t len; /* including the '\n' that ends it, when one does */
} DiffLine;

typedef enum { DIFF_EQUAL, DIFF_DELETE, DIFF_INSERT } DiffOp;

/* The lines of s (a last line without '\n' counts). Heap; NULL when out of memory. */
DiffLine *line_diff_split(const char *s, size_t n, size_t *count);
/* The shortest edit script from a to b, one op per line kept, deleted or
 * inserted (heap, *op_count set), or NULL when the texts are too far apart
 * (thousands of changed lines) or memory runs out. */
DiffOp *line_diff_script(const DiffLine *a, size_t n, const DiffLine *b, size_t m, size_t *op_count);
/* For each line of a (1..*a_count), the 1-based line of b it is unchanged
 * as, or 0 when the edit changed or removed it: heap, index 0 unused; NULL
 * when too far apart or out of memory. */
uint32_t *line_diff_matches(const char *a, size_t alen, const char *b, size_t blen, size_t *a_count);

#endif
