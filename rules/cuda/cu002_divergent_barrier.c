/* CU002 divergent-barrier: __syncthreads() that only some threads of the
 * block reach: under an if/?:/switch/loop whose condition depends on the
 * thread index (reported at the barrier), or after a return/break/continue
 * that only some threads take (reported once at the exit). */
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_query.h"
#include "rules/rule.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `__syncthreads()` (and `__syncthreads_count/_and/_or`, and the cooperative-groups block\n"
    "barriers `block.sync()`, `cg::sync(block)`, `cg::this_thread_block().sync()`) that not every thread\n"
    "of the block reaches:\n"
    "- a barrier inside an `if`/`else`, `?:`, `switch` or loop whose condition depends on the thread\n"
    "  index (`threadIdx`, a variable computed from it, `block.thread_rank()`, a warp index such as\n"
    "  `threadIdx.x / 32`): an error, reported at the barrier, when the threads that skip it wait at\n"
    "  another barrier later (after the branch, in another branch, around a loop); when they run to\n"
    "  the end of the kernel instead (`if (i < n) { ...; __syncthreads(); ... }` as the kernel's last\n"
    "  statement behaves like an early return), a warning, or an info when they skip no\n"
    "  shared-memory work before the barrier;\n"
    "- a thread-dependent `break` out of a loop that holds a barrier, or a `continue` before one: an\n"
    "  error, reported once at the `break`/`continue`, with the barriers it skips as related locations;\n"
    "- an early `return` that splits a warp (`if (i >= n) return;` with `i` from `threadIdx.x`) before\n"
    "  barriers the rest of the block runs: a warning, reported once at the `return`, with the\n"
    "  barriers as related locations; an info when the returning threads skip no shared-memory work\n"
    "  (no `__shared__` access between the return and the barrier outside `if (tid == 0)`-style code).\n"
    "\n"
    "Not flagged: an `if`/`else` whose two branches wait the same number of times (warp\n"
    "specialization: producers and consumers pass as many barriers, which pair up one for one),\n"
    "conditions on `blockIdx`, `blockDim`, `gridDim`, kernel parameters or `__shared__`\n"
    "scalars (uniform across the block), the result of `__syncthreads_or/_and/_count` (the same in every\n"
    "thread), `__syncwarp()` and `tile.sync()` on a `thread_block_tile` (warp-level barriers), loops\n"
    "with a uniform trip count such as\n"
    "`for (s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) ...; __syncthreads(); }` where the\n"
    "barrier sits outside the divergent `if`, and `for` loops whose start and bound move with the\n"
    "thread by the same terms (`for (t = base + tid; t < end + tid; t += C)`: every thread runs the same\n"
    "number of iterations). Returns that whole warps take together (a condition on a warp index,\n"
    "`warp.meta_group_rank()`, `__ballot_sync`/`__any_sync` results, `threadIdx.y` when every launch in\n"
    "the file gives the block a multiple of 32 threads along x, or uniform values) are not\n"
    "flagged either: the warp leaves as a whole. Conditions on parameters of a `__device__` function are\n"
    "not followed into its callers.\n"
    "\n"
    "An object built in place (`BlockInfo binfo(params, bidb, tidx);`, flash-attention's\n"
    "`BlockInfoPadded`) is followed field by field: a condition on `binfo.actual_seqlen_q`, or on a\n"
    "const method such as `binfo.stop_early()`, depends only on the constructor arguments that reach\n"
    "that field (or the fields the method reads), through its member initializers, the assignments in\n"
    "its body and the conditions they sit under, even when the record is defined in a header or is a\n"
    "class template used inside a kernel template. So `if (binfo.stop_early()) return;` is uniform when\n"
    "only `tidx_global` takes the thread index. The whole object counts as thread-dependent, as before,\n"
    "when advise cannot follow it: the object is changed, bound to a reference or handed to a function\n"
    "after its construction (unless it is `const`); it is a copy; its record is a union, or has a base\n"
    "class, `mutable` fields, or an explicit or partial specialization that a template argument could\n"
    "pick; the field is an array, a record or a reference; the constructor does more than set fields\n"
    "(in its initializers, and in its body under `if`/`else`) from expressions that only read: a\n"
    "declaration, a loop, an address taken, `this` handed out, or a call other than an arithmetic\n"
    "operator or a free function handed no member of the object; or the method is more than one\n"
    "`return` of such an expression.\n"
    "\n"
    "## Why is this slow?\n"
    "`__syncthreads()` waits until every thread of the block has arrived. When some threads skip it,\n"
    "the behaviour is undefined: the block hangs, or the barrier silently pairs with a different\n"
    "`__syncthreads()` and the shared-memory data it was meant to protect is read too early. A hang\n"
    "costs the whole kernel; a mis-paired barrier gives wrong results that look like numerical noise.\n"
    "\n"
    "An early `return` from the kernel is the milder case, hence a warning: since Volta a barrier waits\n"
    "only for threads that have not exited, so the block does not hang (before Volta it did not hang as\n"
    "long as one thread of each warp arrived). What goes wrong is the work the exited threads skipped:\n"
    "the shared-memory entries they would have loaded before the barrier are never written, and the\n"
    "threads that read them after the barrier get stale values, typically only in the last block of a\n"
    "size that is not a multiple of the tile. A `return` from a `__device__` function does not exit the\n"
    "thread: it goes on in the caller, where it may meet a different barrier.\n"
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

