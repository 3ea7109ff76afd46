/* PY008 unfused-optimizer: torch.optim.Adam / AdamW / SGD built without
 * choosing an implementation (fused= or foreach=) in a file that uses CUDA. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "rules/rule.h"
#include "rules/python/support/test_code.h"
#include "rules/python/support/torch_floor.h"
#include "analysis/base/growable.h"
#include "analysis/python/python_index.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `torch.optim.Adam`, `torch.optim.AdamW` and `torch.optim.SGD` constructed without a\n"
    "`fused=` or `foreach=` keyword in a file that uses CUDA. Names are resolved through the\n"
    "imports, so `from torch.optim import AdamW` and `optim.Adam` (with `import torch.optim as\n"
    "optim`) are found too.\n"
    "\n"
    "## Why is this slow?\n"
    "Left to itself, PyTorch updates CUDA parameters with the `foreach` implementation: a few\n"
    "multi-tensor kernels per step, each reading and writing the parameters, gradients and\n"
    "optimizer states again. With `fused=True` the whole update (moments, bias correction,\n"
    "weight decay, parameter write) is one kernel pass over the memory, which makes\n"
    "`optimizer.step()` markedly faster for models with many parameters; it also checks for\n"
    "inf/NaN from a `GradScaler` on the device without a host synchronisation.\n"
    "\n"
    "Not flagged: calls that already pass `fused=` or `foreach=` (any value: the choice was\n"
    "made), calls with `differentiable=True` (fused has no differentiable variant), calls that\n"
    "splat `*args`/`**kwargs` (the keywords cannot be seen), `torch.optim.lr_scheduler.*`,\n"
    "other optimizers (Adagrad, RMSprop, ...: fused support is missing or CPU-only),\n"
    "classes of the same name defined in the file, names imported from `torch.optim` in one branch\n"
    "and from elsewhere in another (`if mup: from mup.optim import MuAdam as Adam` / `else: from\n"
    "torch.optim import Adam`), an optimizer built instead of the same one with `fused=True` or\n"
    "`foreach=True` in the same function (at module level, the same top-level statement): both\n"
    "returned (`try: return AdamW(..., fused=True)` / `except ...: pass` / `return AdamW(...)`), or\n"
    "both assigned to the same name in the two branches of an `if` or after a `try` (the plain one\n"
    "is the fallback). Still flagged: two built side by side (a GAN's generator fused and its\n"
    "discriminator not), the other classes of an optimizer factory, and `foreach=False` beside a\n"
    "plain one. Files that never mention CUDA or a device are not flagged either (Hugging Face's\n"
    "`per_device_train_batch_size=` names no device). `capturable=True` is compatible with `fused=True` and is still flagged.\n"
    "Not flagged either: an optimizer over the parameters of a model that the code builds and\n"
    "never moves to a device (no `.cuda()`, `.to(device)`, `fabric.setup(model)`, `DDP(model)`, ...:\n"
    "its parameters stay in host memory), and one whose step torch.compile already compiles\n"
    "(`torch.compile(optimizer.step)`, or a compiled function that calls `optimizer.step()`), where\n"
    "Inductor generates fused kernels for the update itself.\n"
    "Nor test code (files named `test_*.py`, `*_test.py`, `conftest.py`, and `def test_*`): there a\n"
    "plain optimizer is usually the reference that a fused or custom one is checked against.\n"
    "A project's declared torch counts too (`torch>=1.8.0` or `torch==2.0.0` in a\n"
    "`requirements*.txt`, `pyproject.toml`, `setup.py`, `setup.cfg` or `environment.yml` (conda's\n"
    "`pytorch=1.10`) of the file's folder or the nearest parent that has one, up to the repository's\n"
    "root): no finding when its oldest release lacks `fused=` for the optimizer (Adam gained it in\n"
    "1.13, AdamW in 2.0, SGD in 2.3), nor, before 2.4 (which first accepts parameters in host\n"
    "memory), when the model whose parameters it takes is not moved to the GPU before the optimizer\n"
    "is built in the same function (`accelerate`'s `prepare` moves it later). Otherwise a caveat\n"
    "says that releases before 2.4 need every parameter on the GPU at construction.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "model = Net().cuda()\n"
    "optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "model = Net().cuda()\n"
    "optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "The fix adds `fused=True` and is unsafe: the fused implementation requires every parameter\n"
    "to be a floating-point tensor on a supported device (CUDA; CPU only in recent releases),\n"
    "rejects sparse gradients and `differentiable=True`, and older PyTorch releases do not\n"
    "accept the keyword at all (SGD gained it last). Results may also differ in the last bits\n"
    "from the foreach implementation.\n";


static const char *const optimizer_names[] = {
    "torch.optim.Adam",      "torch.optim.AdamW",      "torch.optim.SGD",
    "torch.optim.adam.Adam", "torch.optim.adamw.AdamW", "torch.optim.sgd.SGD",
    NULL};

/* leftmost identifier of a dotted callee: `optim` in optim.Adam */
static TSNode root_identifier(TSNode expr) {
    for (int depth = 0; depth < 32 && py_is(expr, "attribute"); depth++)
        expr = ts_node_child_by_field_name(expr, "object", 6);
    TSNode null = {0};
    return py_is(expr, "identifier") ? expr : null;
}

