#include "analysis/python/python_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/finding.h"
#include "analysis/python/python_index.h"
#include "analysis/base/text_format.h"

bool py_is(TSNode node, const char *type) {
    return !ts_node_is_null(node) && strcmp(ts_node_type(node), type) == 0;
}

const char *py_text_ptr(const PySource *src, TSNode node) { return src->doc->text + ts_node_start_byte(node); }

size_t py_text_len(TSNode node) { return ts_node_end_byte(node) - ts_node_start_byte(node); }

bool py_text_eq(const PySource *src, TSNode node, const char *text) {
    size_t len = py_text_len(node);
    return strlen(text) == len && memcmp(py_text_ptr(src, node), text, len) == 0;
}

char *py_text_dup(const PySource *src, TSNode node) {
    return strndup(py_text_ptr(src, node), py_text_len(node));
}

bool py_short_text(const PySource *src, TSNode node, size_t max, char *buf, size_t size) {
    const char *text = py_text_ptr(src, node);
    size_t len = py_text_len(node);
    if (len > max || memchr(text, '\n', len)) return false;
    snprintf(buf, size, "%.*s", (int)len, text);
    return true;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\'; }

bool py_same_text(const PySource *src, TSNode a, TSNode b) {
    const char *x = py_text_ptr(src, a), *y = py_text_ptr(src, b);
    size_t i = 0, j = 0, m = py_text_len(a), n = py_text_len(b);
    for (;;) {
        while (i < m && is_space(x[i])) i++;
        while (j < n && is_space(y[j])) j++;
        if (i == m || j == n) return i == m && j == n;
        if (x[i++] != y[j++]) return false;
    }
}

bool py_same_text_present(const PySource *src, TSNode a, TSNode b) {
    return !ts_node_is_null(a) && !ts_node_is_null(b) && py_same_text(src, a, b);
}

static bool append(char *buf, size_t size, size_t *used, const char *s, size_t len) {
    if (*used + len + 1 > size) return false;
    memcpy(buf + *used, s, len);
    *used += len;
    buf[*used] = '\0';
    return true;
}

static bool dotted(const PySource *src, TSNode expr, char *buf, size_t size, size_t *used, int depth) {
    if (depth > 32) return false;
    if (py_is(expr, "identifier")) {
        const char *name = py_text_ptr(src, expr);
        size_t len = py_text_len(expr);
        const char *q = py_resolve_import(src, name, len);
        return q ? append(buf, size, used, q, strlen(q)) : append(buf, size, used, name, len);
    }
    if (py_is(expr, "attribute")) {
        TSNode object = ts_node_child_by_field_name(expr, "object", 6);
        TSNode attr = ts_node_child_by_field_name(expr, "attribute", 9);
        if (ts_node_is_null(object) || ts_node_is_null(attr)) return false;
        return dotted(src, object, buf, size, used, depth + 1) && append(buf, size, used, ".", 1) &&
               append(buf, size, used, py_text_ptr(src, attr), py_text_len(attr));
    }
    return false;
}

bool py_qualified_name(const PySource *src, TSNode expr, char *buf, size_t size) {
    size_t used = 0;
    if (size) buf[0] = '\0';
    if (ts_node_is_null(expr) || !dotted(src, expr, buf, size, &used, 0)) {
        if (size) buf[0] = '\0';
        return false;
    }
    return true;
}

bool py_callee_name(const PySource *src, TSNode call, char *buf, size_t size) {
    if (!py_is(call, "call")) {
        if (size) buf[0] = '\0';
        return false;
    }
    return py_qualified_name(src, ts_node_child_by_field_name(call, "function", 8), buf, size);
}

bool py_callee_is_any(const PySource *src, TSNode call, const char *const *names) {
    char buf[PY_NAME_MAX];
    if (!py_callee_name(src, call, buf, sizeof buf)) return false;
    for (size_t i = 0; names[i]; i++)
        if (strcmp(buf, names[i]) == 0) return true;
    return false;
}

TSNode py_method_name_node(TSNode call) {
    TSNode null = {0};
    if (!py_is(call, "call")) return null;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (!py_is(fn, "attribute")) return null;
    return ts_node_child_by_field_name(fn, "attribute", 9);
}

bool py_method_call(const PySource *src, TSNode call, const char *method, TSNode *receiver) {
    TSNode name = py_method_name_node(call);
    if (ts_node_is_null(name) || !py_text_eq(src, name, method)) return false;
    if (receiver) *receiver = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
    return true;
}

bool py_value_method_call(const PySource *src, TSNode call, const char *method, TSNode *receiver) {
    TSNode r;
    if (!py_is(call, "call") || !py_method_call(src, call, method, &r) || ts_node_is_null(r)) return false;
    TSNode root = r;
    while (py_is(root, "attribute")) root = ts_node_child_by_field_name(root, "object", 6);
    if (py_is(root, "identifier") && py_resolve_import(src, py_text_ptr(src, root), py_text_len(root))) return false;
    if (receiver) *receiver = r;
    return true;
}

bool py_is_builtin_call(const PySource *src, TSNode call, const char *name) {
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    return py_is(fn, "identifier") && py_text_eq(src, fn, name) && !py_resolve_import(src, name, strlen(name));
}

TSNode py_call_arguments(TSNode call) { return ts_node_child_by_field_name(call, "arguments", 9); }

static bool is_positional(TSNode arg) {
    const char *t = ts_node_type(arg);
    return strcmp(t, "keyword_argument") != 0 && strcmp(t, "list_splat") != 0 &&
           strcmp(t, "dictionary_splat") != 0 && strcmp(t, "comment") != 0;
}

TSNode py_call_positional(TSNode call, uint32_t index) {
    TSNode null = {0};
    TSNode args = py_call_arguments(call);
    if (!py_is(args, "argument_list")) return null;
    uint32_t n = ts_node_named_child_count(args), k = 0;
    for (uint32_t i = 0; i < n; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (!is_positional(a)) continue;
        if (k++ == index) return a;
    }
    return null;
}

uint32_t py_call_positional_count(TSNode call) {
    TSNode args = py_call_arguments(call);
    if (!py_is(args, "argument_list")) return 0;
    uint32_t n = ts_node_named_child_count(args), k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (is_positional(ts_node_named_child(args, i))) k++;
    return k;
}

TSNode py_call_keyword_argument(const PySource *src, TSNode call, const char *name) {
    TSNode null = {0};
    TSNode args = py_call_arguments(call);
    if (!py_is(args, "argument_list")) return null;
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (!py_is(a, "keyword_argument")) continue;
        TSNode key = ts_node_child_by_field_name(a, "name", 4);
        if (!ts_node_is_null(key) && py_text_eq(src, key, name)) return a;
    }
    return null;
}

