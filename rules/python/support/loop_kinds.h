/* What a loop walks, as the sync rules read it (PY001 and PY003): a sweep over
 * a few literal configurations runs its waits a handful of times, not once
 * per training step. */
#ifndef ADVISE_RULES_PYTHON_LOOP_KINDS_H
#define ADVISE_RULES_PYTHON_LOOP_KINDS_H

#include <stdbool.h>

#include "analysis/python/python_query.h"

/* `for stride, ch in [(1, 32), (1, 128), (2, 32)]:` (also under
 * `enumerate`): at most 16 items, each a literal or a tuple or list of
 * literals (numbers, strings, booleans, None, dotted names like
 * `torch.float16`). */
bool py_loop_sweeps_literal_configurations(const PySource *src, TSNode loop);

#endif
