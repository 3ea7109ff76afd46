#include "rules/python/support/test_code.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "analysis/python/python_index.h"

/* Test code: a file named test_*.py, *_test.py or conftest.py (pytest's
 * names). PY001 stands down there as a whole rather than only for reads
 * that feed an assert or a print: every value a test reads feeds a check, directly
 * or through a helper (`assert max_diff(a, b) == 0`, a tolerance helper that
 * formats a fraction into its error message), and following that flow is
 * brittle, while a test's run time is not what the program's users wait for;
 * a false warning costs more than a missed one. The folder (tests/, test/)
 * is not looked at: the path may be absolute, and a project checked out under
 * a folder of that name would lose every finding. */
bool py_is_test_path(const char *path) {
    if (!path) return false;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (strncmp(base, "test_", 5) == 0 || strcmp(base, "conftest.py") == 0) return true;
    return len > 8 && strcmp(base + len - 8, "_test.py") == 0;
}

/* inside a `def test_*` (pytest or unittest), at any depth */
bool py_in_test_function(const PySource *src, TSNode n) {
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); p = ts_node_parent(p)) {
        if (!py_is(p, "function_definition")) continue;
        TSNode name = ts_node_child_by_field_name(p, "name", 4);
        if (!ts_node_is_null(name) && py_text_len(name) > 5 && strncmp(py_text_ptr(src, name), "test_", 5) == 0)
            return true;
    }
    return false;
}

/* a word of a snake_case or CamelCase name, compared without case */
bool py_name_has_word(const char *name, size_t len, const char *word) {
    size_t wl = strlen(word);
    for (size_t i = 0; i + wl <= len; i++) {
        bool starts = i == 0 || name[i - 1] == '_' || (isupper((unsigned char)name[i]) && islower((unsigned char)name[i - 1]));
        size_t e = i + wl;
        bool ends = e == len || name[e] == '_' || isupper((unsigned char)name[e]);
        if (starts && ends && strncasecmp(name + i, word, wl) == 0) return true;
    }
    return false;
}

/* Inside a function or class whose name says the code is written out on
 * purpose: a reference or baseline that a fused kernel is tested or timed
 * against (`def naive_attention`, `def selective_scan_ref`, `def
 * manual_attn`, `class ReferenceAttention`). */
bool py_in_deliberate_reference(const PySource *src, TSNode n) {
    static const char *const words[] = {"naive", "unfused", "manual", "reference", "ref", "baseline", "eager",
                                        "vanilla", "slow", NULL};
    for (TSNode scope = py_index_enclosing_scope(src, n); !ts_node_is_null(scope);
         scope = py_index_enclosing_scope(src, scope)) {
        TSNode name = ts_node_child_by_field_name(scope, "name", 4);
        if (ts_node_is_null(name)) continue;
        for (size_t i = 0; words[i]; i++)
            if (py_name_has_word(py_text_ptr(src, name), py_text_len(name), words[i])) return true;
    }
    return false;
}
