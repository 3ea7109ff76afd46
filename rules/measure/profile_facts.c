#include "rules/measure/profile_facts.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/python/python_query.h"
#include "profiler/kernel_name.h"
#include "rules/measure/measure.h"

/* ---- the operations of one file, by line ------------------------------- */

bool pf_lines_of_file(const ProfileView *v, int file, PfLines *out) {
    memset(out, 0, sizeof *out);
    const Profile *p = profile_view_profile(v);
    const ProfileLineCost *costs;
    size_t line_count = profile_view_lines(v, file, &costs);
    size_t n = profile_view_ops_in(v, file, 1, UINT32_MAX, NULL, 0);
    if (line_count == 0 || n == 0) return true;
    out->storage = malloc(n * sizeof *out->storage);
    out->lines = calloc(line_count, sizeof *out->lines);
    if (!out->storage || !out->lines) {
        pf_lines_free(out);
        return false;
    }
    n = profile_view_ops_in(v, file, 1, UINT32_MAX, out->storage, n);
    /* the view's operations come sorted by line, in profile order within one */
    for (size_t i = 0; i < n; i++) {
        const ProfSite *site = &p->sites[out->storage[i]->site];
        if (out->count == 0 || out->lines[out->count - 1].line != site->line) {
            if (out->count == line_count) break;
            PfLine *l = &out->lines[out->count++];
            l->line = site->line;
            l->site = site;
            l->ops = &out->storage[i];
        }
        out->lines[out->count - 1].op_count++;
    }
    return true;
}

void pf_lines_free(PfLines *lines) {
    free(lines->lines);
    free(lines->storage);
    memset(lines, 0, sizeof *lines);
}

bool pf_file_lines(RuleContext *ctx, PfLines *out) {
    if (pf_lines_of_file(ctx->profile, ctx->profile_file, out)) return true;
    ctx->out_of_memory = true;
    return false;
}

void pf_each_line(RuleContext *ctx, PfLineVisit visit, const void *data) {
    PfLines lines;
    if (!pf_file_lines(ctx, &lines)) return;
    for (size_t i = 0; i < lines.count && !ctx->out_of_memory; i++) visit(ctx, &lines.lines[i], data);
    pf_lines_free(&lines);
}

/* ---- reporting on a line ----------------------------------------------- */

bool pf_line_range(const Document *doc, uint32_t line, size_t *start, size_t *end) {
    if (line == 0 || line > doc->line_count) return false;
    size_t s = doc->line_starts[line - 1], e = document_line_end(doc, line - 1);
    while (s < e && (doc->text[s] == ' ' || doc->text[s] == '\t' || doc->text[s] == '\f')) s++;
    while (e > s && (doc->text[e - 1] == ' ' || doc->text[e - 1] == '\t' || doc->text[e - 1] == '\r')) e--;
    if (s == e) return false;
    *start = s;
    *end = e;
    return true;
}

typedef struct {
    size_t start, end;  /* the line's code */
    bool found;
} LoopSearch;

static bool find_cuda_loop(CuNode *n, void *data) {
    LoopSearch *s = data;
    if (s->found) return false;
    if (!n->parent) return true; /* the translation unit: its extent is not the file's */
    if (n->end <= s->start || n->start >= s->end) return false; /* children lie inside */
    if ((n->kind == CXCursor_ForStmt || n->kind == CXCursor_WhileStmt || n->kind == CXCursor_DoStmt) &&
        n->start <= s->start && s->end <= n->end)
        s->found = true;
    return !s->found;
}

bool pf_line_in_loop(const RuleContext *ctx, uint32_t line) {
    size_t start, end;
    if (!pf_line_range(ctx->doc, line, &start, &end)) return true;
    if (ctx->py && ctx->py->tree) {
        TSNode n = ts_node_descendant_for_byte_range(ts_tree_root_node(ctx->py->tree), (uint32_t)start,
                                                     (uint32_t)start);
        return !ts_node_is_null(py_enclosing_loop(n));
    }
    if (ctx->cuda && ctx->cuda->root) {
        LoopSearch s = {start, end, false};
        cu_walk(ctx->cuda->root, find_cuda_loop, &s);
        return s.found;
    }
    return true;
}

