/* PY017 torch-load-without-map-location: torch.load() without map_location
 * whose result is then copied into a model or moved to a device, so that
 * tensors saved from a GPU land on that GPU first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rule.h"
#include "analysis/python/python_expr.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_index.h"
#include "rules/python/support/backward_calls.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `torch.load(f)` with no `map_location` (neither the keyword nor a second positional\n"
    "argument) whose result the same function (or module-level code) then copies into a model\n"
    "or moves to a device: `model.load_state_dict(...)` of it, of a part of it\n"
    "(`ckpt[\"model\"]`, `ckpt.get(\"model\")`), of a name it was assigned to or of a dict built\n"
    "from its items; or `.to(device)` / `.cuda()` on it. Aliases count (`import torch as th`,\n"
    "`from torch import load`).\n"
    "\n"
    "Not flagged: `map_location` given in any form; calls with `**kwargs`; `weights_only=True`\n"
    "does not count as a map_location and is flagged like any other call; `torch.jit.load`,\n"
    "`torch.hub.load`, `pickle.load`, `np.load`, `json.load` and functions of your own named\n"
    "`load`; results that are only inspected, kept, returned or passed to other functions, and\n"
    "`load_state_dict(..., assign=True)`, which makes the loaded tensors the model's own (the\n"
    "model then lives where they were loaded, and no second copy is made).\n"
    "\n"
    "## Why is this slow?\n"
    "Without `map_location`, `torch.load` restores every tensor to the device it was saved\n"
    "from: a checkpoint written during training on `cuda:0` comes back on `cuda:0`, in full,\n"
    "whatever the current process is doing. `load_state_dict` then copies it into the model's\n"
    "own parameters (and `.to(device)` makes another copy when the devices differ), so GPU\n"
    "memory holds an extra copy of the weights while loading: a spike that can run a large model\n"
    "out of memory, and that lands on GPU 0 in every process of a multi-GPU job. On a machine with\n"
    "fewer GPUs, or none, the load fails outright. Loading to the CPU costs one host-to-device\n"
    "copy that the code makes anyway.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "model = Net().to(device)\n"
    "checkpoint = torch.load(\"checkpoint.pt\")\n"
    "model.load_state_dict(checkpoint[\"model\"])\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "model = Net().to(device)\n"
    "checkpoint = torch.load(\"checkpoint.pt\", map_location=\"cpu\")\n"
    "model.load_state_dict(checkpoint[\"model\"])\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "The fix adds `map_location=\"cpu\"`. It is safe when everything the code does with what it\n"
    "loaded copies it to where it belongs: `load_state_dict` of an `nn.Module` or a\n"
    "`torch.optim` optimizer (both copy each tensor into the existing ones, on their device),\n"
    "`.to(device)` and `.cuda()`, and reads of plain values (`ckpt[\"epoch\"]` assigned to a name,\n"
    "compared or printed). It is unsafe when some other use could depend on where the tensors\n"
    "are: a `load_state_dict` of another kind of object (which may keep the tensors it is given),\n"
    "one with `assign=True`, or a part of the checkpoint passed to another function, stored or\n"
    "returned: those would now get CPU tensors.\n";

#define MAX_FOLLOW 3 /* names assigned from names assigned from the load */
#define MAX_UP 16

typedef struct {
    const PySource *src;
    TSNode sink;      /* the first copy or move seen */
    bool moves;       /* that sink is .to(device) / .cuda() (else load_state_dict) */
    bool sink_unsafe; /* some sink may keep the tensors as they are */
    bool other_use;   /* some use could depend on where the tensors are */
} Flow;

static void follow_node(Flow *fl, TSNode n, int follow);

/* ---- sinks ------------------------------------------------------------------ */

/* the receiver of load_state_dict is a module or an optimizer, whose
 * load_state_dict copies into tensors that already have their device */
