/* PY013 ddp-accumulation-without-no-sync: gradient accumulation on a
 * DistributedDataParallel model with no model.no_sync(), so that every
 * micro-step's backward() all-reduces the gradients though only the last
 * one before the optimizer step needs it. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <string.h>

#include "rules/rule.h"
#include "rules/python/support/ddp_calls.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `loss.backward()` in a gradient-accumulation loop over a model wrapped in\n"
    "`DistributedDataParallel` (any import alias, such as `DDP`) when no micro-step skips DDP's\n"
    "gradient all-reduce. Two shapes of accumulation are recognised:\n"
    "- one loop whose body runs the model and `backward()` on every iteration, and steps the\n"
    "  optimizer only under a modulo test (`if (i + 1) % accum_steps == 0: optimizer.step()`,\n"
    "  `scaler.step(optimizer)`, or `if (i + 1) % accum_steps != 0: continue` before the step);\n"
    "- an inner loop over micro-batches that runs the model and `backward()` and never steps, and\n"
    "  an optimizer step after it in the outer loop.\n"
    "\n"
    "The DDP model is a name or attribute the file assigns `DistributedDataParallel(...)` to\n"
    "(`model = DDP(model, ...)`, `self.model = DDP(...)`), called or passed to a function in the\n"
    "loop; a function parameter of that name counts as the same model.\n"
    "\n"
    "Not flagged: a loop whose function (or class, or file at module level) uses `no_sync` or\n"
    "sets `require_backward_grad_sync`, or whose model call or `backward()` sits in a `with`\n"
    "block other than autocast or a profiling range (it may be a synchronisation context); a\n"
    "model not wrapped in DDP (FSDP, DataParallel, a plain module, a shadowed `DDP`); an optimizer\n"
    "step on every iteration; conditions without a modulo (`if i == 0:`, `if done:`); loops\n"
    "that zero the gradients on every iteration (nothing accumulates); `backward()` that runs\n"
    "only now and then; and `accelerator.backward(loss)` or `engine.backward(loss)`, whose\n"
    "libraries handle accumulation themselves.\n"
    "\n"
    "## Why is this slow?\n"
    "DDP all-reduces every gradient bucket across all ranks during each `backward()`. With\n"
    "gradient accumulation only the sum over the micro-steps matters, yet without `no_sync()`\n"
    "each micro-step pays a full all-reduce of the model's gradients: N micro-steps, N times\n"
    "the communication, and every rank waits for the slowest at each of them. Under\n"
    "`no_sync()` DDP accumulates the gradients locally, and the one backward outside it\n"
    "all-reduces the sum.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "model = DDP(model, device_ids=[local_rank])\n"
    "for i, (x, y) in enumerate(loader):\n"
    "    loss = criterion(model(x), y) / accum_steps\n"
    "    loss.backward()                     # all-reduce on every micro-step\n"
    "    if (i + 1) % accum_steps == 0:\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Run the forward and the backward of the micro-steps that do not step under `no_sync()`\n"
    "(the forward too: DDP decides in the forward whether the next backward synchronises):\n"
    "```python\n"
    "from contextlib import nullcontext\n"
    "\n"
    "for i, (x, y) in enumerate(loader):\n"
    "    last_micro_step = (i + 1) % accum_steps == 0\n"
    "    with model.no_sync() if not last_micro_step else nullcontext():\n"
    "        loss = criterion(model(x), y) / accum_steps\n"
    "        loss.backward()\n"
    "    if last_micro_step:\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: the forward has to move into the `with` block with the backward, which\n"
    "restructures the loop, and the gradients of a trailing partial accumulation (the loop\n"
    "ending between two steps) then stay unsynchronised until the next synchronising backward.\n";

#define MAX_TARGETS 16
#define TARGET_MAX 96
#define MAX_DEPTH 4

typedef struct {
    RuleContext *ctx;
    const PySource *src;
    char targets[MAX_TARGETS][TARGET_MAX]; /* what DDP(...) is assigned to: "model", "self.model" */
    size_t target_count;
} State;

