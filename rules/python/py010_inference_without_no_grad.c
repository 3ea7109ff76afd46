/* PY010 inference-without-no-grad: an evaluation or inference loop that runs
 * the model with autograd on. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "rules/rule.h"
#include "analysis/python/python_roles.h"
#include "rules/python/support/model_calls.h"
#include "analysis/python/python_workspace.h"
#include "analysis/base/text_format.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a model call inside a loop that evaluates or runs inference without\n"
    "`torch.no_grad()` or `torch.inference_mode()`. The code must show that the loop is\n"
    "evaluation, and the enclosing function (or module-level code) must never train: no\n"
    "`.backward()`, `optimizer.step()`, `zero_grad()`, `torch.autograd.grad`, `enable_grad` or\n"
    "`requires_grad` changes. Evaluation is shown by either\n"
    "- `model.eval()` (or `model.train(False)`, or `model = Net().eval()`) on the same model\n"
    "  earlier in the same function or module-level code, with no `model.train()` in between or\n"
    "  inside the loop; or\n"
    "- a function named like evaluation (`evaluate`, `eval`, `validate`, `validation`, `val`,\n"
    "  `test`, `predict`, `inference`, `infer`, `generate`, `sample`, as a word of the name)\n"
    "  that calls a model: an `nn.Module` instance (not a loss or other parameter-free module),\n"
    "  `self` in an `nn.Module` subclass, or a name or `self.` attribute named like a model\n"
    "  (`model`, `net`, `*_model`, `encoder`, `policy`, ...). Names that also say training\n"
    "  (`train_and_evaluate`, `fit`, `step`, `attack`, `saliency`) do not count; or\n"
    "- a module-level function (a `decode(model, tokens)` that samples token by token) that other\n"
    "  modules of the project call only to infer: from functions that evaluate (named so, or\n"
    "  switching the model to eval) and that do not train, never under `no_grad`.\n"
    "\n"
    "One finding per loop, on the first model call.\n"
    "\n"
    "## Why is this slow?\n"
    "With autograd on, every forward pass records the graph and keeps each layer's input\n"
    "activations alive for a backward pass that never comes. That costs host time per\n"
    "operation and a lot of device memory: it caps the batch size, and when outputs are kept\n"
    "(appended to a list, summed into a metric tensor) it grows across iterations until the\n"
    "GPU runs out of memory. `torch.inference_mode()` additionally skips version-counter and\n"
    "view tracking.\n"
    "\n"
    "Not flagged: calls under `with torch.no_grad()` / `torch.inference_mode()`, in a function\n"
    "decorated with either (or with a decorator whose name says so, such as yolov5's\n"
    "`@smart_inference_mode()`), after `torch.set_grad_enabled(False)` or\n"
    "`stack.enter_context(torch.no_grad())` (an ExitStack), or in a function that the\n"
    "file (or another module of the project) calls under one of these somewhere (grad is then managed by the caller, or the\n"
    "function is wrapped as `f = torch.no_grad()(f)`); loops in functions that train or compute\n"
    "gradients (saliency maps, adversarial examples); calls of a function this file or the project\n"
    "defines, whatever its name (`query_model(prompt, model)` that asks a server: a function, not a\n"
    "model); Lightning `*_step` hooks and pytest\n"
    "`test_*` functions; models whose parameters are frozen with `requires_grad_(False)`;\n"
    "files that do not import torch or never mention CUDA or a device.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "def evaluate(model, loader):\n"
    "    model.eval()\n"
    "    correct = 0\n"
    "    for x, y in loader:\n"
    "        logits = model(x.cuda())\n"
    "        correct += (logits.argmax(1) == y.cuda()).sum()\n"
    "    return correct.item()\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "@torch.no_grad()\n"
    "def evaluate(model, loader):\n"
    "    model.eval()\n"
    "    correct = 0\n"
    "    for x, y in loader:\n"
    "        logits = model(x.cuda())\n"
    "        correct += (logits.argmax(1) == y.cuda()).sum()\n"
    "    return correct.item()\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "The fix, \"Run under torch.no_grad()\", adds `@torch.no_grad()` above the function (above\n"
    "any existing decorators, at the `def`'s indentation). It is offered only for a loop inside\n"
    "a plain function or method of a file that does `import torch`: not at module level, not\n"
    "for `async def`, and not when a decorator such as `@staticmethod`, `@classmethod`,\n"
    "`@property` or `@contextmanager` would make the outer decorator wrong or ineffective.\n"
    "It is unsafe: the function's results then carry no autograd graph, so a caller that\n"
    "backpropagates through them (for example a training loop that reuses the function)\n"
    "would get an error or silently stop training those parts.\n";

#define MAX_LOOPS 256
#define MODEL_LOOKUP_BUDGET 256 /* binding searches for the name-based route, per file */

