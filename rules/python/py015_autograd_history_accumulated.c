/* PY015 autograd-history-accumulated: a tensor that carries autograd history
 * accumulated across the iterations of a training loop (`total += loss`,
 * `losses.append(loss)`), so that every iteration's graph stays alive. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rule.h"
#include "analysis/base/text_format.h"
#include "analysis/python/python_expr.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_index.h"
#include "rules/python/support/backward_calls.h"
#include "rules/python/support/model_calls.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a tensor that carries autograd history accumulated, in a training loop, into something\n"
    "that outlives the iteration: `total_loss += loss`, `total = total + loss`,\n"
    "`losses.append(loss)`, `outputs.append(logits)`.\n"
    "\n"
    "The loop is a training loop when its own iterations call `backward()` (`loss.backward()`,\n"
    "`scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `torch.autograd.backward` or\n"
    "`torch.autograd.grad`). The value carries history when it is, or is computed by tensor\n"
    "operations from, a loss that the loop hands to backward, or the output of a model call\n"
    "(`out = model(x)`) that feeds that loss, computed in the same iteration with gradients on.\n"
    "The accumulator outlives the iteration when the loop does not assign it again before the\n"
    "accumulation and it has a value from before the loop.\n"
    "\n"
    "Not flagged: values already cut from the graph (`loss.item()`, `loss.detach()`,\n"
    "`float(loss)`, `loss.data`, `loss.cpu().numpy()`); `+=` under `torch.no_grad()` or\n"
    "`torch.inference_mode()` (the sum then records nothing); loops that call no backward\n"
    "(evaluation: PY010's concern); accumulators assigned again earlier in the same iteration\n"
    "(`loss = loss + aux_loss` before `loss.backward()`, micro-batch sums reset on every\n"
    "iteration); accumulators that the code itself hands to backward later (`total =\n"
    "total + loss` then `total.backward()` every few steps, `torch.stack(losses).sum().backward()`),\n"
    "which is gradient accumulation on purpose; a sum of the very loss the loop hands to backward\n"
    "that the loop assigns afresh after the accumulation (`running_loss = 0` once the optimizer has\n"
    "stepped, every N micro-batches): it holds one window's graphs, whose saved tensors backward has\n"
    "freed (a list of outputs reset that way still holds their activations and is flagged); calls of\n"
    "functions this file or the project defines, whatever their names (`evaluate_model(...)` is a\n"
    "function, not a model); outputs of models whose parameters are frozen\n"
    "(`requires_grad_(False)`); accumulations that run in one iteration only, under `if step == 0:`\n"
    "(or `== CONSTANT`) where `step` is the target of an enclosing `for` (a reference kept from the\n"
    "first step and updated in place afterwards; a guard every N steps still grows and is flagged). `torch.no_grad()` around an `append` does not help: it does not\n"
    "detach a tensor that already has a graph, so that case is flagged.\n"
    "\n"
    "## Why is this slow?\n"
    "A tensor computed with gradients on holds its `grad_fn`, and through it the whole graph that\n"
    "produced it. `total_loss += loss` makes `total_loss` a new tensor whose graph joins the old\n"
    "total's to this iteration's loss; a list of losses holds each of them. Nothing ever frees\n"
    "those graphs: every iteration adds one, memory grows step after step (the graph's nodes, and\n"
    "the tensors saved in it where no backward pass has freed them), and a long run can end out of\n"
    "memory. The PyTorch FAQ calls this \"accumulating history across your training loop\".\n"
    "\n"
    "## Example\n"
    "```python\n"
    "total_loss = 0.0\n"
    "for x, y in loader:\n"
    "    loss = criterion(model(x.to(device)), y.to(device))\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    total_loss += loss\n"
    "print(f\"mean loss {total_loss / len(loader):.4f}\")\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "    total_loss += loss.detach()  # the value without its graph, still on the GPU\n"
    "```\n"
    "`loss.item()` (or `float(loss)`) also drops the graph, but copies the value to the host\n"
    "and waits for the GPU on every iteration (PY001).\n"
    "\n"
    "## Fix safety\n"
    "The first fix accumulates `value.detach()`: the same values, on the same device, without\n"
    "the graph. It is safe when the function's later uses of the accumulator are all known and\n"
    "none of them needs its graph: printed, formatted, logged, compared, turned into a number,\n"
    "reduced with tensor operations (a printed tensor no longer shows its `grad_fn`). It is unsafe\n"
    "when the accumulator is returned, stored elsewhere, passed to another function or is not a\n"
    "plain variable: code out of sight could backpropagate through it. When every later use\n"
    "treats it as a Python number, a second fix accumulates `value.item()` instead; it is unsafe\n"
    "too: the accumulator becomes a Python float and the loop waits for the GPU on every\n"
    "iteration.\n";

#define MAX_NAMES 32
#define MAX_DEPTH 10
#define MAX_REACHING 8
#define MAX_FOLLOW 2

typedef enum { ACC_ADD, ACC_APPEND } AccKind;

/* total += loss, total = total + loss, losses.append(loss) */
typedef struct {
    AccKind kind;
    TSNode stmt;  /* what is reported: the assignment, or the append call */
    TSNode acc;   /* total, self.total, stats["loss"], losses */
    TSNode root;  /* the identifier acc starts with */
    TSNode value; /* what is added or appended */
} Accumulation;

typedef struct {
    TSNode items[MAX_NAMES];
    size_t count;
} NameSet;

