/* Indexes over one parse tree, built lazily and kept with the PySource until
 * the next reparse: the name bindings of each scope and the calls of each
 * plain function name. They turn the rules' "where was this name last
 * assigned?" questions from tree walks into lookups. */
#ifndef ADVISE_PYTHON_INDEX_H
#define ADVISE_PYTHON_INDEX_H

#include "analysis/python/python_source.h"

typedef enum {
    VISIBLE_AFTER_END,        /* x = ... : from the end of the statement */
    VISIBLE_IN_BODY,          /* for x in ...: from the start of the loop body */
    VISIBLE_INSIDE_PARENT,    /* comprehension variables: inside the comprehension */
} BindingVisibility;

typedef struct {
    const char *name;
    uint32_t length;
    uint8_t kind;       /* a BindingKind (python_facts.h) */
    uint8_t visibility; /* a BindingVisibility */
    uint32_t start;     /* where the binding node starts */
    uint32_t from;      /* visible from this offset ... */
    uint32_t until;     /* ... up to here (VISIBLE_INSIDE_PARENT only) */
    TSNode value;       /* right-hand side, iterable, or the with-item */
} PyBinding;

/* The bindings of `name` in the scope (a function body or the module),
 * outside nested functions, classes and lambdas, in source order. */
const PyBinding *py_index_bindings(const PySource *src, TSNode scope, const char *name, size_t length,
                                   size_t *count);

/* Calls whose callee is the bare identifier `name`, in source order. */
const TSNode *py_index_calls(const PySource *src, const char *name, size_t length, size_t *count);

/* The module-level function or class definition called `name` (decorators
 * unwrapped); the last one wins, as at run time. A null node when none. */
TSNode py_index_top_level(const PySource *src, const char *name, size_t length);

/* The innermost function definition, class definition or lambda that
 * contains node (node itself excluded); a null node at module level. */
TSNode py_index_enclosing_scope(const PySource *src, TSNode node);

/* A zeroed block of `size` bytes kept per (node, kind) until the next
 * reparse, for a fact that rules ask of one scope or block many times (a
 * null node: the module). *fresh is true when it was just made, and the
 * caller fills it. NULL when memory runs out: compute the fact without it. */
enum { PY_MEMO_LOSS_NAMES = 1, PY_MEMO_GRAD_OFF = 2 };
void *py_index_scope_memo(const PySource *src, TSNode scope, int kind, size_t size, bool *fresh);

void py_index_free(struct PyIndex *index);

/* The module scope's bindings carried over one reparse, so that an edit
 * inside a top-level function or class (whose insides the module scope
 * does not index) does not make the next question about a global walk the
 * whole module again (12-15 ms on a 6,000-line module). Take them before
 * the edit is applied to the tree (the value nodes are read there); after
 * the reparse, put them back with the edit: offsets after it move, names
 * point into the new text and each value node is found again in the new
 * tree. The old text must still be readable then (each name is compared
 * with its new place). The caller answers for the edit lying inside one top-level
 * function or class definition in both trees and for both trees being
 * free of syntax errors; put refuses (and frees) bindings it cannot place
 * exactly. take returns NULL when the module scope was never indexed. */
typedef struct PyCarriedBindings PyCarriedBindings;
PyCarriedBindings *py_index_take_module(const PySource *src);
bool py_index_put_module(PySource *src, PyCarriedBindings *carried, size_t start, size_t old_end, size_t new_end);
void py_index_carried_free(PyCarriedBindings *carried);

#endif