/* an `X.eval()` / `X.train()` call of a scope, X stripped of .to()/.cuda() */
typedef struct {
    TSNode call, receiver;
    bool eval;
} Switch;

/* what a scope (function body or module) does, computed once */
typedef struct {
    size_t start;
    Switch *switches;
    size_t switch_count;
    bool trains;
} ScopeInfo;

/* every call of the file by the name it calls: `f(...)`, `obj.f(...)`, and
 * `torch.no_grad()(f)` (wrapper) */
typedef struct {
    TSNode name, call;
    bool wrapper;
} CallSite;

typedef struct {
    RuleContext *ctx;
    size_t reported[MAX_LOOPS]; /* start bytes of loops already reported */
    size_t reported_count;
    ScopeInfo *scopes;
    size_t scope_count;
    bool indexed; /* calls and frozen models below are filled */
    CallSite *calls;
    size_t call_count;
    TSNode *frozen; /* models whose parameters are frozen */
    size_t frozen_count;
    int file_mentions_eval; /* -1 unknown */
    int lookups_left;
    bool failed; /* memory ran out: report nothing more */
} State;

/* makes room for item `count` of an array whose capacity doubles at each
 * power of two; returns the array (maybe moved), or NULL when memory runs out
 * (the old array is then left as it was). The arrays keep no capacity: full
 * at 0 and at each power of two, else there is room, which count + 1 says */
static void *grow(void *items, size_t count, size_t size) {
    size_t cap = count != 0 && (count & (count - 1)) != 0 ? count + 1 : count;
    return array_reserve(&items, count, &cap, size, 1) ? items : NULL;
}

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static bool text_in_list(const PySource *src, TSNode n, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (py_text_eq(src, n, list[i])) return true;
    return false;
}

static bool is_definition_boundary(TSNode n) {
    return py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda");
}

/* `model.to(device).eval()` -> `model` */
static TSNode strip_module_calls(const PySource *src, TSNode n) {
    static const char *const keeps[] = {"to", "cuda", "cpu", "half", "float", "bfloat16", "eval", "train",
                                        "requires_grad_", NULL};
    for (int depth = 0; depth < 16; depth++) {
        if (py_is(n, "parenthesized_expression") && ts_node_named_child_count(n) > 0) {
            n = ts_node_named_child(n, 0);
            continue;
        }
        TSNode name = py_method_name_node(n);
        if (ts_node_is_null(name) || !text_in_list(src, name, keeps)) break;
        n = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
    }
    return n;
}

/* `.train(False)` / `.train(mode=False)` mean eval */
static bool train_call_means_eval(const PySource *src, TSNode call) {
    TSNode arg = py_call_positional(call, 0);
    if (ts_node_is_null(arg)) arg = py_call_keyword(src, call, "mode");
    return !ts_node_is_null(arg) && py_text_eq(src, arg, "False");
}

/* ---- what a scope does --------------------------------------------------- */

typedef struct {
    State *st;
    ScopeInfo *info;
} ScopeScan;


