/* PR015 memory-peak-holder: a line whose tensors hold a large share of the
 * device memory live at the run's peak, with what would free it. Needs a
 * profile recorded with `advise profile --memory`. In Python files it reads
 * PyTorch's entries (tensors); in CUDA files CUPTI's (cudaMalloc and friends,
 * profiler/mem_trace.h), with fixes for raw device buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/units.h"
#include "profiler/profile_view.h"
#include "rules/measure/profile_facts.h"
#include "rules/profile/support/memory_lines.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile recorded with `advise profile --memory`. Reports a line whose memory,\n"
    "allocated there and still alive, holds at least 10% of the device memory in use at the\n"
    "run's peak and at least 64 MiB (67.1 MB):\n"
    "\n"
    "`tensors allocated here hold 2.10 GiB at the memory peak (35% of the 6.00 GiB allocated, 12.3 s into the run)`\n"
    "\n"
    "In a PyTorch program (Python files) the memory is PyTorch's tensors: a tensor counts for the\n"
    "innermost line of the project on the stack that allocated it: for a layer of `torch.nn`, the\n"
    "line of your model that called it. The peak is the highest point of allocated memory in the\n"
    "recorded window of PyTorch's allocator history (the evidence says when that window did not\n"
    "cover the whole run).\n"
    "\n"
    "In CUDA C++ files the memory is the program's own device allocations (`cudaMalloc`,\n"
    "`cudaMallocAsync`, `cuMemAlloc` and friends), recorded through CUPTI for every process without\n"
    "PyTorch's history; pinned host and managed memory are left out. A buffer counts for the line\n"
    "that allocated it, and the peak is the highest point of live device allocations in the run:\n"
    "\n"
    "`device buffers allocated here hold 268 MB at the memory peak (73% of the 369 MB allocated, 260 µs into the run)`\n"
    "\n"
    "## Why does this matter?\n"
    "The peak decides whether a batch size fits and how close the run is to an out-of-memory\n"
    "error. Most of it is usually activations kept for the backward pass, weights, gradients and\n"
    "optimizer state. The lines that hold most at the peak are where a change frees most.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "class Block(nn.Module):\n"
    "    def forward(self, x):\n"
    "        h = self.up(x)            # PR015: 1.28 GB live at the peak (37%)\n"
    "        return x + self.down(F.gelu(h))\n"
    "```\n"
    "\n"
    "```cuda\n"
    "for (int step = 0; step < steps; ++step) {\n"
    "    cudaMalloc(&act, 256 << 20);   // PR015: 268 MB live at the peak (73%)\n"
    "    cudaMalloc(&tmp, 32 << 20);\n"
    "    ...\n"
    "    cudaFree(tmp);\n"
    "    cudaFree(act);\n"
    "}\n"
    "```\n"
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
    "In CUDA C++:\n"
    "- a buffer kept after its last kernel: `cudaFree` it (or `cudaFreeAsync` on its stream) as\n"
    "  soon as that kernel is queued, before the next large allocation, or reuse it for the\n"
    "  buffer allocated at the peak;\n"
    "- a buffer sized for the whole problem: process the data in chunks through a smaller buffer,\n"
    "  or store a smaller element type (`__half` or `__nv_bfloat16` instead of `float`);\n"
    "- buffers allocated and freed in a loop: allocate once before the loop and reuse, or use\n"
    "  `cudaMallocAsync`/`cudaFreeAsync` with a memory pool, which hands freed blocks back in\n"
    "  stream order instead of holding several at once.\n"
    "\n"
    MEMORY_RULE_FIX_SAFETY
    "## The numbers\n"
    "Measured: the line's live bytes at the peak, the peak and when it happened, summed over the\n"
    "processes and devices of the run (the share is of the device where the line holds most),\n"
    "and the line that freed most of them after the peak: what kept them alive until then (a\n"
    "free with no project frame on its stack, such as autograd's backward thread releasing\n"
    "saved activations, names no line).\n"
    "The saving is a model, chosen by where the line is:\n"
    "- an optimizer's `step()` (its state): an 8-bit optimizer keeps a quarter, saving 3/4;\n"
    "- inside a `forward` method: activation checkpointing of that module frees up to all of the\n"
    "  line's bytes at the peak (an upper bound: the module's inputs stay, and one block is\n"
    "  recomputed at a time);\n"
    "- inside a loop: halving the micro-batch frees about half (the batch-sized part);\n"
    "- `.cuda()` or `.to()` outside loops (weights, data kept on the device): bf16 halves fp32;\n"
    "- anything else outside loops: `del` frees all of it, if it is no longer needed by then.\n"
    "In CUDA C++: inside a loop, processing the data in two chunks frees about half; outside\n"
    "loops, freeing the buffer before the peak frees all of it, if it is no longer needed by then.\n"
    "Severity is info, warning at 25% of the peak or more.\n";

#define MIN_SHARE 0.10
#define MIN_BYTES (64ull << 20)
#define WARN_SHARE 0.25

/* What a line's memory most likely is, from where the line is: that decides the fix. */
typedef enum {
    HOLDS_OPTIMIZER_STATE, /* `opt.step()`: Adam-style state, created at the first step and kept */
    HOLDS_ACTIVATIONS,     /* a module's forward */
    HOLDS_PER_STEP,        /* in a loop: scales with the batch */
    HOLDS_MOVED_ONCE,      /* `.cuda()`/`.to()` outside loops: weights or data kept for the run */
    HOLDS_ALLOCATED_ONCE,  /* anything else outside loops */
} Holds;

