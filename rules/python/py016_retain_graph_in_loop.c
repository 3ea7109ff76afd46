/* PY016 retain-graph-in-loop: backward(retain_graph=True) in a loop that
 * builds a new graph on every iteration, so the retained one only holds
 * memory (or, chained through a tensor the next iteration reuses, grows). */
#include <stdio.h>
#include <string.h>

#include "rules/rule.h"
#include "analysis/python/python_expr.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_index.h"
#include "rules/python/support/backward_calls.h"
#include "rules/python/support/model_calls.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `retain_graph=True` on `loss.backward(...)`, `torch.autograd.backward(...)` or\n"
    "`torch.autograd.grad(...)` inside a `for` or `while` loop whose iterations build the graph\n"
    "anew: what is differentiated is computed in the loop from a model call or another function\n"
    "call (`loss = criterion(model(x), y)`), not from a tensor computed before the loop.\n"
    "\n"
    "Not flagged: `retain_graph=False`, or a value the code does not show to be `True` (a\n"
    "variable, a parameter); a later `backward()` or `autograd.grad()` in the same iteration (the\n"
    "first call retains the graph for the second: a GAN's discriminator and generator losses, a\n"
    "gradient penalty); `create_graph=True` (higher-order gradients need the graph); graphs built\n"
    "before the loop and differentiated piece by piece inside it (a Jacobian row by row, several\n"
    "losses on one output computed once), which is what `retain_graph=True` is for.\n"
    "\n"
    "## Why is this slow?\n"
    "`backward()` frees the activations that the forward pass saved for it as soon as it has used\n"
    "them. `retain_graph=True` keeps them, and the whole graph, for as long as the loss is\n"
    "referenced: until the next iteration rebinds it, so its activations are still held while the\n"
    "next forward pass saves its own, and the peak memory of a step doubles. Worse, it is often\n"
    "there to silence \"Trying to backward through the graph a second time\", which comes from a\n"
    "tensor carried from one iteration into the next (an RNN's hidden state that is never\n"
    "detached): with the graph retained, every iteration's graph stays chained to the previous\n"
    "ones, so memory and the time of each backward pass grow with every step until the GPU runs\n"
    "out of memory.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "hidden = model.init_hidden(batch_size)\n"
    "for x, y in loader:\n"
    "    out, hidden = model(x.to(device), hidden)\n"
    "    loss = criterion(out, y.to(device))\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward(retain_graph=True)\n"
    "    optimizer.step()\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "hidden = model.init_hidden(batch_size)\n"
    "for x, y in loader:\n"
    "    hidden = hidden.detach()  # cut the graph at the iteration's edge\n"
    "    out, hidden = model(x.to(device), hidden)\n"
    "    loss = criterion(out, y.to(device))\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: removing `retain_graph=True` is right only when nothing differentiates\n"
    "this graph again, and when a tensor carried into the next iteration still holds it, that\n"
    "next backward pass then fails until the tensor is detached, which changes what is trained\n"
    "(truncated backpropagation through time). The message names the tensor when it sees one.\n";

#define MAX_DEPTH 32
#define MAX_STEPS 2000 /* nodes one walk may visit: bindings can branch */
#define MAX_BINDINGS 8

/* ---- is retain_graph True? ------------------------------------------------- */

/* every binding of name in the scope that holds it assigns the literal True */
static bool name_always_true(const PySource *src, TSNode name) {
    TSNode value;
    BindingKind kind = py_binding_before(src, name, py_text_ptr(src, name), py_text_len(name),
                                         ts_node_start_byte(name), &value);
    if (kind != BINDING_ASSIGNMENT) return false;
    TSNode scope = py_scope_of(src, name);
    size_t count;
    const PyBinding *b = py_index_bindings(src, scope, py_text_ptr(src, name), py_text_len(name), &count);
    if (count == 0) b = py_index_bindings(src, ts_tree_root_node(src->tree), py_text_ptr(src, name),
                                          py_text_len(name), &count);
    if (count == 0) return false;
    for (size_t i = 0; i < count; i++)
        if (b[i].kind != BINDING_ASSIGNMENT || !py_text_eq(src, py_unparen(b[i].value), "True")) return false;
    return true;
}

static bool provably_true(const PySource *src, TSNode v) {
    v = py_unparen(v);
    if (py_text_eq(src, v, "True")) return true;
    return py_is(v, "identifier") && name_always_true(src, v);
}

/* ---- is the graph built in the loop? --------------------------------------- */

