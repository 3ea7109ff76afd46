/* PR007 small-grid: a kernel that matters launched with fewer blocks than
 * the GPU has SMs, or with a last wave of blocks that leaves most SMs idle.
 * Needs a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/critical_gain.h"
#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). For each kernel configuration launched from this file\n"
    "that takes at least 5% of the GPU time, compares its grid with the profiled GPU:\n"
    "\n"
    "- a small grid: fewer blocks than the GPU has SMs, so some SMs have nothing to do while it\n"
    "  runs (`64 blocks on the 132 SMs of an NVIDIA H200: 68 SMs idle`);\n"
    "- a tail: the grid takes more than one wave (the blocks the whole GPU holds at once: SMs ×\n"
    "  resident blocks per SM, from the occupancy calculation of PR006) and its last wave is\n"
    "  less than half full, so that wave runs with most SMs idle. Reported only when the idle\n"
    "  part comes to 10% of the kernel's time or more (with many waves a partial last one does not\n"
    "  matter).\n"
    "\n"
    "Not reported: kernels of vendor libraries and frameworks (cuBLAS, cuDNN, ATen, ...;\n"
    "recognised by name) unless this file defines a kernel of that name: their grids follow the\n"
    "problem's shape and are not yours to choose.\n"
    "\n"
    "## Why is this slow?\n"
    "A block runs on one SM. With fewer blocks than SMs, part of the GPU sits idle for the whole\n"
    "kernel; a kernel that needs N full waves plus a sliver of one more pays for a whole extra\n"
    "wave in which most SMs idle.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "block_sum<<<64, 256>>>(in, partial, n);   // PR007: 64 blocks on 132 SMs\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Size the grid from the problem and the GPU: a multiple of the SM count\n"
    "(`cudaDevAttrMultiProcessorCount`) times the resident blocks per SM\n"
    "(`cudaOccupancyMaxActiveBlocksPerMultiprocessor`), with a grid-stride loop inside the kernel\n"
    "so any problem size fits; or give each block less work so there are more of them. For a\n"
    "tail, make the blocks smaller or larger so that the grid divides into full waves.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: the grid is tied to how the kernel divides its work.\n"
    "\n"
    "## The numbers\n"
    "Blocks = grid x × y × z from the profile; SMs and the per-SM limits come from the profiled\n"
    "device. Waves = blocks / (SMs × resident blocks per SM).\n"
    "\n"
    "Gain (this kernel's time at the line, scope \"kernel\"), assuming the kernel's time is spread\n"
    "evenly over its blocks and the work could be spread over the whole GPU:\n"
    "- small grid: time × (1 − blocks / SMs);\n"
    "- tail: time × (1 − waves / ⌈waves⌉), the share of SM time the partial wave leaves idle.\n"
    "Both are upper bounds: a kernel limited by something other than the SMs' throughput (one\n"
    "memory channel, a serial dependency, launch overhead) gains less. Severity is info.\n";

#define MIN_SHARE 0.05
#define MIN_TAIL_IDLE 0.10

/* The gain is GPU time: with a profile that measured the critical path
 * (FORMAT.md critical_ns) it counts the part of the launches' time the run
 * waited for, and at most the host's wait for the GPU. */
static bool set_gpu_gain(RuleContext *ctx, Finding *f, const ProfOp *op, double gain_ns, const char *words) {
    double part = op->critical.known && op->stats.total_ns ? (double)op->critical.ns / (double)op->stats.total_ns : -1;
    CriticalGain c = critical_gain(ctx->profile, gain_ns, part);
    return finding_set_gain(f, c.gain_ns / 1e9, "kernel", NO_VALUES, "%s", words) &&
           critical_gain_words(&c, "that time", &f->gain.model);
}