/* the file defines its own class or function with the callee's name */
static bool is_shadowed(const PySource *src, TSNode callee) {
    TSNode id = root_identifier(callee);
    if (ts_node_is_null(id)) return false;
    /* classes and functions of that name at module level (where imports live too) */
    return !ts_node_is_null(py_index_top_level(src, py_text_ptr(src, id), py_text_len(id)));
}

/* ---- the parameters' model ---------------------------------------------- */

/* The model whose parameters the optimizer is given, when the code shows it:
 * `model.parameters()`, `[p for p in model.parameters() if ...]`,
 * `[{"params": ...}, ...]`, `list(a.parameters()) + list(b.parameters())`,
 * `param_groups(model, wd)`, a name bound to one of these. */
static TSNode params_model(const PySource *src, TSNode e, int depth) {
    TSNode null = {0};
    if (ts_node_is_null(e) || depth > 8) return null;
    if (py_is(e, "parenthesized_expression")) return params_model(src, ts_node_named_child(e, 0), depth + 1);
    if (py_is(e, "identifier")) {
        TSNode value = {0};
        if (py_binding_before(src, e, py_text_ptr(src, e), py_text_len(e), ts_node_start_byte(e), &value) !=
            BINDING_ASSIGNMENT)
            return null;
        return params_model(src, value, depth + 1);
    }
    if (py_is(e, "binary_operator")) return params_model(src, ts_node_child_by_field_name(e, "left", 4), depth + 1);
    if (py_is(e, "list_comprehension") || py_is(e, "generator_expression")) {
        uint32_t n = ts_node_named_child_count(e);
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_named_child(e, i);
            if (py_is(c, "for_in_clause")) return params_model(src, ts_node_child_by_field_name(c, "right", 5), depth + 1);
        }
        return null;
    }
    if (py_is(e, "list") || py_is(e, "tuple")) {
        TSNode first = ts_node_named_child(e, 0);
        if (py_is(first, "dictionary")) { /* [{"params": ...}, ...] */
            uint32_t n = ts_node_named_child_count(first);
            for (uint32_t i = 0; i < n; i++) {
                TSNode pair = ts_node_named_child(first, i);
                TSNode key = ts_node_child_by_field_name(pair, "key", 3);
                if (py_is(pair, "pair") && py_is(key, "string") && py_text_len(key) >= 8 &&
                    memcmp(py_text_ptr(src, key) + 1, "params", 6) == 0)
                    return params_model(src, ts_node_child_by_field_name(pair, "value", 5), depth + 1);
            }
        }
        return null;
    }
    if (!py_is(e, "call")) return null;
    TSNode recv;
    if (py_method_call(src, e, "parameters", &recv) || py_method_call(src, e, "named_parameters", &recv))
        return recv;
    TSNode fn = ts_node_child_by_field_name(e, "function", 8);
    if (py_is(fn, "identifier") && (py_text_eq(src, fn, "list") || py_text_eq(src, fn, "filter")))
        return params_model(src, py_call_positional(e, py_text_eq(src, fn, "filter") ? 1 : 0), depth + 1);
    /* param_groups_weight_decay(model, wd): a helper handed the model */
    TSNode first = py_call_positional(e, 0);
    if (py_is(first, "identifier") && py_is_module_instance(src, first)) return first;
    return null;
}

