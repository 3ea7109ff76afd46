/* CU002 divergent-barrier: __syncthreads() that only some threads of the
 * block reach: under an if/?:/switch/loop whose condition depends on the
 * thread index, or after a return/break/continue that only some threads take. */
#include <stdlib.h>
#include <string.h>

#include "../../analysis/cuda_index.h"
#include "../../analysis/cuda_query.h"
#include "rule.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `__syncthreads()` (and `__syncthreads_count/_and/_or`, and the cooperative-groups block\n"
    "barriers `block.sync()`, `cg::sync(block)`, `cg::this_thread_block().sync()`) that not every thread\n"
    "of the block reaches:\n"
    "- inside an `if`/`else`, `?:`, `switch` or loop whose condition depends on the thread index\n"
    "  (`threadIdx`, a variable computed from it, `block.thread_rank()`);\n"
    "- after an early `return` taken by some threads only (`if (i >= n) return; ... __syncthreads();`),\n"
    "  inside a loop that some threads leave with a thread-dependent `break`, or after a\n"
    "  thread-dependent `continue` in the same loop.\n"
    "\n"
    "Not flagged: conditions on `blockIdx`, `blockDim`, `gridDim`, kernel parameters or `__shared__`\n"
    "scalars (uniform across the block), the result of `__syncthreads_or/_and/_count` (the same in every\n"
    "thread), `__syncwarp()` and `tile.sync()` on a `thread_block_tile` (warp-level barriers), and\n"
    "loops with a uniform trip count such as\n"
    "`for (s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) ...; __syncthreads(); }` where the\n"
    "barrier sits outside the divergent `if`. Conditions on parameters of a `__device__` function are\n"
    "not followed into its callers.\n"
    "\n"
    "## Why is this slow?\n"
    "`__syncthreads()` waits until every thread of the block has arrived. When some threads skip it,\n"
    "the behaviour is undefined: the block hangs, or the barrier silently pairs with a different\n"
    "`__syncthreads()` and the shared-memory data it was meant to protect is read too early. A hang\n"
    "costs the whole kernel; a mis-paired barrier gives wrong results that look like numerical noise.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__global__ void scale(float *x, int n) {\n"
    "    __shared__ float tile[256];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;          // the last block's tail threads leave...\n"
    "    tile[threadIdx.x] = x[i];\n"
    "    __syncthreads();             // ...and never arrive here\n"
    "    x[i] = tile[blockDim.x - 1 - threadIdx.x];\n"
    "}\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Keep every thread alive up to the barrier and guard only the memory accesses:\n"
    "```cuda\n"
    "__global__ void scale(float *x, int n) {\n"
    "    __shared__ float tile[256];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    tile[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
    "    __syncthreads();\n"
    "    if (i < n) x[i] = tile[blockDim.x - 1 - threadIdx.x];\n"
    "}\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: moving the barrier or the condition changes which threads do the work, and\n"
    "the right restructuring depends on the algorithm.\n";

/* ---- thread dependence ------------------------------------------------- */

typedef struct {
    const CuNode *fn;
    const CuNode *stack[16];
    int depth;
} Taint;

static const char *const block_barriers[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                             "__syncthreads_or", NULL};
/* results that are the same in every thread of the block */
static const char *const block_uniform_calls[] = {"__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
                                                  NULL};
static const char *const thread_rank_calls[] = {"thread_rank", "thread_index", NULL};

static bool expr_tainted(Taint *t, const CuNode *n);

static bool assigned_from_thread(Taint *t, const CuNode *decl, const CuNode *n) {
    if ((n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Assign) ||
        n->kind == CXCursor_CompoundAssignOperator) {
        if (n->child_count == 2) {
            const CuNode *lhs = cu_strip(n->children[0]);
            if (lhs && lhs->kind == CXCursor_DeclRefExpr && lhs->ref == decl && expr_tainted(t, n->children[1]))
                return true;
        }
    }
    for (uint32_t i = 0; i < n->child_count; i++)
        if (assigned_from_thread(t, decl, n->children[i])) return true;
    return false;
}

static bool variable_tainted(Taint *t, const CuNode *decl) {
    if (!decl || decl->kind != CXCursor_VarDecl || (decl->attrs & CU_ATTR_SHARED)) return false;
    if (!t->fn || cu_function_of(decl) != t->fn) return false;
    for (int i = 0; i < t->depth; i++)
        if (t->stack[i] == decl) return false; /* a cycle: i = i + 1 */
    if (t->depth >= 16) return false;
    t->stack[t->depth++] = decl;
    bool yes = false;
    for (uint32_t i = 0; i < decl->child_count && !yes; i++)
        if (decl->children[i]->kind != CXCursor_TypeRef) yes = expr_tainted(t, decl->children[i]);
    if (!yes) yes = assigned_from_thread(t, decl, t->fn);
    t->depth--;
    return yes;
}