/* DDP(...), or torch.compile(DDP(...)) */
static bool is_ddp_call(const PySource *src, TSNode n, int depth) {
    if (depth > MAX_DEPTH || !py_is(n, "call")) return false;
    if (py_constructs_ddp(src, n))
        return !py_callee_shadowed(src, n, ts_node_child_by_field_name(n, "function", 8));
    static const char *const wrappers[] = {"torch.compile", NULL};
    return py_callee_is_any(src, n, wrappers) && is_ddp_call(src, py_call_positional(n, 0), depth + 1);
}

static bool collect_targets(TSNode n, void *data) {
    State *st = data;
    if (!py_is(n, "assignment")) return true;
    TSNode left = ts_node_child_by_field_name(n, "left", 4), right = ts_node_child_by_field_name(n, "right", 5);
    if ((!py_is(left, "identifier") && !py_is(left, "attribute")) || !is_ddp_call(st->src, right, 0)) return true;
    size_t len = py_text_len(left);
    if (st->target_count < MAX_TARGETS && len < TARGET_MAX) {
        memcpy(st->targets[st->target_count], py_text_ptr(st->src, left), len);
        st->targets[st->target_count++][len] = '\0';
    }
    return true;
}

/* expr names the DDP model: the text of a target, and for a plain name, a
 * binding in scope that is DDP(...) itself, or a parameter (the model passed in) */
static const char *ddp_model(const State *st, TSNode expr) {
    if (!py_is(expr, "identifier") && !py_is(expr, "attribute")) return NULL;
    for (size_t i = 0; i < st->target_count; i++) {
        if (!py_text_eq(st->src, expr, st->targets[i])) continue;
        if (py_is(expr, "attribute")) return st->targets[i];
        TSNode value = {0};
        BindingKind k = py_binding_before(st->src, expr, py_text_ptr(st->src, expr), py_text_len(expr),
                                          ts_node_start_byte(expr), &value);
        if (k == BINDING_ASSIGNMENT ? is_ddp_call(st->src, value, 0) : k == BINDING_PARAMETER || k == BINDING_NONE)
            return st->targets[i];
        return NULL;
    }
    return NULL;
}

static bool is_nested_scope(TSNode n) {
    return py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda");
}

typedef struct {
    const State *st;
    const char *model; /* found */
    TSNode call;       /* where */
} ModelUse;

/* the loop calls the DDP model, or passes it to a function */
static bool find_model_use(TSNode n, void *data) {
    ModelUse *u = data;
    if (u->model || is_nested_scope(n)) return false;
    if (!py_is(n, "call")) return true;
    u->model = ddp_model(u->st, ts_node_child_by_field_name(n, "function", 8));
    for (uint32_t i = 0; !u->model && i < py_call_positional_count(n); i++)
        u->model = ddp_model(u->st, py_call_positional(n, i));
    if (u->model) u->call = n;
    return !u->model;
}

/* ---- how often the optimizer steps ----------------------------------------- */

static bool has_modulo(const PySource *src, TSNode n, int depth) {
    if (depth > 16 || ts_node_is_null(n)) return false;
    if (py_is(n, "binary_operator")) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        if (!ts_node_is_null(op) && strcmp(ts_node_type(op), "%") == 0) return true;
    }
    if (py_is(n, "identifier") && depth < 4) { /* `do_step = (i + 1) % accum == 0` then `if do_step:` */
        TSNode value = {0};
        if (py_binding_before(src, n, py_text_ptr(src, n), py_text_len(n), ts_node_start_byte(n), &value) ==
                BINDING_ASSIGNMENT &&
            has_modulo(src, value, depth + 4))
            return true;
    }
    uint32_t c = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < c; i++)
        if (has_modulo(src, ts_node_named_child(n, i), depth + 1)) return true;
    return false;
}

