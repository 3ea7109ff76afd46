/* PR005 register-spill: a kernel that uses local memory (register spills or
 * a local array) and takes a measurable share of the GPU's kernel time.
 * Needs a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). Reports kernels whose compiled code uses local memory\n"
    "(`local_per_thread` above 0 in the profile, as CUPTI reports it) and that take at least 1%\n"
    "of the GPU's kernel time: at each line of this file that launches one, and, in a CUDA file\n"
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
    "time of the kernel's configurations that use local memory over all kernel time. No gain is\n"
    "estimated: what spills cost depends on how often the spilled values are touched, which only\n"
    "a device-level metric (`smsp__sass_sectors_mem_local`) measures. Severity is info, warning\n"
    "from 10% of the kernel time.\n";

#define MIN_SHARE 0.01
#define WARNING_SHARE 0.10

/* The kernel configurations with local memory, summed by function name. */
typedef struct {
    char base[128];
    const ProfKernel *example; /* the configuration with the most time */
    uint64_t ns;
    uint32_t local_max;
} Spiller;

static size_t collect(const Profile *p, Spiller **out) {
    *out = NULL;
    size_t n = 0;
    Spiller *s = NULL;
    for (size_t i = 0; i < p->kernel_count; i++) {
        const ProfKernel *k = &p->kernels[i];
        if (k->local_per_thread == 0) continue;
        char base[128];
        pf_kernel_base_name(k->name, base, sizeof base);
        size_t j = 0;
        while (j < n && strcmp(s[j].base, base) != 0) j++;
        if (j == n) {
            Spiller *grown = realloc(s, (n + 1) * sizeof *s);
            if (!grown) {
                free(s);
                return (size_t)-1;
            }
            s = grown;
            memset(&s[n], 0, sizeof s[n]);
            memcpy(s[n].base, base, sizeof base);
            n++;
        }
        s[j].ns += k->stats.total_ns;
        if (k->local_per_thread > s[j].local_max) s[j].local_max = k->local_per_thread;
        if (!s[j].example || k->stats.total_ns > s[j].example->stats.total_ns) s[j].example = k;
    }
    *out = s;
    return n;
}

static void report(RuleContext *ctx, uint32_t line, const Spiller *s, uint64_t kernel_total, const char *where) {
    char name[112], pct[16], t[24];
    double share = (double)s->ns / kernel_total;
    Finding *f = pf_report_line(ctx, line,
                                "`%s` %s %u bytes of local memory per thread (register spills or a local array); %s "
                                "of GPU kernel time",
                                pf_kernel_display_name(s->example->name, name, sizeof name), where, s->local_max,
                                pf_percent(share, pct, sizeof pct));
    if (!f) return;
    if (share >= WARNING_SHARE) f->severity = SEVERITY_WARNING;
    const ProfKernel *k = s->example;
    bool ok = finding_add_evidence(f, "%s of GPU time in its configurations that use local memory (%s of kernel time)",
                                   pf_duration(s->ns, t, sizeof t), pf_percent(share, pct, sizeof pct));
    ok = ok && finding_add_evidence(f, "%u registers/thread, %u bytes of local memory/thread, block [%u, %u, %u]",
                                    k->registers, k->local_per_thread, k->block[0], k->block[1], k->block[2]);
    ok = ok && finding_add_evidence(f, "`nvcc -Xptxas -v` tells spill stores/loads from a local array");
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    const Profile *p = profile_view_profile(ctx->profile);
    uint64_t kernel_total = profile_view_kernel_ns(ctx->profile);
    if (kernel_total == 0) return;
    Spiller *spill;
    size_t n = collect(p, &spill);
    if (n == (size_t)-1) {
        ctx->out_of_memory = true;
        return;
    }
    if (n == 0) return;
    /* keep the ones that matter and are the user's */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (spill[i].ns < MIN_SHARE * kernel_total || !pf_kernel_is_users(ctx, spill[i].example)) continue;
        spill[kept++] = spill[i];
    }
    PfLines lines;
    if (kept && !pf_lines_of_file(ctx->profile, ctx->profile_file, &lines)) {
        free(spill);
        ctx->out_of_memory = true;
        return;
    }
    for (size_t i = 0; i < kept && !ctx->out_of_memory; i++) {
        uint32_t def_line = 0;
        if (ctx->cuda && pf_cuda_kernel_definition(ctx->cuda, spill[i].base, &def_line))
            report(ctx, def_line, &spill[i], kernel_total, "uses");
        for (size_t l = 0; l < lines.count && !ctx->out_of_memory; l++) {
            if (lines.lines[l].line == def_line) continue;
            bool launches = false;
            for (size_t o = 0; o < lines.lines[l].op_count && !launches; o++) {
                const ProfOp *op = lines.lines[l].ops[o];
                if (op->kind != PROF_OP_LAUNCH || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count) continue;
                const ProfKernel *k = &p->kernels[op->kernel];
                char base[128];
                launches = k->local_per_thread > 0 &&
                           strcmp(pf_kernel_base_name(k->name, base, sizeof base), spill[i].base) == 0;
            }
            if (launches) report(ctx, lines.lines[l].line, &spill[i], kernel_total, "launched here uses");
        }
    }
    if (kept) pf_lines_free(&lines);
    free(spill);
}

const Rule rule_pr005_register_spill = {
    .code = "PR005",
    .name = "register-spill",
    .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA,
    .summary = "A kernel that spills registers to local memory takes 1% of the GPU time or more (profile)",
    .documentation = documentation,
    .check = NULL,
    .measure = MEASURE_NONE,
    .check_profile = check_profile,
};