/* ---- a compiled step ------------------------------------------------------ */

static bool is_compile_call(const PySource *src, TSNode call) {
    static const char *const compile[] = {"torch.compile", NULL};
    return py_is(call, "call") && py_callee_is_any(src, call, compile);
}

/* the function's body calls `.step()` on the optimizer's name, or on a
 * parameter that a call of the function is handed the optimizer for */
typedef struct {
    const PySource *src;
    TSNode optimizer; /* the name the optimizer is bound to */
    bool on_name, on_parameter;
} StepSearch;

static bool visit_step(TSNode n, void *data) {
    StepSearch *s = data;
    TSNode recv;
    if (!py_method_call(s->src, n, "step", &recv)) return true;
    if (py_same_text(s->src, recv, s->optimizer)) s->on_name = true;
    else if (py_is(recv, "identifier") &&
             py_binding_before(s->src, recv, py_text_ptr(s->src, recv), py_text_len(recv), ts_node_start_byte(recv),
                               NULL) == BINDING_PARAMETER)
        s->on_parameter = true;
    return true;
}

static bool handed_optimizer(const PySource *src, TSNode def, TSNode optimizer) {
    TSNode name = ts_node_child_by_field_name(def, "name", 4);
    size_t count;
    const TSNode *calls = py_index_calls(src, py_text_ptr(src, name), py_text_len(name), &count);
    for (size_t i = 0; i < count && i < 64; i++) {
        TSNode args = py_call_arguments(calls[i]);
        uint32_t n = ts_node_named_child_count(args);
        for (uint32_t k = 0; k < n; k++) {
            TSNode a = ts_node_named_child(args, k);
            if (py_is(a, "keyword_argument")) a = ts_node_child_by_field_name(a, "value", 5);
            if (!ts_node_is_null(a) && py_same_text(src, a, optimizer)) return true;
        }
    }
    return false;
}

static bool def_steps(const PySource *src, TSNode def, TSNode optimizer) {
    if (!py_is(def, "function_definition")) return false;
    StepSearch s = {src, optimizer, false, false};
    py_walk(ts_node_child_by_field_name(def, "body", 4), visit_step, &s);
    return s.on_name || (s.on_parameter && handed_optimizer(src, def, optimizer));
}

/* The file's compile sites, gathered in one walk the first time an
 * optimizer asks (PY008 asks once per optimizer): `torch.compile(...)` calls
 * and definitions decorated with torch.compile. */
typedef struct {
    const PySource *src;
    TSNode *nodes;
    size_t count, cap;
    bool gathered, out_of_memory;
} CompileSites;

static bool compiles(const PySource *src, TSNode decorated) {
    uint32_t c = ts_node_named_child_count(decorated);
    for (uint32_t i = 0; i < c; i++) {
        TSNode d = ts_node_named_child(decorated, i);
        if (!py_is(d, "decorator")) continue;
        TSNode e = ts_node_named_child(d, 0);
        char q[PY_NAME_MAX];
        if (is_compile_call(src, e) || (py_qualified_name(src, e, q, sizeof q) && strcmp(q, "torch.compile") == 0))
            return true;
    }
    return false;
}

static bool visit_compile_site(TSNode n, void *data) {
    CompileSites *c = data;
    if (!is_compile_call(c->src, n) && !(py_is(n, "decorated_definition") && compiles(c->src, n))) return true;
    if (!array_reserve(&c->nodes, c->count, &c->cap, sizeof *c->nodes, 8)) {
        c->out_of_memory = true;
        return false;
    }
    c->nodes[c->count++] = n;
    return true;
}