Finding *pf_report_line(RuleContext *ctx, uint32_t line, const char *fmt, ...) {
    size_t start, end;
    if (!pf_line_range(ctx->doc, line, &start, &end)) return NULL;
    va_list ap;
    va_start(ap, fmt);
    Finding *f = rule_report_v(ctx, start, end, fmt, ap);
    va_end(ap);
    return f;
}

/* ---- kernel names -------------------------------------------------------- */

/* [*begin, *end) of the qualified name with template arguments: without the
 * return type before it and the parameter list after it. */
static void name_span(const char *name, size_t *begin, size_t *end) {
    size_t len = strlen(name);
    size_t e = len;
    /* the parameter list: the last balanced (...) at the end */
    while (e > 0 && isspace((unsigned char)name[e - 1])) e--;
    if (e > 0 && name[e - 1] == ')') {
        int depth = 0;
        size_t i = e;
        while (i > 0) {
            i--;
            if (name[i] == ')') depth++;
            else if (name[i] == '(' && --depth == 0) break;
        }
        if (depth == 0 && i > 0) e = i;
    }
    /* the return type: up to the last space outside <> and () */
    size_t b = 0;
    int angle = 0, paren = 0;
    for (size_t i = 0; i < e; i++) {
        char c = name[i];
        if (c == '<') angle++;
        else if (c == '>' && angle > 0) angle--;
        else if (c == '(') paren++;
        else if (c == ')' && paren > 0) paren--;
        else if (c == ' ' && angle == 0 && paren == 0) b = i + 1;
    }
    if (b >= e) b = 0;
    *begin = b;
    *end = e;
}

const char *pf_kernel_display_name(const char *name, char *buf, size_t size) {
    size_t b, e;
    name_span(name, &b, &e);
    size_t len = e - b;
    if (size == 0) return buf;
    if (len < size) {
        memcpy(buf, name + b, len);
        buf[len] = '\0';
    } else if (size > 4) {
        size_t keep = size - 4;
        /* do not cut a UTF-8 sequence in two */
        while (keep > 0 && ((unsigned char)name[b + keep] & 0xC0) == 0x80) keep--;
        memcpy(buf, name + b, keep);
        memcpy(buf + keep, "...", 4);
    } else {
        buf[0] = '\0';
    }
    return buf;
}

static bool contains_nocase(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, n) == 0) return true;
    return false;
}

/* a namespace ("at::") only where a name starts: not inside "flat::" */
static bool contains_scope(const char *hay, const char *scope) {
    for (const char *p = hay; (p = strstr(p, scope)) != NULL; p++)
        if (p == hay || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) return true;
    return false;
}

static bool contains_any(const char *name, const char *const *list) {
    for (size_t i = 0; list[i]; i++) {
        size_t n = strlen(list[i]);
        bool scope = n > 2 && list[i][n - 1] == ':' && list[i][n - 2] == ':';
        if (scope ? contains_scope(name, list[i]) : contains_nocase(name, list[i])) return true;
    }
    return false;
}

bool pf_kernel_is_library(const char *name) {
    /* namespaces and prefixes of library kernels; cuBLAS's own kernel names
     * (gemv2T_kernel_val, gemvNSP_kernel, internal::gemvx::kernel, gemmSN_NN_kernel,
     * splitKreduce_kernel); never plain "gemm": users write their own */
    static const char *const markers[] = {
        "at::",     "c10::",    "cudnn",    "cublas",   "cutlass",  "xmma",     "nvjet",    "gemv2",
        "gemvNSP",  "gemvx",    "gemmSN",   "gemmk1",   "splitKreduce", "cub::", "thrust::", "flash",
        "fmha",     "triton",   "nccl",     "cusparse", "cufft",    "curand",   "cusolver", "magma",
        "ampere_",  "volta_",   "turing_",  "hopper_",  "sm50_",    "sm60_",    "sm70_",    "sm75_",
        "sm80_",    "sm86_",    "sm89_",    "sm90_",    "sm100_",   "sm120_",   "cask_",    "softmax_warp",
        "cunn_",    "sgemm_largek", "transformer_engine", "apex::", "xformers", "vllm::", "tensorrt",
        NULL};
    return contains_any(name, markers);
}

bool pf_kernel_is_gemm(const char *name) {
    static const char *const markers[] = {"gemm", "gemv", "xmma", "nvjet", "matmul", "cublas", "s1688", "s16816",
                                          "h16816", NULL};
    return !pf_kernel_is_fused_attention(name) && contains_any(name, markers);
}

