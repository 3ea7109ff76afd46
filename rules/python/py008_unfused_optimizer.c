/* PY008 unfused-optimizer: torch.optim.Adam / AdamW / SGD built without
 * choosing an implementation (fused= or foreach=) in a file that uses CUDA. */
#include <stdlib.h>
#include <string.h>

#include "rule.h"
#include "../../analysis/python_index.h"

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
    "classes of the same name defined in the file, and files that never mention CUDA or a\n"
    "device. `capturable=True` is compatible with `fused=True` and is still flagged.\n"
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

/* null-safe text comparisons (missing fields in broken code are null nodes) */
static bool text_is(const PySource *src, TSNode n, const char *text) {
    return !ts_node_is_null(n) && py_text_eq(src, n, text);
}


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

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    if (!py_is(n, "call") || !py_callee_is_any(ctx->py, n, optimizer_names)) return true;
    if (py_call_has_splat(n)) return true;
    if (!ts_node_is_null(py_call_keyword(ctx->py, n, "fused")) ||
        !ts_node_is_null(py_call_keyword(ctx->py, n, "foreach")))
        return true;
    TSNode differentiable = py_call_keyword(ctx->py, n, "differentiable");
    if (!ts_node_is_null(differentiable) && !text_is(ctx->py, differentiable, "False")) return true;
    TSNode callee = ts_node_child_by_field_name(n, "function", 8);
    if (is_shadowed(ctx->py, callee)) return true;
    char name[PY_NAME_MAX];
    py_callee_name(ctx->py, n, name, sizeof name);
    const char *short_name = strrchr(name, '.');
    short_name = short_name ? short_name + 1 : name;
    Finding *f = rule_report_node(ctx, callee,
                                  "%s updates the parameters with several multi-tensor kernels per step; "
                                  "fused=True does the whole update in one pass over memory",
                                  short_name);
    if (!f) return true;
    /* a call that the parser closed with a MISSING ')' gets no fix */
    TSNode args = py_call_arguments(n);
    if (!py_is(args, "argument_list") || ts_node_child_count(args) == 0) return true;
    TSNode close = ts_node_child(args, ts_node_child_count(args) - 1);
    if (ts_node_is_missing(close) || !text_is(ctx->py, close, ")")) return true;
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
    if (!ctx->py->uses_gpu) return;
    rule_walk(ctx, visit, ctx);
}

const Rule rule_py008_unfused_optimizer = {
    .code = "PY008",
    .name = "unfused-optimizer",
    .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON,
    .summary = "Adam/AdamW/SGD on CUDA without fused=True",
    .documentation = documentation,
    .check = check,
    .measure = MEASURE_OPTIMIZER,
};