typedef struct {
    const PySource *src;
    TSNode loop;
    bool rebuilt;        /* a model or another function runs in the loop to compute it */
    bool outside_graph;  /* it reads a value from before the loop that may hold a graph */
    TSNode carried;      /* a name read in the loop that the loop binds again later to a value with a graph */
    int *steps;          /* nodes left to visit, shared with the walks this one starts */
} Graph;

static void walk_value(Graph *g, TSNode n, bool outside, int depth);

/* methods that move or reshape a tensor: the graph is their receiver's */
static bool is_data_method(const PySource *src, TSNode name) {
    static const char *const methods[] = {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "long", "int",
                                          "bool", "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze",
                                          "permute", "transpose", "expand", "repeat", "requires_grad_", NULL};
    for (size_t i = 0; methods[i]; i++)
        if (py_text_eq(src, name, methods[i])) return true;
    return false;
}

static bool cuts_graph(const PySource *src, TSNode name) {
    static const char *const methods[] = {"detach", "detach_", "item", "tolist", "numpy", NULL};
    for (size_t i = 0; methods[i]; i++)
        if (py_text_eq(src, name, methods[i])) return true;
    return false;
}

/* tensor operations: their result's graph is their operands' */
static bool is_tensor_op_method(const PySource *src, TSNode name) {
    static const char *const methods[] = {
        "sum", "mean", "pow", "abs", "norm", "square", "sqrt", "exp", "log", "mul", "add", "sub", "div", "matmul",
        "gather", "index_select", "select", "narrow", "clone", "softmax", "log_softmax", "sigmoid", "tanh", "relu",
        "max", "min", "dot", "neg", "prod", "std", "var", "masked_fill", "masked_select", "clamp", "t", NULL};
    for (size_t i = 0; methods[i]; i++)
        if (py_text_eq(src, name, methods[i])) return true;
    return false;
}

static bool is_builtin_passthrough(const PySource *src, TSNode call) {
    static const char *const names[] = {"sum", "max", "min", "abs", "len", "range", "next", "iter", "zip",
                                        "enumerate", "list", "tuple", NULL};
    for (size_t i = 0; names[i]; i++)
        if (py_is_builtin_call(src, call, names[i])) return true;
    return false;
}

static void walk_arguments(Graph *g, TSNode call, bool outside, int depth) {
    TSNode args = py_call_arguments(call);
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n; i++) walk_value(g, ts_node_named_child(args, i), outside, depth + 1);
}

/* A call that computes. In the loop it builds a graph. Before the loop its
 * result holds one when it runs a model (`features = encoder(x)`) or builds
 * one that it may hand on (`vgg = models.vgg19()`), or computes from a value
 * that holds one (its receiver and arguments are walked); a function of data
 * alone (`Meshes(verts=[v])`, `load_obj(path)`) does not. */
static void computes(Graph *g, TSNode call, bool outside, int depth) {
    const PySource *src = g->src;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode recv = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "object", 6) : (TSNode){0};
    bool runs_model = !ts_node_is_null(py_called_model(src, call)) || py_is_module_instance(src, call) ||
                      (!ts_node_is_null(recv) && py_is_model_like(src, recv)); /* model.encode(x) */
    if (!outside) g->rebuilt = true;
    else if (runs_model) g->outside_graph = true;
    if (!ts_node_is_null(recv) && !py_is_model_like(src, recv)) walk_value(g, recv, outside, depth + 1);
    walk_arguments(g, call, outside, depth);
}

/* torch functions that make a new tensor with no graph, whatever their arguments */
static bool is_torch_factory(const char *q) {
    static const char *const names[] = {"tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full",
                                        "arange", "linspace", "logspace", "eye", "randn", "rand", "randint",
                                        "randperm", "zeros_like", "ones_like", "empty_like", "full_like",
                                        "randn_like", "rand_like", "randint_like", "normal", "bernoulli", NULL};
    const char *last = strrchr(q, '.') + 1;
    if (last - q != 6) return false; /* torch.<name> only */
    for (size_t i = 0; names[i]; i++)
        if (strcmp(last, names[i]) == 0) return true;
    return false;
}