bool pf_kernel_is_softmax(const char *name) {
    return !pf_kernel_is_fused_attention(name) && contains_nocase(name, "softmax");
}

bool pf_kernel_is_fused_attention(const char *name) {
    static const char *const markers[] = {"flash", "fmha", "efficient_attention", "MemEffAttention", "cudnn", NULL};
    return contains_any(name, markers);
}

/* ---- CUDA sources --------------------------------------------------------- */

typedef struct {
    const char *name;
    const CuNode *found;
} KernelSearch;

static bool has_body(const CuNode *fn) {
    for (uint32_t i = 0; i < fn->child_count; i++)
        if (fn->children[i]->kind == CXCursor_CompoundStmt) return true;
    return false;
}

static bool find_kernel(CuNode *n, void *data) {
    KernelSearch *s = data;
    if (s->found) return false;
    if (n->kind == CXCursor_FunctionDecl || n->kind == CXCursor_FunctionTemplate) {
        if ((n->attrs & CU_ATTR_GLOBAL) && strcmp(n->name, s->name) == 0 && has_body(n)) s->found = n;
        return false; /* no kernels inside functions */
    }
    return n->kind == CXCursor_TranslationUnit || n->kind == CXCursor_Namespace ||
           n->kind == CXCursor_LinkageSpec || n->kind == CXCursor_UnexposedDecl;
}

const CuNode *pf_cuda_kernel_definition(const CudaSource *src, const char *base_name, uint32_t *line) {
    if (!src || !src->root || !base_name[0]) return NULL;
    KernelSearch s = {base_name, NULL};
    cu_walk(src->root, find_kernel, &s);
    if (!s.found) return NULL;
    unsigned l = 0;
    clang_getExpansionLocation(clang_getCursorLocation(s.found->cursor), NULL, &l, NULL, NULL);
    if (l == 0 && src->doc) l = (unsigned)document_line_of(src->doc, s.found->start) + 1;
    *line = l;
    return s.found;
}

bool pf_kernel_is_users(RuleContext *ctx, const ProfKernel *k) {
    if (ctx->cuda) {
        char *base = kernel_base_name(k->name);
        if (!base) {
            ctx->out_of_memory = true;
            return false;
        }
        uint32_t line;
        bool here = pf_cuda_kernel_definition(ctx->cuda, base, &line) != NULL;
        free(base);
        if (here) return true;
    }
    return !pf_kernel_is_library(k->name);
}

/* ---- devices and occupancy ---------------------------------------------- */

const ProfDevice *pf_kernel_device(const ProfileView *v, const ProfKernel *k) {
    const Profile *p = profile_view_profile(v);
    if (k && k->device >= 0 && (size_t)k->device < p->device_count) return &p->devices[k->device];
    return profile_view_device(v);
}

static uint64_t round_up(uint64_t v, uint64_t unit) {
    return unit ? (v + unit - 1) / unit * unit : v;
}

uint64_t pf_threads_per_block(const ProfKernel *k) {
    return (uint64_t)k->block[0] * k->block[1] * k->block[2];
}

uint64_t pf_grid_blocks(const ProfKernel *k) {
    /* at most 2^96 in theory: saturate */
    uint64_t xy = (uint64_t)k->grid[0] * k->grid[1];
    return k->grid[2] && xy > UINT64_MAX / k->grid[2] ? UINT64_MAX : xy * k->grid[2];
}

bool pf_kernel_occupancy(const ProfDevice *dev, const ProfKernel *k, Occupancy *out) {
    return pf_occupancy(dev, pf_threads_per_block(k), k->registers, (uint64_t)k->static_shared + k->dynamic_shared,
                        out);
}