static bool line_has(const RuleContext *ctx, uint32_t line, const char *needle) {
    size_t start, end;
    if (!pf_line_range(ctx->doc, line, &start, &end)) return false;
    size_t n = strlen(needle);
    for (size_t i = start; i + n <= end; i++)
        if (memcmp(ctx->doc->text + i, needle, n) == 0) return true;
    return false;
}

static Holds holds_of(const RuleContext *ctx, const MemLine *l) {
    if (line_has(ctx, l->line, ".step(")) return HOLDS_OPTIMIZER_STATE;
    if (l->site->function && strcmp(l->site->function, "forward") == 0) return HOLDS_ACTIVATIONS;
    if (pf_line_in_loop(ctx, l->line)) return HOLDS_PER_STEP;
    if (line_has(ctx, l->line, ".cuda(") || line_has(ctx, l->line, ".to(")) return HOLDS_MOVED_ONCE;
    return HOLDS_ALLOCATED_ONCE;
}

/* The fix for what the line holds, with its saving model. */
static bool advise_fix(Finding *f, Holds holds, uint64_t bytes) {
    switch (holds) {
    case HOLDS_OPTIMIZER_STATE:
        return finding_model(f, QV(q_bytes(bytes - bytes / 4)),
                             "optimizer state, created at the first step and kept (Adam-style optimizers keep two "
                             "fp32 tensors per parameter): an 8-bit optimizer keeps a quarter of it, saving about {}; "
                             "sharding it across GPUs (ZeroRedundancyOptimizer, FSDP) divides it by their number");
    case HOLDS_ACTIVATIONS:
        return finding_model(f, QV(q_bytes(bytes)),
                             "activations of a module's forward: activation checkpointing of that module "
                             "(torch.utils.checkpoint) frees up to {} at the peak, for about a third more compute "
                             "in its backward; bf16 autocast would halve fp32 activations");
    case HOLDS_PER_STEP:
        return finding_model(f, QV(q_bytes(bytes / 2)),
                             "halving the micro-batch (with 2 steps of gradient accumulation for the same effective "
                             "batch) frees about {}, if what this line holds scales with the batch; `del` what is no "
                             "longer used, or `torch.no_grad()` where no gradient is needed");
    case HOLDS_MOVED_ONCE:
        return finding_model(f, QV(q_bytes(bytes / 2)),
                             "moved to the GPU once and kept (weights, or data kept on the device): bf16 halves fp32 "
                             "tensors, about {}; data can stay on the host and move batch by batch");
    case HOLDS_ALLOCATED_ONCE:
        break;
    }
    return finding_model(f, QV(q_bytes(bytes)),
                         "allocated outside any loop and alive at the peak: if it is no longer needed by then, "
                         "`del` it (or let it go out of scope) to free up to {}");
}

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
    if (ok && l->freed && l->freed->file == l->site->file && l->freed->line == l->line) {
        ok = finding_measured(f, QV(q_bytes(l->freed_bytes)),
                              "{} of it was freed by this same line after the peak: temporaries of its own statement");
    } else if (ok && l->freed) {
        const Profile *p = profile_view_profile(ctx->profile);
        ok = finding_measured(f, QV(q_bytes(l->freed_bytes)),
                              "{} of it was freed after the peak at %s:%u, which kept it alive until then",
                              p->files[l->freed->file].path, l->freed->line);
    }
    if (ok) ok = advise_fix(f, holds_of(ctx, l), l->bytes);
    if (!ok) ctx->out_of_memory = true;
}