typedef struct {
    RuleContext *ctx;
    const PySource *src;
    TSNode loop;     /* the training loop */
    TSNode at;       /* the accumulation */
    NameSet targets; /* names the loop's backward calls read */
    bool retains;    /* one of them keeps the graph (retain_graph=True) */
    NameSet feeding; /* names the loop computes those from */
} State;

/* ---- small facts --------------------------------------------------------- */

static bool text_in(const PySource *src, TSNode n, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (py_text_eq(src, n, list[i])) return true;
    return false;
}

static bool set_has(const PySource *src, const NameSet *s, TSNode id) {
    for (size_t i = 0; i < s->count; i++)
        if (py_same_text(src, s->items[i], id)) return true;
    return false;
}

static bool add_to_set(const PySource *src, TSNode id, void *data) {
    NameSet *s = data;
    if (s->count < MAX_NAMES && !set_has(src, s, id)) s->items[s->count++] = id;
    return true;
}

static bool is_nested_scope(TSNode n) {
    return py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda");
}

/* methods whose result has no graph */
static bool cuts_history(const PySource *src, TSNode method) {
    static const char *const methods[] = {"item", "detach", "detach_", "tolist", "numpy", NULL};
    return text_in(src, method, methods);
}

/* the value plainly has no graph: `loss.item()`, `float(loss)`, a literal */
static bool plainly_without_history(const PySource *src, TSNode v) {
    static const char *const literals[] = {"integer", "float", "string", "true", "false", "none", "list",
                                           "dictionary", "tuple", "concatenated_string", NULL};
    static const char *const builtins[] = {"float", "int", "bool", "str", "len", "round", NULL};
    v = py_unparen(v);
    for (size_t i = 0; literals[i]; i++)
        if (py_is(v, literals[i])) return true;
    if (py_is(v, "attribute")) return py_text_eq(src, ts_node_child_by_field_name(v, "attribute", 9), "data");
    if (!py_is(v, "call")) return false;
    TSNode method = py_method_name_node(v);
    if (!ts_node_is_null(method)) return cuts_history(src, method);
    for (size_t i = 0; builtins[i]; i++)
        if (py_is_builtin_call(src, v, builtins[i])) return true;
    return false;
}

static TSNode root_identifier(TSNode n) {
    for (int depth = 0; depth < 16; depth++) {
        if (py_is(n, "attribute")) n = ts_node_child_by_field_name(n, "object", 6);
        else if (py_is(n, "subscript")) n = ts_node_child_by_field_name(n, "value", 5);
        else break;
    }
    return py_is(n, "identifier") ? n : (TSNode){0};
}

/* ---- the accumulation ---------------------------------------------------- */

static bool match_accumulation(const PySource *src, TSNode n, Accumulation *a) {
    *a = (Accumulation){.stmt = n};
    if (py_is(n, "augmented_assignment")) {
        if (!py_text_eq(src, ts_node_child_by_field_name(n, "operator", 8), "+=")) return false;
        a->kind = ACC_ADD;
        a->acc = ts_node_child_by_field_name(n, "left", 4);
        a->value = ts_node_child_by_field_name(n, "right", 5);
    } else if (py_is(n, "assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        TSNode right = py_unparen(ts_node_child_by_field_name(n, "right", 5));
        if (!py_is_binary(right, "+")) return false;
        TSNode l = ts_node_child_by_field_name(right, "left", 4), r = ts_node_child_by_field_name(right, "right", 5);
        a->kind = ACC_ADD;
        a->acc = left;
        if (py_same_text_present(src, l, left)) a->value = r;
        else if (py_same_text_present(src, r, left)) a->value = l;
        else return false;
    } else if (py_is(n, "call") && py_is(ts_node_parent(n), "expression_statement")) {
        TSNode recv;
        if (!py_method_call(src, n, "append", &recv) || py_call_positional_count(n) != 1 ||
            py_call_has_argument(n, "keyword_argument") || py_call_has_splat(n))
            return false;
        a->kind = ACC_APPEND;
        a->acc = recv;
        a->value = py_call_positional(n, 0);
    } else {
        return false;
    }
    a->root = root_identifier(a->acc);
    return !ts_node_is_null(a->root) && !ts_node_is_null(a->value);
}

/* a binding of the accumulator in the loop before the accumulation starts it
 * afresh: any binding but one that updates it from itself (`total = total +
 * x`, `total += x`) without cutting its history */
static bool restarts(const PySource *src, const PyBinding *b, TSNode root) {
    if (b->kind == BINDING_LOOP_TARGET || ts_node_is_null(b->value)) return true;
    if (py_is(ts_node_parent(b->value), "augmented_assignment")) return false; /* total += other */
    if (!py_reads_name(src, b->value, root)) return true;
    return plainly_without_history(src, b->value);
}

/* The accumulator keeps its value from one iteration to the next: the loop
 * does not bind it afresh before the accumulation (nor, for `self.total`,
 * assign that attribute), and it has a value from before the loop. */
static bool outlives_iteration(const PySource *src, const Accumulation *a, TSNode loop) {
    size_t from = ts_node_start_byte(loop), until = ts_node_start_byte(a->stmt);
    bool self = py_text_eq(src, a->root, "self");
    if (!self) {
        size_t count;
        const PyBinding *b = py_index_bindings(src, py_scope_of(src, a->stmt), py_text_ptr(src, a->root),
                                               py_text_len(a->root), &count);
        for (size_t i = 0; i < count; i++)
            if (b[i].start >= from && b[i].start < until && restarts(src, &b[i], a->root)) return false;
        return py_binding_before(src, loop, py_text_ptr(src, a->root), py_text_len(a->root), from, NULL) !=
               BINDING_NONE;
    }
    /* self.total: an assignment to the same attribute in the loop before it */
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    uint32_t n = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < n; i++) {
        TSNode stmt = ts_node_named_child(body, i);
        if (ts_node_start_byte(stmt) >= until) break;
        TSNode e = py_is(stmt, "expression_statement") ? ts_node_named_child(stmt, 0) : stmt;
        if (py_is(e, "assignment") && py_same_text_present(src, ts_node_child_by_field_name(e, "left", 4), a->acc))
            return false;
    }
    return true;
}

