/* The include preamble of a CUDA file (cuda_preamble.h). */
#include "analysis/cuda/cuda_preamble.h"

#include <stdlib.h>
#include <string.h>

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r' || c == '\n'; }

/* The end of the line that starts at at (past its '\n'), or 0 when the
 * line continues with a backslash or holds a carriage return that ends a
 * line of its own (clang ends lines there too): the preamble does not take
 * it. */
static size_t line_end(const char *text, size_t length, size_t at) {
    const char *nl = memchr(text + at, '\n', length - at);
    size_t end = nl ? (size_t)(nl - text) : length;
    for (size_t i = at; i < end; i++)
        if (text[i] == '\r' && i + 1 != end) return 0;
    size_t last = end;
    while (last > at && (text[last - 1] == '\r' || text[last - 1] == ' ' || text[last - 1] == '\t')) last--;
    if (last > at && text[last - 1] == '\\') return 0;
    return nl ? end + 1 : end;
}

/* Whether the directive at text[at] ('#') is `# include <...>` or
 * `# include "..."`, with nothing but a comment or blanks after it. */
static bool include_line(const char *text, size_t at, size_t end) {
    size_t i = at + 1;
    while (i < end && (text[i] == ' ' || text[i] == '\t')) i++;
    if (end - i < 7 || memcmp(text + i, "include", 7) != 0) return false;
    i += 7;
    while (i < end && (text[i] == ' ' || text[i] == '\t')) i++;
    if (i >= end || (text[i] != '"' && text[i] != '<')) return false; /* a macro naming the header: no */
    char close = text[i] == '"' ? '"' : '>';
    for (i++; i < end && text[i] != close && text[i] != '\n'; i++) {}
    if (i >= end || text[i] != close) return false;
    for (i++; i < end && blank(text[i]); i++) {}
    if (i >= end) return true;
    /* a comment to the end of the line (a block comment that closes on it) */
    if (end - i >= 2 && text[i] == '/' && text[i + 1] == '/') return true;
    if (end - i >= 2 && text[i] == '/' && text[i + 1] == '*') {
        const char *close_comment = NULL;
        for (size_t k = i + 2; k + 1 < end; k++)
            if (text[k] == '*' && text[k + 1] == '/') {
                close_comment = text + k;
                break;
            }
        if (!close_comment) return false;
        for (i = (size_t)(close_comment - text) + 2; i < end && blank(text[i]); i++) {}
        return i >= end;
    }
    return false;
}

size_t cuda_preamble_length(const char *text, size_t length) {
    size_t at = 0, preamble = 0;
    while (at < length) {
        char c = text[at];
        if (blank(c)) {
            at++;
        } else if (c == '/' && at + 1 < length && text[at + 1] == '/') {
            size_t end = line_end(text, length, at);
            if (!end) break;
            at = end;
        } else if (c == '/' && at + 1 < length && text[at + 1] == '*') {
            const char *close = NULL;
            for (size_t k = at + 2; k + 1 < length; k++)
                if (text[k] == '*' && text[k + 1] == '/') {
                    close = text + k;
                    break;
                }
            if (!close) break;
            at = (size_t)(close - text) + 2;
        } else if (c == '#') {
            size_t end = line_end(text, length, at);
            if (!end || !include_line(text, at, end)) break;
            at = preamble = end;
        } else {
            break;
        }
    }
    return preamble;
}

char *cuda_preamble_blanked(const char *text, size_t length, size_t preamble) {
    char *out = malloc(length + 1);
    if (!out) return NULL;
    memcpy(out, text, length);
    out[length] = '\0';
    for (size_t i = 0; i < preamble && i < length; i++)
        if (out[i] != '\n' && out[i] != '\r') out[i] = ' ';
    return out;
}
