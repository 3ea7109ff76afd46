/* PR020 output-kept-alive: a variable in a training loop keeps the previous
 * step's output (or another large tensor) alive through the next step's
 * forward, where the memory peak is. Needs a profile recorded with
 * `advise profile --memory`: its "kept" lines say which line freed memory
 * carried over from an earlier step; the code says which variable did it
 * and where its last read is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/python/python_lifetime.h"
#include "analysis/python/python_query.h"
#include "analysis/units.h"
#include "rules/measure/profile_facts.h"
#include "rules/profile/support/memory_lines.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile recorded with `advise profile --memory` of a PyTorch program that steps a\n"
    "`torch.optim` optimizer. The recorder notes which tensors alive at the memory peak were\n"
    "allocated before the optimizer step that preceded the peak, and the line that freed them\n"
    "later. When that line is an assignment in a loop, such as `out = model(x)`, the old value\n"
    "stayed bound to its variable until the same line ran again: through the next step's\n"
    "forward pass. PR020 reports the assignment when that memory is at least 5% of the peak and\n"
    "at least 16 MiB (16.8 MB), and the code shows the variable is not needed between its last\n"
    "read in one iteration and its rebinding in the next:\n"
    "\n"
    "`out keeps the previous step's tensors alive into the next step: 1.07 GB of them were live at the memory peak (15%); del out after line 23`\n"
    "\n"
    "It stays silent when the variable is read before the assignment in the loop (the value is\n"
    "carried into the next iteration, like an RNN's hidden state), read after the loop (the\n"
    "last output is used), bound elsewhere in the loop, used by a nested function, declared\n"
    "global or nonlocal, or when the assignment runs only on some iterations (under an `if`).\n"
    "\n"
    "## Why does this matter?\n"
    "A name keeps its tensor alive until it is rebound. In `for x, y in loader: out = model(x)`\n"
    "the previous step's `out` is released only after the new forward has built the new one, so\n"
    "at the peak both are alive. For a language model's logits (batch × sequence × vocabulary)\n"
    "that is often the largest single tensor of the step.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "for x, y in loader:\n"
    "    out = model(x)                    # PR020: keeps the previous out alive\n"
    "    loss = F.cross_entropy(out, y)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    opt.zero_grad()\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "for x, y in loader:\n"
    "    out = model(x)\n"
    "    loss = F.cross_entropy(out, y)\n"
    "    del out                           # not needed after the loss\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    opt.zero_grad()\n"
    "```\n"
    "Or compute the step in a function, whose locals go when it returns.\n"
    "\n"
    "## Fix safety\n"
    "The fix inserts `del NAME` after the statement that holds the variable's last read in the\n"
    "iteration, at that statement's indentation. It is offered only when the analysis above\n"
    "shows no later read: in the rest of the iteration, in the next iteration before the\n"
    "rebinding, after the loop, or from a nested function. It is safe.\n"
    "\n"
    "## The numbers\n"
    "Measured: the bytes alive at the peak that an earlier step allocated and this line freed,\n"
    "and how many tensors. The saving is a model: deleting the variable after its last read frees\n"
    "them before the peak, so the peak falls by up to those bytes (less if another moment of the\n"
    "step then becomes the peak). Severity is info, warning at 20% of the peak or more.\n";

#define MIN_SHARE 0.05
#define MIN_BYTES (16ull << 20)
#define WARN_SHARE 0.20

/* The assignment statement at a line: the statement that holds the line's first token. */
static TSNode statement_at_line(const RuleContext *ctx, uint32_t line) {
    TSNode null = {0};
    size_t start, end;
    if (!ctx->py || !ctx->py->tree || !pf_line_range(ctx->doc, line, &start, &end)) return null;
    while (start < end && (ctx->doc->text[start] == ' ' || ctx->doc->text[start] == '\t')) start++;
    if (start >= end) return null;
    TSNode n = ts_node_descendant_for_byte_range(ts_tree_root_node(ctx->py->tree), (uint32_t)start, (uint32_t)start);
    return ts_node_is_null(n) ? null : py_statement_of(n);
}

/* Where `del` goes: the end of the line where `after` ends, when nothing but a comment follows it there. */
static bool insertion_point(const RuleContext *ctx, TSNode after, size_t *at) {
    const char *text = ctx->doc->text;
    size_t i = ts_node_end_byte(after), n = ctx->doc->length;
    while (i < n && (text[i] == ' ' || text[i] == '\t')) i++;
    if (i < n && text[i] == '#')
        while (i < n && text[i] != '\n' && text[i] != '\r') i++;
    if (i < n && text[i] != '\n' && text[i] != '\r') return false; /* `a; b` */
    *at = i;
    return true;
}

