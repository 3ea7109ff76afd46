/* PR019 fp32-gemm-on-cuda-cores: the lines whose float32 matrix products
 * ran on the FP32 CUDA cores (cuBLAS/CUTLASS FFMA GEMM kernels) for a real
 * share of GPU time, wherever the model is defined. Needs a profile. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/python/python_query.h"
#include "profiler/kernel_name.h"
#include "rules/measure/critical_gain.h"
#include "rules/measure/profile_facts.h"
#include "rules/measure/tf32_model.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). Reports the lines that launched float32 matrix products\n"
    "which ran on the GPU's FP32 CUDA cores: cuBLAS and CUTLASS kernels named for FFMA\n"
    "arithmetic (`sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_...`, `cutlass_80_simt_sgemm_...`,\n"
    "`ampere_sgemm_...`), as opposed to their TF32 (`tf32`, `tensorop`) and bf16 versions.\n"
    "Reported when these kernels take at least 5% of the run's GPU time, at each line whose\n"
    "share is at least 1%: the line of a `Linear` layer's call in a model file, a `@` or\n"
    "`torch.matmul`, a `cublasSgemm` in a `.cu` file. The profile is the evidence, so the\n"
    "rule speaks wherever the model is defined, where PY009 (which reads code alone) only\n"
    "reports a program's entry point.\n"
    "\n"
    "Not reported: a file that keeps full float32 on purpose\n"
    "(`torch.backends.cuda.matmul.allow_tf32 = False`,\n"
    "`torch.set_float32_matmul_precision(\"highest\")`, an `fp32_precision = \"ieee\"`, or in CUDA\n"
    "any `cublasSetMathMode` or an explicit `CUBLAS_COMPUTE_32F_*`); a file where PY009 already\n"
    "reports the program (its measured gain counts the same kernels), and in the lists that rank\n"
    "findings across files (`advise report`, the editor's sidebar) wherever another file's PY009\n"
    "carries that measured gain; and the user's own\n"
    "kernels, even when named `sgemm`: TF32 settings do not reach them. Nor a GPU whose TF32 is no\n"
    "faster than its FP32, or not known to advise (consumer Ampere, Ada): only the A100, H100,\n"
    "H200 and B200 are.\n"
    "\n"
    "## Why is this slow?\n"
    "Since Ampere, float32 matrix products run on the tensor cores only in TF32 mode, which\n"
    "PyTorch leaves off for matmuls and cuBLAS leaves off by default. On the FP32 CUDA cores an\n"
    "H200 reaches about 50 TFLOP/s; TF32 tensor cores reach several times that on large\n"
    "products, with a 10-bit mantissa that training tolerates well.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "# model.py: the layers whose products ran on CUDA cores\n"
    "def forward(self, x):\n"
    "    return self.proj(F.gelu(self.fc(x)))\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Once, at the program's start (it applies to every product after it):\n"
    "```python\n"
    "torch.backends.cuda.matmul.allow_tf32 = True   # or torch.set_float32_matmul_precision(\"high\")\n"
    "```\n"
    "or run the forward pass under `torch.autocast(\"cuda\", dtype=torch.bfloat16)`, which on an H200\n"
    "measured about twice TF32's speed-up again on large products (bench/RESULTS.md). In CUDA,\n"
    "`cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH)`, or `cublasGemmEx` with\n"
    "`CUBLAS_COMPUTE_32F_FAST_TF32`.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: the setting belongs at the program's start, which may be another file, and\n"
    "it changes numerics (a 10-bit mantissa in the products' inputs).\n"
    "\n"
    "## The numbers\n"
    "The FFMA GEMM kernels launched from the line: their calls, GPU time and share of the run's\n"
    "GPU time. Gain (program): for each kernel, its time x (1 - 1/S), S the TF32 speed-up\n"
    "measured on an H200 for an FP32 GEMM kernel of that duration per call (none at 2 us, 1.3x\n"
    "at 4 us, 2.5x at 32 us, 4x at 256 us, 6.6x from 8 ms: small products gain far less than the\n"
    "peak rates' 7.4x; bench/tf32, rules/measure/tf32_model.c), never above the GPU's peak ratio;\n"
    "no gain on a GPU without TF32 tensor cores. The gain is GPU time, and GPU time shortens the\n"
    "run only on its critical path: with a profile that measured it (`critical_ns`, FORMAT.md),\n"
    "each kernel's saving counts the part of its time after which the host was waiting for the\n"
    "GPU, and the gain is at most the time the host waited for the GPU (`host_wait_ns`). Older\n"
    "profiles keep the whole saving, with a caveat in a run where the GPU was busy less than half\n"
    "the time. Severity is info, warning from 10% of GPU time.\n"
    "\n"
    "The curve holds for products whose dimensions are multiples of 4 (16 bytes). One that is\n"
    "not (an odd vocabulary: GPT-2's 50,257 words, a 33,278-word LSTM) runs TF32 on kernels that\n"
    "load one element at a time and sped up only 2.0-2.5x on the H200, whatever its size\n"
    "(bench/tf32/results/h200-misaligned-2026-12-04.json); the FP32 kernel's name does not tell\n"
    "the two apart, so the gain is then about half the estimate. Padding that dimension to a\n"
    "multiple of 64 recovers the full speed-up.\n";

#define MIN_PROGRAM_SHARE 0.05
#define MIN_LINE_SHARE 0.01
#define WARNING_SHARE 0.10

typedef struct {
    uint64_t gpu_ns;
    const ProfileView *view;
} Run;

/* ---- a precision kept on purpose ------------------------------------------------ */

