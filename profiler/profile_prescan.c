/* profile_prescan (profile_json.h's reader calls it first): one pass over a
 * profile's JSON text, without building anything, that counts the entries
 * of each top-level array and refuses the file as soon as one passes its
 * cap. jansson builds the whole tree before the reader can look at a single
 * cap: a hostile 60 MB profile cost 6.7 s and 468 MB before it was refused.
 * The scan also bounds nesting, which a profile never needs deeper than a
 * few levels. The JSON itself is judged by jansson afterwards; this scan
 * only has to be right about well-formed text, and must never read past
 * the end of malformed text. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "profiler/profile_internal.h"

#define MAX_DEPTH 32

typedef struct {
    const char *key;
    size_t cap;
} ArrayCap;

static const ArrayCap CAPS[] = {
    {"processes", PROFILE_MAX_PROCESSES}, {"devices", PROFILE_MAX_DEVICES},   {"files", PROFILE_MAX_FILES},
    {"sites", PROFILE_MAX_SITES},         {"kernels", PROFILE_MAX_KERNELS},   {"ops", PROFILE_MAX_OPS},
    {"apis", PROFILE_MAX_APIS},           {"overheads", PROFILE_MAX_OVERHEADS}, {"timelines", PROFILE_MAX_DEVICES},
    {"gaps", PROFILE_MAX_GAPS},           {"line_metrics", PROFILE_MAX_LINE_METRICS},
    {"memory", PROFILE_MAX_MEMORIES},     {"memory_lines", PROFILE_MAX_MEMORY_LINES},
    {"command", PROFILE_MAX_COMMAND_ARGS},
};

static size_t cap_of(const char *key, size_t length) {
    for (size_t i = 0; i < sizeof CAPS / sizeof *CAPS; i++)
        if (strlen(CAPS[i].key) == length && memcmp(CAPS[i].key, key, length) == 0) return CAPS[i].cap;
    return (size_t)-1;
}

/* the end of the string that starts at text[i] (a '"'), past its closing quote */
static size_t skip_string(const char *text, size_t length, size_t i) {
    for (i++; i < length; i++) {
        if (text[i] == '\\') i++;
        else if (text[i] == '"') return i + 1;
    }
    return length;
}

/* "line L, column C" of text[at], as jansson counts them */
static void position(const char *text, size_t at, int *line, int *column) {
    *line = 1;
    *column = 0;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n') {
            ++*line;
            *column = 0;
        } else {
            ++*column;
        }
    }
    ++*column;
}

/* the entries of the array whose '[' is at text[open] (at depth 2), counted
 * to its end: commas at its own level, plus one unless it is empty */
static size_t count_entries(const char *text, size_t length, size_t open) {
    size_t depth = 0, commas = 0;
    bool any = false;
    for (size_t i = open; i < length;) {
        char c = text[i];
        if (c == '"') {
            any = true;
            i = skip_string(text, length, i);
            continue;
        }
        if (c == '[' || c == '{') {
            if (depth++ >= 1) any = true;
        } else if (c == ']' || c == '}') {
            if (--depth == 0) break;
        } else if (depth == 1 && c == ',') {
            commas++;
        } else if (depth == 1 && c != ' ' && c != '\n' && c != '\r' && c != '\t') {
            any = true;
        }
        i++;
    }
    return any ? commas + 1 : 0;
}

bool profile_prescan(const char *text, size_t length, char **error) {
    size_t depth = 0;
    const char *key = NULL;          /* the last string seen at depth 1: a key of the root */
    size_t key_length = 0;
    const char *array = NULL;        /* the root's array being counted */
    size_t array_length = 0, array_open = 0, cap = 0, entries = 0;
    for (size_t i = 0; i < length;) {
        char c = text[i];
        if (c == '"') {
            size_t end = skip_string(text, length, i);
            if (depth == 1) {
                key = text + i + 1;
                key_length = end > i + 1 ? end - i - 2 : 0;
            }
            i = end;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth > MAX_DEPTH) {
                int line, column;
                position(text, i, &line, &column);
                return prof_fail(error, "line %d, column %d: nested more than %d levels deep", line, column,
                                 MAX_DEPTH);
            }
            if (depth == 2 && c == '[' && key) {
                array = key;
                array_length = key_length;
                cap = cap_of(key, key_length);
                array_open = i;
                entries = 0;
            }
        } else if (c == '}' || c == ']') {
            if (depth == 2 && array) array = NULL;
            if (depth > 0) depth--;
        } else if (depth == 2 && array && c == ',') { /* entries = commas + 1 */
            if (++entries >= cap) /* the same words as the reader's, with the whole count */
                return prof_fail(error, "%.*s: %zu entries, more than the %zu allowed",
                                 (int)(array_length < 64 ? array_length : 64), array,
                                 count_entries(text, length, array_open), cap);
        }
        i++;
    }
    return true;
}