static bool visit_scope(TSNode n, void *data) {
    ScopeScan *s = data;
    const PySource *src = s->st->ctx->py;
    if (is_definition_boundary(n)) return false;
    if (py_is(n, "assignment") || py_is(n, "augmented_assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        if (py_is(left, "attribute")) {
            TSNode attr = ts_node_child_by_field_name(left, "attribute", 9);
            if (!ts_node_is_null(attr) && py_text_eq(src, attr, "requires_grad")) s->info->trains = true;
        }
        return true;
    }
    if (!py_is(n, "call")) return true;
    if (!s->info->trains && py_call_trains(src, n)) s->info->trains = true;
    TSNode recv;
    bool eval = py_method_call(src, n, "eval", &recv);
    bool train = !eval && py_method_call(src, n, "train", &recv);
    if (!eval && !train) return true;
    if (train && train_call_means_eval(src, n)) eval = true;
    Switch *switches = grow(s->info->switches, s->info->switch_count, sizeof *switches);
    if (!switches) {
        s->st->failed = true;
        return false;
    }
    s->info->switches = switches;
    s->info->switches[s->info->switch_count++] = (Switch){n, strip_module_calls(src, recv), eval};
    return true;
}

static ScopeInfo *scope_info(State *st, TSNode scope) {
    size_t start = ts_node_start_byte(scope);
    for (size_t i = 0; i < st->scope_count; i++)
        if (st->scopes[i].start == start) return &st->scopes[i];
    ScopeInfo *scopes = grow(st->scopes, st->scope_count, sizeof *scopes);
    if (!scopes) {
        st->failed = true;
        return NULL;
    }
    st->scopes = scopes;
    ScopeInfo *info = &st->scopes[st->scope_count++];
    *info = (ScopeInfo){.start = start};
    ScopeScan scan = {st, info};
    uint32_t n = ts_node_named_child_count(scope);
    for (uint32_t i = 0; i < n && !st->failed; i++) py_walk(ts_node_named_child(scope, i), visit_scope, &scan);
    return st->failed ? NULL : info;
}

/* ---- eval()/train() state of a model ------------------------------------ */

enum { MODE_UNKNOWN, MODE_EVAL, MODE_TRAIN };

/* `model = Net().to(device).eval()` */
static bool value_chain_has_eval(const PySource *src, TSNode value) {
    for (int depth = 0; depth < 16 && py_is(value, "call"); depth++) {
        TSNode name = py_method_name_node(value);
        if (ts_node_is_null(name)) return false;
        if (py_text_eq(src, name, "eval") ||
            (py_text_eq(src, name, "train") && train_call_means_eval(src, value)))
            return true;
        value = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
    }
    return false;
}

/* the mode of `model` when `call` runs: its last eval()/train() before the
 * call in the scope; train() anywhere in the loop counts as training */
static int model_mode(const PySource *src, const ScopeInfo *info, TSNode model, TSNode call, TSNode loop) {
    int mode = MODE_UNKNOWN;
    size_t best = 0, before = ts_node_start_byte(call);
    for (size_t i = 0; i < info->switch_count; i++) {
        const Switch *sw = &info->switches[i];
        if (!py_same_text_present(src, sw->receiver, model)) continue;
        if (!sw->eval && py_is_within(sw->call, loop)) return MODE_TRAIN;
        size_t start = ts_node_start_byte(sw->call);
        if (start < before && (mode == MODE_UNKNOWN || start >= best)) {
            best = start;
            mode = sw->eval ? MODE_EVAL : MODE_TRAIN;
        }
    }
    if (mode == MODE_UNKNOWN && py_is(model, "identifier")) {
        TSNode value;
        BindingKind kind = py_binding_before(src, call, py_text_ptr(src, model), py_text_len(model),
                                             ts_node_start_byte(call), &value);
        if (kind == BINDING_ASSIGNMENT && value_chain_has_eval(src, value)) return MODE_EVAL;
    }
    return mode;
}

/* ---- names ---------------------------------------------------------------- */

static bool word_names_model(const char *t, size_t len) {
    static const char *const exact[] = {"model", "net", "network", "policy", "encoder", "decoder", "generator",
                                        "classifier", "backbone", "transformer", "unet", "vae", "denoiser",
                                        "detector", "teacher", NULL};
    char w[64];
    if (len == 0 || len >= sizeof w) return false;
    for (size_t i = 0; i < len; i++) w[i] = (char)tolower((unsigned char)t[i]);
    w[len] = '\0';
    for (size_t i = 0; exact[i]; i++)
        if (strcmp(w, exact[i]) == 0) return true;
    return (len > 5 && strcmp(w + len - 5, "model") == 0) || (len > 4 && strcmp(w + len - 4, "_net") == 0);
}