/* `torch.compile(optimizer.step)`, `torch.compile(train_step)` or
 * `@torch.compile def train_step(...)` whose body calls `optimizer.step()` */
static bool site_compiles_step(const PySource *src, TSNode site, TSNode optimizer) {
    if (py_is(site, "decorated_definition"))
        return def_steps(src, ts_node_child_by_field_name(site, "definition", 10), optimizer);
    TSNode arg = py_call_positional(site, 0);
    if (py_is(arg, "attribute") && py_text_eq(src, ts_node_child_by_field_name(arg, "attribute", 9), "step"))
        return py_same_text(src, ts_node_child_by_field_name(arg, "object", 6), optimizer);
    if (py_is(arg, "identifier"))
        return def_steps(src, py_index_top_level(src, py_text_ptr(src, arg), py_text_len(arg)), optimizer);
    return false;
}

/* the name (or self.attribute) the optimizer is assigned to */
static TSNode assigned_name(TSNode call) {
    TSNode null = {0};
    TSNode parent = ts_node_parent(call);
    if (!py_is(parent, "assignment")) return null;
    TSNode left = ts_node_child_by_field_name(parent, "left", 4);
    return (py_is(left, "identifier") || py_is(left, "attribute")) ? left : null;
}

static bool step_is_compiled(CompileSites *sites, TSNode call) {
    const PySource *src = sites->src;
    TSNode name = assigned_name(call);
    if (ts_node_is_null(name)) return false;
    if (!sites->gathered) {
        sites->gathered = true;
        /* every way to reach torch.compile spells "compile" somewhere in the file
         * (the attribute, or the import that aliases it): without it there is no walk */
        if (memmem(src->doc->text, src->doc->length, "compile", strlen("compile")))
            py_walk(ts_tree_root_node(src->tree), visit_compile_site, sites);
    }
    for (size_t i = 0; i < sites->count; i++)
        if (site_compiles_step(src, sites->nodes[i], name)) return true;
    return false;
}

/* ---- the optimizer's steps: where its own kernels are launched ---------- */

typedef struct {
    RuleContext *ctx;
    Finding *finding;
    TSNode optimizer; /* the name it is bound to */
    size_t added;
} StepSites;

#define MAX_STEP_SITES 4 /* related places are few: the profile is read at these lines */

/* `optimizer.step()`, or `scaler.step(optimizer)` (GradScaler steps it) */
static bool visit_step_site(TSNode n, void *data) {
    StepSites *s = data;
    const PySource *src = s->ctx->py;
    TSNode recv;
    if (s->added >= MAX_STEP_SITES || !py_method_call(src, n, "step", &recv)) return s->added < MAX_STEP_SITES;
    bool ours = py_same_text(src, recv, s->optimizer);
    if (!ours) {
        TSNode first = py_call_positional(n, 0);
        ours = !ts_node_is_null(first) && py_same_text(src, first, s->optimizer);
    }
    if (!ours) return true;
    if (!finding_add_related(s->finding, (ByteRange){ts_node_start_byte(n), ts_node_end_byte(n)},
                             "this optimizer's step: its kernels are measured here"))
        s->ctx->out_of_memory = true;
    s->added++;
    return true;
}

/* The profile tells this optimizer's kernels from other foreach work
 * (zero_grad, clip_grad_norm_) by the line that launched them: its step
 * calls in this file become related places (MEASURE_OPTIMIZER reads them). */
static void relate_steps(RuleContext *ctx, Finding *f, TSNode call) {
    TSNode name = assigned_name(call);
    if (ts_node_is_null(name)) return;
    StepSites s = {ctx, f, name, 0};
    py_walk(ts_tree_root_node(ctx->py->tree), visit_step_site, &s);
}

/* The releases that accept fused=: on CUDA parameters Adam from 1.13, AdamW
 * from 2.0, SGD from 2.3; on parameters in host memory every one from 2.4
 * (before, the constructor refuses them). */