TSNode py_call_keyword(const PySource *src, TSNode call, const char *name) {
    TSNode arg = py_call_keyword_argument(src, call, name);
    if (ts_node_is_null(arg)) return arg;
    return ts_node_child_by_field_name(arg, "value", 5);
}

bool py_call_has_splat(TSNode call) {
    TSNode args = py_call_arguments(call);
    if (!py_is(args, "argument_list")) return false;
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (py_is(a, "list_splat") || py_is(a, "dictionary_splat")) return true;
    }
    return false;
}

bool py_call_has_argument(TSNode call, const char *type) {
    TSNode args = py_call_arguments(call);
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n; i++)
        if (py_is(ts_node_named_child(args, i), type)) return true;
    return false;
}

TSNode py_statement_of(TSNode node) {
    TSNode n = node;
    while (!ts_node_is_null(n)) {
        TSNode parent = ts_node_parent(n);
        if (ts_node_is_null(parent)) return n;
        if (py_is(parent, "block") || py_is(parent, "module")) return n;
        n = parent;
    }
    return node;
}

static bool is_scope_boundary(TSNode n) {
    return py_is(n, "function_definition") || py_is(n, "lambda") || py_is(n, "class_definition");
}

TSNode py_enclosing_function(const PySource *src, TSNode node) {
    TSNode null = {0};
    TSNode scope = py_index_enclosing_scope(src, node);
    return py_is(scope, "function_definition") ? scope : null;
}

TSNode py_scope_of(const PySource *src, TSNode node) {
    TSNode fn = py_enclosing_function(src, node);
    if (!ts_node_is_null(fn)) return ts_node_child_by_field_name(fn, "body", 4);
    return ts_tree_root_node(src->tree);
}

static bool is_comprehension(TSNode n) {
    return py_is(n, "list_comprehension") || py_is(n, "set_comprehension") ||
           py_is(n, "dictionary_comprehension") || py_is(n, "generator_expression");
}

TSNode py_enclosing_loop(TSNode node) {
    TSNode null = {0};
    TSNode child = node;
    for (TSNode n = ts_node_parent(node); !ts_node_is_null(n); child = n, n = ts_node_parent(n)) {
        if (is_scope_boundary(n)) return null;
        if (py_is(n, "for_statement") || py_is(n, "while_statement")) {
            TSNode body = ts_node_child_by_field_name(n, "body", 4);
            bool in_body = ts_node_eq(child, body);
            /* a while condition runs every iteration too */
            if (py_is(n, "while_statement") && ts_node_eq(child, ts_node_child_by_field_name(n, "condition", 9)))
                in_body = true;
            if (in_body) return n;
        }
        if (is_comprehension(n)) {
            /* the first for_in_clause's iterable runs once; everything else per element */
            bool once = false;
            uint32_t count = ts_node_named_child_count(n);
            for (uint32_t i = 0; i < count; i++) {
                TSNode c = ts_node_named_child(n, i);
                if (py_is(c, "for_in_clause")) {
                    TSNode right = ts_node_child_by_field_name(c, "right", 5);
                    once = ts_node_eq(child, c) && !ts_node_is_null(right) && py_is_within(node, right);
                    break;
                }
            }
            if (!once) return n;
        }
    }
    return null;
}