/* CUDA C++: device buffers from cudaMalloc and friends (CUPTI's memory entries). */
static void report_cuda(RuleContext *ctx, const MemLine *l) {
    const ProfMemory *m = l->memory;
    char held[UNITS_BUF], peak[UNITS_BUF], share[UNITS_BUF], when[UNITS_BUF];
    double ratio = m->peak_allocated ? (double)l->memory_bytes / m->peak_allocated : 0;
    Finding *f = pf_report_line(ctx, l->line,
                                "device buffers allocated here hold %s at the memory peak (%s of the %s allocated, %s "
                                "into the run)",
                                units_bytes(l->bytes, held, sizeof held), units_ratio(ratio, share, sizeof share),
                                units_bytes(m->peak_allocated, peak, sizeof peak),
                                units_ns(m->peak_time_ns, when, sizeof when));
    if (!f) return;
    if (ratio >= WARN_SHARE) f->severity = SEVERITY_WARNING;
    bool ok = finding_measured(f, QV(q_bytes(l->bytes), q_bytes(m->peak_allocated)),
                               "live at the peak from this line: {}; device memory allocated in all then (cudaMalloc "
                               "and friends): {}");
    if (ok && pf_line_in_loop(ctx, l->line))
        ok = finding_model(f, QV(q_bytes(l->bytes / 2)),
                           "allocated in a loop and alive at the peak: processing the data in two chunks through a "
                           "buffer half the size frees about {}, if the work can be split; freeing it (cudaFreeAsync "
                           "on its stream) as soon as its last kernel is queued keeps it out of later peaks, and a "
                           "stream-ordered pool (cudaMallocAsync/cudaFreeAsync) hands the freed block to the next "
                           "iteration's allocation");
    else if (ok)
        ok = finding_model(f, QV(q_bytes(l->bytes)),
                           "allocated outside any loop and alive at the peak: if it is no longer needed by then, "
                           "cudaFree it (or cudaFreeAsync on its stream) before the peak's allocations, or reuse it "
                           "for them, to free up to {}; a half-precision element type would halve it");
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    size_t n;
    /* Python: PyTorch's tensors; CUDA C++: the program's own device allocations */
    bool cuda = ctx->doc->language == LANGUAGE_CUDA;
    MemLine *lines = mem_lines_of_document_from(ctx, PROF_MEM_LINE_PEAK,
                                                cuda ? PROF_MEM_SOURCE_CUPTI : PROF_MEM_SOURCE_TORCH, &n);
    for (size_t i = 0; i < n && !ctx->out_of_memory; i++) {
        const MemLine *l = &lines[i];
        if (!l->memory || !l->memory->peak_allocated || l->bytes < MIN_BYTES) continue;
        if ((double)l->memory_bytes < MIN_SHARE * (double)l->memory->peak_allocated) continue;
        if (cuda) report_cuda(ctx, l);
        else report(ctx, l);
    }
    free(lines);
}

const Rule rule_pr015_memory_peak_holder = {
    .code = "PR015", .name = "memory-peak-holder", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile,
    .summary = "Memory allocated at this line (tensors, or cudaMalloc'd buffers) holds 10% or more of the device "
               "memory at the run's peak (profile, --memory)",
    .documentation = documentation};