/* between node and loop, an if (or elif) whose condition takes a modulo:
 * node runs only on some iterations, in either branch */
static bool under_modulo_if(const PySource *src, TSNode node, TSNode loop) {
    for (TSNode n = ts_node_parent(node); !ts_node_is_null(n) && !ts_node_eq(n, loop); n = ts_node_parent(n))
        if ((py_is(n, "if_statement") || py_is(n, "elif_clause")) &&
            has_modulo(src, ts_node_child_by_field_name(n, "condition", 9), 0))
            return true;
    return false;
}

/* The nearest if (or elif) with a modulo condition between node and loop:
 * 1 when node is in its consequence, -1 in another branch (something else
 * happens on the other iterations: alternating optimizers), 0 when none. */
static int modulo_branch(const PySource *src, TSNode node, TSNode loop) {
    TSNode child = node;
    for (TSNode n = ts_node_parent(node); !ts_node_is_null(n) && !ts_node_eq(n, loop);
         child = n, n = ts_node_parent(n))
        if ((py_is(n, "if_statement") || py_is(n, "elif_clause")) &&
            has_modulo(src, ts_node_child_by_field_name(n, "condition", 9), 0))
            return ts_node_eq(child, ts_node_child_by_field_name(n, "consequence", 11)) ? 1 : -1;
    return 0;
}

static bool block_has_continue(TSNode block) {
    uint32_t n = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < n; i++)
        if (py_is(ts_node_named_child(block, i), "continue_statement")) return true;
    return false;
}

/* The statement of the loop's body that holds node; a null node when none. */
static TSNode body_statement(TSNode node, TSNode loop) {
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    for (TSNode n = node; !ts_node_is_null(n); n = ts_node_parent(n))
        if (ts_node_eq(ts_node_parent(n), body)) return n;
    return (TSNode){0};
}

/* `if (i + 1) % accum != 0: continue` in the loop's body before stmt; a null node when none */
static TSNode skipping_if_before(const PySource *src, TSNode stmt, TSNode loop) {
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    uint32_t n = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < n; i++) {
        TSNode s = ts_node_named_child(body, i);
        if (ts_node_start_byte(s) >= ts_node_start_byte(stmt)) break;
        if (py_is(s, "if_statement") && has_modulo(src, ts_node_child_by_field_name(s, "condition", 9), 0) &&
            block_has_continue(ts_node_child_by_field_name(s, "consequence", 11)))
            return s;
    }
    return (TSNode){0};
}

static bool optimizer_like(const PySource *src, TSNode expr) {
    if (py_is_optimizer(src, expr)) return true;
    TSNode name = expr;
    if (py_is(expr, "attribute")) name = ts_node_child_by_field_name(expr, "attribute", 9);
    if (!py_is(name, "identifier")) return false;
    char text[64];
    size_t len = py_text_len(name);
    if (len >= sizeof text) return false;
    memcpy(text, py_text_ptr(src, name), len);
    text[len] = '\0';
    if (strstr(text, "sched")) return false;
    return strstr(text, "optim") || strcmp(text, "opt") == 0 || strncmp(text, "opt_", 4) == 0 ||
           (len > 4 && strcmp(text + len - 4, "_opt") == 0);
}

/* optimizer.step(), scaler.step(optimizer) */
static bool is_optimizer_step(const PySource *src, TSNode call) {
    TSNode recv;
    if (!py_method_call(src, call, "step", &recv)) return false;
    if (py_call_positional_count(call) > 0) return optimizer_like(src, py_call_positional(call, 0));
    return optimizer_like(src, recv);
}

static bool is_zero_grad(const PySource *src, TSNode call) { return py_method_call(src, call, "zero_grad", NULL); }

typedef struct {
    const PySource *src;
    TSNode loop;
    size_t every;         /* steps on every iteration of loop */
    size_t modulo;        /* steps under a modulo test (or after a modulo continue) */
    size_t other;         /* steps of nested loops, in a modulo test's other branch, or limited
                             otherwise (if i == 0, break) */
    size_t zeroing;       /* zero_grad() on every iteration */
    TSNode skip;          /* the modulo continue before a step, when that is how it is limited */
} Steps;

