/* Test and reference code, where rules about a program's speed stand down:
 * a test's waits and inputs, and a reference implementation's written-out
 * math, are its purpose (PY001, PY003, PY004, PY006, PY007, PY008, PY009, PY011). */
#ifndef ADVISE_RULES_PYTHON_TEST_CODE_H
#define ADVISE_RULES_PYTHON_TEST_CODE_H

#include <stdbool.h>

#include "analysis/python/python_query.h"

/* a file named test_*.py, *_test.py or conftest.py (pytest's names); the
 * folder is not looked at */
bool py_is_test_path(const char *path);

/* n is inside a `def test_*` (pytest or unittest), at any depth */
bool py_in_test_function(const PySource *src, TSNode n);

/* a word of a snake_case or CamelCase name (`naive` in `naive_attn`,
 * `Reference` in `ReferenceAttention`), compared without case */
bool py_name_has_word(const char *name, size_t len, const char *word);

/* n is inside a function or class named as a reference or baseline
 * (naive, unfused, manual, reference, ref, baseline, eager, vanilla, slow) */
bool py_in_deliberate_reference(const PySource *src, TSNode n);

#endif
