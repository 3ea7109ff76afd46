/* A file's include preamble: the comments and #include lines before its
 * first other text. Files of one project often open with the same lines (a
 * folder of generated instantiations, each one macro call after the same
 * three headers), so the headers they read can be parsed once for all of
 * them (cuda_pch_for_preamble) instead of once per file.
 *
 * Only #include lines and comments count: a #define, #if or #pragma ends
 * the preamble before it, so that what a precompiled preamble holds is
 * exactly what clang would read from those lines, and nothing the rules
 * look for in the file itself moves into a header. */
#ifndef ADVISE_CUDA_PREAMBLE_H
#define ADVISE_CUDA_PREAMBLE_H

#include <stdbool.h>
#include <stddef.h>

/* The length in bytes of text's include preamble: up to the end of its last
 * #include line (a line that continues with a backslash, or a comment
 * that does not end, ends it before). 0 when it holds no #include. */
size_t cuda_preamble_length(const char *text, size_t length);

/* A copy of text (length bytes, NUL-terminated) whose first `preamble`
 * bytes are blanks, its line ends kept: byte offsets and lines stay where
 * they were. NULL when out of memory. */
char *cuda_preamble_blanked(const char *text, size_t length, size_t preamble);

#endif
