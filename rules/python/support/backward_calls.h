/* The calls that run autograd's backward pass, as PY015 (history kept across
 * a training loop) and PY016 (retain_graph=True in a loop) both read them:
 *   loss.backward(...)            scaler.scale(loss).backward()
 *   accelerator.backward(loss)    self.manual_backward(loss)
 *   torch.autograd.backward(loss, ...)
 *   torch.autograd.grad(out, inputs, ...)
 * with what each differentiates and where its retain_graph argument is; and
 * the statement loop (for/while, not a comprehension) that runs a node. */
#ifndef ADVISE_RULES_PYTHON_BACKWARD_CALLS_H
#define ADVISE_RULES_PYTHON_BACKWARD_CALLS_H

#include "analysis/python/python_query.h"

typedef enum {
    BACKWARD_METHOD,   /* x.backward(...), accelerator.backward(loss), self.manual_backward(loss) */
    BACKWARD_FUNCTION, /* torch.autograd.backward(tensors, grad_tensors, retain_graph, ...) */
    BACKWARD_GRAD,     /* torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph, ...) */
} BackwardKind;

typedef struct {
    BackwardKind kind;
    TSNode call;
    /* the expression whose graph the call walks back through: `loss`,
     * `(loss / accum)`, `out[i]`; a null node when the call does not show it */
    TSNode differentiated;
    bool tensor_method; /* x.backward(...) on the tensor itself (positional arguments are Tensor.backward's) */
} BackwardCall;

/* call is one of the calls above (through the file's imports: `th.autograd.grad`,
 * `from torch.autograd import grad`). */
bool py_backward_call(const PySource *src, TSNode call, BackwardCall *out);

/* The value given for one of the call's parameters that torch.autograd
 * and Tensor.backward share (retain_graph, create_graph), by keyword or at
 * its place among the positional arguments; a null node when it is not given. */
TSNode py_backward_argument(const PySource *src, const BackwardCall *b, const char *parameter);

/* The innermost for or while statement whose body runs node on each of its
 * iterations, within node's function (comprehensions are passed through); a
 * null node when there is none. */
TSNode py_statement_loop(TSNode node);

/* Calls visit on each identifier that expr reads, callees included (`model`
 * in `model(x)`), but not attribute or keyword names, and nothing inside
 * lambdas or nested definitions. Stops when visit returns false, and
 * returns false then. */
typedef bool (*PyReadVisitor)(const PySource *src, TSNode id, void *data);
bool py_each_read_name(const PySource *src, TSNode expr, PyReadVisitor visit, void *data);

/* expr reads the identifier spelt like name (py_each_read_name). */
bool py_reads_name(const PySource *src, TSNode expr, TSNode name);

#endif