/* The accumulation runs in one iteration of a loop that holds it: it sits
 * under `if step == 0:` (or `== CONSTANT`, either side) where `step` is the
 * target of an enclosing `for`, so it happens once per run of that loop, not
 * once per step (a reference kept from the first step, then updated in place:
 * `if step == 0: ys.append(y) else: ys[i].copy_(y)`). A guard every N steps
 * (`step % N == 0`) still grows and is not this. */
static bool first_iteration_only(const PySource *src, TSNode stmt) {
    TSNode child = stmt;
    for (TSNode n = ts_node_parent(stmt); !ts_node_is_null(n) && !py_is(n, "function_definition");
         child = n, n = ts_node_parent(n)) {
        if (!py_is(n, "if_statement") && !py_is(n, "elif_clause")) continue;
        if (!ts_node_eq(child, ts_node_child_by_field_name(n, "consequence", 11))) continue;
        TSNode cond = ts_node_child_by_field_name(n, "condition", 9);
        if (!py_is(cond, "comparison_operator") || ts_node_named_child_count(cond) != 2) continue;
        bool eq = false;
        for (uint32_t i = 0; i < ts_node_child_count(cond); i++) {
            TSNode c = ts_node_child(cond, i);
            if (!ts_node_is_named(c)) eq = strcmp(ts_node_type(c), "==") == 0;
        }
        if (!eq) continue;
        TSNode sides[2] = {ts_node_named_child(cond, 0), ts_node_named_child(cond, 1)};
        for (int k = 0; k < 2; k++) {
            TSNode counter = sides[k], other = sides[1 - k];
            if (!py_is(counter, "identifier")) continue;
            if (!py_is(other, "integer") && !py_is(other, "identifier") && !py_is(other, "attribute")) continue;
            if (py_same_text(src, counter, other)) continue;
            for (TSNode loop = ts_node_parent(n); !ts_node_is_null(loop) && !py_is(loop, "function_definition");
                 loop = ts_node_parent(loop)) {
                if (!py_is(loop, "for_statement")) continue;
                TSNode target = ts_node_child_by_field_name(loop, "left", 4);
                if (py_is(target, "identifier") && py_same_text(src, target, counter)) return true;
                /* `for step, batch in enumerate(loader)`: a name the loop binds */
                if (!py_is(target, "pattern_list") && !py_is(target, "tuple_pattern")) continue;
                for (uint32_t i = 0; i < ts_node_named_child_count(target); i++) {
                    TSNode part = ts_node_named_child(target, i);
                    if (py_is(part, "identifier") && py_same_text(src, part, counter)) return true;
                }
            }
        }
    }
    return false;
}

/* ---- the training loop ------------------------------------------------------ */

typedef struct {
    State *st;
    bool any;
} LoopScan;

static bool visit_backward(TSNode n, void *data) {
    LoopScan *s = data;
    const PySource *src = s->st->src;
    if (is_nested_scope(n)) return false;
    BackwardCall b;
    if (!py_is(n, "call") || !py_backward_call(src, n, &b)) return true;
    if (!ts_node_eq(py_statement_loop(n), s->st->loop) || py_grad_disabled_at(src, n)) return true;
    s->any = true;
    py_each_read_name(src, b.differentiated, add_to_set, &s->st->targets);
    TSNode retain = py_backward_argument(src, &b, "retain_graph");
    if (!ts_node_is_null(retain) && !py_text_eq(src, retain, "False") && !py_text_eq(src, retain, "None"))
        s->st->retains = true;
    return true;
}

/* names the loop assigns from the names already in the set, to a fixed point */
static void close_over_loop(State *st, NameSet *set) {
    const PySource *src = st->src;
    TSNode scope = py_scope_of(src, st->loop);
    TSNode body = ts_node_child_by_field_name(st->loop, "body", 4);
    for (size_t i = 0; i < set->count; i++) {
        size_t count;
        const PyBinding *b = py_index_bindings(src, scope, py_text_ptr(src, set->items[i]),
                                               py_text_len(set->items[i]), &count);
        for (size_t k = 0; k < count; k++)
            if (!ts_node_is_null(b[k].value) && b[k].kind != BINDING_LOOP_TARGET && py_is_within(b[k].value, body))
                py_each_read_name(src, b[k].value, add_to_set, set);
    }
}

/* The loop's own iterations call backward: collect what they differentiate. */
static bool training_loop(State *st) {
    LoopScan s = {st, false};
    py_walk(ts_node_child_by_field_name(st->loop, "body", 4), visit_backward, &s);
    if (!s.any || st->targets.count == 0) return false;
    st->feeding = st->targets;
    close_over_loop(st, &st->feeding);
    return true;
}

