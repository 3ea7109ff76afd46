/* PR005 register-spill: a kernel that uses local memory (register spills or
 * a local array) and takes a measurable share of the run's GPU time.
 * Needs a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/kernel_name.h"
#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). Reports kernels whose compiled code uses local memory\n"
    "(`local_per_thread` above 0 in the profile, as CUPTI reports it) and that take at least 1%\n"
    "of the run's GPU time: at each line of this file that launches one, and, in a CUDA file\n"
    "that defines the kernel (`__global__` function of that name), at its definition.\n"
    "\n"
    "Not reported: kernels of vendor libraries and frameworks (cuBLAS, cuDNN, CUTLASS, PyTorch's\n"
    "ATen, Triton, ...; recognised by name), whose code you do not compile, unless this file\n"
    "defines a kernel of that name.\n"
    "\n"
    "## Why is this slow?\n"
    "Local memory is per-thread memory in the GPU's DRAM (cached in L1/L2). The compiler puts\n"
    "values there when a thread needs more registers than it may use (spills) and for arrays it\n"
    "cannot keep in registers (indexed with run-time values, or too large). Every access is a\n"
    "memory access instead of a register read: hundreds of cycles on an L1 miss, and extra\n"
    "memory traffic that competes with the kernel's real loads and stores.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__global__ void histogram_sort(const float *in, float *out, int n)\n"
    "{\n"
    "    float window[64];                 // indexed with run-time values below: local memory\n"
    "    for (int i = 0; i < 64; ++i) window[i] = in[blockIdx.x * 64 + i];\n"
    "    out[threadIdx.x] = window[(int)in[threadIdx.x] & 63];\n"
    "}\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Compile with `-Xptxas -v` (nvcc) to see `bytes stack frame, N bytes spill stores, N bytes\n"
    "spill loads` per kernel. For spills: fewer values live at once (split the kernel, recompute\n"
    "instead of keeping), or give the compiler more registers per thread (`__launch_bounds__`\n"
    "with fewer threads per block, or a higher `-maxrregcount`, trading occupancy). For local\n"
    "arrays: index them only with compile-time constants (fully unrolled loops) so they live in\n"
    "registers, or move them to shared memory.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: register budgets trade against occupancy and need measuring.\n"
    "\n"
    "## The numbers\n"
    "`local_per_thread` is the local memory the kernel's compiled code reserves per thread (spill\n"
    "slots and stack arrays together; the profile cannot tell them apart). The share is the GPU\n"
    "time of the kernel's configurations that use local memory over the run's GPU time. No gain is\n"
    "estimated: what spills cost depends on how often the spilled values are touched, which only\n"
    "a device-level metric (`smsp__sass_sectors_mem_local`) measures: with a profile made by\n"
    "`advise profile --source-metrics`, PR012 reports the lines where that traffic is. Severity\n"
    "is info, warning from 10% of the GPU time.\n";

#define MIN_SHARE 0.01
#define WARNING_SHARE 0.10

/* The kernel configurations with local memory, summed by function name. */
typedef struct {
    char *base;
    const ProfKernel *example; /* the configuration with the most time */
    uint64_t ns;
    uint32_t local_max;
} Spiller;

typedef struct {
    Spiller *items;
    size_t count;
    int *owner; /* per kernel of the profile: its Spiller, or -1 */
} Spillers;

static void spillers_free(Spillers *s) {
    for (size_t i = 0; i < s->count; i++) free(s->items[i].base);
    free(s->items);
    free(s->owner);
}