static bool count_steps(TSNode n, void *data) {
    Steps *s = data;
    if (is_nested_scope(n)) return false;
    if (!py_is(n, "call")) return true;
    bool step = is_optimizer_step(s->src, n), zero = is_zero_grad(s->src, n);
    if (!step && !zero) return true;
    TSNode loop = py_enclosing_loop(n);
    bool own = ts_node_eq(loop, s->loop);
    TSNode skip = own ? skipping_if_before(s->src, body_statement(n, s->loop), s->loop) : (TSNode){0};
    bool periodic = !own || !ts_node_is_null(skip) || under_modulo_if(s->src, n, s->loop) ||
                    py_is_periodic(s->src, n, s->loop);
    if (zero) {
        s->zeroing += !periodic;
        return true;
    }
    int branch = own ? modulo_branch(s->src, n, s->loop) : 0;
    if (!own || branch < 0) s->other++;
    else if (branch > 0) s->modulo++;
    else if (!ts_node_is_null(skip)) {
        s->modulo++;
        s->skip = skip;
    } else if (periodic) s->other++;
    else s->every++;
    return true;
}

static Steps steps_in(const PySource *src, TSNode loop) {
    Steps s = {.src = src, .loop = loop};
    py_walk(ts_node_child_by_field_name(loop, "body", 4), count_steps, &s);
    return s;
}

/* An optimizer step of outer's own iterations after inner ends. */
typedef struct {
    const PySource *src;
    TSNode outer;
    size_t after;
    bool found;
} StepAfter;

static bool find_step_after(TSNode n, void *data) {
    StepAfter *s = data;
    if (s->found || is_nested_scope(n)) return false;
    if (py_is(n, "call") && ts_node_start_byte(n) >= s->after && is_optimizer_step(s->src, n) &&
        ts_node_eq(py_enclosing_loop(n), s->outer))
        s->found = true;
    return !s->found;
}

/* ---- the rule ------------------------------------------------------------------ */

static bool is_statement_loop(TSNode n) { return py_is(n, "for_statement") || py_is(n, "while_statement"); }

/* The micro-steps of loop accumulate: 1 when its own optimizer steps are
 * all under a modulo test, 2 when it never steps and the loop around it
 * steps after it; 0 otherwise. */
static int accumulation_of(const PySource *src, TSNode backward, TSNode loop) {
    Steps s = steps_in(src, loop);
    if (s.zeroing || s.every) return 0;
    if (s.modulo && !s.other) {
        /* with `if ...: continue` the backward must come before it, or it runs only on steps */
        if (!ts_node_is_null(s.skip) && ts_node_start_byte(backward) > ts_node_start_byte(s.skip)) return 0;
        return 1;
    }
    if (s.modulo || s.other) return 0;
    TSNode outer = py_enclosing_loop(loop);
    if (!is_statement_loop(outer) || py_is_periodic(src, loop, outer) || under_modulo_if(src, loop, outer)) return 0;
    StepAfter after = {src, outer, ts_node_end_byte(loop), false};
    py_walk(ts_node_child_by_field_name(outer, "body", 4), find_step_after, &after);
    return after.found ? 2 : 0;
}

static void describe(const PySource *src, TSNode call, char *buf, size_t size) {
    if (!py_short_text(src, call, 40, buf, size)) snprintf(buf, size, ".backward()");
}

static bool node_mentions(const PySource *src, TSNode n, const char *word) {
    return memmem(py_text_ptr(src, n), py_text_len(n), word, strlen(word)) != NULL;
}

/* node sits in a `with` block inside loop that could be a synchronisation
 * context: anything but autocast, profiling ranges and grad mode */