typedef struct {
    char names[128];       /* "out" or "logits, aux" */
    TSNode after;          /* the statement after which they are dead */
} Deletable;

/* Every name the statement binds is dead until it is rebound, all after the same statement. */
static bool deletable(const RuleContext *ctx, TSNode stmt, Deletable *d) {
    TSNode names[PY_BOUND_NAMES_MAX];
    size_t n = py_assignment_names(stmt, names, PY_BOUND_NAMES_MAX);
    if (!n) return false;
    d->names[0] = '\0';
    d->after = (TSNode){0};
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        TSNode after;
        if (py_text_eq(ctx->py, names[i], "_") || !py_dead_until_rebound(ctx->py, stmt, names[i], &after)) return false;
        if (ts_node_is_null(d->after) || ts_node_end_byte(after) > ts_node_end_byte(d->after)) d->after = after;
        int w = snprintf(d->names + used, sizeof d->names - used, "%s%.*s", i ? ", " : "",
                         (int)py_text_len(names[i]), py_text_ptr(ctx->py, names[i]));
        if (w < 0 || (size_t)w >= sizeof d->names - used) return false;
        used += (size_t)w;
    }
    return true;
}

static void add_fix(RuleContext *ctx, Finding *f, const Deletable *d) {
    size_t at;
    if (!insertion_point(ctx, d->after, &at)) return;
    char indent[128], text[320], title[200];
    py_line_indent(ctx->py, ts_node_start_byte(d->after), indent, sizeof indent);
    const char *newline = at > 0 && at < ctx->doc->length && ctx->doc->text[at] == '\r' ? "\r\n" : "\n";
    snprintf(text, sizeof text, "%s%sdel %s", newline, indent, d->names);
    snprintf(title, sizeof title, "Delete %s after its last use", d->names);
    Fix *fix = finding_add_fix(f, title, true);
    if (!fix || !fix_add_edit(fix, at, at, text)) ctx->out_of_memory = true;
}

static void report(RuleContext *ctx, const MemLine *l, TSNode stmt, const Deletable *d) {
    const ProfMemory *m = l->memory;
    char held[UNITS_BUF], share[UNITS_BUF];
    double ratio = (double)l->memory_bytes / (double)m->peak_allocated;
    uint32_t after_line = ts_node_end_point(d->after).row + 1;
    TSNode target = ts_node_child_by_field_name(ts_node_named_child(stmt, 0), "left", 4);
    Finding *f = rule_report_node(ctx, target,
                                  "%s keeps the previous step's tensors alive into the next step: %s of them were "
                                  "live at the memory peak (%s); del %s after line %u",
                                  d->names, units_bytes(l->bytes, held, sizeof held),
                                  units_ratio(ratio, share, sizeof share), d->names, after_line);
    if (!f) return;
    if (ratio >= WARN_SHARE) f->severity = SEVERITY_WARNING;
    bool ok = finding_measured(f, QV(q_bytes(l->bytes), q_count(l->count), q_bytes(m->peak_allocated)),
                               "alive at the peak, allocated before the optimizer step that preceded it and freed "
                               "here: {} ({} %s); allocated in all at the peak: {}",
                               l->count == 1 ? "tensor" : "tensors");
    if (ok)
        ok = finding_model(f, QV(q_bytes(l->bytes)),
                           "deleting the variable after its last read frees them before the next forward: the peak "
                           "falls by up to {}");
    if (!ok) {
        ctx->out_of_memory = true;
        return;
    }
    add_fix(ctx, f, d);
}

static void check_profile(RuleContext *ctx) {
    size_t n;
    MemLine *lines = mem_lines_of_document(ctx, PROF_MEM_LINE_KEPT, &n);
    for (size_t i = 0; i < n && !ctx->out_of_memory; i++) {
        const MemLine *l = &lines[i];
        if (!l->memory || !l->memory->peak_allocated || l->bytes < MIN_BYTES) continue;
        if ((double)l->memory_bytes < MIN_SHARE * (double)l->memory->peak_allocated) continue;
        TSNode stmt = statement_at_line(ctx, l->line);
        Deletable d;
        if (!ts_node_is_null(stmt) && deletable(ctx, stmt, &d)) report(ctx, l, stmt, &d);
    }
    free(lines);
}

const Rule rule_pr020_output_kept_alive = {
    .code = "PR020", .name = "output-kept-alive", .severity = SEVERITY_INFO, .languages = LANGUAGE_PYTHON,
    .check_profile = check_profile, .whole_file = true,
    .summary = "A loop variable keeps the previous step's tensors alive through the next forward (profile, --memory)",
    .documentation = documentation};
