#ifndef ADVISE_PYTHON_PARSE_H
#define ADVISE_PYTHON_PARSE_H

#include <stddef.h>
#include <tree_sitter/api.h>

/* Parses Python 3 text with tree-sitter, as ts_parser_parse_string does
 * (old_tree for an incremental reparse, or NULL), except that the grammar's
 * Python 2 `print` statement is kept out of it: see python_parse.c. The tree's
 * positions are those of `text`; read node text from `text`, never from the
 * parser. Returns NULL on a timeout, a cancellation or no memory. */
TSTree *py_parse(TSParser *parser, const TSTree *old_tree, const char *text, size_t length);

/* The text the parser is shown: a copy of `text` with every `print` that
 * stands as a word of its own spelled `pr1nt`, or NULL when there is none
 * (parse `text` itself) or no memory (*failed set). Exposed for tests. */
char *py_parse_masked_text(const char *text, size_t length, int *failed);

#endif