static void walk_call(Graph *g, TSNode call, bool outside, int depth) {
    const PySource *src = g->src;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    char q[PY_NAME_MAX];
    if (py_qualified_name(src, fn, q, sizeof q) && strncmp(q, "torch.", 6) == 0 &&
        (strncmp(q, "torch.nn.", 9) != 0 || strncmp(q, "torch.nn.functional.", 20) == 0)) {
        if (is_torch_factory(q)) return;
        walk_arguments(g, call, outside, depth); /* torch.sum(x), F.mse_loss(a, b): a graph of their inputs */
        return;
    }
    if (py_is(fn, "attribute")) {
        TSNode object = ts_node_child_by_field_name(fn, "object", 6);
        TSNode method = ts_node_child_by_field_name(fn, "attribute", 9);
        if (cuts_graph(src, method)) return;
        if (is_data_method(src, method)) {
            walk_value(g, object, outside, depth + 1);
            return;
        }
        if (is_tensor_op_method(src, method) && !py_is_module_instance(src, object)) {
            walk_value(g, object, outside, depth + 1);
            walk_arguments(g, call, outside, depth);
            return;
        }
        computes(g, call, outside, depth); /* model.forward(x), self.model(x), self.compute_loss(batch) */
        return;
    }
    if (is_builtin_passthrough(src, call)) {
        walk_arguments(g, call, outside, depth);
        return;
    }
    computes(g, call, outside, depth); /* model(x), criterion(out, y), compute_loss(model, batch) */
}

/* The loop binds name again after this read of it, in its own body, to a
 * value it computes with a graph (`out, hidden = model(x, hidden)`, not
 * `hidden = hidden.detach()`): the value read here on every iteration but
 * the first is the previous iteration's, graph and all. */
static bool carried_with_graph(Graph *g, TSNode name, int depth) {
    const PySource *src = g->src;
    size_t count;
    const PyBinding *b = py_index_bindings(src, py_scope_of(src, name), py_text_ptr(src, name), py_text_len(name),
                                           &count);
    TSNode body = ts_node_child_by_field_name(g->loop, "body", 4);
    for (size_t i = 0; i < count; i++) {
        if (b[i].from <= ts_node_end_byte(name) || b[i].start >= ts_node_end_byte(body) ||
            b[i].start < ts_node_start_byte(body) || b[i].kind == BINDING_LOOP_TARGET || ts_node_is_null(b[i].value))
            continue;
        Graph later = {.src = src, .loop = g->loop, .steps = g->steps};
        walk_value(&later, b[i].value, false, depth + 1);
        if (later.rebuilt) return true;
    }
    return false;
}

/* a parameter that is a model (`compute_loss(model, batch)`) or has a number
 * for its default: no tensor with a graph of its caller's */
static bool plain_parameter(const PySource *src, TSNode id, TSNode param) {
    if (py_is_model_like(src, id)) return true;
    if (!py_is(param, "default_parameter") && !py_is(param, "typed_default_parameter")) return false;
    TSNode v = py_unparen(ts_node_child_by_field_name(param, "value", 5));
    return py_is(v, "integer") || py_is(v, "float") || py_is(v, "true") || py_is(v, "false") || py_is(v, "string");
}

static void walk_name(Graph *g, TSNode id, bool outside, int depth) {
    const PySource *src = g->src;
    if (py_text_eq(src, id, "self") || py_text_eq(src, id, "cls")) return;
    PyReachingBinding b[MAX_BINDINGS];
    size_t n = py_reaching_bindings(src, id, b, MAX_BINDINGS);
    /* a global of another module, or a builtin: before the loop, unknown */
    if (n == 0 && outside && !py_resolve_import(src, py_text_ptr(src, id), py_text_len(id))) g->outside_graph = true;
    bool in_loop_value = false;
    for (size_t i = 0; i < n; i++) {
        if (b[i].kind == BINDING_LOOP_TARGET) continue; /* a batch: data, no graph */
        if (b[i].kind == BINDING_PARAMETER) {
            if (!plain_parameter(src, id, b[i].value)) g->outside_graph = true; /* may carry its caller's graph */
            continue;
        }
        if (ts_node_is_null(b[i].value)) continue;
        bool inside = py_is_within(b[i].value, g->loop);
        if (inside) in_loop_value = true;
        if (!inside && py_is_module_instance(src, b[i].value)) {
            /* a model object made before the loop: no graph of its own, but code
             * before the loop that is handed it may run it */
            if (outside) g->outside_graph = true;
            continue;
        }
        walk_value(g, b[i].value, outside || !inside, depth + 1);
    }
    /* `out, hidden = model(x, hidden)`: the first iteration reads the value from
     * before the loop, the others the loop's own, which carries its graph along */
    if (!outside && !in_loop_value && ts_node_is_null(g->carried) && carried_with_graph(g, id, depth))
        g->carried = id;
}