/* ---- does the value carry history? -------------------------------------------- */

static bool carries(State *st, TSNode e, int depth);
static bool model_call(const PySource *src, TSNode v);

static bool any_argument_carries(State *st, TSNode call, int depth) {
    TSNode args = py_call_arguments(call);
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (py_is(a, "keyword_argument")) a = ts_node_child_by_field_name(a, "value", 5);
        if (carries(st, a, depth + 1)) return true;
    }
    return false;
}

/* torch functions whose result is differentiable in their tensor arguments */
static bool differentiable_torch_function(const char *q) {
    static const char *const not_differentiable[] = {
        "argmax", "argmin", "argsort", "eq", "ne", "lt", "le", "gt", "ge", "equal", "isnan", "isinf", "isfinite",
        "numel", "is_tensor", "zeros", "ones", "empty", "full", "tensor", "as_tensor", "from_numpy", "arange",
        "linspace", "randn", "rand", "randint", "zeros_like", "ones_like", "empty_like", "full_like", "randn_like",
        "rand_like", "nonzero", "count_nonzero", "unique", "bucketize", "searchsorted", "no_grad", "device", NULL};
    if (strncmp(q, "torch.nn.functional.", 20) != 0 && strncmp(q, "torch.linalg.", 13) != 0 &&
        strncmp(q, "torch.special.", 14) != 0 && (strncmp(q, "torch.", 6) != 0 || strchr(q + 6, '.')))
        return false;
    const char *last = strrchr(q, '.') + 1;
    for (size_t i = 0; not_differentiable[i]; i++)
        if (strcmp(last, not_differentiable[i]) == 0) return false;
    return true;
}

/* tensor methods whose result keeps the receiver's graph */
static bool differentiable_method(const PySource *src, TSNode method) {
    static const char *const methods[] = {
        "sum", "mean", "cpu", "cuda", "to", "float", "double", "half", "bfloat16", "clone", "squeeze", "unsqueeze",
        "view", "reshape", "flatten", "abs", "pow", "sqrt", "exp", "log", "mul", "add", "sub", "div", "softmax",
        "log_softmax", "sigmoid", "tanh", "norm", "contiguous", "permute", "transpose", "t", "neg", "square",
        "prod", NULL};
    return text_in(src, method, methods);
}

/* `criterion(out, y)`, `loss_fn(...)`, `self.compute_loss(...)`: a loss
 * function, whose result carries its inputs' graph */
static bool names_loss(const PySource *src, TSNode callee) {
    TSNode name = py_is(callee, "attribute") ? ts_node_child_by_field_name(callee, "attribute", 9) : callee;
    if (!py_is(name, "identifier")) return false;
    const char *t = py_text_ptr(src, name);
    size_t len = py_text_len(name);
    return memmem(t, len, "loss", 4) || memmem(t, len, "criterion", 9) || memmem(t, len, "crit", 4);
}

static bool carries_call(State *st, TSNode call, int depth) {
    const PySource *src = st->src;
    /* a forward pass with gradients on (the loop trains): `F.cross_entropy(model(xv), yv)` keeps the
     * evaluation's graph and activations even though nothing differentiates it */
    if (model_call(src, call)) return true;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    char q[PY_NAME_MAX];
    if (py_qualified_name(src, fn, q, sizeof q) && strncmp(q, "torch.", 6) == 0)
        return differentiable_torch_function(q) && any_argument_carries(st, call, depth);
    TSNode method = py_method_name_node(call);
    if (!ts_node_is_null(method)) {
        if (cuts_history(src, method)) return false;
        if (differentiable_method(src, method))
            return carries(st, ts_node_child_by_field_name(fn, "object", 6), depth + 1) ||
                   any_argument_carries(st, call, depth);
    }
    return names_loss(src, fn) && any_argument_carries(st, call, depth);
}

/* `model.requires_grad_(False)`, or a loop over `model.parameters()` that
 * sets `requires_grad = False`, anywhere in the file */
static bool frozen(const PySource *src, TSNode model) {
    char needle[128];
    const char *text = src->doc->text;
    size_t len = src->doc->length;
    if (py_text_len(model) > 64) return true;
    int name_len = (int)py_text_len(model);
    const char *name = py_text_ptr(src, model);
    int n = snprintf(needle, sizeof needle, "%.*s.requires_grad_(False", name_len, name);
    if (memmem(text, len, needle, (size_t)n)) return true;
    n = snprintf(needle, sizeof needle, "%.*s.parameters()", name_len, name);
    for (const char *at = memmem(text, len, needle, (size_t)n); at;
         at = memmem(at + 1, len - (size_t)(at + 1 - text), needle, (size_t)n)) {
        size_t rest = len - (size_t)(at - text), window = rest < 200 ? rest : 200;
        if (memmem(at, window, "requires_grad = False", 21) || memmem(at, window, "requires_grad=False", 19) ||
            memmem(at, window, "requires_grad_(False", 20))
            return true;
    }
    return false;
}

/* `model(x)`, `self.net(x)`, `model.forward(x)` (through .to()/.float()) of a
 * model whose parameters are not frozen */