static const char *const block_barriers[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                             "__syncthreads_or", NULL};

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

/* ---- the rule ------------------------------------------------------------ */

static size_t line_of(const CudaSource *src, size_t offset) { return document_line_of(src->doc, offset) + 1; }

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

enum { MAX_BARRIERS = 8, MAX_EXITS = 64 };

/* a divergent exit and the barriers it keeps threads from */
typedef struct {
    CuExit exit;
    const CuNode *barriers[MAX_BARRIERS];
    int count;
} ExitReport;

enum { MAX_SYNC_POINTS = 256 };

typedef struct {
    RuleContext *ctx;
    CuIndex *ix;
    const CuNode *fn;
    ExitReport exits[MAX_EXITS];
    int exit_count;
    /* every place of the function that waits for the block: barriers, helpers of this file that
     * hold one, block-wide collectives (cub's BlockReduce, ...) */
    const CuNode *sync_points[MAX_SYNC_POINTS];
    int sync_count;
    bool sync_overflow;
} FnCheck;

static bool visit_has_barrier(CuNode *n, void *data) {
    bool *found = data;
    if (*found || n->kind == CXCursor_LambdaExpr) return false;
    if (is_block_barrier(n)) *found = true;
    return !*found;
}

/* a call that waits for the whole block (or more) */
static bool is_sync_point(const CuNode *n) {
    if (n->kind != CXCursor_CallExpr) return false;
    if (is_block_barrier(n)) return true;
    const char *callee = cu_callee(n);
    if (strcmp(callee, "sync") == 0 || strcmp(callee, "grid_sync") == 0) return true;
    if (n->ref && cu_is_function(n->ref) && n->ref->kind != CXCursor_LambdaExpr) {
        bool found = false;
        cu_walk(n->ref, visit_has_barrier, &found);
        if (found) return true;
    }
    /* cub::BlockReduce<...>(storage).Sum(v) and the other block-wide collectives */
    const CuNode *callee_node = n->child_count ? cu_strip(n->children[0]) : NULL;
    if (callee_node && callee_node->kind == CXCursor_MemberRefExpr && callee_node->child_count == 1) {
        char *type = cu_type_spelling(cu_strip(callee_node->children[0]));
        bool block = type && strstr(type, "cub") && strstr(type, "Block");
        free(type);
        if (block) return true;
    }
    return false;
}

