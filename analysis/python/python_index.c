#define _GNU_SOURCE /* memmem */
#include "analysis/python/python_index.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_query.h"

typedef struct {
    const void *scope_id;
    PyBinding *items; /* sorted by name, then start */
    size_t count;
} ScopeIndex;

typedef struct {
    const char *name;
    uint32_t length;
    TSNode call;
} NamedCall;

typedef struct {
    TSNode node;
    uint32_t start, end;
    int32_t parent; /* index of the enclosing scope node, -1 at module level */
} ScopeNode;

typedef struct {
    char *name;
    size_t length;
    TSNode *nodes;
    size_t count;
} CallsOfName;

typedef struct {
    const void *scope_id; /* NULL: an empty slot */
    int kind;
    void *block;
} ScopeMemo;

struct PyIndex {
    ScopeIndex *scopes; /* open addressing on scope_id */
    size_t scope_capacity, scope_count;
    NamedCall *calls;   /* sorted by name, then position */
    TSNode *call_nodes; /* the same calls, contiguous */
    size_t call_count;
    bool calls_built;
    CallsOfName *by_name; /* calls found per name, in source order */
    size_t by_name_count, by_name_cap;
    NamedCall *defs; /* top-level definitions, sorted by name then position */
    size_t def_count;
    bool defs_built;
    ScopeNode *scopes_by_start; /* every def, class and lambda, in source order */
    size_t scope_node_count;
    bool scope_nodes_built;
    ScopeMemo *memos; /* py_index_scope_memo: open addressing on (scope, kind) */
    size_t memo_capacity, memo_count;
};

typedef struct {
    const PySource *src;
    PyBinding *items;
    size_t count, capacity;
    bool failed;
} Collector;

static void add(Collector *c, TSNode id, BindingKind kind, BindingVisibility vis, uint32_t start, uint32_t from,
                uint32_t until, TSNode value) {
    if (!array_reserve(&c->items, c->count, &c->capacity, sizeof *c->items, 32)) {
        c->failed = true;
        return;
    }
    c->items[c->count++] = (PyBinding){py_text_ptr(c->src, id), (uint32_t)py_text_len(id), (uint8_t)kind,
                                       (uint8_t)vis, start, from, until, value};
}

static void add_pattern(Collector *c, TSNode pattern, BindingKind single, BindingKind nested, BindingVisibility vis,
                        uint32_t start, uint32_t from, uint32_t until, TSNode value, int depth) {
    if (depth > 8 || ts_node_is_null(pattern)) return;
    if (py_is(pattern, "identifier")) {
        add(c, pattern, depth == 0 ? single : nested, vis, start, from, until, value);
        return;
    }
    if (py_is(pattern, "pattern_list") || py_is(pattern, "tuple_pattern") || py_is(pattern, "list_pattern") ||
        py_is(pattern, "tuple") || py_is(pattern, "list") || py_is(pattern, "parenthesized_expression") ||
        py_is(pattern, "list_splat_pattern")) {
        uint32_t n = ts_node_named_child_count(pattern);
        for (uint32_t i = 0; i < n; i++)
            add_pattern(c, ts_node_named_child(pattern, i), single, nested, vis, start, from, until, value, depth + 1);
    }
}

