/* PR010 uncoalesced-global-access: a line of a kernel whose global loads and
 * stores moved at least twice the sectors that coalesced accesses would, as
 * the per-line SASS metrics of `advise profile --source-metrics` measured
 * them. Needs a profile. */
#include <stdio.h>

#include "rules/measure/line_metrics.h"
#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile with per-line metrics (`advise profile --source-metrics`, kernels built with\n"
    "`-lineinfo`). Reports a line of a CUDA file whose global-memory loads and stores, in the\n"
    "measured launch of a kernel, moved at least twice the 32-byte sectors that perfectly\n"
    "coalesced accesses of the same bytes would move (`smsp__sass_sectors_mem_global` against\n"
    "`smsp__sass_sectors_mem_global_ideal`), when the line makes at least 10% of its kernel's\n"
    "global sectors and the kernel at least 1% of the GPU's kernel time:\n"
    "\n"
    "`global accesses on this line move 4.5x the sectors coalesced accesses would (18,874,368 vs\n"
    "4,194,304 in one launch of transpose_naive, 82% of its global sectors)`\n"
    "\n"
    "Not reported: a line where CU004 (uncoalesced access) or CU005 (misaligned vector access)\n"
    "already reports the access: that finding carries the same figures. Nor lines of files changed\n"
    "since they were profiled (lines may have moved), lines with fewer than 64 ideal sectors, and\n"
    "Python files (Triton kernels: the advice below is CUDA's).\n"
    "\n"
    "## Why is this slow?\n"
    "A warp's load or store is served in 32-byte sectors. When the 32 threads touch consecutive\n"
    "addresses, 32 floats take 4 sectors; when they touch addresses a row apart, each thread\n"
    "needs a sector of its own and 28 of every 32 bytes moved are not used by that instruction.\n"
    "The memory system moves (and the L1 cache looks up) several times the bytes the code needs.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__global__ void transpose_naive(float *out, const float *in, int rows, int cols) {\n"
    "    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "    out[x * rows + y] = in[y * cols + x];   // the store: threads 'rows' floats apart\n"
    "}\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Make consecutive threads (threadIdx.x) touch consecutive addresses: swap the roles of the\n"
    "indexes, or store arrays of structures as structures of arrays. When the access pattern is\n"
    "the algorithm's (a transpose, a stencil's columns), stage a tile through shared memory: read\n"
    "it coalesced, then write it coalesced from the other dimension (pad the tile, `[32][33]`,\n"
    "against bank conflicts). Data-dependent gathers and scatters can sometimes be sorted first.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: the index arithmetic or the data layout changes.\n"
    "\n"
    "## The numbers\n"
    "Sector counts of the measured launch (one per process that ran the kernel), summed over the\n"
    "line's instructions. Sectors are requests to the L1 cache: when the next instructions use the\n"
    "rest of a sector (the fields of a struct read one by one), L1 serves the repeats and DRAM\n"
    "traffic is lower than the ratio; the waste is then L1 bandwidth and instructions. Severity\n"
    "is info, warning from 4x in a kernel with 10% of the kernel time or more.\n"
    "\n"
    "The estimated gain: when the kernel is memory-bound (its sectors per launch, over its mean\n"
    "launch time, reach 30% of the GPU's peak bandwidth), its time is taken to follow the sectors\n"
    "it moves, and the gain is the kernel's time times the line's excess sectors (moved less ideal)\n"
    "over all of the kernel's sectors. Below 30% the kernel is bound by something else and no gain\n"
    "is given. On the H200 the naive transpose sample was estimated at 775 \xc2\xb5s and its tiled\n"
    "fix saved 902 \xc2\xb5s: the estimate is conservative. With a profile that measured the\n"
    "critical path (FORMAT.md `critical_ns`), the gain counts only the part of the kernel's time\n"
    "the run waited for, and at most the time the host waited for the GPU.\n";

static void visit(RuleContext *ctx, const LmWaste *w) {
    Finding *f = lm_report_ratio(ctx, w,
                                 "global accesses on this line move %s the sectors coalesced accesses would (%s vs "
                                 "%s %s, %s of its global sectors); make consecutive threads touch consecutive "
                                 "addresses, or stage the data through shared memory");
    if (!f) return;
    bool ok = finding_measured(f, QV(q_bytes(lm_sector_bytes(w->actual)), q_bytes(lm_sector_bytes(w->ideal))),
                               "{} moved in 32-byte sectors where coalesced accesses would move {}");
    ok = ok && lm_waste_evidence(f, w, "move", "2x the ideal or more too");
    LmGain g;
    lm_global_gain(ctx->profile, w->entry->kernel, w->kernel_total, w->entry->launches, w->actual, w->ideal, &g);
    if (ok && g.known && g.memory_bound)
        ok = finding_measured(f, QV(q_rate(g.sector_bytes_per_s), q_ratio(g.bandwidth_share), q_rate((double)g.bytes_per_s)),
                              "the kernel's sectors came at {}, {} of the GPU's peak memory bandwidth ({}; sectors "
                              "are L1 requests, some served by the caches): memory-bound") &&
             finding_set_gain(f, g.gain_ns / 1e9, "program",
                              QV(q_ns(g.kernel_ns), q_share(w->actual - w->ideal, w->kernel_total)),
                              "the kernel's {} \xc3\x97 the line's excess sectors, {} of the kernel's: in a "
                              "memory-bound kernel time follows the sectors moved") &&
             critical_gain_words(&g.critical, "the kernel's time", &f->gain.model);
    else if (ok && g.known)
        ok = finding_model(f, QV(q_ratio(g.bandwidth_share)),
                           "no estimate: the kernel's sectors came at {} of the GPU's peak memory bandwidth, under "
                           "30%%, so something else bounds it");
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) { lm_each_waste(ctx, LM_GLOBAL, visit); }

const Rule rule_pr010_uncoalesced_global_access = {
    .code = "PR010", .name = "uncoalesced-global-access", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_CUDA, .check_profile = check_profile, .subsumed_by = MEASURE_GLOBAL_ACCESS,
    .summary = "A kernel's line moved 2x or more the global-memory sectors that coalesced accesses would (profile)",
    .advice = "make neighbouring threads (threadIdx.x) touch neighbouring addresses: swap the indexes, store a structure of arrays, or stage a tile through shared memory",
    .documentation = documentation};