static bool visit_sync_point(CuNode *n, void *data) {
    FnCheck *c = data;
    if (n->kind == CXCursor_LambdaExpr) return false;
    if (is_sync_point(n)) {
        if (c->sync_count < MAX_SYNC_POINTS) c->sync_points[c->sync_count++] = n;
        else c->sync_overflow = true;
    }
    return true;
}

/* the part of the construct that holds n: a branch of an if/switch/?:, or the whole loop */
static const CuNode *branch_of(const CuNode *construct, const CuNode *n) {
    if (cu_is_loop(construct)) return construct;
    for (uint32_t i = 0; i < construct->child_count; i++)
        if (cu_contains(construct->children[i], n)) return construct->children[i];
    return construct;
}

/* The threads that skip the barrier n at the construct meet another wait for the block later
 * (after the construct, in another branch, or around a loop); otherwise they run to the end of the
 * kernel and exit. */
static bool skippers_wait_again(const FnCheck *c, const CuNode *construct, const CuNode *n) {
    if (c->sync_overflow || !cu_is_kernel(c->fn)) return true;
    for (const CuNode *p = construct->parent; p && p != c->fn; p = p->parent)
        if (cu_is_loop(p)) return true;
    const CuNode *branch = branch_of(construct, n);
    for (int i = 0; i < c->sync_count; i++) {
        const CuNode *b = c->sync_points[i];
        if (b != n && b->start >= construct->start && !cu_contains(branch, b)) return true;
    }
    return false;
}

static void add_exit(FnCheck *c, const CuExit *e, const CuNode *barrier) {
    ExitReport *r = NULL;
    for (int i = 0; i < c->exit_count && !r; i++)
        if (c->exits[i].exit.exit == e->exit) r = &c->exits[i];
    if (!r) {
        if (c->exit_count == MAX_EXITS) return;
        r = &c->exits[c->exit_count++];
        r->exit = *e;
        r->count = 0;
    }
    if (r->count < MAX_BARRIERS) r->barriers[r->count] = barrier;
    r->count++;
}

/* ---- the shared-memory work that threads leaving early skip ---- */

/* n runs in one thread only: under `if (tid == 0)` (an equality of a per-thread value with a uniform one) */
static bool one_thread(FnCheck *c, const CuNode *n) {
    const CuNode *child = n;
    for (const CuNode *p = n->parent; p && p != c->fn; child = p, p = p->parent) {
        bool polarity;
        const CuNode *cond = cu_guard_of(c->ctx->cuda, p, child, &polarity);
        if (!cond || !polarity || p->kind != CXCursor_IfStmt) continue;
        const CuNode *e = cu_strip((CuNode *)cond);
        if (e && e->kind == CXCursor_BinaryOperator && e->op == CXBinaryOperator_EQ && e->child_count == 2) {
            CuVariance a = cu_index_variance(c->ix, e->children[0]), b = cu_index_variance(c->ix, e->children[1]);
            if ((a == CU_PER_THREAD && b == CU_UNIFORM) || (b == CU_PER_THREAD && a == CU_UNIFORM)) return true;
        }
    }
    return false;
}

typedef struct {
    FnCheck *c;
    size_t from, to;
    bool found;
} SharedWork;

static bool mentions_shared(const CuNode *n) {
    if (!n) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl && (n->ref->attrs & CU_ATTR_SHARED))
        return true;
    for (uint32_t i = 0; i < n->child_count; i++)
        if (mentions_shared(n->children[i])) return true;
    return false;
}

/* a __shared__ variable, or a local pointer into one (`half *q = smem + offset;`) */
static bool is_shared_storage(const CuNode *decl) {
    if (!decl || decl->kind != CXCursor_VarDecl) return false;
    if (decl->attrs & CU_ATTR_SHARED) return true;
    CXType t = clang_getCanonicalType(clang_getCursorType(decl->cursor));
    return t.kind == CXType_Pointer && mentions_shared(cu_initializer(decl));
}

