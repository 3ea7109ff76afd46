#include "analysis/python/python_lifetime.h"

#include <string.h>

#include "analysis/python/python_query.h"

#define CHAIN_MAX 16

static bool is_target_pattern(TSNode n) {
    return py_is(n, "pattern_list") || py_is(n, "tuple_pattern") || py_is(n, "list_pattern");
}

static bool collect_names(TSNode target, TSNode *names, size_t max, size_t *n) {
    if (py_is(target, "identifier")) {
        if (*n >= max) return false;
        names[(*n)++] = target;
        return true;
    }
    if (!is_target_pattern(target)) return false;
    uint32_t count = ts_node_named_child_count(target);
    for (uint32_t i = 0; i < count; i++) {
        TSNode c = ts_node_named_child(target, i);
        if (py_is(c, "comment")) continue;
        if (!collect_names(c, names, max, n)) return false;
    }
    return true;
}

/* The `assignment` of an expression statement `a = value` (not chained, not augmented), or a null node. */
static TSNode plain_assignment(TSNode stmt) {
    TSNode null = {0};
    if (!py_is(stmt, "expression_statement") || ts_node_named_child_count(stmt) != 1) return null;
    TSNode a = ts_node_named_child(stmt, 0);
    if (!py_is(a, "assignment")) return null;
    TSNode right = ts_node_child_by_field_name(a, "right", 5);
    if (ts_node_is_null(right) || py_is(right, "assignment") || py_is(right, "augmented_assignment")) return null;
    return a;
}

size_t py_assignment_names(TSNode stmt, TSNode *names, size_t max) {
    TSNode a = plain_assignment(stmt);
    if (ts_node_is_null(a)) return 0;
    size_t n = 0;
    if (!collect_names(ts_node_child_by_field_name(a, "left", 4), names, max, &n)) return 0;
    return n;
}

/* ---- occurrences of a name ---------------------------------------------------------- */

typedef enum { OCCURS_NOT_A_VARIABLE, OCCURS_READ, OCCURS_BOUND } Occurrence;

static bool field_is(TSNode parent, const char *field, TSNode child) {
    TSNode f = ts_node_child_by_field_name(parent, field, (uint32_t)strlen(field));
    return !ts_node_is_null(f) && ts_node_eq(f, child);
}

/* What an identifier is: `obj.name` and `f(name=...)` name no variable; a
 * target of `=`, of a for clause, of `as` or of `:=` binds it; `x += 1`
 * counts as a binding (it reads and writes); everything else reads it. */
static Occurrence occurrence_of(TSNode id) {
    TSNode parent = ts_node_parent(id);
    if (ts_node_is_null(parent)) return OCCURS_READ;
    if (py_is(parent, "attribute") && field_is(parent, "attribute", id)) return OCCURS_NOT_A_VARIABLE;
    if (py_is(parent, "keyword_argument") && field_is(parent, "name", id)) return OCCURS_NOT_A_VARIABLE;
    if (py_is(parent, "as_pattern_target") || (py_is(parent, "named_expression") && field_is(parent, "name", id)))
        return OCCURS_BOUND;
    TSNode n = id;
    while (is_target_pattern(parent)) {
        n = parent;
        parent = ts_node_parent(parent);
        if (ts_node_is_null(parent)) return OCCURS_READ;
    }
    if ((py_is(parent, "assignment") || py_is(parent, "augmented_assignment") || py_is(parent, "for_statement") ||
         py_is(parent, "for_in_clause")) &&
        field_is(parent, "left", n))
        return OCCURS_BOUND;
    return OCCURS_READ;
}

static bool is_loop(TSNode n) { return py_is(n, "for_statement") || py_is(n, "while_statement"); }

/* Between node and scope (exclusive): a nested function, lambda or class, or a global/nonlocal statement. */
static bool under_nested_scope(TSNode node, TSNode scope) {
    for (TSNode n = ts_node_parent(node); !ts_node_is_null(n) && !ts_node_eq(n, scope); n = ts_node_parent(n))
        if (py_is(n, "function_definition") || py_is(n, "lambda") || py_is(n, "class_definition") ||
            py_is(n, "global_statement") || py_is(n, "nonlocal_statement"))
            return true;
    return false;
}

