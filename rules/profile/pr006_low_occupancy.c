/* PR006 low-occupancy: a kernel that matters whose launch configuration and
 * resource use let fewer than half of the SM's warps be resident. Needs a
 * profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). For each kernel configuration launched from this file\n"
    "that takes at least 5% of the GPU time, computes its theoretical occupancy on the profiled\n"
    "GPU from the block size, registers per thread and shared memory per block (static and\n"
    "dynamic) the profile recorded, and reports it when it is below 50%, with the resource that\n"
    "limits it:\n"
    "\n"
    "`my_kernel` runs at 25% theoretical occupancy (16 of 64 warps per SM): limited by registers,\n"
    "128 per thread allow 2 blocks of 256 threads per SM\n"
    "\n"
    "Not reported: kernels of vendor libraries and frameworks (cuBLAS, cuDNN, CUTLASS, ATen,\n"
    "Triton, ...; recognised by name) unless this file defines a kernel of that name: their\n"
    "GEMM and convolution kernels run at low occupancy by design (large tiles in registers and\n"
    "shared memory), and their launch configuration is not yours to change.\n"
    "\n"
    "## Why is this slow?\n"
    "A GPU hides the latency of memory accesses by switching between resident warps. With few\n"
    "warps per SM, a kernel that waits on memory often has no other warp ready to run, and the\n"
    "SM idles. Occupancy is not speed: a kernel with much independent work per thread (ILP,\n"
    "register tiling) can run at full speed with few warps. But a memory-bound kernel at low\n"
    "occupancy usually leaves bandwidth unused.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__global__ void stencil(const float *in, float *out, int n) { /* 128 registers per thread */ }\n"
    "stencil<<<blocks, 256>>>(in, out, n);   // PR006: 25% occupancy, limited by registers\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "By the limiting resource:\n"
    "- registers: `__launch_bounds__(threads, min_blocks_per_sm)` on the kernel or\n"
    "  `-maxrregcount` ask the compiler to fit more blocks (watch for spills, PR005); keep fewer\n"
    "  values live;\n"
    "- shared memory: smaller tiles, or a larger block sharing the same tile; on sm_80+ ask for\n"
    "  the larger carveout (`cudaFuncAttributePreferredSharedMemoryCarveout`);\n"
    "- block slots: blocks of 32-64 threads fill the SM's block slots before its warp slots: use\n"
    "  128-256 threads per block.\n"
    "Then measure: Nsight Compute's achieved occupancy and stall reasons say whether more warps\n"
    "help this kernel.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: the kernel's resource use is set by its code and compiler options.\n"
    "\n"
    "## The numbers\n"
    "Theoretical occupancy, as CUDA's occupancy calculator computes it (`cuda_occupancy.h`): the\n"
    "resident blocks per SM are the least of the SM's warp slots / warps per block, its block\n"
    "slots, its registers (allocated per warp in units of 256, in 4 sub-partitions) / a block's,\n"
    "and its shared memory / a block's (static + dynamic + 1 KiB reserved per block on sm_80+,\n"
    "in units of 128 bytes; the per-SM capacity the device reports, 228 KiB on an H100/H200).\n"
    "Occupancy = resident warps / the SM's maximum (64 on sm_90). The device's limits come from\n"
    "the profile. The share is the configuration's GPU time over all GPU time (kernels, copies\n"
    "and memsets). No gain is estimated: occupancy does not convert into time. Severity is info.\n";

#define MIN_SHARE 0.05
#define LOW 0.5

static const char *advice(const Occupancy *o, const ProfKernel *k, char *buf, size_t size) {
    unsigned long long threads = pf_threads_per_block(k);
    switch (o->limit) {
    case PF_LIMIT_REGISTERS:
        snprintf(buf, size,
                 "limited by registers: %u per thread allow %u block%s of %llu threads per SM; "
                 "`__launch_bounds__` or `-maxrregcount` can fit more",
                 k->registers, o->blocks_per_sm, o->blocks_per_sm == 1 ? "" : "s", threads);
        break;
    case PF_LIMIT_SHARED: {
        char b[24];
        snprintf(buf, size, "limited by shared memory: %s per block allow %u block%s per SM; use smaller tiles",
                 units_capacity((uint64_t)k->static_shared + k->dynamic_shared, b, sizeof b), o->blocks_per_sm,
                 o->blocks_per_sm == 1 ? "" : "s");
        break;
    }
    case PF_LIMIT_BLOCKS:
        snprintf(buf, size,
                 "limited by block slots: blocks of %llu threads fill the SM's %u block slots first; use 128-256 "
                 "threads per block",
                 threads, o->blocks_by_blocks);
        break;
    case PF_LIMIT_WARPS:
        snprintf(buf, size, "limited by warp slots: blocks of %u warps do not divide the SM's warp slots", o->warps_per_block);
        break;
    case PF_LIMIT_NONE:
        buf[0] = '\0';
        break;
    }
    return buf;
}

static void report(RuleContext *ctx, uint32_t line, const ProfKernel *k, const ProfDevice *dev, const Occupancy *o,
                   double share) {
    char name[112], occ[16], why[256], pct[16];
    Finding *f = pf_report_line(ctx, line, "`%s` runs at %s theoretical occupancy (%u of %u warps per SM): %s; %s of GPU time",
                                pf_kernel_display_name(k->name, name, sizeof name), units_ratio(o->occupancy, occ, sizeof occ),
                                o->active_warps, dev->max_warps_per_sm, advice(o, k, why, sizeof why),
                                units_ratio(share, pct, sizeof pct));
    if (!f) return;
    unsigned long long threads = pf_threads_per_block(k);
    bool ok = finding_measured(f, QV(q_capacity((uint64_t)k->static_shared + k->dynamic_shared)),
                               "block [%u, %u, %u] = %llu threads, %u registers/thread, {} shared memory/block",
                               k->block[0], k->block[1], k->block[2], threads, k->registers);
    ok = ok && finding_model(f, NO_VALUES,
                             "blocks per SM allowed by: warp slots %u, block slots %u, registers %u, shared memory %u",
                             o->blocks_by_warps, o->blocks_by_blocks,
                             o->blocks_by_registers == UINT32_MAX ? 0 : o->blocks_by_registers,
                             o->blocks_by_shared == UINT32_MAX ? 0 : o->blocks_by_shared);
    ok = ok && finding_measured(f, QV(q_capacity(dev->max_shared_per_sm)),
                                "%s (sm_%u%u): %u warps, %u blocks, %u registers and {} of shared memory per SM",
                                dev->name ? dev->name : "the GPU", dev->cc_major, dev->cc_minor,
                                dev->max_warps_per_sm, dev->max_blocks_per_sm, dev->max_registers_per_sm);
    if (!ok) ctx->out_of_memory = true;
}

static void visit_launch(RuleContext *ctx, uint32_t line, const ProfOp *op, const ProfKernel *k, double share) {
    (void)op;
    const ProfDevice *dev = pf_kernel_device(ctx->profile, k);
    Occupancy occ;
    if (!pf_kernel_occupancy(dev, k, &occ)) return;
    if (occ.blocks_per_sm == 0 || occ.occupancy >= LOW) return;
    report(ctx, line, k, dev, &occ, share);
}

static void check_profile(RuleContext *ctx) {
    pf_each_user_launch(ctx, MIN_SHARE, visit_launch);
}

const Rule rule_pr006_low_occupancy = {
    .code = "PR006", .name = "low-occupancy", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile,
    .summary = "A kernel taking 5% of the GPU time or more runs below 50% theoretical occupancy (profile)",
    .documentation = documentation};