static bool model_call(const PySource *src, TSNode v) {
    static const char *const keeps[] = {"to", "float", "half", "double", "contiguous", NULL};
    v = py_unparen(v);
    for (int depth = 0; depth < 8; depth++) {
        TSNode m = py_method_name_node(v);
        if (ts_node_is_null(m) || !text_in(src, m, keeps)) break;
        v = ts_node_child_by_field_name(ts_node_parent(m), "object", 6);
    }
    TSNode model = py_called_model(src, v);
    return !ts_node_is_null(model) && !frozen(src, model);
}

/* the part of a tuple assignment's right side that binds id: `x, y = a, b` */
static TSNode unpacked_value(TSNode id, TSNode value) {
    TSNode left = ts_node_parent(id);
    if (!(py_is(left, "pattern_list") || py_is(left, "tuple_pattern")) ||
        !(py_is(value, "expression_list") || py_is(value, "tuple")))
        return value;
    uint32_t n = ts_node_named_child_count(left);
    if (n != ts_node_named_child_count(value)) return (TSNode){0};
    for (uint32_t i = 0; i < n; i++)
        if (ts_node_eq(ts_node_named_child(left, i), id)) return ts_node_named_child(value, i);
    return (TSNode){0};
}

/* the identifier that a binding's statement binds, spelt like name */
static TSNode bound_identifier(const PySource *src, TSNode value, TSNode name) {
    TSNode stmt = ts_node_parent(value);
    TSNode left = ts_node_child_by_field_name(stmt, "left", 4);
    if (py_is(left, "identifier")) return left;
    uint32_t n = ts_node_named_child_count(left);
    for (uint32_t i = 0; i < n; i++)
        if (py_same_text(src, ts_node_named_child(left, i), name)) return ts_node_named_child(left, i);
    return (TSNode){0};
}

/* every binding of id that reaches the accumulation computes it in this
 * iteration, with gradients on, with history: a loss handed to backward, a
 * model's output, or tensor operations on those */
static bool carries_name(State *st, TSNode id, int depth) {
    const PySource *src = st->src;
    PyReachingBinding b[MAX_REACHING];
    size_t n = py_reaching_bindings(src, id, b, MAX_REACHING);
    if (n == 0) return false;
    TSNode body = ts_node_child_by_field_name(st->loop, "body", 4);
    for (size_t i = 0; i < n; i++) {
        if (b[i].kind != BINDING_ASSIGNMENT && b[i].kind != BINDING_OTHER) return false;
        TSNode v = b[i].value;
        if (ts_node_is_null(v) || !py_is_within(v, body) || py_grad_disabled_at(src, v)) return false;
        TSNode holder = ts_node_parent(v);
        if (py_is(holder, "augmented_assignment")) { /* loss += aux: the loss itself, or the new part */
            if (set_has(src, &st->targets, id) || carries(st, v, depth + 1)) continue;
            return false;
        }
        if (!py_is(holder, "assignment")) return false; /* with ... as x, walrus */
        TSNode bound = bound_identifier(src, v, id);
        v = ts_node_is_null(bound) ? v : unpacked_value(bound, v);
        if (ts_node_is_null(v) || plainly_without_history(src, v)) return false;
        if (set_has(src, &st->targets, id)) continue; /* the loss itself */
        if (model_call(src, v)) continue; /* a model's output: its graph, whether or not it feeds backward */
        if (!carries(st, v, depth + 1)) return false;
    }
    return true;
}

static bool carries(State *st, TSNode e, int depth) {
    const PySource *src = st->src;
    if (ts_node_is_null(e) || depth > MAX_DEPTH) return false;
    e = py_unparen(e);
    if (py_is(e, "identifier")) return carries_name(st, e, depth);
    if (py_is(e, "call")) return carries_call(st, e, depth);
    if (py_is(e, "binary_operator")) {
        static const char *const ops[] = {"+", "-", "*", "/", "@", "**", NULL};
        const char *op = py_binary_operator(e);
        bool differentiable = false;
        for (size_t i = 0; ops[i] && op; i++) differentiable |= strcmp(op, ops[i]) == 0;
        return differentiable && (carries(st, ts_node_child_by_field_name(e, "left", 4), depth + 1) ||
                                  carries(st, ts_node_child_by_field_name(e, "right", 5), depth + 1));
    }
    if (py_is(e, "unary_operator")) return carries(st, ts_node_child_by_field_name(e, "argument", 8), depth + 1);
    if (py_is(e, "subscript")) return carries(st, ts_node_child_by_field_name(e, "value", 5), depth + 1);
    if (py_is(e, "attribute")) {
        static const char *const plain[] = {"data", "grad", "shape", "device", "dtype", "requires_grad", "ndim",
                                            "is_cuda", "grad_fn", NULL};
        if (text_in(src, ts_node_child_by_field_name(e, "attribute", 9), plain)) return false;
        return carries(st, ts_node_child_by_field_name(e, "object", 6), depth + 1); /* outputs.loss, out.logits */
    }
    if (py_is(e, "list") || py_is(e, "tuple")) { /* torch.stack([a, b]) */
        uint32_t n = ts_node_named_child_count(e);
        for (uint32_t i = 0; i < n; i++)
            if (carries(st, ts_node_named_child(e, i), depth + 1)) return true;
    }
    return false;
}

/* ---- gradient accumulation on purpose ---------------------------------------- */

typedef struct {
    const PySource *src;
    NameSet *set;
} ScopeBackward;