bool pf_occupancy(const ProfDevice *dev, uint64_t threads, uint32_t registers, uint64_t shared, Occupancy *out) {
    memset(out, 0, sizeof *out);
    if (!dev || threads == 0 || dev->max_warps_per_sm == 0 || dev->max_blocks_per_sm == 0 ||
        dev->max_registers_per_sm == 0 || dev->max_shared_per_sm == 0)
        return false;
    if (threads > (1u << 20)) threads = 1u << 20; /* no GPU runs such a block: it stays unlaunchable below */
    enum { WARP = 32, REGISTER_UNIT = 256 };
    uint32_t sub_partitions = dev->cc_major == 6 && dev->cc_minor == 0 ? 2 : 4;
    uint32_t shared_unit = dev->cc_major >= 8 ? 128 : 256;
    uint32_t shared_reserved = dev->cc_major >= 8 ? 1024 : 0;
    uint32_t warps = (uint32_t)((threads + WARP - 1) / WARP);
    out->warps_per_block = warps;

    bool launchable = !(dev->max_threads_per_block && threads > dev->max_threads_per_block) && warps <= dev->max_warps_per_sm;

    out->blocks_by_warps = dev->max_warps_per_sm / warps;
    out->blocks_by_blocks = dev->max_blocks_per_sm;

    /* registers: allocated per warp, in each sub-partition of the SM */
    uint64_t per_warp = round_up((uint64_t)registers * WARP, REGISTER_UNIT);
    out->registers_per_warp = (uint32_t)per_warp;
    if (per_warp == 0) {
        out->blocks_by_registers = UINT32_MAX;
    } else {
        uint64_t per_block = per_warp * warps;
        uint64_t assumed = per_warp * round_up(warps, sub_partitions); /* the hardware's per-block check */
        uint64_t limit = dev->max_registers_per_block ? dev->max_registers_per_block : dev->max_registers_per_sm;
        if (per_block > limit || assumed > limit) {
            out->blocks_by_registers = 0;
        } else {
            uint64_t warps_per_partition = (dev->max_registers_per_sm / sub_partitions) / per_warp;
            out->blocks_by_registers = (uint32_t)(warps_per_partition * sub_partitions / warps);
        }
    }

    /* shared memory: the block's bytes plus the system's reserve, rounded up */
    uint64_t smem = round_up(shared + shared_reserved, shared_unit);
    out->shared_per_block = smem > UINT32_MAX ? UINT32_MAX : (uint32_t)smem;
    if (smem == 0)
        out->blocks_by_shared = UINT32_MAX;
    else
        out->blocks_by_shared = smem > dev->max_shared_per_sm ? 0 : (uint32_t)(dev->max_shared_per_sm / smem);

    uint32_t best = out->blocks_by_warps;
    out->limit = PF_LIMIT_WARPS;
    if (out->blocks_by_blocks < best) best = out->blocks_by_blocks, out->limit = PF_LIMIT_BLOCKS;
    if (out->blocks_by_registers < best) best = out->blocks_by_registers, out->limit = PF_LIMIT_REGISTERS;
    if (out->blocks_by_shared < best) best = out->blocks_by_shared, out->limit = PF_LIMIT_SHARED;
    if (!launchable) best = 0;
    if (best == 0) out->limit = PF_LIMIT_NONE;
    out->blocks_per_sm = best;
    out->active_warps = best * warps;
    out->occupancy = (double)out->active_warps / dev->max_warps_per_sm;
    return true;
}

const char *pf_limit_name(PfLimit limit) {
    switch (limit) {
    case PF_LIMIT_WARPS: return "warp slots";
    case PF_LIMIT_BLOCKS: return "block slots";
    case PF_LIMIT_REGISTERS: return "registers";
    case PF_LIMIT_SHARED: return "shared memory";
    case PF_LIMIT_NONE: break;
    }
    return "nothing fits";
}

void pf_each_user_launch(RuleContext *ctx, double min_share, PfLaunchVisit visit) {
    const Profile *p = profile_view_profile(ctx->profile);
    uint64_t gpu = profile_view_gpu_ns(ctx->profile);
    if (gpu == 0) return;
    PfLines lines;
    if (!pf_file_lines(ctx, &lines)) return;
    for (size_t l = 0; l < lines.count && !ctx->out_of_memory; l++) {
        const PfLine *line = &lines.lines[l];
        for (size_t o = 0; o < line->op_count && !ctx->out_of_memory; o++) {
            const ProfOp *op = line->ops[o];
            if (op->kind != PROF_OP_LAUNCH || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count) continue;
            bool seen = false; /* one visit per kernel configuration and line */
            for (size_t e = 0; e < o && !seen; e++)
                seen = line->ops[e]->kind == PROF_OP_LAUNCH && line->ops[e]->kernel == op->kernel;
            if (seen) continue;
            const ProfKernel *k = &p->kernels[op->kernel];
            double share = (double)k->stats.total_ns / (double)gpu;
            if (share < min_share || !pf_kernel_is_users(ctx, k)) continue;
            visit(ctx, line->line, op, k, share);
        }
    }
    pf_lines_free(&lines);
}