/* the class holding fn derives from torch.nn.* */
static bool method_of_module(const PySource *src, TSNode fn) {
    for (TSNode n = ts_node_parent(fn); !ts_node_is_null(n); n = ts_node_parent(n)) {
        if (py_is(n, "function_definition")) return false;
        if (!py_is(n, "class_definition")) continue;
        TSNode bases = ts_node_child_by_field_name(n, "superclasses", 12);
        uint32_t count = ts_node_is_null(bases) ? 0 : ts_node_named_child_count(bases);
        for (uint32_t i = 0; i < count; i++) {
            char q[PY_NAME_MAX];
            if (py_qualified_name(src, ts_node_named_child(bases, i), q, sizeof q) && starts_with(q, "torch.nn."))
                return true;
        }
        return false;
    }
    return false;
}

/* `criterion = nn.CrossEntropyLoss()`, `act = nn.ReLU()`: modules without
 * parameters record nothing unless their inputs need grad */
static bool is_parameter_free_module(const PySource *src, TSNode model) {
    static const char *const free_modules[] = {
        "Softmax", "LogSoftmax", "Softmax2d", "ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "ELU", "SELU",
        "Sigmoid", "Tanh", "Hardswish", "Hardsigmoid", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Flatten",
        "Unflatten", "Identity", "Upsample", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d",
        "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d", "CosineSimilarity", "PairwiseDistance", "PixelShuffle", NULL};
    TSNode value = model;
    if (py_is(model, "identifier") &&
        py_binding_before(src, model, py_text_ptr(src, model), py_text_len(model), ts_node_start_byte(model),
                          &value) != BINDING_ASSIGNMENT)
        return false;
    value = strip_module_calls(src, value);
    char q[PY_NAME_MAX];
    if (!py_callee_name(src, value, q, sizeof q) || !starts_with(q, "torch.nn.")) return false;
    const char *last = strrchr(q, '.') + 1;
    size_t len = strlen(last);
    if (len >= 4 && strcmp(last + len - 4, "Loss") == 0) return true;
    for (size_t i = 0; free_modules[i]; i++)
        if (strcmp(last, free_modules[i]) == 0) return true;
    return false;
}

/* the callee looks like a model, for the name-based route */
static bool looks_like_model(const PySource *src, TSNode model, TSNode fn) {
    if (py_is_module_instance(src, model)) return !is_parameter_free_module(src, model);
    if (py_is(model, "identifier")) {
        if (py_text_eq(src, model, "self")) return !ts_node_is_null(fn) && method_of_module(src, fn);
        return !py_names_project_function(src, model) && word_names_model(py_text_ptr(src, model), py_text_len(model));
    }
    if (py_is(model, "attribute")) {
        TSNode object = ts_node_child_by_field_name(model, "object", 6);
        TSNode attr = ts_node_child_by_field_name(model, "attribute", 9);
        return py_is(object, "identifier") && py_text_eq(src, object, "self") && !ts_node_is_null(attr) &&
               word_names_model(py_text_ptr(src, attr), py_text_len(attr));
    }
    return false;
}

/* ---- callers and frozen models ------------------------------------------ */

static bool disables_grad_call(const PySource *src, TSNode call) {
    static const char *const off[] = {"torch.no_grad", "torch.inference_mode", NULL};
    return py_is(call, "call") && py_callee_is_any(src, call, off);
}