/* A loop around `loop` in the same scope runs node again after `loop` ends. */
static bool in_enclosing_loop(TSNode node, TSNode loop, TSNode scope) {
    for (TSNode n = ts_node_parent(loop); !ts_node_is_null(n) && !ts_node_eq(n, scope); n = ts_node_parent(n))
        if (is_loop(n) && py_is_within(node, n)) return true;
    return false;
}

static bool within(TSNode node, TSNode range) {
    return !ts_node_is_null(range) && ts_node_start_byte(node) >= ts_node_start_byte(range) &&
           ts_node_end_byte(node) <= ts_node_end_byte(range);
}

typedef struct {
    const PySource *src;
    const char *name;
    size_t length;
    TSNode stmt, left, loop, body, scope;
    bool ok;
    TSNode last_read; /* null: none after stmt */
} Search;

static void judge(Search *s, TSNode id) {
    Occurrence o = occurrence_of(id);
    if (o == OCCURS_NOT_A_VARIABLE) return;
    if (under_nested_scope(id, s->scope)) {
        s->ok = false;
        return;
    }
    if (within(id, s->body)) {
        if (o == OCCURS_BOUND) {
            if (!within(id, s->left)) s->ok = false; /* bound elsewhere in the loop */
            return;
        }
        if (ts_node_start_byte(id) < ts_node_end_byte(s->stmt)) {
            s->ok = false; /* read before the rebinding: carried into the next iteration */
            return;
        }
        if (ts_node_is_null(s->last_read) || ts_node_start_byte(id) > ts_node_start_byte(s->last_read)) s->last_read = id;
        return;
    }
    if (within(id, s->loop)) {
        /* the loop's own target, its while condition, its else clause; a for loop's iterable runs once, before */
        if (py_is(s->loop, "for_statement") && within(id, ts_node_child_by_field_name(s->loop, "right", 5))) return;
        s->ok = false;
        return;
    }
    if (o == OCCURS_READ && (ts_node_start_byte(id) >= ts_node_end_byte(s->loop) || in_enclosing_loop(id, s->loop, s->scope)))
        s->ok = false;
}

static bool visit(TSNode n, void *data) {
    Search *s = data;
    if (!s->ok) return false;
    if (py_is(n, "identifier") && py_text_len(n) == s->length &&
        memcmp(py_text_ptr(s->src, n), s->name, s->length) == 0)
        judge(s, n);
    return true;
}

/* The blocks from stmt's own up to the loop's body, through `with` statements only; the loop in *loop. */
static size_t block_chain(TSNode stmt, TSNode *blocks, TSNode *loop) {
    size_t n = 0;
    TSNode block = ts_node_parent(stmt);
    while (n < CHAIN_MAX && !ts_node_is_null(block) && py_is(block, "block")) {
        blocks[n++] = block;
        TSNode owner = ts_node_parent(block);
        if (ts_node_is_null(owner)) return 0;
        if (is_loop(owner) && field_is(owner, "body", block)) {
            *loop = owner;
            return n;
        }
        if (!py_is(owner, "with_statement") || !field_is(owner, "body", block)) return 0;
        block = ts_node_parent(owner);
    }
    return 0;
}

bool py_dead_until_rebound(const PySource *src, TSNode stmt, TSNode name, TSNode *after) {
    TSNode a = plain_assignment(stmt);
    if (ts_node_is_null(a) || !py_is(name, "identifier")) return false;
    TSNode blocks[CHAIN_MAX], loop = {0};
    size_t depth = block_chain(stmt, blocks, &loop);
    if (!depth) return false;
    Search s = {.src = src, .name = py_text_ptr(src, name), .length = py_text_len(name), .stmt = stmt,
                .left = ts_node_child_by_field_name(a, "left", 4), .loop = loop,
                .body = blocks[depth - 1], .scope = py_scope_of(src, loop), .ok = true};
    if (ts_node_is_null(s.scope)) return false;
    py_walk(s.scope, visit, &s);
    if (!s.ok) return false;
    if (ts_node_is_null(s.last_read)) {
        *after = stmt;
        return true;
    }
    /* the statement holding the last read, in the innermost block of the chain that holds it */
    for (size_t i = 0; i < depth; i++) {
        if (!within(s.last_read, blocks[i])) continue;
        TSNode n = s.last_read;
        while (!ts_node_is_null(n) && !ts_node_eq(ts_node_parent(n), blocks[i])) n = ts_node_parent(n);
        if (ts_node_is_null(n)) return false;
        *after = n;
        return true;
    }
    return false;
}