static bool copying_receiver(const PySource *src, TSNode recv) {
    static const char *const words[] = {"model", "net", "module", "encoder", "decoder", "backbone", "optim",
                                        "generator", "discriminator", "classifier", "policy", "critic", NULL};
    if (py_is_module_instance(src, recv) || py_is_optimizer(src, recv)) return true;
    TSNode name = recv;
    if (py_is(recv, "attribute")) name = ts_node_child_by_field_name(recv, "attribute", 9);
    if (!py_is(name, "identifier")) return false;
    for (size_t i = 0; words[i]; i++) {
        const char *t = py_text_ptr(src, name);
        size_t len = py_text_len(name), w = strlen(words[i]);
        for (size_t k = 0; k + w <= len; k++)
            if (strncmp(t + k, words[i], w) == 0) return true;
    }
    return py_text_eq(src, name, "self"); /* self.load_state_dict(...) in an nn.Module method */
}

static void add_sink(Flow *fl, TSNode call, bool moves, bool unsafe) {
    if (ts_node_is_null(fl->sink)) {
        fl->sink = call;
        fl->moves = moves;
    }
    if (unsafe) fl->sink_unsafe = true;
}

/* a consumer that reads a plain value and cannot depend on the device */
static bool neutral_call(const PySource *src, TSNode call) {
    static const char *const builtins[] = {"print", "str", "int", "float", "len", "range", "round", "isinstance",
                                           "repr", "format", "bool", NULL};
    static const char *const methods[] = {"info", "debug", "warning", "warn", "log", "write", "format", NULL};
    for (size_t i = 0; builtins[i]; i++)
        if (py_is_builtin_call(src, call, builtins[i])) return true;
    for (size_t i = 0; methods[i]; i++)
        if (py_method_call(src, call, methods[i], NULL)) return true;
    return false;
}

/* ---- where a value goes ------------------------------------------------------ */

typedef struct {
    Flow *fl;
    TSNode name;
    size_t from, until;
    int follow;
} Uses;

static bool visit_use(TSNode n, void *data) {
    Uses *u = data;
    const PySource *src = u->fl->src;
    if (ts_node_start_byte(n) >= u->until || ts_node_end_byte(n) <= u->from) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) {
        if (py_reads_name(src, n, u->name)) u->fl->other_use = true; /* read elsewhere: not ours to follow */
        return false;
    }
    if (!py_is(n, "identifier") || !py_same_text(src, n, u->name)) return true;
    TSNode parent = ts_node_parent(n);
    if (py_is(parent, "assignment") && ts_node_eq(ts_node_child_by_field_name(parent, "left", 4), n))
        return true; /* the next binding, whose right side reads the old value */
    /* attribute names and keyword names are not reads of the variable */
    if (py_is(parent, "attribute") && ts_node_eq(ts_node_child_by_field_name(parent, "attribute", 9), n)) return true;
    if (py_is(parent, "keyword_argument") && ts_node_eq(ts_node_child_by_field_name(parent, "name", 4), n))
        return true;
    follow_node(u->fl, n, u->follow);
    return true;
}

/* the reads of the name `assign` binds, after it and before the next binding of that name */
static void follow_name(Flow *fl, TSNode assign, TSNode name, int follow) {
    const PySource *src = fl->src;
    if (follow > MAX_FOLLOW) {
        fl->other_use = true;
        return;
    }
    TSNode scope = py_scope_of(src, assign);
    size_t count;
    const PyBinding *b = py_index_bindings(src, scope, py_text_ptr(src, name), py_text_len(name), &count);
    Uses u = {fl, name, ts_node_end_byte(assign), ts_node_end_byte(scope), follow};
    for (size_t i = 0; i < count; i++) /* `state = {... state.items()}` reads the old value first */
        if (b[i].start >= u.from && b[i].from < u.until) u.until = b[i].from;
    py_walk(scope, visit_use, &u);
}

/* `{k[7:]: v for k, v in sd.items()}`: the comprehension that iterates n's items */
static TSNode comprehension_over(TSNode call) {
    TSNode clause = ts_node_parent(call);
    TSNode null = {0};
    if (!py_is(clause, "for_in_clause") || !ts_node_eq(ts_node_child_by_field_name(clause, "right", 5), call))
        return null;
    TSNode comp = ts_node_parent(clause);
    return py_is(comp, "dictionary_comprehension") || py_is(comp, "list_comprehension") ? comp : null;
}