static bool collect(TSNode n, void *data) {
    Collector *c = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    uint32_t start = ts_node_start_byte(n), end = ts_node_end_byte(n);
    if (py_is(n, "assignment")) {
        TSNode right = ts_node_child_by_field_name(n, "right", 5);
        TSNode lefts[8];
        int nl = 0;
        lefts[nl++] = ts_node_child_by_field_name(n, "left", 4);
        while (py_is(right, "assignment") && nl < 8) { /* a = b = value */
            lefts[nl++] = ts_node_child_by_field_name(right, "left", 4);
            right = ts_node_child_by_field_name(right, "right", 5);
        }
        if (!ts_node_is_null(right))
            for (int i = 0; i < nl; i++)
                add_pattern(c, lefts[i], BINDING_ASSIGNMENT, BINDING_OTHER, VISIBLE_AFTER_END, start, end, 0, right, 0);
    } else if (py_is(n, "augmented_assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        if (py_is(left, "identifier"))
            add(c, left, BINDING_OTHER, VISIBLE_AFTER_END, start, end, 0, ts_node_child_by_field_name(n, "right", 5));
    } else if (py_is(n, "named_expression")) {
        TSNode name = ts_node_child_by_field_name(n, "name", 4);
        if (py_is(name, "identifier"))
            add(c, name, BINDING_ASSIGNMENT, VISIBLE_AFTER_END, start, end, 0,
                ts_node_child_by_field_name(n, "value", 5));
    } else if (py_is(n, "for_statement")) {
        TSNode body = ts_node_child_by_field_name(n, "body", 4);
        if (!ts_node_is_null(body))
            add_pattern(c, ts_node_child_by_field_name(n, "left", 4), BINDING_LOOP_TARGET, BINDING_LOOP_TARGET,
                        VISIBLE_IN_BODY, start, ts_node_start_byte(body), 0, ts_node_child_by_field_name(n, "right", 5),
                        0);
    } else if (py_is(n, "for_in_clause")) {
        TSNode parent = ts_node_parent(n);
        add_pattern(c, ts_node_child_by_field_name(n, "left", 4), BINDING_LOOP_TARGET, BINDING_LOOP_TARGET,
                    VISIBLE_INSIDE_PARENT, start, ts_node_start_byte(parent), ts_node_end_byte(parent),
                    ts_node_child_by_field_name(n, "right", 5), 0);
    } else if (py_is(n, "as_pattern")) {
        TSNode alias = ts_node_child_by_field_name(n, "alias", 5);
        if (!ts_node_is_null(alias) && ts_node_named_child_count(alias) > 0 &&
            py_is(ts_node_named_child(alias, 0), "identifier"))
            add(c, ts_node_named_child(alias, 0), BINDING_OTHER, VISIBLE_AFTER_END, start, end, 0,
                ts_node_named_child(n, 0));
    }
    return true;
}

static int compare_names(const char *a, uint32_t al, const char *b, uint32_t bl) {
    uint32_t n = al < bl ? al : bl;
    int c = memcmp(a, b, n);
    return c ? c : (al > bl) - (al < bl);
}

static int by_name_then_start(const void *x, const void *y) {
    const PyBinding *a = x, *b = y;
    int c = compare_names(a->name, a->length, b->name, b->length);
    return c ? c : (a->start > b->start) - (a->start < b->start);
}

static struct PyIndex *index_of(const PySource *src) {
    PySource *mutable_src = (PySource *)src; /* the index is a cache: logically const */
    if (!mutable_src->index) mutable_src->index = calloc(1, sizeof(struct PyIndex));
    return mutable_src->index;
}

static size_t slot_of(const void *id, size_t capacity) {
    uintptr_t h = (uintptr_t)id;
    h ^= h >> 17;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 7) & (capacity - 1);
}

static bool grow_scopes(struct PyIndex *ix) {
    size_t cap = ix->scope_capacity ? ix->scope_capacity * 2 : 64;
    ScopeIndex *table = calloc(cap, sizeof *table);
    if (!table) return false;
    for (size_t i = 0; i < ix->scope_capacity; i++) {
        if (!ix->scopes[i].scope_id) continue;
        size_t s = slot_of(ix->scopes[i].scope_id, cap);
        while (table[s].scope_id) s = (s + 1) & (cap - 1);
        table[s] = ix->scopes[i];
    }
    free(ix->scopes);
    ix->scopes = table;
    ix->scope_capacity = cap;
    return true;
}

static ScopeIndex *scope_index(const PySource *src, TSNode scope) {
    struct PyIndex *ix = index_of(src);
    if (!ix) return NULL;
    const void *id = scope.id;
    if (ix->scope_capacity) {
        for (size_t s = slot_of(id, ix->scope_capacity); ix->scopes[s].scope_id; s = (s + 1) & (ix->scope_capacity - 1))
            if (ix->scopes[s].scope_id == id) return &ix->scopes[s];
    }
    if ((ix->scope_count + 1) * 2 > ix->scope_capacity && !grow_scopes(ix)) return NULL;
    Collector c = {.src = src};
    /* walk the scope's statements; a function scope's parameters are looked up apart */
    py_walk(scope, collect, &c);
    if (c.failed) {
        free(c.items);
        return NULL;
    }
    if (c.count > 1) qsort(c.items, c.count, sizeof *c.items, by_name_then_start);
    size_t s = slot_of(id, ix->scope_capacity);
    while (ix->scopes[s].scope_id) s = (s + 1) & (ix->scope_capacity - 1);
    ix->scopes[s] = (ScopeIndex){id, c.items, c.count};
    ix->scope_count++;
    return &ix->scopes[s];
}

