/* How long a name bound in a loop's body keeps its value: whether it is dead
 * from its last read until the same statement binds it again in the next
 * iteration. A value held that way stays alive through everything the next
 * iteration does before the rebinding, such as the next forward pass; a
 * `del` after its last read frees it sooner. */
#ifndef ADVISE_PYTHON_LIFETIME_H
#define ADVISE_PYTHON_LIFETIME_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/python/python_source.h"

#define PY_BOUND_NAMES_MAX 8

/* The names a plain assignment statement (`a = ...`, `a, b = ...`) binds:
 * identifiers, also inside tuple and list patterns. 0 when stmt is not such
 * a statement or any target is something else (an attribute, a subscript,
 * a starred name), or it binds more than max names. */
size_t py_assignment_names(TSNode stmt, TSNode *names, size_t max);

/* For an assignment statement `stmt` that runs on every iteration of its
 * loop (a statement of the loop's body, or of `with` blocks in it) and a
 * name it binds: true when the value is dead between its last read in the
 * iteration and the next run of stmt. *after is then the statement after
 * which `del name` can go: the one holding the last read (or stmt itself
 * when nothing reads it), a statement of the innermost block around stmt
 * that also holds that read. False when the value may still be needed: a
 * read before stmt in the body or in a while condition (the value is
 * carried into the next iteration), a read after the loop or in its else
 * clause, another binding of the name in the loop, a read from a nested
 * function, lambda or class, or a global/nonlocal declaration of it; also
 * when stmt runs only on some iterations (under an if, try or match). */
bool py_dead_until_rebound(const PySource *src, TSNode stmt, TSNode name, TSNode *after);

#endif