static bool is_device_move(const PySource *src, TSNode call) {
    if (py_method_call(src, call, "cuda", NULL)) return true;
    if (!py_method_call(src, call, "to", NULL)) return false;
    TSNode dev = py_call_positional(call, 0);
    if (ts_node_is_null(dev) || !py_is_device_expr(src, dev)) dev = py_call_keyword(src, call, "device");
    return !ts_node_is_null(dev) && py_is_device_expr(src, dev);
}

/* the call n is an argument of, with n the first positional or `state_dict=` */
static bool state_dict_argument(const PySource *src, TSNode n, TSNode *call) {
    TSNode parent = ts_node_parent(n);
    if (py_is(parent, "keyword_argument")) {
        TSNode key = ts_node_child_by_field_name(parent, "name", 4);
        if (!py_text_eq(src, key, "state_dict")) return false;
        n = parent;
        parent = ts_node_parent(n);
    }
    if (!py_is(parent, "argument_list")) return false;
    *call = ts_node_parent(parent);
    return py_is(n, "keyword_argument") || ts_node_eq(py_call_positional(*call, 0), n);
}

/* Where the value at n goes: up through parentheses, subscripts (a part of
 * the checkpoint), `.get(...)` and dicts built from it, to a sink, to a name
 * it is assigned to (whose reads are followed), or to another use. */
static void follow_node(Flow *fl, TSNode n, int follow) {
    const PySource *src = fl->src;
    for (int up = 0; up < MAX_UP; up++) {
        TSNode parent = ts_node_parent(n);
        if (py_is(parent, "parenthesized_expression") ||
            (py_is(parent, "subscript") && ts_node_eq(ts_node_child_by_field_name(parent, "value", 5), n))) {
            n = parent;
            continue;
        }
        if (py_is(parent, "attribute") && ts_node_eq(ts_node_child_by_field_name(parent, "object", 6), n)) {
            TSNode call = ts_node_parent(parent);
            if (!py_is(call, "call")) {
                fl->other_use = true; /* ckpt.some_field */
                return;
            }
            if (is_device_move(src, call)) {
                add_sink(fl, call, true, false);
                return;
            }
            if (py_method_call(src, call, "get", NULL) || py_method_call(src, call, "pop", NULL)) {
                n = call;
                continue;
            }
            if (py_method_call(src, call, "items", NULL) || py_method_call(src, call, "values", NULL)) {
                TSNode comp = comprehension_over(call);
                if (ts_node_is_null(comp)) {
                    fl->other_use = true;
                    return;
                }
                n = comp;
                continue;
            }
            if (py_method_call(src, call, "keys", NULL)) return; /* names only */
            fl->other_use = true;
            return;
        }
        TSNode call;
        if (state_dict_argument(src, n, &call)) {
            TSNode recv;
            if (py_method_call(src, call, "load_state_dict", &recv)) {
                TSNode assign = py_call_keyword(src, call, "assign");
                if (!ts_node_is_null(assign) && !py_text_eq(src, py_unparen(assign), "False")) {
                    fl->other_use = true; /* assign=True takes the tensors as they are: no copy */
                    return;
                }
                add_sink(fl, call, false, !copying_receiver(src, recv));
                return;
            }
            static const char *const dict_builders[] = {"dict", "collections.OrderedDict", NULL};
            if (py_is_builtin_call(src, call, "dict") || py_callee_is_any(src, call, dict_builders)) {
                n = call;
                continue;
            }
        }
        if (py_is(parent, "assignment") && ts_node_eq(ts_node_child_by_field_name(parent, "right", 5), n)) {
            TSNode left = ts_node_child_by_field_name(parent, "left", 4);
            if (py_is(left, "identifier")) follow_name(fl, parent, left, follow + 1);
            else fl->other_use = true;
            return;
        }
        /* plain reads: `if "model" in ckpt`, `epoch > ckpt["epoch"]`, `print(ckpt["acc"])` */
        if (py_is(parent, "comparison_operator") || py_is(parent, "binary_operator") ||
            py_is(parent, "interpolation") || py_is(parent, "delete_statement") || py_is(parent, "boolean_operator") ||
            py_is(parent, "not_operator"))
            return;
        if (py_is(parent, "argument_list") && neutral_call(src, ts_node_parent(parent))) return;
        if (py_is(parent, "expression_statement")) return; /* the value is dropped */
        fl->other_use = true;
        return;
    }
    fl->other_use = true;
}