/* for p in model.parameters(): p.requires_grad = False  -> model */
static TSNode loop_frozen_model(const PySource *src, TSNode loop) {
    TSNode null = {0};
    TSNode iter = ts_node_child_by_field_name(loop, "right", 5);
    TSNode recv;
    if (!py_method_call(src, iter, "parameters", &recv)) return null;
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    uint32_t n = ts_node_is_null(body) ? 0 : ts_node_named_child_count(body);
    for (uint32_t i = 0; i < n; i++) {
        TSNode stmt = ts_node_named_child(body, i);
        TSNode a = py_is(stmt, "expression_statement") ? ts_node_named_child(stmt, 0) : stmt;
        if (!py_is(a, "assignment")) continue;
        TSNode left = ts_node_child_by_field_name(a, "left", 4);
        TSNode right = ts_node_child_by_field_name(a, "right", 5);
        if (!py_is(left, "attribute")) continue;
        TSNode attr = ts_node_child_by_field_name(left, "attribute", 9);
        if (py_text_eq(src, attr, "requires_grad") && py_text_eq(src, right, "False"))
            return strip_module_calls(src, recv);
    }
    return null;
}

static bool add_frozen(State *st, TSNode model) {
    TSNode *frozen = grow(st->frozen, st->frozen_count, sizeof *frozen);
    if (!frozen) return false;
    st->frozen = frozen;
    st->frozen[st->frozen_count++] = model;
    return true;
}

static bool visit_index(TSNode n, void *data) {
    State *st = data;
    const PySource *src = st->ctx->py;
    if (st->failed) return false;
    if (py_is(n, "for_statement")) {
        TSNode model = loop_frozen_model(src, n);
        if (!ts_node_is_null(model) && !add_frozen(st, model)) st->failed = true;
        return !st->failed;
    }
    if (!py_is(n, "call")) return true;
    TSNode recv;
    if (py_method_call(src, n, "requires_grad_", &recv) &&
        (py_text_eq(src, py_call_positional(n, 0), "False") ||
         py_text_eq(src, py_call_keyword(src, n, "requires_grad"), "False"))) {
        if (!add_frozen(st, strip_module_calls(src, recv))) st->failed = true;
        return !st->failed;
    }
    TSNode callee = ts_node_child_by_field_name(n, "function", 8);
    TSNode name = callee;
    bool wrapper = false;
    if (py_is(callee, "attribute")) name = ts_node_child_by_field_name(callee, "attribute", 9);
    if (disables_grad_call(src, callee)) { /* evaluate = torch.no_grad()(evaluate) */
        name = py_call_positional(n, 0);
        wrapper = true;
    }
    if (!py_is(name, "identifier")) return true;
    CallSite *calls = grow(st->calls, st->call_count, sizeof *calls);
    if (!calls) {
        st->failed = true;
        return false;
    }
    st->calls = calls;
    st->calls[st->call_count++] = (CallSite){name, n, wrapper};
    return true;
}

static void build_index(State *st) {
    if (st->indexed) return;
    st->indexed = true;
    py_walk(ts_tree_root_node(st->ctx->py->tree), visit_index, st);
}

/* some call of the function in this file runs with grad disabled: grad is managed by the callers */
static bool callers_disable_grad(State *st, TSNode fn) {
    const PySource *src = st->ctx->py;
    TSNode name = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name)) return false;
    for (size_t i = 0; i < st->call_count; i++) {
        const CallSite *c = &st->calls[i];
        if (!py_same_text_present(src, c->name, name)) continue;
        if (c->wrapper || py_grad_disabled_at(src, c->call)) return true;
    }
    return false;
}

static bool is_frozen(State *st, TSNode model) {
    for (size_t i = 0; i < st->frozen_count; i++)
        if (py_same_text_present(st->ctx->py, st->frozen[i], model)) return true;
    return false;
}

/* ---- the fix ------------------------------------------------------------ */

static bool decorator_blocks_fix(const PySource *src, TSNode decorator) {
    static const char *const blocking[] = {"staticmethod", "classmethod", "property", "cached_property", "setter",
                                           "getter", "deleter", "contextmanager", "asynccontextmanager",
                                           "overload", "abstractmethod", "script", NULL};
    TSNode e = ts_node_named_child(decorator, 0);
    if (py_is(e, "call")) e = ts_node_child_by_field_name(e, "function", 8);
    if (py_is(e, "attribute")) e = ts_node_child_by_field_name(e, "attribute", 9);
    return !py_is(e, "identifier") || text_in_list(src, e, blocking);
}