static bool text_ends_with(const PySource *src, TSNode n, const char *suffix) {
    size_t len = py_text_len(n), m = strlen(suffix);
    return len >= m && memcmp(py_text_ptr(src, n) + len - m, suffix, m) == 0;
}

static bool is_string(const PySource *src, TSNode n, const char *value) {
    if (!py_is(n, "string")) return false;
    size_t len = py_text_len(n), m = strlen(value);
    const char *t = py_text_ptr(src, n);
    return len == m + 2 && (t[0] == '"' || t[0] == '\'') && memcmp(t + 1, value, m) == 0;
}

typedef struct {
    const PySource *src;
    bool found;
} Fp32Search;

static bool visit_full_fp32(TSNode n, void *data) {
    Fp32Search *s = data;
    const PySource *src = s->src;
    bool *found = &s->found;
    if (*found) return false;
    if (py_is(n, "assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4), right = ts_node_child_by_field_name(n, "right", 5);
        if (!ts_node_is_null(left) && !ts_node_is_null(right) &&
            ((text_ends_with(src, left, "allow_tf32") && py_text_eq(src, right, "False")) ||
             (text_ends_with(src, left, "fp32_precision") && is_string(src, right, "ieee"))))
            *found = true;
    } else if (py_is(n, "call")) {
        TSNode fn = ts_node_child_by_field_name(n, "function", 8);
        TSNode arg = py_call_positional(n, 0);
        if (!ts_node_is_null(fn) && !ts_node_is_null(arg) && text_ends_with(src, fn, "set_float32_matmul_precision") &&
            is_string(src, arg, "highest"))
            *found = true;
    }
    return !*found;
}

/* The file keeps full float32 matmuls on purpose. */
static bool keeps_full_fp32(const RuleContext *ctx) {
    if (ctx->py && ctx->py->tree) {
        Fp32Search s = {ctx->py, false};
        py_walk(ts_tree_root_node(ctx->py->tree), visit_full_fp32, &s);
        return s.found;
    }
    static const char *const cuda_choices[] = {"cublasSetMathMode", "CUBLAS_COMPUTE_32F", NULL};
    for (size_t i = 0; cuda_choices[i]; i++)
        if (memmem(ctx->doc->text, ctx->doc->length, cuda_choices[i], strlen(cuda_choices[i]))) return true;
    return false;
}

/* ---- the kernels ------------------------------------------------------------------ */

/* a library's FP32 GEMM: TF32 settings reach it (the user's own `sgemm` they do not) */
static bool is_library_fp32_gemm(RuleContext *ctx, const ProfKernel *k) {
    return kernel_is_fp32_simt_gemm(k->name) && !pf_kernel_is_users(ctx, k);
}

static uint64_t program_fp32_gemm_ns(RuleContext *ctx, const Profile *p) {
    uint64_t ns = 0;
    for (size_t i = 0; i < p->kernel_count; i++)
        if (is_library_fp32_gemm(ctx, &p->kernels[i])) ns += p->kernels[i].stats.total_ns;
    return ns;
}

static void check_line(RuleContext *ctx, const PfLine *line, const void *data) {
    const Run *run = data;
    const Profile *p = profile_view_profile(run->view);
    const ProfDevice *device = profile_view_device(run->view);
    uint64_t calls = 0, ns = 0;
    double saved = 0, critical_saved = 0; /* the saving, and its part on the critical path */
    bool critical_known = true;
    for (size_t i = 0; i < line->op_count; i++) {
        const ProfOp *op = line->ops[i];
        if (op->kind != PROF_OP_LAUNCH || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count ||
            !is_library_fp32_gemm(ctx, &p->kernels[op->kernel]))
            continue;
        calls += op->stats.count;
        ns += op->stats.total_ns;
        double op_saved = tf32_saved_ns(device, op->stats.total_ns, op->stats.count);
        saved += op_saved;
        critical_known &= op->critical.known;
        if (op->critical.known && op->stats.total_ns)
            critical_saved += op_saved * (double)op->critical.ns / (double)op->stats.total_ns;
    }
    double share = (double)ns / (double)run->gpu_ns;
    if (!calls || share < MIN_LINE_SHARE) return;
    bool python = ctx->doc->language == LANGUAGE_PYTHON;
    char pct[16];
    /* the headline share only: the counts and times are the measured evidence below it */
    Finding *f = pf_report_line(ctx, line->line,
                                "float32 matrix products launched here ran on CUDA cores, not tensor cores (%s of "
                                "the GPU's time); %s",
                                units_ratio(share, pct, sizeof pct),
                                python ? "TF32 (torch.backends.cuda.matmul.allow_tf32 = True) or bf16 autocast would "
                                         "run them on tensor cores"
                                       : "cuBLAS's TF32 mode (cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH)) "
                                         "would run them on tensor cores");
    if (!f) return;
    f->advice = python ? "enable TF32 once at the start (`torch.backends.cuda.matmul.allow_tf32 = True`) or run the "
                         "forward under `torch.autocast(\"cuda\", dtype=torch.bfloat16)`"
                       : "enable cuBLAS's TF32 mode: `cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH)`";
    if (share >= WARNING_SHARE) f->severity = SEVERITY_WARNING;
    bool ok = finding_measured(f, QV(q_count(calls), q_ns(ns), q_share(ns, run->gpu_ns)),
                               "FP32 GEMM kernels (FFMA) launched here: {} calls, {} ({} of GPU time)");
    /* shorter kernels shorten a run only on its critical path, and by no more than the host waited */
    if (ok && saved > 0) {
        CriticalGain c = critical_gain(run->view, saved, critical_known ? critical_saved / saved : -1);
        ok = finding_set_gain(f, c.gain_ns / 1e9, "program", NO_VALUES, "%s", TF32_MODEL_WORDS) &&
             critical_gain_words(&c, "that saving", &f->gain.model);
    }
    /* profiles without critical-path figures: a caveat where the GPU did not set the pace */
    uint64_t busy = profile_view_busy_ns(run->view), length = profile_view_run_ns(run->view);
    if (ok && saved > 0 && !critical_known && length && busy < length / 2)
        ok = finding_caveat(f, "the GPU was busy %.0f%% of the run: where the host's launches set the pace, "
                               "shorter kernels give back less than this",
                            100.0 * (double)busy / (double)length);
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    Run run = {profile_view_gpu_ns(ctx->profile), ctx->profile};
    /* on a GPU whose TF32 is no faster than FP32 (or unknown), there is nothing to advise */
    if (run.gpu_ns == 0 || tf32_peak_ratio(profile_view_device(ctx->profile)) <= 1) return;
    const Profile *p = profile_view_profile(ctx->profile);
    if ((double)program_fp32_gemm_ns(ctx, p) < MIN_PROGRAM_SHARE * (double)run.gpu_ns) return;
    if (ctx->out_of_memory || keeps_full_fp32(ctx)) return;
    pf_each_line(ctx, check_line, &run);
}

const Rule rule_pr019_fp32_gemm_on_cuda_cores = {
    .code = "PR019", .name = "fp32-gemm-on-cuda-cores", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile,
    .subsumed_in_file_by = "PY009", /* its measured gain counts the same kernels */
    .summary = "float32 matrix products ran on CUDA cores, not tensor cores (profile)",
    .documentation = documentation};