#define FUSED_EVERYWHERE TORCH_VERSION(2, 4)

static TorchVersion fused_on_cuda_since(const char *short_name) {
    if (strcmp(short_name, "Adam") == 0) return TORCH_VERSION(1, 13);
    if (strcmp(short_name, "AdamW") == 0) return TORCH_VERSION(2, 0);
    return TORCH_VERSION(2, 3); /* SGD */
}

typedef struct {
    RuleContext *ctx;
    CompileSites compile_sites;
    bool floor_read, has_floor; /* the project's oldest torch, read once */
    TorchVersion floor;
} Walk;

static bool project_floor(Walk *w, TorchVersion *floor) {
    if (!w->floor_read) {
        w->floor_read = true;
        w->has_floor = torch_floor_of_project(w->ctx->doc->path, &w->floor);
    }
    *floor = w->floor;
    return w->has_floor;
}

typedef struct {
    const PySource *src;
    TSNode model;
    size_t before;
    bool moved;
} MoveBefore;

/* `model.cuda()`, `model.to(device)`, or `model = Net(...).to(device)`, ending before `before` */
static bool visit_move_before(TSNode n, void *data) {
    MoveBefore *m = data;
    if (m->moved || ts_node_start_byte(n) >= m->before) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition")) return false;
    TSNode recv;
    if (py_is(n, "call") && ts_node_end_byte(n) <= m->before &&
        (py_method_call(m->src, n, "cuda", &recv) ||
         (py_method_call(m->src, n, "to", &recv) && py_call_does_gpu_work(m->src, n)))) {
        TSNode stmt = py_statement_of(n);
        TSNode left = py_is(stmt, "expression_statement") ? ts_node_named_child(stmt, 0) : stmt;
        if (py_is(left, "assignment")) left = ts_node_child_by_field_name(left, "left", 4);
        if (py_same_text(m->src, recv, m->model) || py_same_text(m->src, left, m->model)) m->moved = true;
    }
    return !m->moved;
}

/* The model is put on the GPU before the optimizer is built over it, in the
 * optimizer's scope (`model = Net().cuda()`, `model.to(device)`). */
static bool moved_before(const PySource *src, TSNode model, TSNode call) {
    TSNode scope = py_enclosing_function(src, call);
    if (ts_node_is_null(scope)) scope = ts_tree_root_node(src->tree);
    MoveBefore m = {src, model, ts_node_start_byte(call), false};
    py_walk(scope, visit_move_before, &m);
    return m.moved;
}

/* What the project's declared torch allows: a finding, with a caveat when its
 * oldest release takes fused= only on parameters already on the GPU. False:
 * no finding (the keyword does not exist there, or the parameters are still
 * in host memory when the optimizer is built, as before `accelerate`'s
 * prepare). */
static bool fused_allowed(Walk *w, const char *short_name, TSNode owner, TSNode call, bool *caveat) {
    *caveat = false;
    TorchVersion floor;
    if (!project_floor(w, &floor) || floor >= FUSED_EVERYWHERE) return true;
    if (floor < fused_on_cuda_since(short_name)) return false;
    if (!ts_node_is_null(owner) && !moved_before(w->ctx->py, owner, call)) return false;
    *caveat = true;
    return true;
}

static bool chooses_implementation(const PySource *src, TSNode call) {
    return !ts_node_is_null(py_call_keyword(src, call, "fused")) ||
           !ts_node_is_null(py_call_keyword(src, call, "foreach"));
}

typedef struct {
    const PySource *src;
    TSNode plain, scope;
    bool found;
} ChoiceSearch;

/* fused=True or foreach=True, or a value the code computes: a choice of the
 * fast path (foreach=False turns it off, and is no such choice) */
static bool chooses_fast_path(const PySource *src, TSNode call) {
    static const char *const keywords[] = {"fused", "foreach", NULL};
    for (size_t i = 0; keywords[i]; i++) {
        TSNode v = py_call_keyword(src, call, keywords[i]);
        if (!ts_node_is_null(v) && !py_text_eq(src, v, "False") && !py_text_eq(src, v, "None")) return true;
    }
    return false;
}