static void add_fix(RuleContext *ctx, Finding *f, TSNode fn) {
    const PySource *src = ctx->py;
    const char *torch = py_resolve_import(src, "torch", 5);
    if (!torch || strcmp(torch, "torch") != 0) return;
    /* async def */
    if (ts_node_child_count(fn) > 0 && py_is(ts_node_child(fn, 0), "async")) return;
    TSNode target = fn;
    TSNode parent = ts_node_parent(fn);
    if (py_is(parent, "decorated_definition")) {
        uint32_t n = ts_node_named_child_count(parent);
        for (uint32_t i = 0; i < n; i++) {
            TSNode d = ts_node_named_child(parent, i);
            if (py_is(d, "decorator") && decorator_blocks_fix(src, d)) return;
        }
        target = parent;
    }
    if (ts_node_has_error(target) || !py_starts_line(src, target)) return;
    char indent[128];
    py_line_indent(src, ts_node_start_byte(target), indent, sizeof indent);
    size_t line = document_line_of(src->doc, ts_node_start_byte(target));
    size_t offset = src->doc->line_starts[line];
    char *text = format_string("%s@torch.no_grad()\n", indent);
    if (!text) return;
    Fix *fix = finding_add_fix(f, "Run under torch.no_grad()", false);
    if (fix) fix_add_edit(fix, offset, offset, text);
    free(text);
}

/* ---- callers in other modules (the workspace index) ------------------------- */

typedef struct {
    unsigned uses;     /* PY_USE_* of the project's other modules */
    const char *where; /* the file of one inference call, a string of the workspace view */
    unsigned line;
} OtherCallers;

/* How other modules of the project call fn, a module-level function. */
static OtherCallers other_callers(const PySource *src, TSNode fn) {
    OtherCallers c = {0, NULL, 0};
    TSNode holder = ts_node_parent(fn);
    if (py_is(holder, "decorated_definition")) holder = ts_node_parent(holder);
    if (!src->workspace || !src->module || !py_is(holder, "module")) return c;
    char *name = py_text_dup(src, ts_node_child_by_field_name(fn, "name", 4));
    const PyModuleFacts *where = NULL;
    if (name) c.uses = py_workspace_uses_of(src->workspace, src->module, name, &where, &c.line);
    free(name);
    c.where = where ? py_module_path(where) : NULL;
    return c;
}

/* Other modules call fn only to infer: from a function that evaluates, with
 * gradients on, never with them off (grad is then the caller's business) and
 * never from training (a no_grad fix would break it). */
static bool inference_elsewhere(const OtherCallers *c) {
    return (c->uses & PY_USE_INFERENCE) && !(c->uses & (PY_USE_NO_GRAD | PY_USE_TRAINING)) && c->where;
}

/* ---- the check ---------------------------------------------------------- */

/* the leftmost name of a dotted expression is an import */
static bool names_import(const PySource *src, TSNode expr) {
    for (int depth = 0; depth < 32 && py_is(expr, "attribute"); depth++)
        expr = ts_node_child_by_field_name(expr, "object", 6);
    return py_is(expr, "identifier") && py_resolve_import(src, py_text_ptr(src, expr), py_text_len(expr)) != NULL;
}

/* `.eval(` appears somewhere in the file (for `model = Net().eval()` at module level) */
static bool file_mentions_eval(State *st) {
    if (st->file_mentions_eval < 0) {
        const Document *doc = st->ctx->py->doc;
        st->file_mentions_eval = strstr(doc->text, ".eval(") != NULL || strstr(doc->text, ".train(") != NULL;
    }
    return st->file_mentions_eval == 1;
}

static bool already_reported(State *st, TSNode loop) {
    size_t start = ts_node_start_byte(loop);
    for (size_t i = 0; i < st->reported_count; i++)
        if (st->reported[i] == start) return true;
    return false;
}