/* ---- the rule ------------------------------------------------------------------ */

static const char *const load_functions[] = {"torch.load", "torch.serialization.load", NULL};

static void add_fix(RuleContext *ctx, Finding *f, TSNode call, bool safe) {
    const PySource *src = ctx->py;
    if (src->has_errors) return;
    size_t offset;
    char *text = py_keyword_insertion(src, call, "map_location", "\"cpu\"", &offset);
    if (!text) return;
    Fix *fix = finding_add_fix(f,
                               safe ? "Load to the CPU with map_location=\"cpu\""
                                    : "Load to the CPU with map_location=\"cpu\" (other uses of what it loads then "
                                      "get CPU tensors)",
                               safe);
    if (fix) fix_add_edit(fix, offset, offset, text);
    free(text);
}

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    const PySource *src = ctx->py;
    if (ctx->out_of_memory) return false;
    if (!py_is(n, "call") || !py_callee_is_any(src, n, load_functions)) return true;
    if (!ts_node_is_null(py_call_keyword(src, n, "map_location")) || py_call_positional_count(n) >= 2 ||
        py_call_has_splat(n))
        return true;
    if (py_callee_shadowed(src, n, ts_node_child_by_field_name(n, "function", 8))) return true;
    Flow fl = {.src = src};
    follow_node(&fl, n, 0);
    if (ts_node_is_null(fl.sink)) return true;

    char what[64], where[80];
    if (!py_short_text(src, n, 40, what, sizeof what)) snprintf(what, sizeof what, "torch.load(...)");
    TSNode method = py_method_name_node(fl.sink), args = py_call_arguments(fl.sink);
    TSNode recv = ts_node_child_by_field_name(ts_node_parent(method), "object", 6);
    char said[48];
    Finding *f;
    if (fl.moves) { /* `.to(device)` */
        if (!py_short_text(src, args, 32, said, sizeof said)) snprintf(said, sizeof said, "(...)");
        snprintf(where, sizeof where, ".%.*s%s", (int)py_text_len(method), py_text_ptr(src, method), said);
        f = rule_report_node(ctx, n,
                             "`%s` has no map_location: tensors saved from a GPU come back on that GPU, whole, "
                             "before `%s` moves them, so GPU memory spikes while loading and the load fails on a "
                             "machine without that GPU; load to the CPU with map_location=\"cpu\"",
                             what, where);
    } else { /* `model.load_state_dict(...)` */
        if (!py_short_text(src, recv, 32, said, sizeof said)) snprintf(said, sizeof said, "the model");
        snprintf(where, sizeof where, "%s.load_state_dict(...)", said);
        f = rule_report_node(ctx, n,
                             "`%s` has no map_location: tensors saved from a GPU come back on that GPU, whole, only "
                             "for `%s` to copy them into its own, so GPU memory holds an extra copy of the weights "
                             "while loading and the load fails on a machine without that GPU; load to the CPU with "
                             "map_location=\"cpu\"",
                             what, where);
    }
    if (!f) return true;
    if (!finding_add_related(f, (ByteRange){ts_node_start_byte(fl.sink), ts_node_end_byte(fl.sink)},
                             fl.moves ? "moved to the device here" : "copied into its own tensors here"))
        ctx->out_of_memory = true;
    add_fix(ctx, f, n, !fl.sink_unsafe && !fl.other_use);
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->py->uses_gpu) return;
    rule_walk(ctx, visit, ctx);
}

const Rule rule_py017_torch_load_without_map_location = {
    .code = "PY017", .name = "torch-load-without-map-location", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON, .check = check,
    .whole_file = true, /* module-level code loads in one statement and copies in another */
    .memory_evidence = true, /* the checkpoint's device memory is allocated at the load */
    .summary = "torch.load() without map_location, then copied into a model or moved to a device",
    .documentation = documentation};
