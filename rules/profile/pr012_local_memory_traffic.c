/* PR012 local-memory-traffic: a line of a kernel that moved a measurable
 * share of the kernel's memory sectors in local memory (register spills or a
 * local array), as the per-line SASS metrics of `advise profile
 * --source-metrics` measured them. Needs a profile. */
#include <stdio.h>

#include "rules/measure/line_metrics.h"
#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile with per-line metrics (`advise profile --source-metrics`, kernels built with\n"
    "`-lineinfo`). Reports a line of a CUDA file whose local-memory accesses, in the measured launch\n"
    "of a kernel, moved at least 64 sectors and at least 10% of the kernel's global and local\n"
    "memory sectors together (`smsp__sass_sectors_mem_local` against\n"
    "`smsp__sass_sectors_mem_global` + local), when the kernel takes at least 1% of the GPU's\n"
    "kernel time:\n"
    "\n"
    "`this line moves 1,048,576 local-memory sectors (33.6 MB) in one launch of histogram_sort, 35%\n"
    "of the kernel's global and local sectors: register spills or a local array`\n"
    "\n"
    "PR005 (register-spill) names the kernel that reserves local memory, at its launch and\n"
    "definition; this rule names the lines where the traffic is. Both may appear: they are at\n"
    "different lines and say different things (no static rule reports local memory, so nothing\n"
    "makes this one step aside).\n"
    "\n"
    "Not reported: lines of files changed since they were profiled, and Python files.\n"
    "\n"
    "## Why is this slow?\n"
    "Local memory is per-thread memory in the GPU's DRAM, cached in L1 and L2. The compiler puts\n"
    "values there when a thread needs more registers than it may use (spills), and arrays it cannot\n"
    "keep in registers (indexed with run-time values, or too large). Every access is a memory\n"
    "access instead of a register read, and its traffic competes with the kernel's real loads and\n"
    "stores.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "float window[64];                       // indexed at run time below: local memory\n"
    "for (int i = 0; i < 64; ++i) window[i] = in[base + i];\n"
    "out[t] = window[key & 63];\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Compile with `-Xptxas -v` to see each kernel's spill stores and loads. For spills: reduce\n"
    "register pressure (fewer values live at once, split the kernel, recompute instead of keeping),\n"
    "or give each thread more registers with `__launch_bounds__(threads, min_blocks)` and fewer\n"
    "threads per block (or `-maxrregcount`), trading occupancy. For local arrays: index them only\n"
    "with compile-time constants (fully unrolled loops) so they live in registers, or move them to\n"
    "shared memory.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: register budgets trade against occupancy and need measuring.\n"
    "\n"
    "## The numbers\n"
    "Sector counts of the measured launch (one per process that ran the kernel), summed over the\n"
    "line's instructions; sectors are 32 bytes. The share is the line's local sectors over all the\n"
    "kernel's global and local sectors. No gain is estimated: L1 may serve much of the local\n"
    "traffic, and what it costs depends on what bounds the kernel. Severity is info, warning when\n"
    "the kernel takes 10% of the kernel time or more.\n";

static void visit(RuleContext *ctx, const LmWaste *w) {
    char launches[160], sectors[32], bytes[32], share[16];
    Finding *f = pf_report_line(ctx, w->line,
                                "this line moves %s local-memory sectors (%s) %s, %s of the kernel's global and "
                                "local sectors: register spills or a local array; reduce register pressure "
                                "(`__launch_bounds__`, fewer live values) or index local arrays with compile-time "
                                "constants only",
                                units_count(w->actual, sectors, sizeof sectors),
                                units_bytes(lm_sector_bytes(w->actual), bytes, sizeof bytes),
                                lm_waste_launches_words(w, launches, sizeof launches),
                                units_ratio(w->line_share, share, sizeof share));
    if (!f) return;
    if (w->kernel_share >= LM_WARNING_KERNEL_SHARE) f->severity = SEVERITY_WARNING;
    if (!lm_waste_evidence(f, w, "move", "local memory too")) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) { lm_each_waste(ctx, LM_LOCAL, visit); }

const Rule rule_pr012_local_memory_traffic = {
    .code = "PR012", .name = "local-memory-traffic", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_CUDA, .check_profile = check_profile,
    .summary = "A kernel's line moved 10% or more of its memory sectors in local memory: spills or a local array "
               "(profile)",
    .documentation = documentation};
