/* PR015 memory-peak-holder: a line whose tensors hold a large share of the
 * device memory live at the run's peak, with what would free it. Needs a
 * profile recorded with `advise profile --memory`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/units.h"
#include "rules/measure/profile_facts.h"
#include "rules/profile/support/memory_lines.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile recorded with `advise profile --memory` (a PyTorch program). Reports a line\n"
    "whose tensors, allocated there and still alive, hold at least 10% of the device memory in\n"
    "use at the run's peak and at least 64 MiB (67.1 MB):\n"
    "\n"
    "`tensors allocated here hold 2.10 GiB at the memory peak (35% of the 6.00 GiB allocated, 12.3 s into the run)`\n"
    "\n"
    "A tensor counts for the innermost line of the project on the stack that allocated it: for\n"
    "a layer of `torch.nn`, the line of your model that called it. The peak is the highest point\n"
    "of allocated memory in the recorded window of PyTorch's allocator history (the evidence\n"
    "says when that window did not cover the whole run).\n"
    "\n"
    "## Why does this matter?\n"
    "The peak decides whether a batch size fits and how close the run is to an out-of-memory\n"
    "error. Most of it is usually activations kept for the backward pass, weights, gradients and\n"
    "optimizer state. The lines that hold most at the peak are where a change frees most.\n"
    "\n"
    "## Use instead\n"
    "Depending on what the line holds:\n"
    "- activations of a module's `forward`: activation checkpointing\n"
    "  (`torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)`) keeps only the\n"
    "  block's inputs and recomputes the rest in backward (about a third more compute for the\n"
    "  block); bf16 autocast halves fp32 activations;\n"
    "- everything that scales with the batch: a smaller micro-batch with gradient accumulation\n"
    "  (the same effective batch) divides it;\n"
    "- a forward pass that needs no gradients (evaluation, inference): `torch.no_grad()` or\n"
    "  `torch.inference_mode()` keeps no activations at all (PY010);\n"
    "- a tensor kept after its last use: `del` it, or let it go out of scope before the next\n"
    "  large allocation.\n"
    "\n"
    "## The numbers\n"
    "Measured: the line's live bytes at the peak, the peak and when it happened, summed over the\n"
    "processes and devices of the run (the share is of the device where the line holds most).\n"
    "The saving is a model: for a line inside a `forward` method, activation checkpointing of\n"
    "that module frees up to all of the line's bytes at the peak (an upper bound: the module's\n"
    "inputs stay, and one block is recomputed at a time); elsewhere, halving the micro-batch\n"
    "frees about half of them (the batch-sized part; weights and optimizer state do not\n"
    "shrink). Severity is info, warning at 25% of the peak or more.\n";

#define MIN_SHARE 0.10
#define MIN_BYTES (64ull << 20)
#define WARN_SHARE 0.25

static bool in_forward(const ProfSite *s) { return s->function && strcmp(s->function, "forward") == 0; }

static void report(RuleContext *ctx, const MemLine *l) {
    const ProfMemory *m = l->memory;
    char held[UNITS_BUF], peak[UNITS_BUF], share[UNITS_BUF], when[UNITS_BUF];
    double ratio = m->peak_allocated ? (double)l->memory_bytes / m->peak_allocated : 0;
    Finding *f = pf_report_line(ctx, l->line,
                                "tensors allocated here hold %s at the memory peak (%s of the %s allocated, %s into "
                                "the recorded window)",
                                units_bytes(l->bytes, held, sizeof held), units_ratio(ratio, share, sizeof share),
                                units_bytes(m->peak_allocated, peak, sizeof peak),
                                units_ns(m->peak_time_ns, when, sizeof when));
    if (!f) return;
    if (ratio >= WARN_SHARE) f->severity = SEVERITY_WARNING;
    bool ok = finding_measured(f, QV(q_bytes(l->bytes), q_bytes(m->peak_allocated), q_bytes(m->peak_reserved)),
                               "live at the peak from this line: {}; allocated in all then: {}, reserved by "
                               "PyTorch's caching allocator: {}");
    if (ok && !m->window_complete)
        ok = finding_measured(f, QV(q_count(m->events), q_bytes(m->max_allocated)),
                              "the allocator history kept the last {} events, not the whole run; the run's own "
                              "peak was {}");
    if (ok && in_forward(l->site))
        ok = finding_model(f, QV(q_bytes(l->bytes)),
                           "activations of a module's forward: activation checkpointing of that module "
                           "(torch.utils.checkpoint) frees up to {} at the peak, for about a third more compute "
                           "in its backward; bf16 autocast would halve fp32 activations");
    else if (ok)
        ok = finding_model(f, QV(q_bytes(l->bytes / 2)),
                           "halving the micro-batch (with 2 steps of gradient accumulation for the same effective "
                           "batch) frees about {}, if what this line holds scales with the batch; `del` what is no "
                           "longer used, or `torch.no_grad()` where no gradient is needed");
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    size_t n;
    MemLine *lines = mem_lines_of_document(ctx, PROF_MEM_LINE_PEAK, &n);
    for (size_t i = 0; i < n && !ctx->out_of_memory; i++) {
        const MemLine *l = &lines[i];
        if (!l->memory || !l->memory->peak_allocated || l->bytes < MIN_BYTES) continue;
        if ((double)l->memory_bytes < MIN_SHARE * (double)l->memory->peak_allocated) continue;
        report(ctx, l);
    }
    free(lines);
}

const Rule rule_pr015_memory_peak_holder = {
    .code = "PR015", .name = "memory-peak-holder", .severity = SEVERITY_INFO, .languages = LANGUAGE_PYTHON,
    .check_profile = check_profile,
    .summary = "Tensors allocated at this line hold 10% or more of the device memory at the run's peak (profile, --memory)",
    .documentation = documentation};