static bool visit_scope_backward(TSNode n, void *data) {
    ScopeBackward *s = data;
    if (is_nested_scope(n)) return false;
    BackwardCall b;
    if (py_is(n, "call") && py_backward_call(s->src, n, &b))
        py_each_read_name(s->src, b.differentiated, add_to_set, s->set);
    return true;
}

static bool text_holds(const PySource *src, TSNode n, TSNode part) {
    return !ts_node_is_null(n) &&
           memmem(py_text_ptr(src, n), py_text_len(n), py_text_ptr(src, part), py_text_len(part)) != NULL;
}

/* The code hands the accumulator, or something computed from it, to a
 * backward call of its scope: `total.backward()`,
 * `torch.stack(losses).mean().backward()`. A name is looked for among the
 * names those calls read, through the scope's assignments; `self.total` or
 * `stats["loss"]` by its text in what they differentiate and in those
 * assignments. */
static bool differentiated_later(State *st, const Accumulation *a) {
    const PySource *src = st->src;
    bool by_name = py_is(a->acc, "identifier");
    NameSet set = {.count = 0};
    ScopeBackward s = {src, &set};
    TSNode scope = py_scope_of(src, st->at);
    py_walk(scope, visit_scope_backward, &s);
    for (size_t i = 0; i < set.count; i++) {
        if (by_name && py_same_text(src, set.items[i], a->acc)) return true;
        if (!by_name && text_holds(src, py_statement_of(set.items[i]), a->acc)) return true;
        size_t count;
        const PyBinding *b =
            py_index_bindings(src, scope, py_text_ptr(src, set.items[i]), py_text_len(set.items[i]), &count);
        for (size_t k = 0; k < count; k++) {
            if (ts_node_is_null(b[k].value) || b[k].kind == BINDING_LOOP_TARGET) continue;
            if (!by_name && text_holds(src, b[k].value, a->acc)) return true;
            py_each_read_name(src, b[k].value, add_to_set, &set);
        }
    }
    return false;
}

typedef struct {
    const PySource *src;
    bool found;
} StepSearch;

static bool visit_step(TSNode n, void *data) {
    StepSearch *s = data;
    TSNode recv;
    if (py_is(n, "call") && py_method_call(s->src, n, "step", &recv) && py_is_optimizer(s->src, recv)) s->found = true;
    return !s->found;
}

/* The reset runs on a schedule: on every iteration (a statement of the
 * loop's body), every N steps (`if (i + 1) % N == 0:`), or in the branch
 * that steps the optimizer; not under a test of the data (`if
 * torch.isnan(loss): total = 0`), which may never pass. */
static bool resets_on_schedule(const PySource *src, TSNode reset, TSNode loop) {
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    TSNode stmt = py_statement_of(reset);
    if (ts_node_eq(ts_node_parent(stmt), body) || py_is_periodic(src, stmt, loop)) return true;
    TSNode block = ts_node_parent(stmt);
    StepSearch s = {src, false};
    if (py_is(block, "block")) py_walk(block, visit_step, &s);
    return s.found;
}

/* The accumulator sums the very loss the loop hands to backward (whose
 * saved tensors that backward frees: not with retain_graph=True) and the
 * loop assigns it afresh after the accumulation, on a schedule
 * (`running_loss = 0` once the optimizer has stepped, every N
 * micro-batches): it holds the graphs of one accumulation window at most,
 * not one per step. */
static bool reset_after_backward(State *st, const Accumulation *a) {
    const PySource *src = st->src;
    if (st->retains || !py_is(a->acc, "identifier") || !py_is(py_unparen(a->value), "identifier") ||
        !set_has(src, &st->targets, py_unparen(a->value)))
        return false;
    size_t from = ts_node_end_byte(a->stmt), until = ts_node_end_byte(st->loop);
    size_t count;
    const PyBinding *b =
        py_index_bindings(src, py_scope_of(src, a->stmt), py_text_ptr(src, a->acc), py_text_len(a->acc), &count);
    for (size_t i = 0; i < count; i++)
        if (b[i].start >= from && b[i].start < until && b[i].kind != BINDING_LOOP_TARGET && !ts_node_is_null(b[i].value) &&
            restarts(src, &b[i], a->acc) && resets_on_schedule(src, b[i].value, st->loop))
            return true;
    return false;
}

/* ---- how the accumulator is used (for the fixes) ---------------------------- */

typedef struct {
    const PySource *src;
    TSNode name;
    bool escapes;    /* some use is unknown, or could need the graph */
    bool tensor_use; /* some use needs a tensor (`.item()`, torch.stack) */
    int follow;
} UseScan;

static void scan_uses(UseScan *u, TSNode scope, TSNode name, int follow);

/* a call that only reads a value and keeps nothing of it */
static bool reading_call(const PySource *src, TSNode call) {
    static const char *const builtins[] = {"print", "str", "repr", "format", "isinstance", NULL};
    static const char *const methods[] = {"info", "debug", "warning", "warn", "log", "write", "add_scalar",
                                          "add_scalars", "set_postfix", "set_description", "format", NULL};
    for (size_t i = 0; builtins[i]; i++)
        if (py_is_builtin_call(src, call, builtins[i])) return true;
    TSNode m = py_method_name_node(call);
    return !ts_node_is_null(m) && text_in(src, m, methods);
}

/* `float(total)`: the result is a Python number, with no graph to need */
static bool number_call(const PySource *src, TSNode call) {
    static const char *const builtins[] = {"float", "int", "round", "len", "bool", NULL};
    for (size_t i = 0; builtins[i]; i++)
        if (py_is_builtin_call(src, call, builtins[i])) return true;
    return false;
}