const PyBinding *py_index_bindings(const PySource *src, TSNode scope, const char *name, size_t length,
                                   size_t *count) {
    *count = 0;
    ScopeIndex *si = scope_index(src, scope);
    if (!si || !si->count) return NULL;
    /* lower bound of name */
    size_t lo = 0, hi = si->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare_names(si->items[mid].name, si->items[mid].length, name, (uint32_t)length) < 0) lo = mid + 1;
        else hi = mid;
    }
    size_t end = lo;
    while (end < si->count && compare_names(si->items[end].name, si->items[end].length, name, (uint32_t)length) == 0)
        end++;
    *count = end - lo;
    return *count ? &si->items[lo] : NULL;
}

static int call_order(const void *x, const void *y) {
    const NamedCall *a = x, *b = y;
    int c = compare_names(a->name, a->length, b->name, b->length);
    if (c) return c;
    uint32_t sa = ts_node_start_byte(a->call), sb = ts_node_start_byte(b->call);
    return (sa > sb) - (sa < sb);
}

static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (unsigned char)c >= 0x80;
}

/* Finds the calls of one name by searching the text for `name(` and asking
 * the tree what sits there: far cheaper after an edit than walking every
 * node of a long file, and cached per name until the next reparse. */
static CallsOfName *find_calls(const PySource *src, struct PyIndex *ix, const char *name, size_t length) {
    for (size_t i = 0; i < ix->by_name_count; i++)
        if (ix->by_name[i].length == length && memcmp(ix->by_name[i].name, name, length) == 0) return &ix->by_name[i];
    if (!array_reserve(&ix->by_name, ix->by_name_count, &ix->by_name_cap, sizeof *ix->by_name, 8)) return NULL;
    CallsOfName *entry = &ix->by_name[ix->by_name_count];
    memset(entry, 0, sizeof *entry);
    entry->name = malloc(length + 1);
    if (!entry->name) return NULL;
    memcpy(entry->name, name, length);
    entry->name[length] = '\0';
    entry->length = length;
    ix->by_name_count++;
    const char *text = src->doc->text;
    size_t n = src->doc->length, cap = 0;
    TSNode root = ts_tree_root_node(src->tree);
    for (const char *p = text; length && (p = memmem(p, n - (size_t)(p - text), name, length)) != NULL; p++) {
        size_t at = (size_t)(p - text);
        if ((at > 0 && (ident_char(text[at - 1]) || text[at - 1] == '.')) ||
            (at + length < n && ident_char(text[at + length])))
            continue;
        size_t q = at + length;
        while (q < n && (text[q] == ' ' || text[q] == '\t')) q++;
        if (q >= n || text[q] != '(') continue;
        TSNode id = ts_node_descendant_for_byte_range(root, (uint32_t)at, (uint32_t)(at + length));
        if (!py_is(id, "identifier") || ts_node_start_byte(id) != at) continue;
        TSNode call = ts_node_parent(id);
        if (!py_is(call, "call") || !ts_node_eq(ts_node_child_by_field_name(call, "function", 8), id)) continue;
        if (!array_reserve(&entry->nodes, entry->count, &cap, sizeof *entry->nodes, 8)) break;
        entry->nodes[entry->count++] = call;
    }
    return entry;
}

const TSNode *py_index_calls(const PySource *src, const char *name, size_t length, size_t *count) {
    *count = 0;
    struct PyIndex *ix = index_of(src);
    if (!ix) return NULL;
    CallsOfName *entry = find_calls(src, ix, name, length);
    if (!entry) return NULL;
    *count = entry->count;
    return entry->count ? entry->nodes : NULL;
}

static void build_defs(const PySource *src, struct PyIndex *ix) {
    ix->defs_built = true;
    size_t cap = 0;
    TSTreeCursor cursor = ts_tree_cursor_new(ts_tree_root_node(src->tree));
    if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
            TSNode c = ts_tree_cursor_current_node(&cursor);
            if (py_is(c, "decorated_definition")) c = ts_node_child_by_field_name(c, "definition", 10);
            if (!py_is(c, "function_definition") && !py_is(c, "class_definition")) continue;
            TSNode name = ts_node_child_by_field_name(c, "name", 4);
            if (ts_node_is_null(name)) continue;
            if (!array_reserve(&ix->defs, ix->def_count, &cap, sizeof *ix->defs, 32)) break;
            ix->defs[ix->def_count++] = (NamedCall){py_text_ptr(src, name), (uint32_t)py_text_len(name), c};
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
    if (ix->def_count > 1) qsort(ix->defs, ix->def_count, sizeof *ix->defs, call_order);
}

