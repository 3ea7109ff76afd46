/* Edits a Python document as the server does, for the tests of incremental
 * reparsing (tests/test_python_source.c, tests/test_python_parse.c). */
#ifndef ADVISE_TESTS_PYTHON_EDIT_H
#define ADVISE_TESTS_PYTHON_EDIT_H

#include <criterion/criterion.h>
#include <string.h>

#include "analysis/python/python_source.h"

/* replaces [start, end) of doc with text, telling src, and reparses */
static inline void python_edit(PySource *src, Document *doc, size_t start, size_t end, const char *text) {
    size_t len = strlen(text);
    TSPoint start_point = py_point_at(doc->text, start);
    TSPoint old_end_point = py_point_at(doc->text, end);
    cr_assert(document_replace(doc, start, end, text, len));
    TSPoint new_end_point = py_point_at(doc->text, start + len);
    py_source_note_edit(src, start, end, start + len, start_point, old_end_point, new_end_point);
    cr_assert(py_source_reparse(src, doc));
}

#endif
