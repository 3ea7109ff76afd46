/* Python expressions as values: the expression inside parentheses, the value
 * of a numeric literal, and binary operators. General facts about the
 * language that several rules ask (they used to keep copies of these). */
#ifndef ADVISE_PYTHON_EXPR_H
#define ADVISE_PYTHON_EXPR_H

#include <stdbool.h>

#include "analysis/python/python_source.h"

/* The expression inside any number of parentheses: `((x))` -> `x`; comments
 * inside the parentheses are passed over. Anything else is returned as is. */
TSNode py_unparen(TSNode n);

/* The value of a numeric literal (integer or float, `_` separators allowed)
 * with parentheses and unary `+`/`-` around it: `-1`, `(0.5)`, `+1_000`. */
bool py_number_literal(const PySource *src, TSNode n, double *out);
/* The same for decimal integer literals of at most 18 characters, without
 * separators: `-1`, `(64)`. */
bool py_int_literal(const PySource *src, TSNode n, long *out);

/* The operator of a binary_operator node ("+", "@", "**", ...), NULL for
 * any other node. */
const char *py_binary_operator(TSNode n);
/* n is a binary_operator whose operator is op. */
bool py_is_binary(TSNode n, const char *op);

#endif