static bool expr_tainted(Taint *t, const CuNode *n) {
    if (!n) return false;
    if (cu_is_builtin_member(n, "threadIdx", 0)) return true;
    if (n->kind == CXCursor_CallExpr) {
        const char *callee = cu_callee(n);
        if (cu_name_in(callee, block_uniform_calls)) return false;
        if (cu_name_in(callee, thread_rank_calls)) return true;
    }
    if (n->kind == CXCursor_LambdaExpr) return false;
    if (n->kind == CXCursor_DeclRefExpr) return n->ref && variable_tainted(t, n->ref);
    for (uint32_t i = 0; i < n->child_count; i++)
        if (expr_tainted(t, n->children[i])) return true;
    return false;
}

static bool thread_dependent(const CuNode *fn, const CuNode *expr) {
    Taint t = {.fn = fn};
    return expr_tainted(&t, expr);
}

static bool contains(const CuNode *outer, const CuNode *inner) {
    for (const CuNode *p = inner; p; p = p->parent)
        if (p == outer) return true;
    return false;
}

/* The nearest thread-dependent condition on the way from n up to (not
 * including) stop. */
static const CuNode *divergent_guard(const CudaSource *src, const CuNode *fn, const CuNode *n, const CuNode *stop,
                                     const CuNode **construct, bool *in_else) {
    const CuNode *child = n;
    for (const CuNode *p = n->parent; p && p != stop && !cu_is_function(p); child = p, p = p->parent) {
        bool polarity;
        const CuNode *cond = cu_guard_of(src, p, child, &polarity);
        if (cond && thread_dependent(fn, cond)) {
            if (construct) *construct = p;
            if (in_else) *in_else = !polarity;
            return cond;
        }
    }
    return NULL;
}

/* where the barrier sits, in words */
static const char *placement(const CuNode *construct, bool in_else) {
    switch (construct->kind) {
    case CXCursor_IfStmt:
        return in_else ? "in the else branch of an `if` on" : "inside an `if` on";
    case CXCursor_SwitchStmt:
        return "in a case of a `switch` on";
    case CXCursor_ForStmt:
    case CXCursor_WhileStmt:
    case CXCursor_DoStmt:
        return "in a loop whose condition is";
    case CXCursor_ConditionalOperator:
        return "in one arm of a `?:` on";
    default:
        return construct->op == CXBinaryOperator_LAnd ? "on the right of `&&` after" : "on the right of `||` after";
    }
}

static bool is_loop(const CuNode *n) {
    return n->kind == CXCursor_ForStmt || n->kind == CXCursor_WhileStmt || n->kind == CXCursor_DoStmt ||
           n->kind == CXCursor_CXXForRangeStmt;
}

/* the loop (or switch, for break) a break/continue leaves */
static const CuNode *jump_target(const CuNode *jump) {
    for (const CuNode *p = jump->parent; p && !cu_is_function(p); p = p->parent) {
        if (is_loop(p)) return p;
        if (p->kind == CXCursor_SwitchStmt && jump->kind == CXCursor_BreakStmt) return p;
    }
    return NULL;
}

typedef struct {
    const CudaSource *src;
    const CuNode *fn, *at;
    const CuNode *exit, *guard; /* result */
    bool in_else;
} ExitSearch;

static const CuNode *common_ancestor(const CuNode *a, const CuNode *b) {
    for (const CuNode *p = a; p; p = p->parent)
        if (contains(p, b)) return p;
    return NULL;
}

static bool visit_exit(CuNode *n, void *data) {
    ExitSearch *s = data;
    if (s->exit) return false;
    if (n->kind == CXCursor_LambdaExpr) return false;
    if (n->kind != CXCursor_ReturnStmt && n->kind != CXCursor_BreakStmt && n->kind != CXCursor_ContinueStmt)
        return true;
    const CuNode *stop = NULL;
    if (n->kind == CXCursor_ReturnStmt) {
        /* reached before the barrier, or before its next execution in a loop around both */
        const CuNode *lca = common_ancestor(n, s->at);
        if (!lca) return true;
        /* the other branch of an if or ?: never runs the barrier after the return */
        if (lca->kind == CXCursor_IfStmt || lca->kind == CXCursor_ConditionalOperator) return true;
        bool before = n->end <= s->at->start;
        if (!before) {
            const CuNode *loop = NULL;
            for (const CuNode *p = lca; p && p != s->fn; p = p->parent)
                if (is_loop(p)) loop = p;
            if (!loop) return true;
        }
        stop = lca;
    } else {
        const CuNode *target = jump_target(n);
        if (!target || !is_loop(target) || !contains(target, s->at)) return true;
        if (n->kind == CXCursor_ContinueStmt && n->end > s->at->start) return true;
        stop = common_ancestor(n, s->at);
    }
    const CuNode *construct;
    bool in_else = false;
    const CuNode *guard = divergent_guard(s->src, s->fn, n, stop, &construct, &in_else);
    if (guard) {
        s->in_else = in_else;
        s->exit = n;
        s->guard = guard;
    }
    return true;
}

