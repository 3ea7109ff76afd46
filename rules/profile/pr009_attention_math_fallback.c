/* PR009 attention-math-fallback: a scaled_dot_product_attention call that
 * ran as separate matmul and softmax kernels (the math path) instead of a
 * fused attention kernel. Needs a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). Looks at the lines of a Python file that call\n"
    "`torch.nn.functional.scaled_dot_product_attention` and whose launches the profile recorded.\n"
    "When those launches contain matmul kernels (at least two per softmax) and a softmax kernel,\n"
    "and no fused attention kernel (names with `flash`, `fmha`, `efficient_attention` or\n"
    "`cudnn`), PyTorch ran the call on its math path: the reference implementation made of a\n"
    "matmul, a softmax and another matmul. The finding names the likely reasons.\n"
    "\n"
    "Conservative on purpose: a line that calls a whole model (whose attention runs somewhere\n"
    "inside) is not examined, because its matmul and softmax kernels may come from elsewhere in\n"
    "the model; nor is hand-written attention (`softmax(q @ k.T) @ v`: PY006 reports that).\n"
    "\n"
    "## Why is this slow?\n"
    "The math path writes the whole (sequence × sequence) score matrix to GPU memory, reads it\n"
    "back for the softmax, writes the probabilities and reads them again for the second matmul:\n"
    "memory traffic and memory use that grow with the square of the sequence length, and three\n"
    "or more kernels. The fused kernels (FlashAttention, memory-efficient attention, cuDNN) keep\n"
    "the scores on chip and run in one kernel.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "mask = torch.ones(T, T, dtype=torch.bool, device=\"cuda\").tril()\n"
    "out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Meet the fused kernels' conditions. The usual reasons for the fallback:\n"
    "- dtype: FlashAttention needs fp16 or bf16 (`torch.autocast(\"cuda\", dtype=torch.bfloat16)`);\n"
    "  the memory-efficient kernel takes fp32 but has its own limits;\n"
    "- an explicit mask: FlashAttention takes none; write a causal mask as `is_causal=True`, and\n"
    "  prefer a float additive mask of the right shape over a boolean one;\n"
    "- the head size: a multiple of 8, at most 256 (FlashAttention), else padded or refused;\n"
    "- dropout during training with a backend that does not support it, `enable_gqa`, nested or\n"
    "  non-contiguous inputs, or a backend switched off (`torch.backends.cuda.enable_flash_sdp`,\n"
    "  `sdpa_kernel`).\n"
    "To find out which, run the call under\n"
    "`with torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION):`: it raises and PyTorch's\n"
    "warnings say why each fused backend refused.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: changing dtypes or masks changes numerics.\n"
    "\n"
    "## The numbers\n"
    "The matmul and softmax kernels launched from the line (by name), and their GPU time as a\n"
    "share of the run's GPU time; reported from 1%. No gain is estimated: a fused kernel's speed-up\n"
    "depends on the sequence length, head size and dtype. Severity is info, warning from 10%.\n";

#define MIN_SHARE 0.01
#define WARNING_SHARE 0.10

typedef struct {
    const PySource *src;
    size_t start, end; /* the line */
    TSNode call;
    bool found;
} SdpaSearch;

static bool is_sdpa(const PySource *src, TSNode call) {
    char name[256];
    if (py_callee_name(src, call, name, sizeof name)) {
        size_t n = strlen(name), m = strlen("scaled_dot_product_attention");
        if (n >= m && strcmp(name + n - m, "scaled_dot_product_attention") == 0) return true;
    }
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (ts_node_is_null(fn)) return false;
    const char *text = py_text_ptr(src, fn);
    size_t len = py_text_len(fn), m = strlen("scaled_dot_product_attention");
    return len >= m && memcmp(text + len - m, "scaled_dot_product_attention", m) == 0;
}

