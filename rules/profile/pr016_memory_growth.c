/* PR016 memory-growth: live memory allocated at a line rises from one
 * optimizer step to the next: something keeps each step's tensors alive.
 * Needs a profile recorded with `advise profile --memory`. */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/units.h"
#include "profiler/profile_view.h"
#include "rules/measure/profile_facts.h"
#include "rules/profile/support/memory_lines.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile recorded with `advise profile --memory` of a PyTorch program that steps a\n"
    "`torch.optim` optimizer. At the end of each step the recorder notes, per allocating line,\n"
    "the bytes still alive. A line is reported when over the last steps of the recorded window\n"
    "(up to 32, at least 4) its live bytes rose at three steps in four or more, by at least\n"
    "1 MiB (1.05 MB) per step on average:\n"
    "\n"
    "`live memory allocated here grows by 101 MB per optimizer step (over the last 32 steps)`\n"
    "\n"
    "## Why does this matter?\n"
    "Memory that grows every step ends in an out-of-memory error, hours into a run. The usual\n"
    "cause is a tensor that carries autograd history kept across steps: `total_loss += loss` or\n"
    "`losses.append(loss)` keeps each step's whole graph, with every activation this line\n"
    "allocated (PY015 finds these in the code). Outputs appended to a list, caches that are\n"
    "never cleared and `backward(retain_graph=True)` (PY016) do the same.\n"
    "\n"
    "The line reported is where the memory was allocated, which is often a layer of the model;\n"
    "what keeps it alive is elsewhere, usually in the training loop.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "for x, y in loader:\n"
    "    ...\n"
    "    val_total += F.cross_entropy(model(xv), yv)   # keeps each step's graph (PY015)\n"
    "```\n"
    "PR016 then points at the model's lines whose activations that graph keeps.\n"
    "\n"
    "## Use instead\n"
    "Keep numbers, not graphs: `total_loss += loss.item()`, `losses.append(loss.detach())` (or\n"
    "`.item()`), `outputs.append(out.detach().cpu())`. Clear caches each step.\n"
    "\n"
    MEMORY_RULE_FIX_SAFETY
    "## The numbers\n"
    "Measured: bytes per step = (live bytes at the last step's end − at the first's) ÷ steps, and\n"
    "the steps measured. When the profile knows the device's memory, the number of steps until\n"
    "the growth fills what the run had not reserved is a model (growth continues at the same\n"
    "rate). The saving is what the growth had accumulated by the end of the window: bytes per\n"
    "step × the steps in the window. Severity is warning.\n";

#define MIN_BYTES_PER_STEP (1ull << 20)
#define MIN_STEPS 4

static void report(RuleContext *ctx, const MemLine *l) {
    const ProfMemory *m = l->memory;
    char rate[UNITS_BUF];
    Finding *f = pf_report_line(ctx, l->line,
                                "live memory allocated here grows by %s per optimizer step (over the last %llu steps): "
                                "something keeps each step's tensors alive, such as a loss or output kept with its "
                                "autograd graph",
                                units_bytes(l->bytes, rate, sizeof rate), (unsigned long long)l->count);
    if (!f) return;
    f->severity = SEVERITY_WARNING;
    bool ok = finding_measured(f, QV(q_bytes(l->bytes), q_count(l->count), q_count(m->steps)),
                               "{} more alive after each step, measured over {} steps ({} steps in the run)");
    const ProfDevice *dev = ctx->profile ? profile_view_device(ctx->profile) : NULL;
    if (ok && dev && dev->memory_bytes > m->max_reserved && l->memory_bytes)
        ok = finding_model(f, QV(q_bytes(dev->memory_bytes - m->max_reserved),
                                 q_count((dev->memory_bytes - m->max_reserved) / l->memory_bytes)),
                           "the {} the run left unreserved on the device last about {} more steps at this rate");
    uint64_t in_window = m->steps_in_window ? m->steps_in_window : l->count;
    if (ok)
        ok = finding_model(f, QV(q_bytes(l->bytes * in_window)),
                           "keeping numbers or detached tensors instead frees what had accumulated: about {} by the "
                           "end of the recorded window");
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    size_t n;
    MemLine *lines = mem_lines_of_document(ctx, PROF_MEM_LINE_GROWTH, &n);
    for (size_t i = 0; i < n && !ctx->out_of_memory; i++)
        if (lines[i].memory && lines[i].bytes >= MIN_BYTES_PER_STEP && lines[i].count >= MIN_STEPS)
            report(ctx, &lines[i]);
    free(lines);
}

const Rule rule_pr016_memory_growth = {
    .code = "PR016", .name = "memory-growth", .severity = SEVERITY_WARNING, .languages = LANGUAGE_PYTHON,
    .check_profile = check_profile,
    .summary = "Live memory allocated at this line grows from one optimizer step to the next (profile, --memory)",
    .documentation = documentation};
