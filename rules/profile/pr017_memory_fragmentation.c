/* PR017 memory-fragmentation: PyTorch's caching allocator reserved far more
 * device memory than the tensors used at the peak. Reported once per
 * process and device, at the line holding the most memory at the peak.
 * Needs a profile recorded with `advise profile --memory`. */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/units.h"
#include "profiler/profile_view.h"
#include "rules/measure/profile_facts.h"
#include "rules/profile/support/memory_lines.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile recorded with `advise profile --memory` (a PyTorch program). Reports when\n"
    "the most memory PyTorch's caching allocator reserved from the device exceeds the most its\n"
    "tensors used by at least 25% and at least 1 GiB (1.07 GB):\n"
    "\n"
    "`PyTorch reserved 32.2 GB while its tensors used at most 22.5 GB: 9.66 GB (30%) was cached but not in use`\n"
    "\n"
    "The finding sits on the line holding the most memory at the peak (the place to look\n"
    "first), once per process and device.\n"
    "\n"
    "## Why does this matter?\n"
    "The caching allocator keeps freed blocks for reuse. When tensor sizes vary (variable\n"
    "sequence lengths, growing caches), freed blocks do not fit the next request, new segments\n"
    "are reserved and the rest stays cached: the process can run out of memory while much of\n"
    "what it reserved is free, and other processes on the GPU get less.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "for batch in loader:                 # sequence lengths vary from batch to batch\n"
    "    out = model(batch.cuda())        # PR017 at the line holding most at the peak\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` in the environment (PyTorch 2.1 and\n"
    "later) lets segments grow in place, so freed memory is reused across sizes. Padding\n"
    "variable shapes to a few bucket sizes helps the same way.\n"
    "\n"
    MEMORY_RULE_FIX_SAFETY
    "## The numbers\n"
    "Measured: PyTorch's own peaks of reserved and allocated memory over the run\n"
    "(`max_memory_reserved`, `max_memory_allocated`). The saving is a model and an upper bound:\n"
    "the difference, as if the allocator reserved no more than the tensors' peak.\n";

#define MIN_EXCESS (1ull << 30)
#define MIN_RATIO 1.25

static void report(RuleContext *ctx, const ProfMemory *m, uint32_t line) {
    uint64_t excess = m->max_reserved - m->max_allocated;
    char reserved[UNITS_BUF], used[UNITS_BUF], cached[UNITS_BUF], share[UNITS_BUF];
    Finding *f = pf_report_line(ctx, line,
                                "PyTorch reserved %s while its tensors used at most %s: %s (%s) was cached but not in "
                                "use; `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` lets freed memory be reused "
                                "across sizes",
                                units_bytes(m->max_reserved, reserved, sizeof reserved),
                                units_bytes(m->max_allocated, used, sizeof used),
                                units_bytes(excess, cached, sizeof cached),
                                units_share(excess, m->max_reserved, share, sizeof share));
    if (!f) return;
    bool ok = finding_measured(f, QV(q_bytes(m->max_reserved), q_bytes(m->max_allocated)),
                               "most reserved over the run: {}; most allocated: {}") &&
              finding_model(f, QV(q_bytes(excess)),
                            "at most {} could be returned: the allocator would then reserve no more than the "
                            "tensors' peak");
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    if (!ctx->profile || ctx->profile_file < 0) return;
    const Profile *p = profile_view_profile(ctx->profile);
    for (size_t i = 0; i < p->memory_count && !ctx->out_of_memory; i++) {
        const ProfMemory *m = &p->memories[i];
        if (m->max_reserved < m->max_allocated + MIN_EXCESS ||
            (double)m->max_reserved < MIN_RATIO * (double)m->max_allocated)
            continue;
        uint64_t bytes;
        const ProfSite *top = mem_top_site(p, m, PROF_MEM_LINE_PEAK, &bytes);
        if (top && top->file == ctx->profile_file && top->line > 0) report(ctx, m, top->line);
    }
}

const Rule rule_pr017_memory_fragmentation = {
    .code = "PR017", .name = "memory-fragmentation", .severity = SEVERITY_INFO, .languages = LANGUAGE_PYTHON,
    .check_profile = check_profile,
    .summary = "PyTorch's caching allocator reserved far more device memory than its tensors used (profile, --memory)",
    .documentation = documentation};
