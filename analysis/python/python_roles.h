/* What a Python function does with a model, as its own text shows: does it
 * train (backward, optimizer steps, gradient changes), is it named and
 * shaped like evaluation or inference, is it a test or a framework hook.
 * Shared by PY010 and the workspace index (which records how a function
 * of another module is called). */
#ifndef ADVISE_PYTHON_ROLES_H
#define ADVISE_PYTHON_ROLES_H

#include "analysis/python/python_query.h"

/* backward(), optimizer.step(), zero_grad(), requires_grad_(),
 * torch.autograd.grad, enable_grad, set_grad_enabled(True), torch.func. */
bool py_call_trains(const PySource *src, TSNode call);

/* Some call in fn's body (not in nested functions) trains, or it assigns
 * `.requires_grad`. */
bool py_function_trains(const PySource *src, TSNode fn);

/* fn is named like evaluation or inference (evaluate, val, test, predict,
 * infer, generate, sample... as a word of the name) and not like training
 * (train, fit, step...); `test_*` unit tests are not. */
bool py_function_named_like_evaluation(const PySource *src, TSNode fn);

/* `test_*` (pytest) and `*_step` (Lightning hooks): grad is the
 * framework's business. */
bool py_function_is_test_or_step_hook(const PySource *src, TSNode fn);

/* fn's body switches a model to evaluation: `.eval()` or `.train(False)`. */
bool py_function_switches_to_eval(const PySource *src, TSNode fn);

#endif
