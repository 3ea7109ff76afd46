/* Test code, where rules about a program's speed stand down: a test's waits
 * and reference implementations are its purpose (PY001, PY008). */
#ifndef ADVISE_RULES_PYTHON_TEST_CODE_H
#define ADVISE_RULES_PYTHON_TEST_CODE_H

#include <stdbool.h>

#include "analysis/python/python_query.h"

/* a file named test_*.py, *_test.py or conftest.py (pytest's names); the
 * folder is not looked at */
bool py_is_test_path(const char *path);

/* n is inside a `def test_*` (pytest or unittest), at any depth */
bool py_in_test_function(const PySource *src, TSNode n);

#endif