/* the if or try statement that owns block, with the clause the block belongs to */
static TSNode branching_statement(TSNode block, TSNode *clause) {
    TSNode owner = ts_node_parent(block);
    *clause = owner;
    if (py_is(owner, "elif_clause") || py_is(owner, "else_clause") || py_is(owner, "except_clause") ||
        py_is(owner, "finally_clause"))
        owner = ts_node_parent(owner);
    return py_is(owner, "if_statement") || py_is(owner, "try_statement") ? owner : (TSNode){0};
}

/* the statement that returns call, or assigns it to a target: `return
 * AdamW(...)`, `opt = AdamW(...)` (*target = `opt`) */
static TSNode returned_or_assigned(TSNode call, TSNode *target) {
    TSNode up = ts_node_parent(call), null = {0};
    *target = null;
    if (py_is(up, "return_statement")) return up;
    if (py_is(up, "assignment") && ts_node_eq(ts_node_child_by_field_name(up, "right", 5), call)) {
        *target = ts_node_child_by_field_name(up, "left", 4);
        return up;
    }
    return null;
}

/* One is built instead of the other. Both are returned: the function gives
 * back one or the other (`try: return AdamW(..., fused=True)` / `except
 * ...: pass` / `return AdamW(...)`, an environment switch that returns the
 * plain one first). Or both are assigned to the same name, choice in a
 * branch of an `if` whose other branch holds plain, or in the body of a
 * `try` that plain follows (in a handler, or after it). */
static bool alternatives(const PySource *src, TSNode choice, TSNode plain, TSNode scope) {
    TSNode choice_target, plain_target;
    TSNode choice_stmt = returned_or_assigned(choice, &choice_target);
    TSNode plain_stmt = returned_or_assigned(plain, &plain_target);
    if (ts_node_is_null(choice_stmt) || ts_node_is_null(plain_stmt)) return false;
    if (py_is(choice_stmt, "return_statement") && py_is(plain_stmt, "return_statement")) return true;
    if (ts_node_is_null(choice_target) || ts_node_is_null(plain_target) ||
        !py_same_text(src, choice_target, plain_target))
        return false;
    for (TSNode n = ts_node_parent(choice); !ts_node_is_null(n) && !ts_node_eq(n, scope); n = ts_node_parent(n)) {
        if (!py_is(n, "block")) continue;
        TSNode clause;
        TSNode statement = branching_statement(n, &clause);
        if (ts_node_is_null(statement) || py_is_within(plain, n)) continue;
        if (py_is(statement, "if_statement")) {
            if (py_is_within(plain, statement)) return true;
            continue;
        }
        /* a try: choice in its body, plain in a handler or after the statement */
        if (ts_node_eq(clause, statement) &&
            (py_is_within(plain, statement) || ts_node_start_byte(plain) >= ts_node_end_byte(statement)))
            return true;
    }
    return false;
}

static bool visit_choice(TSNode n, void *data) {
    ChoiceSearch *s = data;
    if (py_is(n, "call") && py_callee_is_any(s->src, n, optimizer_names) && chooses_fast_path(s->src, n) &&
        py_same_text(s->src, ts_node_child_by_field_name(n, "function", 8),
                     ts_node_child_by_field_name(s->plain, "function", 8)) &&
        alternatives(s->src, n, s->plain, s->scope))
        s->found = true;
    return !s->found;
}

/* The code next to the call builds the same optimizer with fused=True or
 * foreach=True as an alternative to it (alternatives()): the plain one is
 * its fallback, where the fused implementation was refused or turned off on
 * purpose. Next to it: in the same function, or in
 * the same top-level statement at module level. Two optimizers built side
 * by side (a GAN's generator fused, its discriminator not) and the other
 * classes of an optimizer factory (`if name == "adamw": ... elif name ==
 * "adam": ...`) are no such pair. */
