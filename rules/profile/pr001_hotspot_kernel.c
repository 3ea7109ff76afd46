/* PR001 hotspot-kernel: a line whose kernel launches take a large share of
 * the run's GPU time. Needs a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). Shows the lines whose kernels take at least 10% of the\n"
    "GPU time the profile measured (and at least 1% of the run): `31% of GPU time · 1.20 ms avg ·\n"
    "500 calls: <kernel>`. The kernel named is the one with the most time at the line (its launch\n"
    "configurations summed); when the line launches several kernels (a model's forward pass, a\n"
    "library call) the message says how many more. The evidence lists the top kernels with their\n"
    "launch shape and registers per thread.\n"
    "\n"
    "This is a map of where the GPU's time goes, not a defect: it says which lines are worth\n"
    "optimising first, and other findings at the same line say how.\n"
    "\n"
    "## Why is this slow?\n"
    "It may not be: the kernel may run as fast as the hardware allows. But speeding up a kernel\n"
    "that takes 5% of the GPU time saves at most 5% of it (Amdahl's law); effort pays where the\n"
    "time is.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "for step in range(steps):\n"
    "    y = x @ w          # PR001: 79% of GPU time · 2.36 ms avg · 330 calls: sm80_xmma_gemm_f32f32_...\n"
    "    z = torch.relu(y)\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Look at the kernel's efficiency first: for a GEMM or convolution, lower precision (TF32,\n"
    "BF16/FP16 with autocast) and shapes that are multiples of 8 or 16; for your own CUDA kernel,\n"
    "its memory access pattern (coalescing, shared memory) and occupancy (PR006); for many small\n"
    "kernels, fusion (`torch.compile`) or CUDA graphs (PR002). Nsight Compute on that one kernel\n"
    "says why it is slow.\n"
    "\n"
    "## Fix safety\n"
    "No fix: the finding points at where the time goes, not at a change.\n"
    "\n"
    "## The numbers\n"
    "A line is reported when the GPU time of the kernels launched from it is 10% or more of the\n"
    "run's GPU time (kernels, copies and memsets of all devices and processes). The share shown is\n"
    "the line's: all its GPU work (kernels, copies, memsets) over that GPU time, the same share\n"
    "its code lens, hover and heat map show. `avg` = the kernels' time / their launches. A line whose\n"
    "kernels take less than 1% of the run's wall time is not reported, whatever its share: the\n"
    "GPU's work is not where that run's time goes (look at idle gaps, PR003, and host waits,\n"
    "PR004). Severity is info, warning from 30%. No gain is estimated: how much faster a kernel\n"
    "could run is not in the profile.\n";

#define SHARE 0.10
#define WARNING_SHARE 0.30

typedef struct {
    const char *name;
    uint64_t ns, launches;
    const ProfKernel *example; /* the configuration with the most time */
    uint64_t example_ns;
} KernelSum;

static int by_time(const void *a, const void *b) {
    const KernelSum *x = a, *y = b;
    return x->ns > y->ns ? -1 : x->ns < y->ns;
}

typedef struct {
    uint64_t gpu_total, run;
} Totals;

