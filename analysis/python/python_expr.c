/* Python expressions as values (python_expr.h). */
#include "analysis/python/python_expr.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/python/python_query.h"

/* The one expression a parenthesized_expression holds: its first named child
 * that is not a comment. */
static TSNode inner_expression(TSNode paren) {
    uint32_t n = ts_node_named_child_count(paren);
    for (uint32_t i = 0; i < n; i++) {
        TSNode c = ts_node_named_child(paren, i);
        if (!py_is(c, "comment")) return c;
    }
    TSNode null = {0};
    return null;
}

TSNode py_unparen(TSNode n) {
    while (py_is(n, "parenthesized_expression")) {
        TSNode inner = inner_expression(n);
        if (ts_node_is_null(inner)) break;
        n = inner;
    }
    return n;
}

/* The literal under parentheses and one unary + or -; *negative says which. */
static TSNode signed_literal(TSNode n, bool *negative) {
    n = py_unparen(n);
    *negative = false;
    if (!py_is(n, "unary_operator")) return n;
    TSNode op = ts_node_child_by_field_name(n, "operator", 8);
    TSNode null = {0};
    if (ts_node_is_null(op)) return null;
    if (strcmp(ts_node_type(op), "-") == 0) *negative = true;
    else if (strcmp(ts_node_type(op), "+") != 0) return null;
    return py_unparen(ts_node_child_by_field_name(n, "argument", 8));
}

bool py_number_literal(const PySource *src, TSNode n, double *out) {
    bool negative;
    n = signed_literal(n, &negative);
    if ((!py_is(n, "integer") && !py_is(n, "float")) || py_text_len(n) > 40) return false;
    char buf[48];
    size_t len = 0;
    const char *t = py_text_ptr(src, n);
    for (size_t i = 0; i < py_text_len(n); i++)
        if (t[i] != '_') buf[len++] = t[i];
    buf[len] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (*end) return false;
    *out = negative ? -v : v;
    return true;
}

bool py_int_literal(const PySource *src, TSNode n, long *out) {
    bool negative;
    n = signed_literal(n, &negative);
    if (!py_is(n, "integer") || py_text_len(n) > 18) return false;
    char buf[24];
    size_t len = py_text_len(n);
    memcpy(buf, py_text_ptr(src, n), len);
    buf[len] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    if (*end) return false;
    *out = negative ? -v : v;
    return true;
}

const char *py_binary_operator(TSNode n) {
    if (!py_is(n, "binary_operator")) return NULL;
    TSNode op = ts_node_child_by_field_name(n, "operator", 8);
    return ts_node_is_null(op) ? NULL : ts_node_type(op);
}

bool py_is_binary(TSNode n, const char *op) {
    const char *o = py_binary_operator(n);
    return o && strcmp(o, op) == 0;
}