static bool in_unknown_with(const PySource *src, TSNode node, TSNode loop) {
    static const char *const harmless[] = {"autocast", "record_function", "nvtx", "enable_grad", "set_grad_enabled",
                                           NULL};
    for (TSNode n = ts_node_parent(node); !ts_node_is_null(n) && !ts_node_eq(n, loop); n = ts_node_parent(n)) {
        if (!py_is(n, "with_statement")) continue;
        TSNode clause = ts_node_named_child(n, 0);
        uint32_t k = ts_node_named_child_count(clause);
        for (uint32_t i = 0; i < k; i++) {
            TSNode item = ts_node_named_child(clause, i);
            bool known = false;
            for (size_t h = 0; harmless[h] && !known; h++) known = node_mentions(src, item, harmless[h]);
            if (!known) return true;
        }
    }
    return false;
}

/* The code around the loop switches synchronisation itself: its function
 * (its class, for a method; the file, at module level) mentions no_sync or
 * DDP's flag, or the forward or the backward sits in a `with` block that
 * could be a synchronisation context (no_sync must hold the forward). */
static bool sync_managed(const PySource *src, TSNode backward, TSNode forward, TSNode loop) {
    static const char *const words[] = {"no_sync", "require_backward_grad_sync", NULL};
    TSNode scope = py_enclosing_function(src, loop);
    for (TSNode p = scope; !ts_node_is_null(p); p = ts_node_parent(p))
        if (py_is(p, "class_definition")) scope = p;
    if (ts_node_is_null(scope)) scope = ts_tree_root_node(src->tree);
    for (size_t i = 0; words[i]; i++)
        if (node_mentions(src, scope, words[i])) return true;
    return in_unknown_with(src, backward, loop) || in_unknown_with(src, forward, loop);
}

static bool visit(TSNode n, void *data) {
    State *st = data;
    const PySource *src = st->src;
    if (st->ctx->out_of_memory) return false;
    TSNode recv;
    /* loss.backward(), not accelerator.backward(loss) */
    if (!py_is(n, "call") || !py_method_call(src, n, "backward", &recv) || py_call_positional_count(n) > 0) return true;
    TSNode loop = py_enclosing_loop(n);
    if (!is_statement_loop(loop) || py_is_periodic(src, n, loop) || under_modulo_if(src, n, loop)) return true;
    ModelUse use = {.st = st};
    py_walk(ts_node_child_by_field_name(loop, "body", 4), find_model_use, &use);
    if (!use.model || sync_managed(src, n, use.call, loop)) return true;
    int kind = accumulation_of(src, n, loop);
    if (!kind) return true;
    char what[64];
    describe(src, n, what, sizeof what);
    if (kind == 1)
        rule_report_node(st->ctx, n,
                         "`%s` all-reduces the DDP gradients on every micro-step, but the optimizer steps only every "
                         "few iterations: run the forward and backward of the other micro-steps under `%s.no_sync()`",
                         what, use.model);
    else
        rule_report_node(st->ctx, n,
                         "`%s` all-reduces the DDP gradients on every pass of this loop, but the optimizer steps once "
                         "after it: run all passes but the last under `%s.no_sync()`",
                         what, use.model);
    return true;
}

static void check(RuleContext *ctx) {
    if (!memmem(ctx->doc->text, ctx->doc->length, "DistributedDataParallel", strlen("DistributedDataParallel")))
        return;
    State st = {.ctx = ctx, .src = ctx->py};
    py_walk(ts_tree_root_node(ctx->py->tree), collect_targets, &st);
    if (st.target_count) rule_walk(ctx, visit, &st);
}

const Rule rule_py013_ddp_accumulation_without_no_sync = {
    .code = "PY013", .name = "ddp-accumulation-without-no-sync", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_COMM,
    .whole_file = true, /* the DDP model is assigned elsewhere in the file */
    .summary = "Gradient accumulation on a DDP model without no_sync(): an all-reduce on every micro-step",
    .advice = "run the micro-steps that do not step the optimizer under `with model.no_sync():`",
    .documentation = documentation};
