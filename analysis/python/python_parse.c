#define _GNU_SOURCE /* memmem */
#include "analysis/python/python_parse.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Why the parser never sees `print`:
 *
 * The pinned tree-sitter-python grammar still has Python 2's `print`
 * statement, and `print (a, b)` parses both as that statement and as a call.
 * At every `print` at the start of a statement the GLR parser therefore forks
 * and carries two stacks until it can choose, and tree-sitter marks each node
 * reduced while forked as fragile: an incremental reparse never reuses one.
 * On a file with many `print(...)` calls that made every keystroke's reparse
 * two to three times as slow (bench/README.md, "The repeated-script shape").
 *
 * `print` is an ordinary name in Python 3. Shown as `pr1nt` (same length, so
 * every byte and point stays where it is) it lexes as an identifier in every
 * state, the fork never happens, and Python 3 code gets the tree it would get
 * anyway: a call, a name, an attribute. Only Python 2's `print x` changes: it
 * becomes the syntax error it is in Python 3. Inside strings and comments the
 * change is invisible to the parse, and advise reads every node's text from
 * the document, never from the parser.
 *
 * Incremental reparses stay exact: whether a `print` is masked depends only
 * on its own five bytes and the byte on each side, so an edit can change it
 * only where the word touches the edited range, and tree-sitter lexes the
 * tokens touching an edit again (their lookahead reaches into it). */

static bool word_byte(unsigned char c) {
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

static bool stands_alone(const char *text, size_t length, size_t at) {
    if (at > 0 && word_byte((unsigned char)text[at - 1])) return false;
    if (at + 5 < length && word_byte((unsigned char)text[at + 5])) return false;
    return true;
}

/* the first `print` word at or after `from`, or length when none */
static size_t next_print(const char *text, size_t length, size_t from) {
    while (from + 5 <= length) {
        const char *hit = memmem(text + from, length - from, "print", 5);
        if (!hit) break;
        size_t at = (size_t)(hit - text);
        if (stands_alone(text, length, at)) return at;
        from = at + 1;
    }
    return length;
}

char *py_parse_masked_text(const char *text, size_t length, int *failed) {
    *failed = 0;
    size_t at = next_print(text, length, 0);
    if (at == length) return NULL;
    char *copy = malloc(length + 1);
    if (!copy) {
        *failed = 1;
        return NULL;
    }
    memcpy(copy, text, length);
    copy[length] = '\0';
    for (; at < length; at = next_print(text, length, at + 5)) copy[at + 2] = '1';
    return copy;
}

TSTree *py_parse(TSParser *parser, const TSTree *old_tree, const char *text, size_t length) {
    int failed;
    char *masked = py_parse_masked_text(text, length, &failed);
    if (failed) return NULL;
    TSTree *tree = ts_parser_parse_string(parser, old_tree, masked ? masked : text, (uint32_t)length);
    free(masked);
    return tree;
}