/* a call whose result is a new value computed from its arguments */
static bool computing_call(UseScan *u, TSNode call) {
    static const char *const builtins[] = {"abs", "sum", "min", "max", "sorted", NULL};
    const PySource *src = u->src;
    for (size_t i = 0; builtins[i]; i++)
        if (py_is_builtin_call(src, call, builtins[i])) return true;
    char q[PY_NAME_MAX];
    if (!py_callee_name(src, call, q, sizeof q)) return false;
    if (strncmp(q, "torch.", 6) == 0) {
        u->tensor_use = true;
        return true;
    }
    return strncmp(q, "numpy.", 6) == 0 || strncmp(q, "math.", 5) == 0 || strncmp(q, "statistics.", 11) == 0;
}

static bool type_in(TSNode n, const char *const *types) {
    for (size_t i = 0; types[i]; i++)
        if (py_is(n, types[i])) return true;
    return false;
}

static void classify_use(UseScan *u, TSNode n) {
    const PySource *src = u->src;
    /* where a read ends harmlessly: a test, a comparison, a formatted string, a dropped value */
    static const char *const plain_reads[] = {"comparison_operator", "boolean_operator", "not_operator",
                                              "interpolation", "expression_statement", "if_statement",
                                              "while_statement", "assert_statement", "elif_clause", NULL};
    static const char *const value_methods[] = {"item", "tolist", "numpy", "cpu", "mean", "sum", "float", "detach",
                                                "clone", "std", "size", "numel", "dim", NULL};
    static const char *const host_methods[] = {"item", "tolist", "numpy", "size", "numel", "dim", NULL};
    for (int up = 0; up < 16; up++) {
        TSNode parent = ts_node_parent(n);
        if (py_is(parent, "parenthesized_expression") || py_is(parent, "binary_operator") ||
            py_is(parent, "unary_operator") || py_is(parent, "list") || py_is(parent, "tuple") ||
            py_is(parent, "expression_list") || py_is(parent, "keyword_argument") ||
            (py_is(parent, "subscript") && ts_node_eq(ts_node_child_by_field_name(parent, "value", 5), n))) {
            n = parent;
            continue;
        }
        if (type_in(parent, plain_reads)) return;
        if (py_is(parent, "attribute") && ts_node_eq(ts_node_child_by_field_name(parent, "object", 6), n)) {
            TSNode call = ts_node_parent(parent);
            TSNode method = ts_node_child_by_field_name(parent, "attribute", 9);
            if (!py_is(call, "call") || !text_in(src, method, value_methods)) {
                u->escapes = true;
                return;
            }
            u->tensor_use = true;
            if (text_in(src, method, host_methods)) return; /* a number now */
            n = call;
            continue;
        }
        if (py_is(parent, "argument_list")) {
            TSNode call = ts_node_parent(parent);
            if (reading_call(src, call) || number_call(src, call)) return;
            if (!computing_call(u, call)) {
                u->escapes = true;
                return;
            }
            n = call;
            continue;
        }
        if (py_is(parent, "assignment") && ts_node_eq(ts_node_child_by_field_name(parent, "right", 5), n)) {
            TSNode left = ts_node_child_by_field_name(parent, "left", 4);
            if (!py_is(left, "identifier") || u->follow >= MAX_FOLLOW) {
                u->escapes = true;
                return;
            }
            u->follow++;
            scan_uses(u, py_scope_of(src, parent), left, u->follow);
            u->follow--;
            return;
        }
        u->escapes = true; /* returned, yielded, stored, iterated, added into another accumulator */
        return;
    }
    u->escapes = true;
}

/* the identifier is where the accumulator is written, not read: the left
 * side of an assignment, `total += ...`, the receiver of `.append(...)` */
static bool written_here(const PySource *src, TSNode id) {
    TSNode parent = ts_node_parent(id);
    if ((py_is(parent, "assignment") || py_is(parent, "augmented_assignment")) &&
        ts_node_eq(ts_node_child_by_field_name(parent, "left", 4), id))
        return true;
    if (py_is(parent, "pattern_list") || py_is(parent, "tuple_pattern")) return true;
    if (py_is(parent, "attribute") && ts_node_eq(ts_node_child_by_field_name(parent, "object", 6), id)) {
        TSNode call = ts_node_parent(parent);
        static const char *const writes[] = {"append", "clear", NULL};
        return py_is(call, "call") && text_in(src, ts_node_child_by_field_name(parent, "attribute", 9), writes) &&
               py_is(ts_node_parent(call), "expression_statement");
    }
    /* `total = total + x`: the read on the right is part of the write */
    TSNode expr = py_is(parent, "binary_operator") ? ts_node_parent(parent) : (TSNode){0};
    return py_is(expr, "assignment") && py_same_text_present(src, ts_node_child_by_field_name(expr, "left", 4), id);
}

typedef struct {
    UseScan *u;
    TSNode name;
} UseWalk;