static void walk_value(Graph *g, TSNode n, bool outside, int depth) {
    if (ts_node_is_null(n) || !ts_node_is_null(g->carried)) return;
    if (depth > MAX_DEPTH || --*g->steps < 0) {
        if (outside) g->outside_graph = true; /* too far to tell */
        return;
    }
    if (py_is(n, "identifier")) {
        walk_name(g, n, outside, depth);
        return;
    }
    if (py_is(n, "call")) {
        walk_call(g, n, outside, depth);
        return;
    }
    if (py_is(n, "attribute")) {
        TSNode attr = ts_node_child_by_field_name(n, "attribute", 9);
        if (!py_text_eq(g->src, attr, "data"))
            walk_value(g, ts_node_child_by_field_name(n, "object", 6), outside, depth + 1);
        return;
    }
    if (py_is(n, "lambda") || py_is(n, "string") || py_is(n, "integer") || py_is(n, "float")) return;
    uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < count; i++) walk_value(g, ts_node_named_child(n, i), outside, depth + 1);
}

/* ---- a later backward in the same iteration --------------------------------- */

typedef struct {
    const PySource *src;
    TSNode loop;
    size_t after;
    bool found;
} Later;

static bool find_later_backward(TSNode n, void *data) {
    Later *l = data;
    if (l->found || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda"))
        return false;
    BackwardCall b;
    if (ts_node_start_byte(n) >= l->after && py_backward_call(l->src, n, &b)) l->found = true;
    return !l->found;
}

static bool later_backward_in_iteration(const PySource *src, TSNode call, TSNode loop) {
    Later l = {src, loop, ts_node_end_byte(call), false};
    py_walk(ts_node_child_by_field_name(loop, "body", 4), find_later_backward, &l);
    return l.found;
}

/* ---- the rule -------------------------------------------------------------- */

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    const PySource *src = ctx->py;
    if (ctx->out_of_memory) return false;
    BackwardCall b;
    if (!py_is(n, "call") || !py_backward_call(src, n, &b)) return true;
    TSNode retain = py_backward_argument(src, &b, "retain_graph");
    if (ts_node_is_null(retain) || !provably_true(src, retain)) return true;
    TSNode create = py_backward_argument(src, &b, "create_graph");
    if (!ts_node_is_null(create) && !py_text_eq(src, py_unparen(create), "False")) return true;
    TSNode loop = py_statement_loop(n);
    if (ts_node_is_null(loop) || ts_node_is_null(b.differentiated)) return true;
    if (later_backward_in_iteration(src, n, loop)) return true;
    int steps = MAX_STEPS;
    Graph g = {.src = src, .loop = loop, .steps = &steps};
    walk_value(&g, b.differentiated, false, 0);
    if (ts_node_is_null(g.carried) && (!g.rebuilt || g.outside_graph)) return true;

    TSNode where = py_call_keyword_argument(src, n, "retain_graph");
    if (ts_node_is_null(where)) where = retain;
    char what[64];
    if (!py_short_text(src, n, 48, what, sizeof what)) snprintf(what, sizeof what, "backward(retain_graph=True)");
    if (!ts_node_is_null(g.carried)) {
        rule_report_node(ctx, where,
                         "`%s` keeps this iteration's graph, and `%.*s` carries it into the next iteration: each "
                         "backward pass then reaches back through every earlier iteration's graph, so memory and "
                         "backward time grow with every step. Detach `%.*s` at the start of each iteration "
                         "and drop retain_graph=True",
                         what, (int)py_text_len(g.carried), py_text_ptr(src, g.carried), (int)py_text_len(g.carried),
                         py_text_ptr(src, g.carried));
        return true;
    }
    rule_report_node(ctx, where,
                     "`%s` keeps this iteration's graph and the activations it saved alive after the backward pass, "
                     "though the loop builds a new graph next iteration: both are held at once while the next "
                     "forward pass runs. Drop retain_graph=True unless this graph is differentiated again",
                     what);
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->py->uses_gpu) return;
    rule_walk(ctx, visit, ctx);
}

const Rule rule_py016_retain_graph_in_loop = {
    .code = "PY016", .name = "retain-graph-in-loop", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check, .memory_evidence = true,
    .summary = "backward(retain_graph=True) in a loop that builds a new graph every iteration",
    .advice = "drop `retain_graph=True`, or add the losses and call backward() once",
    .documentation = documentation};