static bool visit_shared_work(CuNode *n, void *data) {
    SharedWork *w = data;
    if (w->found || n->end <= w->from || n->start >= w->to) return false;
    if (n->kind == CXCursor_LambdaExpr) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->start >= w->from && is_shared_storage(n->ref) && !one_thread(w->c, n))
        w->found = true;
    return !w->found;
}

/* code in [from, to) touches __shared__ memory in more than one thread: what the threads that
 * leave early would have done there is missing after the barrier */
static bool shared_work_between(FnCheck *c, size_t from, size_t to) {
    SharedWork w = {c, from, to, false};
    if (from >= to) return false;
    for (uint32_t i = 0; i < c->fn->child_count; i++) cu_walk(c->fn->children[i], visit_shared_work, &w);
    return w.found;
}

static int sync_points_in(const FnCheck *c, const CuNode *n) {
    int count = 0;
    for (int i = 0; i < c->sync_count; i++) count += cu_contains(n, c->sync_points[i]);
    return count;
}

/* `if (producer) { load; __syncthreads(); } else { __syncthreads(); compute; }`: both branches wait
 * the same number of times, so every thread passes as many barriers and they pair up one for one
 * (warp specialization) */
static bool paired_branches(const FnCheck *c, const CuNode *construct) {
    if (construct->kind != CXCursor_IfStmt || c->sync_overflow) return false;
    size_t h = cu_header_end(c->ctx->cuda, construct, NULL, NULL);
    const CuNode *branches[2];
    int count = 0;
    for (uint32_t i = 0; i < construct->child_count && count < 2; i++)
        if (h && construct->children[i]->start >= h) branches[count++] = construct->children[i];
    if (count != 2) return false;
    int a = sync_points_in(c, branches[0]), b = sync_points_in(c, branches[1]);
    return a > 0 && a == b;
}

static void check_barrier(FnCheck *c, const CuNode *n) {
    const CudaSource *src = c->ctx->cuda;
    char cond_text[96], call_text[96];
    cu_snippet(src, n, call_text, sizeof call_text);
    CuGuard g;
    if (cu_index_divergent_guards(c->ix, n, c->fn, CU_WARP_UNIFORM, &g, 1) > 0) {
        if (paired_branches(c, g.construct)) return;
        cu_snippet(src, g.cond, cond_text, sizeof cond_text);
        Finding *f;
        bool again = skippers_wait_again(c, g.construct, n);
        const CuNode *branch = branch_of(g.construct, n);
        if (again) {
            f = rule_report_cu(c->ctx, n,
                               "`%s` is reached only by some threads of the block: it sits %s `%s` (line %zu), "
                               "which depends on the thread index, so the other threads never arrive at this "
                               "barrier; they wait at a different one, and the block hangs or the barriers pair up "
                               "wrongly",
                               call_text, placement(g.construct, !g.polarity), cond_text, line_of(src, g.cond->start));
        } else if (shared_work_between(c, branch->start, n->start)) {
            f = rule_report_cu(c->ctx, n,
                               "`%s` is reached only by some threads of the block: it sits %s `%s` (line %zu), "
                               "which depends on the thread index; the other threads skip it and leave the kernel. "
                               "Since Volta a barrier no longer waits for exited threads, so this does not hang "
                               "there, but CUDA requires every thread to reach it, and the shared memory the "
                               "skipping threads would have written before it is missing. Move the barrier out of "
                               "the condition and guard only the loads and stores",
                               call_text, placement(g.construct, !g.polarity), cond_text, line_of(src, g.cond->start));
            if (f) f->severity = SEVERITY_WARNING;
        } else {
            /* the skippers leave and had no shared-memory work before it: against the rules, harmless since Volta */
            f = rule_report_cu(c->ctx, n,
                               "`%s` is reached only by some threads of the block: it sits %s `%s` (line %zu), "
                               "which depends on the thread index; the other threads skip it and leave the kernel. "
                               "CUDA requires every thread to reach the barrier; since Volta it no longer waits "
                               "for exited threads, and the skipping threads do no shared-memory work before it, "
                               "so this works there, but it is fragile: move the barrier out of the condition",
                               call_text, placement(g.construct, !g.polarity), cond_text, line_of(src, g.cond->start));
            if (f) f->severity = SEVERITY_INFO;
        }
        if (f) finding_add_related(f, (ByteRange){g.cond->start, g.cond->end}, "thread-dependent condition");
        return;
    }
    /* a return counts when it splits a warp: whole warps that leave the kernel do not hold up a barrier */
    CuExit exits[MAX_EXITS];
    int count = cu_index_divergent_exits(c->ix, n, CU_PER_THREAD, exits, MAX_EXITS);
    for (int i = 0; i < count && i < MAX_EXITS; i++) add_exit(c, &exits[i], n);
}