static bool falls_back_from_a_choice(const PySource *src, TSNode call) {
    TSNode scope = py_enclosing_function(src, call);
    if (ts_node_is_null(scope)) {
        scope = call;
        for (TSNode up = ts_node_parent(scope); !ts_node_is_null(up) && !py_is(up, "module"); up = ts_node_parent(up))
            scope = up;
    }
    ChoiceSearch s = {src, call, scope, false};
    py_walk(scope, visit_choice, &s);
    return s.found;
}

static bool visit(TSNode n, void *data) {
    Walk *w = data;
    RuleContext *ctx = w->ctx;
    if (!py_is(n, "call") || !py_callee_is_any(ctx->py, n, optimizer_names)) return true;
    if (py_call_has_splat(n) || py_in_test_function(ctx->py, n)) return true;
    if (chooses_implementation(ctx->py, n) || falls_back_from_a_choice(ctx->py, n)) return true;
    TSNode differentiable = py_call_keyword(ctx->py, n, "differentiable");
    if (!ts_node_is_null(differentiable) && !py_text_eq(ctx->py, differentiable, "False")) return true;
    TSNode callee = ts_node_child_by_field_name(n, "function", 8);
    if (is_shadowed(ctx->py, callee)) return true;
    /* `Adam` imported from torch.optim in one branch and from elsewhere (mup, apex) in another */
    TSNode root = root_identifier(callee);
    if (!ts_node_is_null(root) && py_import_is_ambiguous(ctx->py, py_text_ptr(ctx->py, root), py_text_len(root)))
        return true;
    /* parameters the code keeps in host memory: fused= is for device parameters */
    TSNode params = py_call_positional(n, 0);
    if (ts_node_is_null(params)) params = py_call_keyword(ctx->py, n, "params");
    TSNode owner = params_model(ctx->py, params, 0);
    if (!ts_node_is_null(owner) && py_module_stays_on_host(ctx->py, owner)) return true;
    /* a step that torch.compile already turns into fused kernels */
    if (step_is_compiled(&w->compile_sites, n)) return true;
    char name[PY_NAME_MAX];
    py_callee_name(ctx->py, n, name, sizeof name);
    const char *short_name = strrchr(name, '.');
    short_name = short_name ? short_name + 1 : name;
    bool caveat;
    if (!fused_allowed(w, short_name, owner, n, &caveat)) return true;
    Finding *f = rule_report_node(ctx, callee,
                                  "%s updates the parameters with several multi-tensor kernels per step; "
                                  "fused=True does the whole update in one pass over memory",
                                  short_name);
    if (!f) return true;
    if (caveat && !finding_caveat(f, "the project supports torch releases before 2.4, which refuse fused=True "
                                     "unless every parameter is already on the GPU when the optimizer is built"))
        ctx->out_of_memory = true;
    relate_steps(ctx, f, n);
    /* a call that the parser closed with a MISSING ')' gets no fix */
    TSNode args = py_call_arguments(n);
    if (!py_is(args, "argument_list") || ts_node_child_count(args) == 0) return true;
    TSNode close = ts_node_child(args, ts_node_child_count(args) - 1);
    if (ts_node_is_missing(close) || !py_text_eq(ctx->py, close, ")")) return true;
    size_t offset;
    char *text = py_keyword_insertion(ctx->py, n, "fused", "True", &offset);
    if (text) {
        Fix *fix = finding_add_fix(f, "Add fused=True", false);
        if (fix) fix_add_edit(fix, offset, offset, text);
        free(text);
    }
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->py->uses_gpu || py_is_test_path(ctx->doc->path)) return;
    Walk w = {ctx, {.src = ctx->py}, false, false, 0};
    rule_walk(ctx, visit, &w);
    if (w.compile_sites.out_of_memory) ctx->out_of_memory = true;
    free(w.compile_sites.nodes);
}

const Rule rule_py008_unfused_optimizer = {
    .code = "PY008", .name = "unfused-optimizer", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_OPTIMIZER,
    .summary = "Adam/AdamW/SGD on CUDA without fused=True",
    .documentation = documentation};