static bool visit(TSNode n, void *data) {
    State *st = data;
    RuleContext *ctx = st->ctx;
    const PySource *src = ctx->py;
    if (st->failed || st->reported_count == MAX_LOOPS) return false;
    if (!py_is(n, "call")) return true;
    TSNode callee = ts_node_child_by_field_name(n, "function", 8);
    if (ts_node_is_null(callee)) return true;
    TSNode model = callee, recv;
    if (py_method_call(src, n, "forward", &recv)) model = recv;
    else if (!py_is(callee, "identifier") && !py_is(callee, "attribute")) return true;
    TSNode loop = py_enclosing_loop(n);
    if (ts_node_is_null(loop) || already_reported(st, loop)) return true;
    TSNode stripped = strip_module_calls(src, model);
    if (names_import(src, stripped)) return true; /* torch.cat(...), np.mean(...) */
    TSNode fn = py_enclosing_function(src, n);
    if (!ts_node_is_null(fn) && py_function_is_test_or_step_hook(src, fn)) return true;
    bool named_eval = !ts_node_is_null(fn) && py_function_named_like_evaluation(src, fn);
    ScopeInfo *info = scope_info(st, py_scope_of(src, n));
    if (!info) return false;
    if (info->trains) return true;
    OtherCallers others = {0, NULL, 0};
    if (!ts_node_is_null(fn)) others = other_callers(src, fn);
    if (others.uses & (PY_USE_NO_GRAD | PY_USE_TRAINING)) return true; /* grad is managed, or needed, there */
    bool called_to_infer = inference_elsewhere(&others);
    named_eval = named_eval || called_to_infer; /* a caller in another module shows it is inference */
    if (!named_eval && info->switch_count == 0 && !(py_is(stripped, "identifier") && file_mentions_eval(st)))
        return true; /* nothing here can show evaluation */

    /* is it evaluation? */
    int mode = model_mode(src, info, stripped, n, loop);
    if (mode == MODE_TRAIN) return true;
    if (mode == MODE_UNKNOWN) {
        if (!named_eval || st->lookups_left <= 0) return true;
        st->lookups_left--;
        if (!looks_like_model(src, stripped, fn)) return true;
    }
    if (py_grad_disabled_at(src, n)) return true;
    build_index(st);
    if (st->failed || is_frozen(st, stripped) || (!ts_node_is_null(fn) && callers_disable_grad(st, fn))) return true;

    st->reported[st->reported_count++] = ts_node_start_byte(loop);
    const char *base = called_to_infer ? strrchr(others.where, '/') : NULL;
    char *caller = called_to_infer ? format_string(" (it runs for inference: %s:%u calls it)",
                                                   base ? base + 1 : others.where, others.line)
                                   : NULL;
    Finding *f = rule_report_node(ctx, n,
                                  "this evaluation loop runs the model with autograd on%s: every forward pass "
                                  "records a graph and keeps activations alive for a backward pass that never "
                                  "comes",
                                  caller ? caller : "");
    free(caller);
    if (f && !ts_node_is_null(fn)) add_fix(ctx, f, fn);
    return true;
}

static bool imports_torch(const PySource *src) {
    for (size_t i = 0; i < src->import_count; i++) {
        const char *q = src->imports[i].qualified;
        if (strcmp(q, "torch") == 0 || starts_with(q, "torch.")) return true;
    }
    return false;
}

static void check(RuleContext *ctx) {
    if (!ctx->py->uses_gpu || !imports_torch(ctx->py)) return;
    State st = {.ctx = ctx, .file_mentions_eval = -1, .lookups_left = MODEL_LOOKUP_BUDGET};
    rule_walk(ctx, visit, &st);
    for (size_t i = 0; i < st.scope_count; i++) free(st.scopes[i].switches);
    free(st.scopes);
    free(st.calls);
    free(st.frozen);
}

const Rule rule_py010_inference_without_no_grad = {
    .code = "PY010", .name = "inference-without-no-grad", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check,
    .whole_file = true, /* callers and wrappers anywhere in the file decide */
    .memory_evidence = true,
    .summary = "evaluation or inference loop that runs the model without torch.no_grad()",
    .documentation = documentation};