/* the lines of the barriers, in words: "line 12", "lines 12, 20 and 31", "lines 12, 20, ... (7 barriers)" */
static void barrier_lines(const CudaSource *src, const ExitReport *r, char *buf, size_t size) {
    size_t w = (size_t)snprintf(buf, size, "%s", r->count == 1 ? "line " : "lines ");
    int shown = r->count < MAX_BARRIERS ? r->count : MAX_BARRIERS;
    if (shown > 4) shown = 3;
    for (int i = 0; i < shown && w < size; i++) {
        const char *sep = i == 0 ? "" : (i == shown - 1 && shown == r->count) ? " and " : ", ";
        w += (size_t)snprintf(buf + w, size - w, "%s%zu", sep, line_of(src, r->barriers[i]->start));
    }
    if (shown < r->count && w < size) snprintf(buf + w, size - w, ", ... (%d barriers)", r->count);
}

/* the threads that take the exit skip shared-memory work that the others do before the barriers */
static bool exit_skips_shared_work(FnCheck *c, const ExitReport *r) {
    const CuNode *exit = r->exit.exit;
    if (exit->kind != CXCursor_ReturnStmt || r->count > MAX_BARRIERS) return true;
    size_t first = SIZE_MAX;
    for (int i = 0; i < r->count; i++) {
        if (r->barriers[i]->start < exit->end) return true; /* the barrier of the next round of a loop */
        if (r->barriers[i]->start < first) first = r->barriers[i]->start;
    }
    return shared_work_between(c, exit->end, first);
}

