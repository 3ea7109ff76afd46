/* PY012 ddp-find-unused-parameters: DistributedDataParallel built with
 * find_unused_parameters=True, which costs a graph traversal and extra
 * synchronization in every backward pass. */
#include <string.h>

#include "rules/rule.h"
#include "rules/python/support/ddp_calls.h"
#include "analysis/python/python_index.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `torch.nn.parallel.DistributedDataParallel(..., find_unused_parameters=True)`,\n"
    "through any import alias (`from torch.nn.parallel import DistributedDataParallel as\n"
    "DDP`, `nn.parallel.DistributedDataParallel`, ...).\n"
    "\n"
    "Not flagged: `find_unused_parameters=False`, a value the code does not spell as the\n"
    "literal `True` (`find_unused_parameters=args.unused`: it may well be False), DDP\n"
    "without the keyword, other functions that take a keyword of that name, and a\n"
    "`DistributedDataParallel` the file defines or assigns itself.\n"
    "\n"
    "## Why is this slow?\n"
    "With `find_unused_parameters=True`, DDP walks the autograd graph from the forward\n"
    "pass's outputs after every forward, to mark the parameters that will get no gradient,\n"
    "so that the gradient all-reduce does not wait for them forever. That traversal costs\n"
    "host time every step, and because which parameters are used may change from step to\n"
    "step, the reducer has to exchange that information between the processes and cannot\n"
    "rely on its buckets being filled in a fixed order, which delays the overlap of\n"
    "communication with the backward pass. The cost shows up in `backward()`, not at this\n"
    "line. It is only needed when some parameters really go unused in a forward pass\n"
    "(conditional branches, frozen heads, mixture-of-experts routing); many scripts set\n"
    "it \"to be safe\".\n"
    "\n"
    "## Example\n"
    "```python\n"
    "model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "model = DDP(model, device_ids=[local_rank])\n"
    "```\n"
    "If every forward pass uses the same parameters but some never get a gradient,\n"
    "remove or freeze them (`requires_grad_(False)`) instead; if the set of used\n"
    "parameters is fixed but the graph is unusual, `static_graph=True` lets DDP learn it\n"
    "once.\n"
    "\n"
    "## Fix safety\n"
    "The fix removes the keyword and is unsafe: when some parameters really receive no\n"
    "gradient, DDP then stops with an error in the next iteration (\"Expected to have\n"
    "finished reduction in the prior iteration before starting a new one\"), so the\n"
    "program must be run once after the change.\n";

/* the argument before `arg` (comments skipped), or a null node */
static TSNode previous_argument(TSNode arg) {
    TSNode p = ts_node_prev_named_sibling(arg);
    while (!ts_node_is_null(p) && py_is(p, "comment")) p = ts_node_prev_named_sibling(p);
    return p;
}

/* The text to delete to remove the keyword argument `kw` from its call:
 * - on a line of its own: the whole line, trailing comma and comment included;
 * - after another argument: from the end of that argument, with the comma;
 * - first (and inline): the keyword, its comma and the spaces after it.
 * Returns false when no clean edit is seen. */
static bool removal_range(const PySource *src, TSNode kw, size_t *start, size_t *end) {
    const char *text = src->doc->text;
    size_t len = src->doc->length;
    size_t kw_start = ts_node_start_byte(kw), kw_end = ts_node_end_byte(kw);

    /* what follows on the keyword's line: optional comma, spaces, a comment */
    size_t after = kw_end;
    while (after < len && (text[after] == ' ' || text[after] == '\t')) after++;
    size_t after_comma = after;
    if (after < len && text[after] == ',') after_comma = after + 1;
    size_t rest = after_comma;
    while (rest < len && (text[rest] == ' ' || text[rest] == '\t')) rest++;
    if (rest < len && text[rest] == '#')
        while (rest < len && text[rest] != '\n') rest++;

    size_t line_start = kw_start;
    while (line_start > 0 && (text[line_start - 1] == ' ' || text[line_start - 1] == '\t')) line_start--;
    bool starts_line = line_start == 0 || text[line_start - 1] == '\n';
    bool ends_line = rest >= len || text[rest] == '\n' || text[rest] == '\r';

    if (starts_line && ends_line) {
        *start = line_start;
        *end = rest;
        if (*end < len && text[*end] == '\r') (*end)++;
        if (*end < len && text[*end] == '\n') (*end)++;
        return true;
    }
    TSNode prev = previous_argument(kw);
    if (!ts_node_is_null(prev)) {
        /* a comment between the two would go with the comma: no fix */
        if (!ts_node_eq(ts_node_prev_named_sibling(kw), prev)) return false;
        /* `, find_unused_parameters=True` */
        *start = ts_node_end_byte(prev);
        *end = kw_end;
        return true;
    }
    if (after_comma > after) { /* `find_unused_parameters=True, ` before the others */
        *start = kw_start;
        *end = rest;
        if (rest < len && text[rest] == '#') return false;
        return true;
    }
    /* the only argument */
    *start = kw_start;
    *end = kw_end;
    return true;
}

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    const PySource *src = ctx->py;
    if (!py_constructs_ddp(src, n)) return true;
    TSNode kw = py_call_keyword_argument(src, n, "find_unused_parameters");
    if (ts_node_is_null(kw)) return true;
    TSNode value = ts_node_child_by_field_name(kw, "value", 5);
    if (ts_node_is_null(value) || !py_text_eq(src, value, "True")) return true;
    TSNode callee = ts_node_child_by_field_name(n, "function", 8);
    if (py_callee_shadowed(src, n, callee)) return true;
    Finding *f = rule_report_node(ctx, kw,
                                  "find_unused_parameters=True makes DDP traverse the autograd graph and "
                                  "synchronize the unused parameters every iteration; only needed when some "
                                  "parameters really get no gradient");
    if (!f || src->has_errors) return true;
    size_t start, end;
    if (!removal_range(src, kw, &start, &end)) return true;
    Fix *fix = finding_add_fix(f, "Remove find_unused_parameters=True", false);
    if (fix) fix_add_edit(fix, start, end, "");
    return true;
}

static void check(RuleContext *ctx) { rule_walk(ctx, visit, ctx); }

const Rule rule_py012_ddp_find_unused_parameters = {
    .code = "PY012", .name = "ddp-find-unused-parameters", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON, .check = check,
    .measure = MEASURE_COMM, /* its cost shows in backward(), where the all-reduce runs */
    .summary = "DistributedDataParallel with find_unused_parameters=True",
    .documentation = documentation};