static void check_line(RuleContext *ctx, const PfLine *line, const void *data) {
    const Totals *t = data;
    uint64_t gpu_total = t->gpu_total, run = t->run;
    const Profile *p = profile_view_profile(ctx->profile);
    KernelSum *sums = calloc(line->op_count ? line->op_count : 1, sizeof *sums);
    if (!sums) {
        ctx->out_of_memory = true;
        return;
    }
    size_t n = 0;
    uint64_t ns = 0, launches = 0;
    for (size_t i = 0; i < line->op_count; i++) {
        const ProfOp *op = line->ops[i];
        if (op->kind != PROF_OP_LAUNCH || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count) continue;
        const ProfKernel *k = &p->kernels[op->kernel];
        ns += op->stats.total_ns;
        launches += op->stats.count;
        size_t j = 0;
        while (j < n && strcmp(sums[j].name, k->name) != 0) j++;
        if (j == n) sums[n++] = (KernelSum){.name = k->name};
        sums[j].ns += op->stats.total_ns;
        sums[j].launches += op->stats.count;
        if (!sums[j].example || op->stats.total_ns > sums[j].example_ns) {
            sums[j].example = k;
            sums[j].example_ns = op->stats.total_ns;
        }
    }
    double share = (double)ns / gpu_total;
    /* lines whose kernels are under 1% of the run: the GPU's work is not where its time goes */
    if (n == 0 || launches == 0 || share < SHARE || (run > 0 && ns * 100 < run)) {
        free(sums);
        return;
    }
    qsort(sums, n, sizeof *sums, by_time);

    char pct[16], avg[24], calls[32], kname[112], more[48] = "";
    pf_kernel_display_name(sums[0].name, kname, sizeof kname);
    if (n > 1) snprintf(more, sizeof more, " and %zu other kernel%s", n - 1, n == 2 ? "" : "s");
    /* the line's one share (all its GPU work), as its lens and hover show it */
    const ProfileLineCost *cost = profile_view_line(ctx->profile, ctx->profile_file, line->line);
    double line_share = cost ? profile_view_line_share(ctx->profile, cost) : share;
    Finding *f = pf_report_line(ctx, line->line, "%s " PROFILE_LINE_SHARE_OF " \xc2\xb7 %s avg \xc2\xb7 %s call%s: %s%s",
                                units_ratio(line_share, pct, sizeof pct), units_ns(ns / launches, avg, sizeof avg),
                                units_count(launches, calls, sizeof calls), launches == 1 ? "" : "s", kname, more);
    if (!f) {
        free(sums);
        return;
    }
    if (share >= WARNING_SHARE) f->severity = SEVERITY_WARNING;

    bool ok = finding_measured(f, QV(q_ns(ns), q_count(launches), q_ns(gpu_total)),
                               "kernels launched here: {} on the GPU in {} launches, of {} of GPU time in the "
                               "profile");
    if (run > 0) {
        /* kernel time is summed over every GPU of the run, so it is set
         * against the run's time on each of them (several ranks) */
        size_t gpus = profile_view_profile(ctx->profile)->timeline_count;
        if (gpus > 1)
            ok = ok && finding_measured(f, QV(q_ns(run), q_ratio((double)ns / ((double)run * (double)gpus))),
                                        "the run took {} on %zu GPUs: these kernels are {} of their time", gpus);
        else
            ok = ok && finding_measured(f, QV(q_ns(run), q_ratio((double)ns / run)),
                                        "the run took {}: these kernels are {} of it");
    }
    for (size_t i = 0; i < n && i < 3 && ok; i++) {
        const ProfKernel *k = sums[i].example;
        char name[160];
        ok = finding_measured(
            f,
            QV(q_ns(sums[i].ns), q_ratio((double)sums[i].ns / gpu_total), q_count(sums[i].launches),
               q_ns(k->stats.median_ns)),
            "%s: {} ({} of GPU time), {} launch%s, median {}; grid [%u, %u, %u], block [%u, %u, %u], %u "
            "registers/thread",
            pf_kernel_display_name(sums[i].name, name, sizeof name), sums[i].launches == 1 ? "" : "es", k->grid[0],
            k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], k->registers);
    }
    if (ok && line->site && line->site->function_level)
        ok = finding_caveat(f, "these figures are the whole function's: the imported trace names functions, "
                               "not lines");
    if (!ok) ctx->out_of_memory = true;
    free(sums);
}

static void check_profile(RuleContext *ctx) {
    /* no kernels, no hotspot */
    if (profile_view_kernel_ns(ctx->profile) == 0 || profile_view_gpu_ns(ctx->profile) == 0) return;
    Totals t = {profile_view_gpu_ns(ctx->profile), profile_view_run_ns(ctx->profile)};
    pf_each_line(ctx, check_line, &t);
}

const Rule rule_pr001_hotspot_kernel = {
    .code = "PR001", .name = "hotspot-kernel", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile,
    .summary = "A line whose kernels take at least 10% of the run's GPU time (profile)",
    .documentation = documentation};