static bool visit(TSNode n, void *data) {
    SdpaSearch *s = data;
    if (s->found || ts_node_end_byte(n) <= s->start || ts_node_start_byte(n) >= s->end) return false;
    if (py_is(n, "call") && ts_node_start_byte(n) >= s->start && is_sdpa(s->src, n)) {
        s->call = n;
        s->found = true;
        return false;
    }
    return true;
}

/* an argument given and not None / 0 */
static bool given(const PySource *src, TSNode call, const char *keyword, uint32_t position) {
    TSNode v = py_call_keyword(src, call, keyword);
    if (ts_node_is_null(v) && py_call_positional_count(call) > position) v = py_call_positional(call, position);
    if (ts_node_is_null(v)) return false;
    return !(py_text_eq(src, v, "None") || py_text_eq(src, v, "0") || py_text_eq(src, v, "0.0") ||
             py_text_eq(src, v, "False"));
}

static void check_line(RuleContext *ctx, const PfLine *line, const void *data) {
    uint64_t gpu_total = *(const uint64_t *)data;
    const Profile *p = profile_view_profile(ctx->profile);
    uint64_t gemm = 0, softmax = 0, ns = 0;
    for (size_t i = 0; i < line->op_count; i++) {
        const ProfOp *op = line->ops[i];
        if (op->kind != PROF_OP_LAUNCH || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count) continue;
        const char *name = p->kernels[op->kernel].name;
        if (pf_kernel_is_fused_attention(name)) return; /* a fused kernel ran here */
        if (pf_kernel_is_gemm(name)) {
            gemm += op->stats.count;
            ns += op->stats.total_ns;
        } else if (pf_kernel_is_softmax(name)) {
            softmax += op->stats.count;
            ns += op->stats.total_ns;
        }
    }
    if (softmax == 0 || gemm < 2 * softmax) return;
    double share = (double)ns / gpu_total;
    if (share < MIN_SHARE) return;
    SdpaSearch s = {.src = ctx->py};
    if (!pf_line_range(ctx->doc, line->line, &s.start, &s.end)) return;
    py_walk(ts_tree_root_node(ctx->py->tree), visit, &s);
    if (!s.found) return;
    /* the likely reasons: what the call shows first, then the usual ones */
    bool mask = given(ctx->py, s.call, "attn_mask", 3), dropout = given(ctx->py, s.call, "dropout_p", 4);
    const char *why = mask && dropout ? "its explicit `attn_mask` (a causal mask is `is_causal=True`) or `dropout_p`"
                      : mask          ? "its explicit `attn_mask` (a causal mask is `is_causal=True`)"
                      : dropout       ? "`dropout_p` in training"
                                      : "fp32 inputs (flash needs fp16/bf16), a head size not a multiple of 8 or "
                                        "above 256, or a disabled backend";
    char g[32], sm[32], pct[16];
    Finding *f = pf_report_line(ctx, line->line,
                                "scaled_dot_product_attention ran on the math path: %s matmul and %s softmax kernels, "
                                "no fused attention kernel (%s of GPU time); likely because of %s",
                                units_count(gemm, g, sizeof g), units_count(softmax, sm, sizeof sm),
                                units_ratio(share, pct, sizeof pct), why);
    if (!f) return;
    if (share >= WARNING_SHARE) f->severity = SEVERITY_WARNING;
    if (!finding_measured(f, QV(q_ns(ns)), "matmul and softmax kernels launched here: {} on the GPU"))
        ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    if (!ctx->py || !ctx->py->tree) return;
    uint64_t gpu_total = profile_view_gpu_ns(ctx->profile); /* shares are of GPU time, as everywhere */
    if (gpu_total == 0 || profile_view_kernel_ns(ctx->profile) == 0) return;
    pf_each_line(ctx, check_line, &gpu_total);
}

const Rule rule_pr009_attention_math_fallback = {
    .code = "PR009", .name = "attention-math-fallback", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON, .check_profile = check_profile,
    .summary = "scaled_dot_product_attention ran as separate matmul and softmax kernels, not a fused kernel (profile)",
    .documentation = documentation};