static bool collect(const Profile *p, Spillers *s) {
    memset(s, 0, sizeof *s);
    s->owner = malloc((p->kernel_count ? p->kernel_count : 1) * sizeof *s->owner);
    s->items = calloc(p->kernel_count ? p->kernel_count : 1, sizeof *s->items);
    if (!s->owner || !s->items) return false;
    for (size_t i = 0; i < p->kernel_count; i++) {
        const ProfKernel *k = &p->kernels[i];
        s->owner[i] = -1;
        if (k->local_per_thread == 0) continue;
        char *base = kernel_base_name(k->name);
        if (!base) return false;
        size_t j = 0;
        while (j < s->count && strcmp(s->items[j].base, base) != 0) j++;
        if (j == s->count)
            s->items[s->count++] = (Spiller){.base = base};
        else
            free(base);
        Spiller *sp = &s->items[j];
        s->owner[i] = (int)j;
        sp->ns += k->stats.total_ns;
        if (k->local_per_thread > sp->local_max) sp->local_max = k->local_per_thread;
        if (!sp->example || k->stats.total_ns > sp->example->stats.total_ns) sp->example = k;
    }
    return true;
}

static void report(RuleContext *ctx, uint32_t line, const Spiller *s, uint64_t gpu_total, const char *where) {
    char name[112], pct[16];
    double share = (double)s->ns / gpu_total;
    Finding *f = pf_report_line(ctx, line,
                                "`%s` %s %u bytes of local memory per thread (register spills or a local array); %s "
                                "of GPU time",
                                pf_kernel_display_name(s->example->name, name, sizeof name), where, s->local_max,
                                units_ratio(share, pct, sizeof pct));
    if (!f) return;
    if (share >= WARNING_SHARE) f->severity = SEVERITY_WARNING;
    const ProfKernel *k = s->example;
    bool ok = finding_measured(f, QV(q_ns(s->ns), q_ratio(share)),
                               "{} on the GPU in its configurations that use local memory ({} of GPU time)");
    ok = ok && finding_measured(f, NO_VALUES, "%u registers/thread, %u bytes of local memory/thread, block [%u, %u, %u]",
                                k->registers, k->local_per_thread, k->block[0], k->block[1], k->block[2]);
    if (!ok) ctx->out_of_memory = true;
}

/* the line launches a configuration of spiller j */
static bool launches_spiller(const Profile *p, const PfLine *line, const Spillers *s, int j) {
    for (size_t o = 0; o < line->op_count; o++) {
        const ProfOp *op = line->ops[o];
        if (op->kind == PROF_OP_LAUNCH && op->kernel >= 0 && (size_t)op->kernel < p->kernel_count &&
            s->owner[op->kernel] == j)
            return true;
    }
    return false;
}

static void check_profile(RuleContext *ctx) {
    const Profile *p = profile_view_profile(ctx->profile);
    uint64_t gpu_total = profile_view_gpu_ns(ctx->profile); /* shares are of GPU time, as everywhere */
    if (gpu_total == 0 || profile_view_kernel_ns(ctx->profile) == 0) return;
    Spillers s;
    PfLines lines = {0};
    if (!collect(p, &s) || (s.count && !pf_lines_of_file(ctx->profile, ctx->profile_file, &lines))) {
        ctx->out_of_memory = true;
        spillers_free(&s);
        return;
    }
    for (size_t i = 0; i < s.count && !ctx->out_of_memory; i++) {
        const Spiller *sp = &s.items[i];
        /* the ones that matter and are the user's */
        if (sp->ns < MIN_SHARE * gpu_total || !pf_kernel_is_users(ctx, sp->example)) continue;
        uint32_t def_line = 0;
        if (ctx->cuda && pf_cuda_kernel_definition(ctx->cuda, sp->base, &def_line))
            report(ctx, def_line, sp, gpu_total, "uses");
        for (size_t l = 0; l < lines.count && !ctx->out_of_memory; l++)
            if (lines.lines[l].line != def_line && launches_spiller(p, &lines.lines[l], &s, (int)i))
                report(ctx, lines.lines[l].line, sp, gpu_total, "launched here uses");
    }
    pf_lines_free(&lines);
    spillers_free(&s);
}

const Rule rule_pr005_register_spill = {
    .code = "PR005", .name = "register-spill", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile,
    .summary = "A kernel that spills registers to local memory takes 1% of the GPU time or more (profile)",
    .documentation = documentation};
