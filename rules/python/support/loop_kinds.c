#include "rules/python/support/loop_kinds.h"

#include "analysis/python/python_facts.h"

/* `for stride, ch in [(1, 32), (1, 128), (2, 32)]:`: a sweep over a few
 * literal configurations (each usually builds its own model), not a stream
 * of batches: its waits are a handful, not one per step. */
static bool is_literal_value(const PySource *src, TSNode v, int depth) {
    if (depth > 3) return false;
    if (py_is(v, "integer") || py_is(v, "float") || py_is(v, "string") || py_is(v, "true") || py_is(v, "false") ||
        py_is(v, "none"))
        return true;
    if (py_is(v, "unary_operator")) return is_literal_value(src, ts_node_named_child(v, 0), depth + 1);
    if (py_is(v, "attribute")) { /* torch.float16 */
        char name[64];
        return py_qualified_name(src, v, name, sizeof name);
    }
    if (py_is(v, "tuple") || py_is(v, "list")) {
        uint32_t n = ts_node_named_child_count(v);
        for (uint32_t i = 0; i < n; i++)
            if (!is_literal_value(src, ts_node_named_child(v, i), depth + 1)) return false;
        return true;
    }
    return false;
}

bool py_loop_sweeps_literal_configurations(const PySource *src, TSNode loop) {
    if (!py_is(loop, "for_statement")) return false;
    TSNode it = ts_node_child_by_field_name(loop, "right", 5);
    if (py_is(it, "call") && (py_is_builtin_call(src, it, "enumerate")) && py_call_positional_count(it) >= 1)
        it = py_call_positional(it, 0);
    if (!py_is(it, "list") && !py_is(it, "tuple") && !py_is(it, "set")) return false;
    uint32_t n = ts_node_named_child_count(it);
    if (n == 0 || n > 16) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!is_literal_value(src, ts_node_named_child(it, i), 0)) return false;
    return true;
}