static void check_config(RuleContext *ctx, uint32_t line, const ProfOp *op, const ProfKernel *k, double share) {
    const ProfDevice *dev = pf_kernel_device(ctx->profile, k);
    if (!dev || dev->sm_count == 0) return;
    uint64_t blocks = pf_grid_blocks(k);
    char name[112], pct[16];
    const char *gpu = dev->name ? dev->name : "the GPU";
    uint64_t ns = op->stats.total_ns;
    if (blocks < dev->sm_count) {
        double used = (double)blocks / dev->sm_count;
        Finding *f = pf_report_line(ctx, line, "`%s` runs %llu block%s on the %u SMs of %s: %llu SMs idle while it "
                                               "runs (%s of GPU time)",
                                    pf_kernel_display_name(k->name, name, sizeof name), (unsigned long long)blocks,
                                    blocks == 1 ? "" : "s", dev->sm_count, gpu,
                                    (unsigned long long)(dev->sm_count - blocks), units_ratio(share, pct, sizeof pct));
        if (!f) return;
        double gain = ns * (1.0 - used);
        bool ok = finding_measured(f, QV(q_ns(ns), q_count(op->stats.count)),
                                   "grid [%u, %u, %u] of blocks [%u, %u, %u]; {} in {} launches from this line",
                                   k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2]);
        ok = ok && finding_model(f, QV(q_seconds(gain / 1e9)),
                                 "up to {} faster if the same work were spread over all %u SMs", dev->sm_count);
        ok = ok && set_gpu_gain(ctx, f, op, gain,
                                "kernel time at the line \xc3\x97 (1 \xe2\x88\x92 blocks / SMs); an upper bound "
                                "for a kernel limited by the SMs' throughput");
        if (!ok) ctx->out_of_memory = true;
        return;
    }
    Occupancy occ;
    if (!pf_kernel_occupancy(dev, k, &occ) || occ.blocks_per_sm == 0) return;
    double per_wave = (double)dev->sm_count * occ.blocks_per_sm;
    double waves = blocks / per_wave;
    if (waves <= 1.0) return;
    double full = (double)(uint64_t)waves, last = waves - full;
    if (last <= 0.0 || last >= 0.5) return;
    double idle = 1.0 - waves / (full + 1.0);
    if (idle < MIN_TAIL_IDLE) return;
    char lastp[16], idlep[16];
    Finding *f = pf_report_line(ctx, line,
                                "`%s`: the last of its %.0f waves of blocks fills %s of the GPU, so %s of the SMs' "
                                "time in this kernel is idle (%s of GPU time)",
                                pf_kernel_display_name(k->name, name, sizeof name), full + 1.0,
                                units_ratio(last, lastp, sizeof lastp), units_ratio(idle, idlep, sizeof idlep),
                                units_ratio(share, pct, sizeof pct));
    if (!f) return;
    double gain = ns * idle;
    bool ok = finding_model(f, QV(q_number(waves)),
                            "%llu blocks; a wave is %u SMs \xc3\x97 %u resident blocks = %.0f blocks (%s limits the "
                            "blocks per SM): {} waves",
                            (unsigned long long)blocks, dev->sm_count, occ.blocks_per_sm, per_wave,
                            pf_limit_name(occ.limit));
    ok = ok && finding_measured(f, QV(q_ns(ns), q_count(op->stats.count), q_seconds(gain / 1e9)),
                                "{} in {} launches from this line; up to {} less with full waves");
    ok = ok && set_gpu_gain(ctx, f, op, gain,
                            "kernel time at the line \xc3\x97 (1 \xe2\x88\x92 waves / \xe2\x8c\x88waves\xe2\x8c\x89); an "
                            "upper bound, assuming equal blocks");
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    pf_each_user_launch(ctx, MIN_SHARE, check_config);
}

const Rule rule_pr007_small_grid = {
    .code = "PR007", .name = "small-grid", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile,
    .summary = "A kernel taking 5% of the GPU time or more leaves SMs idle: fewer blocks than SMs, or a thin last "
               "wave (profile)",
    .advice = "size the grid from the SM count (a multiple of it, with a grid-stride loop inside the kernel), or give each block less work",
    .documentation = documentation};
