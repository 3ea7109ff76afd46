/* PR018 out-of-memory: an allocation failed at this line during the
 * profiled run, with what was alive then. Needs a profile recorded with
 * `advise profile --memory`. */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/units.h"
#include "profiler/profile_view.h"
#include "rules/measure/profile_facts.h"
#include "rules/profile/support/memory_lines.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile recorded with `advise profile --memory`. When an allocation failed with an\n"
    "out-of-memory error during the run, reports the line that asked for it (the innermost line\n"
    "of the project on its stack), how much it asked for, how much the device had free, and the\n"
    "lines whose tensors held the most memory at that moment. In a CUDA program (memory from\n"
    "CUPTI: `cudaMalloc` and friends), the call that returned `cudaErrorMemoryAllocation` or\n"
    "`CUDA_ERROR_OUT_OF_MEMORY`, with the device buffers live then; the device's free memory is\n"
    "not known there:\n"
    "\n"
    "`an allocation of 4.29 GB failed here (out of memory) with 1.29 GB free on the device; 75.2 GB was allocated, most of it from train.py:41 (40.8 GB)`\n"
    "\n"
    "## Why does this matter?\n"
    "The failing line is only where memory ran out; what fills it is what is alive at that\n"
    "moment. The lines listed are where that memory was allocated: the places to free it.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "loss.backward()      # PR018: an allocation of 4.29 GB failed here (out of memory)\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "See PR015 (the lines holding the most at the peak) and PR016 (memory growing step after\n"
    "step) for the fixes: a smaller micro-batch with gradient accumulation, activation\n"
    "checkpointing, `torch.no_grad()` where no gradient is needed, `.item()`/`.detach()` for\n"
    "values kept across steps, and `expandable_segments` against fragmentation.\n"
    "\n"
    MEMORY_RULE_FIX_SAFETY
    "## The numbers\n"
    "Measured, from PyTorch's allocator history: the request, the device's free memory as the\n"
    "allocator saw it, and the live bytes by allocating line when it failed. In a CUDA program:\n"
    "the request (the failing call's size argument) and the device buffers live by allocating\n"
    "line when it failed, from CUPTI's memory records. Severity is warning.\n";

static void report(RuleContext *ctx, const Profile *p, const ProfMemory *m, size_t memory) {
    /* the largest holder then, anywhere in the project */
    const ProfMemLine *top = NULL;
    for (size_t i = 0; i < p->memory_line_count; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        if (l->memory == (int)memory && l->kind == PROF_MEM_LINE_OOM && l->site >= 0 && (!top || l->bytes > top->bytes))
            top = l;
    }
    char asked[UNITS_BUF], freeb[UNITS_BUF], alloc[UNITS_BUF], held[UNITS_BUF], where[400] = "";
    if (top) {
        const ProfSite *s = &p->sites[top->site];
        snprintf(where, sizeof where, ", most of it from %s:%u (%s)", p->files[s->file].path, s->line,
                 units_bytes(top->bytes, held, sizeof held));
    }
    Finding *f;
    bool ok;
    if (m->source == PROF_MEM_SOURCE_CUPTI) { /* a failed cudaMalloc: the device's free memory is not known */
        f = pf_report_line(ctx, p->sites[m->oom_site].line,
                           "an allocation of %s failed here (out of memory); %s of device buffers was allocated%s",
                           units_bytes(m->oom_bytes, asked, sizeof asked),
                           units_bytes(m->oom_allocated, alloc, sizeof alloc), where);
        if (!f) return;
        ok = finding_measured(f, QV(q_bytes(m->oom_bytes), q_bytes(m->oom_allocated)),
                              "asked for {}; device buffers allocated then (cudaMalloc and friends): {}");
    } else {
        /* more free on the device than asked for: the limit was the process's own (a memory fraction) */
        bool capped = m->oom_device_free > m->oom_bytes;
        f = pf_report_line(ctx, p->sites[m->oom_site].line,
                           "an allocation of %s failed here (out of memory) with %s free on the device%s; %s was "
                           "allocated%s",
                           units_bytes(m->oom_bytes, asked, sizeof asked),
                           units_bytes(m->oom_device_free, freeb, sizeof freeb),
                           capped ? ", so the limit was this process's own (a memory fraction or another cap)" : "",
                           units_bytes(m->oom_allocated, alloc, sizeof alloc), where);
        if (!f) return;
        ok = finding_measured(f, QV(q_bytes(m->oom_bytes), q_bytes(m->oom_device_free), q_bytes(m->oom_allocated)),
                              "asked for {} with {} free; allocated then: {}");
    }
    f->severity = SEVERITY_WARNING;
    for (size_t i = 0, shown = 0; ok && i < p->memory_line_count && shown < 5; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        if (l->memory != (int)memory || l->kind != PROF_MEM_LINE_OOM || l->site < 0) continue;
        const ProfSite *s = &p->sites[l->site];
        ok = finding_measured(f, QV(q_bytes(l->bytes)), "alive then from %s:%u: {}", p->files[s->file].path, s->line);
        shown++;
    }
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    if (!ctx->profile || ctx->profile_file < 0) return;
    const Profile *p = profile_view_profile(ctx->profile);
    for (size_t i = 0; i < p->memory_count && !ctx->out_of_memory; i++) {
        const ProfMemory *m = &p->memories[i];
        /* a CUDA file reads CUPTI's entries, a Python file PyTorch's (as PR015) */
        bool cuda = ctx->doc->language != LANGUAGE_PYTHON;
        if ((m->source == PROF_MEM_SOURCE_CUPTI) != cuda) continue;
        if (m->oom && m->oom_site >= 0 && p->sites[m->oom_site].file == ctx->profile_file && p->sites[m->oom_site].line)
            report(ctx, p, m, i);
    }
}

const Rule rule_pr018_out_of_memory = {
    .code = "PR018", .name = "out-of-memory", .severity = SEVERITY_WARNING, .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA,
    .check_profile = check_profile,
    .summary = "An allocation failed with an out-of-memory error at this line in the profiled run (profile, --memory)",
    .documentation = documentation};