static bool visit_use(TSNode n, void *data) {
    UseWalk *w = data;
    const PySource *src = w->u->src;
    if (is_nested_scope(n)) {
        if (py_reads_name(src, n, w->name)) w->u->escapes = true; /* a closure or another function reads it */
        return false;
    }
    if (!py_is(n, "identifier") || !py_same_text(src, n, w->name)) return true;
    TSNode parent = ts_node_parent(n);
    if (py_is(parent, "attribute") && ts_node_eq(ts_node_child_by_field_name(parent, "attribute", 9), n)) return true;
    if (py_is(parent, "keyword_argument") && ts_node_eq(ts_node_child_by_field_name(parent, "name", 4), n))
        return true;
    if (written_here(src, n)) return true;
    classify_use(w->u, n);
    return !w->u->escapes;
}

static void scan_uses(UseScan *u, TSNode scope, TSNode name, int follow) {
    (void)follow;
    UseWalk w = {u, name};
    if (py_is(scope, "module")) { /* globals: any function of the file may read them */
        uint32_t n = ts_node_named_child_count(scope);
        for (uint32_t i = 0; i < n && !u->escapes; i++) py_walk(ts_node_named_child(scope, i), visit_use, &w);
        return;
    }
    py_walk(scope, visit_use, &w);
}

/* ---- the fixes ---------------------------------------------------------------- */

static bool is_primary(TSNode e) {
    return py_is(e, "identifier") || py_is(e, "attribute") || py_is(e, "subscript") || py_is(e, "call") ||
           py_is(e, "parenthesized_expression");
}

static void add_method_fix(Finding *f, TSNode value, const char *title, const char *method, bool safe) {
    Fix *fix = finding_add_fix(f, title, safe);
    if (!fix) return;
    char tail[32];
    if (is_primary(value)) {
        snprintf(tail, sizeof tail, ".%s()", method);
        fix_add_edit(fix, ts_node_end_byte(value), ts_node_end_byte(value), tail);
        return;
    }
    snprintf(tail, sizeof tail, ").%s()", method);
    fix_add_edit(fix, ts_node_start_byte(value), ts_node_start_byte(value), "(");
    fix_add_edit(fix, ts_node_end_byte(value), ts_node_end_byte(value), tail);
}

static void add_fixes(State *st, Finding *f, const Accumulation *a) {
    const PySource *src = st->src;
    if (src->has_errors) return;
    UseScan u = {src, a->root, false, false, 0};
    if (!py_is(a->acc, "identifier")) u.escapes = true;
    else scan_uses(&u, py_scope_of(src, a->stmt), a->root, 0);
    add_method_fix(f, a->value,
                   u.escapes ? "Accumulate it detached with .detach() (code out of sight may need the graph)"
                             : "Accumulate it detached with .detach()",
                   "detach", !u.escapes);
    if (!u.escapes && !u.tensor_use)
        add_method_fix(f, a->value,
                       "Accumulate a Python number with .item() (it waits for the GPU on every iteration)", "item",
                       false);
}

/* ---- the rule ------------------------------------------------------------------ */

static void describe(const PySource *src, TSNode n, size_t max, const char *otherwise, char *buf, size_t size) {
    if (!py_short_text(src, n, max, buf, size)) snprintf(buf, size, "%s", otherwise);
}

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    const PySource *src = ctx->py;
    if (ctx->out_of_memory) return false;
    Accumulation a;
    if (!match_accumulation(src, n, &a)) return true;
    TSNode loop = py_statement_loop(n);
    if (ts_node_is_null(loop)) return true;
    /* under no_grad a sum records nothing; a list keeps what it is given */
    bool no_grad = py_grad_disabled_at(src, n);
    if (no_grad && a.kind == ACC_ADD) return true;
    if (plainly_without_history(src, a.value) || !outlives_iteration(src, &a, loop)) return true;
    if (first_iteration_only(src, a.stmt)) return true;
    State st = {.ctx = ctx, .src = src, .loop = loop, .at = n};
    if (!training_loop(&st) || !carries(&st, a.value, 0) || differentiated_later(&st, &a) ||
        reset_after_backward(&st, &a))
        return true;

    char stmt[80], value[48], acc[48], kept[64];
    describe(src, a.stmt, 60, "this accumulation", stmt, sizeof stmt);
    describe(src, a.value, 40, "the value", value, sizeof value);
    describe(src, a.acc, 40, "the accumulator", acc, sizeof acc);
    if (is_primary(a.value)) snprintf(kept, sizeof kept, "%s.detach()", value);
    else snprintf(kept, sizeof kept, "(%s).detach()", value);
    Finding *f;
    if (a.kind == ACC_ADD)
        f = rule_report_node(ctx, a.stmt,
                             "`%s` chains the autograd graph of `%s` onto `%s`, which outlives the iteration: every "
                             "iteration's graph stays alive through it and memory grows with each step; add `%s`",
                             stmt, value, acc, kept);
    else
        f = rule_report_node(ctx, a.stmt,
                             "`%s` keeps `%s` with its autograd graph in `%s`, which outlives the iteration: every "
                             "iteration's graph stays alive through it and memory grows with each step%s; append `%s`",
                             stmt, value, acc,
                             no_grad ? " (torch.no_grad() does not detach a tensor that has one)" : "", kept);
    if (f) add_fixes(&st, f, &a);
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->py->uses_gpu || !ctx->py->imports_torch) return;
    rule_walk(ctx, visit, ctx);
}

const Rule rule_py015_autograd_history_accumulated = {
    .code = "PY015", .name = "autograd-history-accumulated", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check,
    .whole_file = true, /* frozen models and module-level accumulators are read across the file */
    .memory_evidence = true,
    .summary = "a tensor with autograd history accumulated across training-loop iterations (total += loss)",
    .documentation = documentation};