TSNode py_index_top_level(const PySource *src, const char *name, size_t length) {
    TSNode null = {0};
    struct PyIndex *ix = index_of(src);
    if (!ix) return null;
    if (!ix->defs_built) build_defs(src, ix);
    size_t lo = 0, hi = ix->def_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare_names(ix->defs[mid].name, ix->defs[mid].length, name, (uint32_t)length) <= 0) lo = mid + 1;
        else hi = mid;
    }
    /* lo is one past the last entry <= name: the latest definition of it */
    if (lo == 0 || compare_names(ix->defs[lo - 1].name, ix->defs[lo - 1].length, name, (uint32_t)length) != 0)
        return null;
    return ix->defs[lo - 1].call;
}

static void build_top_level(const PySource *src, struct PyIndex *ix) {
    ix->scope_nodes_built = true;
    size_t cap = 0;
    TSTreeCursor cursor = ts_tree_cursor_new(ts_tree_root_node(src->tree));
    if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
            TSNode n = ts_tree_cursor_current_node(&cursor);
            if (!array_reserve(&ix->scopes_by_start, ix->scope_node_count, &cap, sizeof *ix->scopes_by_start, 64))
                break;
            ix->scopes_by_start[ix->scope_node_count++] =
                (ScopeNode){n, ts_node_start_byte(n), ts_node_end_byte(n), -1};
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
}

static bool is_scope_node(TSNode n) {
    return py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda");
}

/* Descends from the top-level statement that holds node down to node,
 * remembering the innermost scope on the way: the cost stays within one
 * statement however long the module is (ts_node_parent would start from the
 * root every time). */