bool py_is_within(TSNode node, TSNode ancestor) {
    if (ts_node_is_null(ancestor)) return false;
    return ts_node_start_byte(node) >= ts_node_start_byte(ancestor) &&
           ts_node_end_byte(node) <= ts_node_end_byte(ancestor);
}

size_t py_line_indent(const PySource *src, size_t offset, char *buf, size_t size) {
    const Document *doc = src->doc;
    size_t line = document_line_of(doc, offset);
    size_t i = doc->line_starts[line], n = 0;
    while (i < doc->length && (doc->text[i] == ' ' || doc->text[i] == '\t') && n + 1 < size) buf[n++] = doc->text[i++];
    if (size) buf[n] = '\0';
    return n;
}

bool py_starts_line(const PySource *src, TSNode stmt) {
    const Document *doc = src->doc;
    size_t start = ts_node_start_byte(stmt);
    size_t line = document_line_of(doc, start);
    for (size_t i = doc->line_starts[line]; i < start; i++)
        if (doc->text[i] != ' ' && doc->text[i] != '\t') return false;
    return true;
}

/* A tree cursor keeps the walk linear: ts_node_named_child(i) scans its
 * siblings from the start in this tree-sitter version, which made walks over
 * long modules quadratic. */
static _Thread_local uint64_t walk_work;

uint64_t py_walk_work(void) { return walk_work; }

void py_walk_add_work(uint64_t steps) { walk_work += steps; }

void py_walk(TSNode root, PyVisitor visit, void *data) {
    if (ts_node_is_null(root)) return;
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    walk_work++;
    bool descend = visit(root, data);
    if (descend && ts_tree_cursor_goto_first_child(&cursor)) {
        for (;;) {
            TSNode n = ts_tree_cursor_current_node(&cursor);
            bool named = ts_node_is_named(n);
            walk_work += named;
            bool go_down = named ? visit(n, data) : false;
            if (go_down && ts_tree_cursor_goto_first_child(&cursor)) continue;
            /* next sibling, or climb until one exists */
            bool moved = false;
            while (!(moved = ts_tree_cursor_goto_next_sibling(&cursor))) {
                if (!ts_tree_cursor_goto_parent(&cursor)) break;
                if (ts_node_eq(ts_tree_cursor_current_node(&cursor), root)) break;
            }
            if (!moved) break;
        }
    }
    ts_tree_cursor_delete(&cursor);
}

char *py_keyword_insertion(const PySource *src, TSNode call, const char *kw, const char *value, size_t *offset) {
    TSNode args = py_call_arguments(call);
    if (!py_is(args, "argument_list")) return NULL;
    size_t close = ts_node_end_byte(args) - 1; /* the ')' */
    uint32_t named = ts_node_named_child_count(args);
    TSNode last = {0};
    for (uint32_t i = named; i-- > 0;) {
        TSNode c = ts_node_named_child(args, i);
        if (!py_is(c, "comment")) {
            last = c;
            break;
        }
    }
    if (ts_node_is_null(last)) {
        *offset = close;
        return format_string("%s=%s", kw, value);
    }
    /* is there a trailing comma after the last argument? */
    size_t end = ts_node_end_byte(last);
    const char *text = src->doc->text;
    size_t i = end;
    while (i < close && is_space(text[i])) i++;
    if (i < close && text[i] == ',') {
        /* "f(a, b,\n)" -> insert after the comma, matching the previous separator */
        *offset = i + 1;
        return format_string(" %s=%s,", kw, value);
    }
    *offset = end;
    return format_string(", %s=%s", kw, value);
}

char *py_functional_prefix(const PySource *src) {
    for (size_t i = src->import_count; i-- > 0;)
        if (src->imports[i].qualified && strcmp(src->imports[i].qualified, "torch.nn.functional") == 0)
            return strdup(src->imports[i].local);
    for (size_t i = src->import_count; i-- > 0;) {
        const char *q = src->imports[i].qualified;
        if (q && strcmp(q, "torch") == 0) return format_string("%s.nn.functional", src->imports[i].local);
        if (q && strcmp(q, "torch.nn") == 0) return format_string("%s.functional", src->imports[i].local);
    }
    return NULL;
}