/* ---- the rule ------------------------------------------------------------ */

static size_t line_of(const CudaSource *src, size_t offset) { return document_line_of(src->doc, offset) + 1; }

static void report_text(char *buf, size_t size, const CudaSource *src, const CuNode *n) {
    size_t len = cu_text_len(n);
    const char *text = cu_text(src, n);
    size_t w = 0;
    for (size_t i = 0; i < len && w + 4 < size; i++) {
        char c = text[i];
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
        if (c == ' ' && w > 0 && buf[w - 1] == ' ') continue;
        buf[w++] = c;
    }
    if (len > 0 && w + 4 >= size) {
        memcpy(buf + w, "...", 3);
        w += 3;
    }
    buf[w] = '\0';
}

static bool is_thread_block_type(const CuNode *n) {
    if (!n) return false;
    char *type = cu_type_spelling(n);
    bool yes = type && strstr(type, "thread_block") && !strstr(type, "thread_block_tile");
    free(type);
    return yes;
}

/* __syncthreads(), or a cooperative-groups thread_block barrier: block.sync(),
 * cg::sync(block), cg::this_thread_block().sync() (tiles are warp-level) */
static bool is_block_barrier(const CuNode *n) {
    if (n->kind != CXCursor_CallExpr) return false;
    const char *callee = cu_callee(n);
    if (cu_name_in(callee, block_barriers)) return true;
    if (strcmp(callee, "sync") != 0) return false;
    uint32_t argc;
    CuNode **args = cu_call_args(n, &argc);
    if (argc == 1) return is_thread_block_type(cu_strip(args[0]));
    const CuNode *callee_node = n->child_count ? cu_strip(n->children[0]) : NULL;
    if (argc == 0 && callee_node && callee_node->kind == CXCursor_MemberRefExpr && callee_node->child_count == 1)
        return is_thread_block_type(cu_strip(callee_node->children[0]));
    return false;
}

static bool visit(CuNode *n, void *data) {
    RuleContext *ctx = data;
    if (!is_block_barrier(n)) return true;
    const CudaSource *src = ctx->cuda;
    CuNode *fn = cu_function_of(n);
    if (!fn || fn->kind == CXCursor_LambdaExpr || !cu_is_device_code(fn)) return true;
    char cond_text[96], exit_text[96], call_text[96];
    report_text(call_text, sizeof call_text, src, n);
    const CuNode *construct = NULL;
    bool in_else = false;
    const CuNode *guard = divergent_guard(src, fn, n, fn, &construct, &in_else);
    if (guard) {
        report_text(cond_text, sizeof cond_text, src, guard);
        Finding *f = rule_report_cu(ctx, n,
                                    "`%s` is reached only by some threads of the block: it sits %s `%s` (line %zu), "
                                    "which depends on the thread index, so the other threads never arrive at this "
                                    "barrier",
                                    call_text, placement(construct, in_else), cond_text,
                                    line_of(src, guard->start));
        if (f) finding_add_related(f, (ByteRange){guard->start, guard->end}, "thread-dependent condition");
        return true;
    }
    ExitSearch s = {src, fn, n, NULL, NULL, false};
    cu_walk(fn, visit_exit, &s);
    if (!s.exit) return true;
    report_text(cond_text, sizeof cond_text, src, s.guard);
    report_text(exit_text, sizeof exit_text, src, s.exit);
    const char *what = s.exit->kind == CXCursor_ReturnStmt  ? "return before it"
                       : s.exit->kind == CXCursor_BreakStmt ? "leave the loop around it"
                                                            : "skip it with `continue`";
    Finding *f = rule_report_cu(ctx, n,
                                "`%s` is not reached by every thread: the threads for which `%s` %s %s "
                                "(`%s`, line %zu), so the rest of the block waits at this barrier for threads "
                                "that never come",
                                call_text, cond_text, s.in_else ? "does not hold" : "holds", what, exit_text,
                                line_of(src, s.exit->start));
    if (f) {
        finding_add_related(f, (ByteRange){s.exit->start, s.exit->end}, "thread-dependent exit");
        finding_add_related(f, (ByteRange){s.guard->start, s.guard->end}, "thread-dependent condition");
    }
    return true;
}

static void check(RuleContext *ctx) {
    if (ctx->cuda && ctx->cuda->root) cu_walk(ctx->cuda->root, visit, ctx);
}

const Rule rule_cu002_divergent_barrier = {
    .code = "CU002",
    .name = "divergent-barrier",
    .severity = SEVERITY_ERROR,
    .languages = LANGUAGE_CUDA,
    .summary = "__syncthreads() under a condition that depends on the thread index",
    .documentation = documentation,
    .check = check,
    .measure = MEASURE_NONE,
};