TSNode py_index_enclosing_scope(const PySource *src, TSNode node) {
    TSNode null = {0};
    struct PyIndex *ix = index_of(src);
    if (!ix) return null;
    if (!ix->scope_nodes_built) build_top_level(src, ix);
    uint32_t start = ts_node_start_byte(node), end = ts_node_end_byte(node);
    size_t lo = 0, hi = ix->scope_node_count;
    while (lo < hi) { /* the last top-level statement starting at or before node */
        size_t mid = lo + (hi - lo) / 2;
        if (ix->scopes_by_start[mid].start <= start) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return null;
    const ScopeNode *top = &ix->scopes_by_start[lo - 1];
    if (end > top->end || ts_node_eq(top->node, node)) return null;
    TSNode scope = null, cur = top->node;
    TSTreeCursor cursor = ts_tree_cursor_new(cur);
    for (int depth = 0; depth < 1000; depth++) {
        if (ts_node_eq(cur, node)) break;
        if (is_scope_node(cur) && ts_node_start_byte(cur) <= start && end <= ts_node_end_byte(cur)) scope = cur;
        if (ts_tree_cursor_goto_first_child_for_byte(&cursor, start) < 0) break;
        /* among the children reaching past start, find the one that holds node */
        bool found = false;
        do {
            TSNode c = ts_tree_cursor_current_node(&cursor);
            uint32_t cs = ts_node_start_byte(c), ce = ts_node_end_byte(c);
            if (cs > start) break;
            if (cs <= start && end <= ce) {
                cur = c;
                found = true;
                break;
            }
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
        if (!found) break;
    }
    ts_tree_cursor_delete(&cursor);
    return scope;
}

static size_t memo_slot(const void *scope_id, int kind, size_t capacity) {
    return slot_of((const char *)scope_id + kind, capacity);
}

static bool grow_memos(struct PyIndex *ix) {
    size_t cap = ix->memo_capacity ? ix->memo_capacity * 2 : 32;
    ScopeMemo *table = calloc(cap, sizeof *table);
    if (!table) return false;
    for (size_t i = 0; i < ix->memo_capacity; i++) {
        if (!ix->memos[i].scope_id) continue;
        size_t s = memo_slot(ix->memos[i].scope_id, ix->memos[i].kind, cap);
        while (table[s].scope_id) s = (s + 1) & (cap - 1);
        table[s] = ix->memos[i];
    }
    free(ix->memos);
    ix->memos = table;
    ix->memo_capacity = cap;
    return true;
}

void *py_index_scope_memo(const PySource *src, TSNode scope, int kind, size_t size, bool *fresh) {
    *fresh = false;
    struct PyIndex *ix = index_of(src);
    /* the module's root node stands for the module scope (a null node) */
    const void *id = ts_node_is_null(scope) ? ts_tree_root_node(src->tree).id : scope.id;
    if (!ix || !id) return NULL;
    if (ix->memo_capacity)
        for (size_t s = memo_slot(id, kind, ix->memo_capacity); ix->memos[s].scope_id;
             s = (s + 1) & (ix->memo_capacity - 1))
            if (ix->memos[s].scope_id == id && ix->memos[s].kind == kind) return ix->memos[s].block;
    if ((ix->memo_count + 1) * 2 > ix->memo_capacity && !grow_memos(ix)) return NULL;
    void *block = calloc(1, size);
    if (!block) return NULL;
    size_t s = memo_slot(id, kind, ix->memo_capacity);
    while (ix->memos[s].scope_id) s = (s + 1) & (ix->memo_capacity - 1);
    ix->memos[s] = (ScopeMemo){id, kind, block};
    ix->memo_count++;
    *fresh = true;
    return block;
}

void py_index_free(struct PyIndex *ix) {
    if (!ix) return;
    for (size_t i = 0; i < ix->memo_capacity; i++) free(ix->memos[i].block);
    free(ix->memos);
    for (size_t i = 0; i < ix->scope_capacity; i++) free(ix->scopes[i].items);
    free(ix->scopes);
    free(ix->calls);
    free(ix->call_nodes);
    for (size_t i = 0; i < ix->by_name_count; i++) {
        free(ix->by_name[i].name);
        free(ix->by_name[i].nodes);
    }
    free(ix->by_name);
    free(ix->defs);
    free(ix->scopes_by_start);
    free(ix);
}

/* ---- the module scope's bindings across a reparse ------------------------ */

typedef struct {
    uint32_t start, end; /* the value node's bytes, before the edit */
    TSSymbol symbol;
    bool present;
} ValueAt;

struct PyCarriedBindings {
    PyBinding *items; /* sorted by name, then start */
    ValueAt *values;  /* items[i]'s value */
    size_t count;
    const char *old_text;
};

void py_index_carried_free(PyCarriedBindings *c) {
    if (!c) return;
    free(c->items);
    free(c->values);
    free(c);
}

PyCarriedBindings *py_index_take_module(const PySource *src) {
    struct PyIndex *ix = src->index;
    if (!ix || !ix->scope_capacity || !src->tree || !src->doc) return NULL;
    const void *id = ts_tree_root_node(src->tree).id;
    ScopeIndex *si = NULL;
    for (size_t s = slot_of(id, ix->scope_capacity); ix->scopes[s].scope_id; s = (s + 1) & (ix->scope_capacity - 1))
        if (ix->scopes[s].scope_id == id) {
            si = &ix->scopes[s];
            break;
        }
    if (!si) return NULL;
    PyCarriedBindings *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->count = si->count;
    c->old_text = src->doc->text;
    c->items = malloc((si->count ? si->count : 1) * sizeof *c->items);
    c->values = malloc((si->count ? si->count : 1) * sizeof *c->values);
    if (!c->items || !c->values) {
        py_index_carried_free(c);
        return NULL;
    }
    if (si->count) memcpy(c->items, si->items, si->count * sizeof *c->items);
    for (size_t i = 0; i < si->count; i++) {
        TSNode v = si->items[i].value;
        c->values[i] = ts_node_is_null(v) ? (ValueAt){0, 0, 0, false}
                                          : (ValueAt){ts_node_start_byte(v), ts_node_end_byte(v), ts_node_symbol(v), true};
    }
    return c;
}

/* moves an offset of the old text to the new one; false inside the edit */
static bool carry_offset(uint32_t *at, size_t start, size_t old_end, size_t new_end) {
    if (*at <= start) return true;
    if (*at < old_end) return false;
    long long moved = (long long)*at + ((long long)new_end - (long long)old_end);
    if (moved < 0 || moved > UINT32_MAX) return false;
    *at = (uint32_t)moved;
    return true;
}

/* the node of exactly [s, e) with this symbol under top (descending by
 * child cursor: ts_node_parent and ts_node_child(i) would rescan siblings) */
static TSNode find_exact(TSNode top, uint32_t s, uint32_t e, TSSymbol symbol) {
    TSTreeCursor cursor = ts_tree_cursor_new(top);
    TSNode found = {0};
    for (;;) {
        TSNode n = ts_tree_cursor_current_node(&cursor);
        uint32_t ns = ts_node_start_byte(n), ne = ts_node_end_byte(n);
        if (ns > s || ne < e) break;
        if (ns == s && ne == e && ts_node_symbol(n) == symbol) {
            found = n;
            break;
        }
        if (ts_tree_cursor_goto_first_child_for_byte(&cursor, s) < 0) break;
    }
    ts_tree_cursor_delete(&cursor);
    return found;
}

typedef struct {
    uint32_t start;
    size_t index;
} ByValueStart;

static int by_value_start(const void *x, const void *y) {
    const ByValueStart *a = x, *b = y;
    return (a->start > b->start) - (a->start < b->start);
}

bool py_index_put_module(PySource *src, PyCarriedBindings *c, size_t start, size_t old_end, size_t new_end) {
    bool ok = c && src->tree && src->doc && start <= old_end;
    ByValueStart *order = ok ? malloc((c->count ? c->count : 1) * sizeof *order) : NULL;
    ok = ok && order;
    size_t with_value = 0;
    for (size_t i = 0; ok && i < c->count; i++) {
        PyBinding *b = &c->items[i];
        uint32_t old_at = (uint32_t)(b->name - c->old_text), name_at = old_at;
        ok = carry_offset(&name_at, start, old_end, new_end) && carry_offset(&b->start, start, old_end, new_end) &&
             carry_offset(&b->from, start, old_end, new_end) &&
             (b->visibility != VISIBLE_INSIDE_PARENT || carry_offset(&b->until, start, old_end, new_end)) &&
             (size_t)name_at + b->length <= src->doc->length &&
             memcmp(src->doc->text + name_at, c->old_text + old_at, b->length) == 0;
        if (!ok) break;
        b->name = src->doc->text + name_at;
        ValueAt *v = &c->values[i];
        b->value = (TSNode){0};
        if (!v->present) continue;
        ok = carry_offset(&v->start, start, old_end, new_end) && carry_offset(&v->end, start, old_end, new_end) &&
             !(v->start < start && v->end > start); /* a value around the edit cannot be */
        if (ok) order[with_value++] = (ByValueStart){v->start, i};
    }
    if (ok && with_value) {
        /* the values in source order, found under the top-level statement that holds each */
        qsort(order, with_value, sizeof *order, by_value_start);
        TSNode root = ts_tree_root_node(src->tree);
        TSTreeCursor top = ts_tree_cursor_new(root);
        bool more = ts_tree_cursor_goto_first_child(&top);
        for (size_t k = 0; ok && k < with_value; k++) {
            ValueAt *v = &c->values[order[k].index];
            while (more && ts_node_end_byte(ts_tree_cursor_current_node(&top)) < v->end)
                more = ts_tree_cursor_goto_next_sibling(&top);
            TSNode n = more ? find_exact(ts_tree_cursor_current_node(&top), v->start, v->end, v->symbol) : (TSNode){0};
            ok = !ts_node_is_null(n);
            c->items[order[k].index].value = n;
        }
        ts_tree_cursor_delete(&top);
    }
    free(order);
    struct PyIndex *ix = ok ? index_of(src) : NULL;
    ok = ix && ((ix->scope_count + 1) * 2 <= ix->scope_capacity || grow_scopes(ix));
    if (ok) {
        const void *id = ts_tree_root_node(src->tree).id;
        size_t s = slot_of(id, ix->scope_capacity);
        while (ix->scopes[s].scope_id && ix->scopes[s].scope_id != id) s = (s + 1) & (ix->scope_capacity - 1);
        ok = !ix->scopes[s].scope_id; /* not indexed since the reparse */
        if (ok) {
            ix->scopes[s] = (ScopeIndex){id, c->items, c->count};
            ix->scope_count++;
            c->items = NULL;
        }
    }
    py_index_carried_free(c);
    return ok;
}
