/* PR011 shared-bank-conflicts: a line of a kernel whose shared-memory
 * accesses took at least twice the wavefronts of conflict-free accesses, as
 * the per-line SASS metrics of `advise profile --source-metrics` measured
 * them. Needs a profile. */
#include <stdio.h>

#include "rules/measure/line_metrics.h"
#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile with per-line metrics (`advise profile --source-metrics`, kernels built with\n"
    "`-lineinfo`). Reports a line of a CUDA file whose shared-memory loads and stores, in the\n"
    "measured launch of a kernel, took at least twice the wavefronts that the same accesses without\n"
    "bank conflicts would take (`smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared` against its\n"
    "`_ideal`), when the line makes at least 10% of its kernel's shared wavefronts and the kernel\n"
    "at least 1% of the GPU's kernel time:\n"
    "\n"
    "`shared-memory accesses on this line take 32.0x the wavefronts of conflict-free accesses\n"
    "(1,048,576 vs 32,768 in one launch of transpose_tiled, 97% of its shared wavefronts): bank\n"
    "conflicts`\n"
    "\n"
    "Not reported: a line where CU003 (shared bank conflict) already reports the access (as the\n"
    "array's finding or one of its related accesses): that finding carries the same figures. Nor\n"
    "lines of files changed since they were profiled, lines with fewer than 64 ideal wavefronts,\n"
    "and Python files (Triton kernels: the advice below is CUDA's).\n"
    "\n"
    "## Why is this slow?\n"
    "Shared memory is 32 banks of 4-byte words; a warp's access is served in one pass (wavefront)\n"
    "when its threads touch different banks or the same word. Threads that touch different words\n"
    "of one bank are served one after the other: reading a column of a `float tile[32][32]`, all\n"
    "32 threads hit the same bank and the access takes 32 passes instead of one.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__shared__ float tile[32][32];\n"
    "tile[threadIdx.y][threadIdx.x] = in[...];\n"
    "__syncthreads();\n"
    "out[...] = tile[threadIdx.x][threadIdx.y];   // a column: 32-way conflict\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Pad the array by one element per row (`__shared__ float tile[32][33];`) so that a column's\n"
    "elements fall in 32 different banks, or swizzle the index (`tile[r][c ^ r]`, XOR-ing the column\n"
    "with the row, in both the writes and the reads).\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix here (CU003 offers the padding where it sees the array's declaration).\n"
    "\n"
    "## The numbers\n"
    "Wavefront counts of the measured launch (one per process that ran the kernel), summed over\n"
    "the line's instructions; the ratio is the average serialisation of its shared accesses. No\n"
    "gain is estimated: what the extra passes cost depends on what bounds the kernel. Severity is\n"
    "info, warning from 4x in a kernel with 10% of the kernel time or more.\n";

static void visit(RuleContext *ctx, const LmWaste *w) {
    Finding *f = lm_report_ratio(ctx, w,
                                 "shared-memory accesses on this line take %s the wavefronts of conflict-free "
                                 "accesses (%s vs %s %s, %s of its shared wavefronts): bank conflicts; pad the array "
                                 "(`[32][33]` for a 32 x 32 tile) or swizzle the index");
    if (f && !lm_waste_evidence(f, w, "take", "2x the ideal or more too")) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) { lm_each_waste(ctx, LM_SHARED, visit); }

const Rule rule_pr011_shared_bank_conflicts = {
    .code = "PR011", .name = "shared-bank-conflicts", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_CUDA, .check_profile = check_profile, .subsumed_by = MEASURE_SHARED_ACCESS,
    .summary = "A kernel's line took 2x or more the shared-memory wavefronts of conflict-free accesses (profile)",
    .documentation = documentation};