static void report_exit(FnCheck *c, const ExitReport *r) {
    const CudaSource *src = c->ctx->cuda;
    const CuNode *exit = r->exit.exit;
    char cond_text[96], lines[96];
    cu_snippet(src, r->exit.guard.cond, cond_text, sizeof cond_text);
    barrier_lines(src, r, lines, sizeof lines);
    const char *holds = r->exit.guard.polarity ? "holds" : "does not hold";
    Finding *f;
    bool skips_work = exit_skips_shared_work(c, r);
    if (exit->kind == CXCursor_ReturnStmt && cu_is_kernel(c->fn) && !skips_work) {
        f = rule_report_cu(c->ctx, exit,
                           "the threads for which `%s` %s leave the kernel here, before the __syncthreads() at %s "
                           "that the rest of their block still runs. CUDA requires every thread of the block to "
                           "reach the barrier; since Volta it no longer waits for exited threads, and these threads "
                           "do no shared-memory work before it, so this works there, but it is fragile: keep the "
                           "threads alive and guard their work instead",
                           cond_text, holds, lines);
        if (f) f->severity = SEVERITY_INFO;
    } else if (exit->kind == CXCursor_ReturnStmt) {
        if (cu_is_kernel(c->fn))
            f = rule_report_cu(c->ctx, exit,
                               "the threads for which `%s` %s leave the kernel here, before the __syncthreads() at "
                               "%s that the rest of their block still runs: CUDA requires every thread of the block "
                               "to reach the barrier. Since Volta a barrier no longer waits for exited threads, so "
                               "this does not hang there, but the shared memory those threads would have written "
                               "before the barrier is missing for the others. Keep the threads alive and guard "
                               "their loads and stores instead",
                               cond_text, holds, lines);
        else
            f = rule_report_cu(c->ctx, exit,
                               "the threads for which `%s` %s return from this function here, before the "
                               "__syncthreads() at %s that the rest of their block still runs: CUDA requires every "
                               "thread of the block to reach the barrier; the threads that returned go on in the "
                               "caller, where they leave the kernel or pair with a different barrier. Keep the "
                               "threads in step and guard their loads and stores instead",
                               cond_text, holds, lines);
        /* the kernel goes on for the others; it is the missing shared-memory work, not a hang */
        if (f) f->severity = SEVERITY_WARNING;
    } else {
        f = rule_report_cu(c->ctx, exit,
                           "the threads for which `%s` %s %s here, so they never arrive at the __syncthreads() at %s "
                           "that the rest of their block waits at: the block hangs, or the barrier pairs with a "
                           "different one and shared memory is read too early",
                           cond_text, holds,
                           exit->kind == CXCursor_BreakStmt ? "leave the loop" : "skip the rest of the iteration",
                           lines);
    }
    if (!f) return;
    finding_add_related(f, (ByteRange){r->exit.guard.cond->start, r->exit.guard.cond->end},
                        "thread-dependent condition");
    int shown = r->count < MAX_BARRIERS ? r->count : MAX_BARRIERS;
    for (int i = 0; i < shown; i++)
        finding_add_related(f, (ByteRange){r->barriers[i]->start, r->barriers[i]->end},
                            "a barrier these threads do not reach");
}

static bool visit_barrier(CuNode *n, void *data) {
    FnCheck *c = data;
    if (n->kind == CXCursor_LambdaExpr) return false;
    if (is_block_barrier(n)) check_barrier(c, n);
    return true;
}

static void check_function(RuleContext *ctx, CuNode *fn) {
    FnCheck *c = calloc(1, sizeof *c);
    if (!c) {
        ctx->out_of_memory = true;
        return;
    }
    c->ctx = ctx;
    c->fn = fn;
    c->ix = cu_index_new(ctx->cuda, fn);
    if (!c->ix) {
        ctx->out_of_memory = true;
        free(c);
        return;
    }
    long long block_x;
    if (cu_is_kernel(fn) && cu_kernel_block_x(ctx->cuda, fn, &block_x)) cu_index_assume_block_x(c->ix, block_x);
    for (uint32_t i = 0; i < fn->child_count; i++) cu_walk(fn->children[i], visit_sync_point, c);
    for (uint32_t i = 0; i < fn->child_count; i++) cu_walk(fn->children[i], visit_barrier, c);
    for (int i = 0; i < c->exit_count; i++) report_exit(c, &c->exits[i]);
    cu_index_free(c->ix);
    free(c);
}

static bool visit(CuNode *n, void *data) {
    RuleContext *ctx = data;
    if (n->kind == CXCursor_FunctionDecl || n->kind == CXCursor_FunctionTemplate || n->kind == CXCursor_CXXMethod) {
        if (cu_is_device_code(n)) check_function(ctx, n);
        return false;
    }
    return true;
}

static void check(RuleContext *ctx) { rule_walk_cuda(ctx, visit, ctx); }

const Rule rule_cu002_divergent_barrier = {
    .code = "CU002", .name = "divergent-barrier", .severity = SEVERITY_ERROR, .correctness = true,
    .languages = LANGUAGE_CUDA, .check = check,
    .summary = "__syncthreads() under a condition that depends on the thread index",
    .advice = "move the __syncthreads() out of the condition so that every thread of the block reaches it",
    .documentation = documentation};
