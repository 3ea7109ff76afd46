/* CU004 uncoalesced-access: a global-memory access in a kernel whose address
 * puts neighbouring threadIdx.x values far apart (threadIdx.x times a stride,
 * threadIdx.x in the slow dimension of a 2-D index, a thread-per-row loop). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_query.h"
#include "rules/rule.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a global-memory access in a kernel (through a pointer parameter of the kernel, or a pointer\n"
    "derived from one) whose index moves by more than one element when `threadIdx.x` moves by one:\n"
    "\n"
    "- `threadIdx.x`, or a variable derived from it linearly (`int tid = blockIdx.x * blockDim.x +\n"
    "  threadIdx.x`), multiplied by a runtime stride or by a constant stride of 32 bytes or more\n"
    "  (`x[tid * stride]`, `x[tid * 64]`);\n"
    "- the thread's x index in the slow dimension of a 2-D index (`a[x * width + y]` with `x` from\n"
    "  `threadIdx.x` and `y` from `threadIdx.y`);\n"
    "- a thread-per-row loop over the fast dimension (`for (i = 0; i < C; ++i) sum += x[row * C + i]`\n"
    "  with `row` from the thread index).\n"
    "\n"
    "The message names the variable that carries `threadIdx.x` and the stride. When the strided access\n"
    "is one side of an assignment whose other side moves with `threadIdx.x` one element at a time\n"
    "(`out[x * height + y] = in[y * width + x]`), the statement is a transpose: swapping the thread\n"
    "roles would only move the strided access to the other side, so the message says so and points to a\n"
    "shared-memory tile instead.\n"
    "\n"
    "## Why is this slow?\n"
    "The 32 threads of a warp issue a load or store together. When consecutive `threadIdx.x` values\n"
    "touch consecutive elements, the warp's request is served by a few 32-byte sectors (128 bytes for\n"
    "32 floats). When they are `stride` elements apart, every thread needs its own sector: up to 32\n"
    "transactions for one instruction, and 8x (floats) to 32x (bytes) more DRAM traffic than the data\n"
    "used. Memory-bound kernels slow down by about that factor.\n"
    "\n"
    "The lane's coefficient comes from the analysis CU003 shares (analysis/cuda/cuda_index.c): it follows\n"
    "local variables, a flat index split into a row and a column (`b = idx / T; t = idx % T;`: the\n"
    "remainder moves with the lane, the quotient only every T lanes), shifts and masks, per-thread base\n"
    "pointers (`float *row = out + b * T * C + t * C;` then `row[i]`), and cooperative-groups ranks\n"
    "(`block.thread_rank()`, `warp.thread_rank()` of a 32-thread tile, `this_thread_block().thread_rank()`).\n"
    "\n"
    "Not flagged: `x[blockIdx.x * blockDim.x + threadIdx.x]`, `x[row * width + col]` with `col` from\n"
    "`threadIdx.x`, grid-stride loops (`for (i = idx; i < n; i += blockDim.x * gridDim.x)`), warp- or\n"
    "block-per-row loops (`for (i = threadIdx.x; i < C; i += blockDim.x)`), small constant strides\n"
    "below 32 bytes (`x[2 * tid]`, `x[3 * tid + c]`: neighbouring threads still share sectors),\n"
    "runtime strides named as a channel or component count (`img[p * channels + c]`), strides that\n"
    "the kernel compares with 1 (a unit-stride fast path), a template argument used directly as the\n"
    "stride, vector widths (`i * VEC` with `constexpr int VEC = 16 / sizeof(T)`: a few bytes per\n"
    "thread), layout-generic accesses where every index has a runtime stride of its own\n"
    "(`src[i2 * s2 + i1 * s1 + i0 * s0]`: coalesced when the innermost stride is 1, as it usually is),\n"
    "kernels that this file launches only with one thread along x (`dim3 block(1, 256)`: the warp runs\n"
    "along `threadIdx.y`), grid-stride loops that sample one element in every `s` by design (the loop's\n"
    "variable is the index, starts at a multiple of the runtime stride `s` and steps by a multiple of it:\n"
    "`i = tid * s; for (j = i; j < n; j += nthreads * s) p[j]`, where any thread mapping touches the\n"
    "same sectors), 16-byte vector accesses (`*(int4 *)&C[row * N + col]`, `float4`: each thread\n"
    "fills half a sector, so the loss is at most 2x and often the tile's own shape), `__shared__` and\n"
    "local arrays, accesses done by one thread\n"
    "(`if (threadIdx.x == 0)`), and what it cannot analyse: a division or remainder by a runtime value\n"
    "that is not a row/column split (`rem - rem / KW * KW` with a kernel width that may be 3), bit\n"
    "operations other than masks and shifts, indirect indices, calls.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__global__ void transpose(const float *in, float *out, int width, int height) {\n"
    "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "    if (x < width && y < height)\n"
    "        out[x * height + y] = in[y * width + x];  // write: threads `height` floats apart\n"
    "}\n"
    "\n"
    "__global__ void row_sum(const float *x, float *out, int rows, int C) {\n"
    "    int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float s = 0;\n"
    "    for (int i = 0; i < C; ++i) s += x[row * C + i];  // one row per thread\n"
    "    out[row] = s;\n"
    "}\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "__global__ void transpose(const float *in, float *out, int width, int height) {\n"
    "    __shared__ float tile[32][33];\n"
    "    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "    if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = in[y * width + x];\n"
    "    __syncthreads();\n"
    "    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;\n"
    "    if (x < height && y < width) out[y * height + x] = tile[threadIdx.x][threadIdx.y];\n"
    "}\n"
    "\n"
    "__global__ void row_sum(const float *x, float *out, int rows, int C) {\n"
    "    int row = blockIdx.x;  // one block per row; the threads stride over its columns\n"
    "    float s = 0;\n"
    "    for (int i = threadIdx.x; i < C; i += blockDim.x) s += x[row * C + i];\n"
    "    // ... reduce s across the block ...\n"
    "}\n"
    "```\n"
    "Or change the data layout (a structure of arrays, or the transposed matrix) so that the\n"
    "index `threadIdx.x` moves along is the contiguous one.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: making the access coalesced changes how work is split among threads (and\n"
    "often needs shared memory or a different layout).\n"
    "\n"
    "## With a profile\n"
    "With per-line metrics (`advise profile --source-metrics`, kernels built with `-lineinfo`) the\n"
    "finding shows the global-memory sectors its line moved against what coalesced accesses would\n"
    "move (`4.5x the ideal global sectors`). At 1.25x or less the accesses were coalesced in the\n"
    "measured launch and the finding becomes a hint; from 2x (and 10% of the kernel's sectors) its\n"
    "severity rises with the kernel's share of the run, to an error only from 4x. From 2x, in a\n"
    "memory-bound kernel (its sectors come at 30% of the GPU's peak bandwidth or more), it gets an\n"
    "estimated gain: the kernel's time times the line's excess sectors over all of the kernel's.\n";

typedef struct {
    RuleContext *ctx;
    const CudaSource *src;
    const CuNode *fn;
    CuIndex *ix; /* thread dependence and lane coefficients (analysis/cuda/cuda_index.h) */
    /* reported (base declaration, statement, index text) triples in this kernel */
    const CuNode **seen_base, **seen_stmt;
    char **seen_index;
    size_t seen_count, seen_cap;
} Analysis;

#define VECTOR_BYTES 16 /* the widest load or store a thread can issue */

/* bytes of the value an access reads or writes (its own type: `*(int4 *)&x[i]` moves 16 whatever x holds) */
static long long value_size(const CuNode *access) {
    long long s = clang_Type_getSizeOf(clang_getCanonicalType(clang_getCursorType(access->cursor)));
    return s < 0 ? -1 : s;
}

static bool is_pointer_type(const CuNode *n) {
    CXType t = clang_getCanonicalType(clang_getCursorType(n->cursor));
    return t.kind == CXType_Pointer;
}

static long long pointee_size(const CuNode *n) {
    CXType t = clang_getCanonicalType(clang_getCursorType(n->cursor));
    if (t.kind != CXType_Pointer) return -1;
    long long s = clang_Type_getSizeOf(clang_getPointeeType(t));
    return s < 0 ? -1 : s;
}

/* ---- reporting ---- */

static void append_text(char *buf, size_t size, const char *text, size_t len) {
    size_t have = strlen(buf);
    if (have + 1 >= size) return;
    size_t room = size - have - 1;
    if (len > room) len = room;
    /* collapse whitespace runs */
    size_t o = have;
    bool space = false;
    for (size_t i = 0; i < len && o + 1 < size; i++) {
        char ch = text[i];
        if (ch == '\n' || ch == '\t' || ch == '\r' || ch == ' ') {
            if (!space) buf[o++] = ' ';
            space = true;
        } else {
            buf[o++] = ch;
            space = false;
        }
    }
    buf[o] = '\0';
}

static void node_text(const CudaSource *src, const CuNode *n, char *buf, size_t size) {
    buf[0] = '\0';
    size_t len = cu_text_len(n);
    if (len > 48) {
        append_text(buf, size, cu_text(src, n), 45);
        append_text(buf, size, "...", 3);
    } else {
        append_text(buf, size, cu_text(src, n), len);
    }
}

static bool is_simple_operand(const CuNode *n) {
    n = cu_strip((CuNode *)n);
    return n && (n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_IntegerLiteral ||
                 n->kind == CXCursor_MemberRefExpr || n->kind == CXCursor_ParenExpr || n->kind == CXCursor_CallExpr);
}

/* `mult`: the multiplier as written ("`C`", "16"); `dist`: the distance
 * between neighbouring threads ("`C` elements", "16 elements (64 bytes)") */
static void stride_text(const CudaSource *src, const CuLane *l, long long elem, char *mult, char *dist, size_t size) {
    mult[0] = dist[0] = '\0';
    if (l->kind == CU_LANE_CONST) {
        long long c = l->c < 0 ? -l->c : l->c;
        snprintf(mult, size, "%lld", c);
        if (elem > 0)
            snprintf(dist, size, "%lld elements (%lld bytes)", c, c * elem);
        else
            snprintf(dist, size, "%lld elements", c);
        return;
    }
    append_text(mult, size, "`", 1);
    if (l->c != 1 && l->c != -1) {
        char k[32];
        snprintf(k, sizeof k, "%lld * ", l->c < 0 ? -l->c : l->c);
        append_text(mult, size, k, strlen(k));
    }
    for (int i = 0; i < l->factor_count; i++) {
        char part[64];
        node_text(src, l->factors[i], part, sizeof part);
        if (i) append_text(mult, size, " * ", 3);
        if ((l->factor_count > 1 || (l->c != 1 && l->c != -1)) && !is_simple_operand(l->factors[i])) {
            append_text(mult, size, "(", 1);
            append_text(mult, size, part, strlen(part));
            append_text(mult, size, ")", 1);
        } else {
            append_text(mult, size, part, strlen(part));
        }
    }
    append_text(mult, size, "`", 1);
    snprintf(dist, size, "%s elements", mult);
}

/* `decl == 1`, `1 != decl` */
static bool compares_with_one(const CuNode *n, void *decl) {
    if (n->kind != CXCursor_BinaryOperator || (n->op != CXBinaryOperator_EQ && n->op != CXBinaryOperator_NE) ||
        n->child_count != 2)
        return false;
    long long v;
    return (cu_refers_to(n->children[0], decl) && cu_int_value(n->children[1], &v) && v == 1) ||
           (cu_refers_to(n->children[1], decl) && cu_int_value(n->children[0], &v) && v == 1);
}

/* the runtime stride is compared with 1 somewhere in the kernel: a unit-stride fast path exists */
static bool stride_checked_against_one(const Analysis *a, const CuLane *l) {
    for (int i = 0; i < l->factor_count; i++) {
        const CuNode *f = cu_strip((CuNode *)l->factors[i]);
        if (!f || f->kind != CXCursor_DeclRefExpr || !f->ref) continue;
        if (cu_find(a->fn, compares_with_one, f->ref)) return true;
    }
    return false;
}

/* a runtime stride named as a (small) channel or component count */
static bool stride_is_channel_count(const CudaSource *src, const CuLane *l) {
    for (int i = 0; i < l->factor_count; i++)
        if (cu_index_names_small_count(src, l->factors[i])) return true;
    return false;
}

/* `tid == k` (op EQ) or `tid != k` (op NE) with tid carrying threadIdx.x and k the same for every thread,
 * possibly as one conjunct of `a && b` (EQ) or one disjunct of `a || b` (NE) */
static bool pins_thread(Analysis *a, const CuNode *cond, int op, int depth) {
    const CuNode *t = cu_strip((CuNode *)cond);
    if (!t || depth > 8 || t->kind != CXCursor_BinaryOperator || t->child_count != 2) return false;
    int join = op == CXBinaryOperator_EQ ? CXBinaryOperator_LAnd : CXBinaryOperator_LOr;
    if (t->op == join)
        return pins_thread(a, t->children[0], op, depth + 1) || pins_thread(a, t->children[1], op, depth + 1);
    if (t->op != op) return false;
    CuLane x = cu_index_lane(a->ix, t->children[0]), y = cu_index_lane(a->ix, t->children[1]);
    return (x.kind == CU_LANE_CONST && y.kind == CU_LANE_ZERO) || (y.kind == CU_LANE_CONST && x.kind == CU_LANE_ZERO);
}

static bool is_return(const CuNode *n) {
    if (n->kind == CXCursor_ReturnStmt) return true;
    return n->kind == CXCursor_CompoundStmt && n->child_count == 1 && n->children[0]->kind == CXCursor_ReturnStmt;
}

/* One thread does this: inside `if (threadIdx.x == 0)` (or a variable derived
 * from it), or after `if (tid != 0) return;`. */
static bool single_thread(Analysis *a, const CuNode *access) {
    const CuNode *child = access;
    for (const CuNode *p = access->parent; p && p != a->fn; child = p, p = p->parent) {
        if (p->kind == CXCursor_IfStmt && p->child_count >= 2 && child == p->children[1] &&
            pins_thread(a, p->children[0], CXBinaryOperator_EQ, 0))
            return true;
        if (p->kind == CXCursor_CompoundStmt) {
            for (uint32_t i = 0; i < p->child_count && p->children[i] != child; i++) {
                const CuNode *st = p->children[i];
                if (st->kind == CXCursor_IfStmt && st->child_count == 2 && is_return(st->children[1]) &&
                    pins_thread(a, st->children[0], CXBinaryOperator_NE, 0))
                    return true;
            }
        }
    }
    return false;
}

/* var is one of the terms added up in expr (`row * C + i`, `i + base`) */
static bool is_addend(const CuNode *expr, const CuNode *var, int depth) {
    expr = cu_strip((CuNode *)expr);
    if (!expr || depth > 16) return false;
    if (expr->kind == CXCursor_DeclRefExpr) return expr->ref == var;
    if (expr->kind == CXCursor_BinaryOperator && expr->child_count == 2 &&
        (expr->op == CXBinaryOperator_Add || expr->op == CXBinaryOperator_Sub))
        return is_addend(expr->children[0], var, depth + 1) ||
               (expr->op == CXBinaryOperator_Add && is_addend(expr->children[1], var, depth + 1));
    return false;
}

/* the for loop's increment is `++var`, `var++` or `var += 1` */
static bool steps_by_one(const CuNode *loop, const CuNode *var) {
    for (uint32_t i = 1; i + 1 < loop->child_count; i++) {
        const CuNode *n = cu_strip(loop->children[i]);
        if (n->kind == CXCursor_UnaryOperator && n->child_count == 1 && cu_refers_to(n->children[0], var) &&
            (n->op == CXUnaryOperator_PreInc || n->op == CXUnaryOperator_PostInc))
            return true;
        long long v;
        if (n->kind == CXCursor_CompoundAssignOperator && n->op == CXBinaryOperator_AddAssign && n->child_count == 2 &&
            cu_refers_to(n->children[0], var) && cu_int_value(n->children[1], &v) && v == 1)
            return true;
    }
    return false;
}

/* The variable of an enclosing for loop that the index walks one element at
 * a time, the same for every thread: each thread walks its own row. */
static const CuNode *row_walk_variable(Analysis *a, const CuNode *access, const CuNode *index) {
    for (const CuNode *p = access->parent; p && p != a->fn; p = p->parent) {
        if (p->kind != CXCursor_ForStmt || p->child_count < 1) continue;
        const CuNode *init = p->children[0];
        if (init->kind != CXCursor_DeclStmt) continue;
        for (uint32_t i = 0; i < init->child_count; i++) {
            const CuNode *var = init->children[i];
            if (var->kind != CXCursor_VarDecl || !is_addend(index, var, 0) || !steps_by_one(p, var)) continue;
            if (cu_index_lane(a->ix, var).kind == CU_LANE_ZERO) return var;
        }
    }
    return NULL;
}

static bool carries_thread_y(const CuNode *n, void *ix) {
    return cu_is_builtin_member(n, "threadIdx", 'y') ||
           (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl &&
            cu_index_uses_thread(ix, n, 'y'));
}

/* a column from threadIdx.y that stays put while threadIdx.x moves: not a flat
 * thread id (`threadIdx.y * blockDim.x + threadIdx.x`), nor a loop counter
 * started from one (`for (j = i; ...)` with i from such an id), which carry
 * threadIdx.x as well */
static bool carries_only_thread_y(const CuNode *n, void *ix) {
    return carries_thread_y(n, ix) && cu_index_lane(ix, n).kind == CU_LANE_ZERO;
}

/* the first use of threadIdx.y (or a variable derived from it alone) in the index */
static const CuNode *thread_y_carrier(CuIndex *ix, const CuNode *index) {
    return cu_find(index, carries_only_thread_y, ix);
}

/* the same access twice in one statement (`y[k] = y[k] + 1`) is reported once */
static bool seen(Analysis *a, const CuNode *base, const CuNode *stmt, const CuNode *index) {
    char *text = index ? strndup(cu_text(a->src, index), cu_text_len(index)) : strdup("");
    if (!text) return true;
    for (size_t i = 0; i < a->seen_count; i++)
        if (a->seen_base[i] == base && a->seen_stmt[i] == stmt && strcmp(a->seen_index[i], text) == 0) {
            free(text);
            return true;
        }
    /* three arrays of one capacity: each grows alike, the capacity changes once all have */
    size_t base_cap = a->seen_cap, stmt_cap = a->seen_cap, index_cap = a->seen_cap;
    if (!array_reserve(&a->seen_base, a->seen_count, &base_cap, sizeof *a->seen_base, 16) ||
        !array_reserve(&a->seen_stmt, a->seen_count, &stmt_cap, sizeof *a->seen_stmt, 16) ||
        !array_reserve(&a->seen_index, a->seen_count, &index_cap, sizeof *a->seen_index, 16)) {
        free(text);
        return false;
    }
    a->seen_cap = base_cap;
    a->seen_base[a->seen_count] = base;
    a->seen_stmt[a->seen_count] = stmt;
    a->seen_index[a->seen_count++] = text;
    return false;
}

/* the cache-hinted loads and stores take the address as their first argument */
static bool is_ldg_call(const CuNode *call) {
    static const char *const names[] = {"__ldg",  "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv",
                                        "__stcg", "__stcs", "__stwb", "__stwt", NULL};
    const char *callee = cu_callee(call);
    for (int i = 0; names[i]; i++)
        if (strcmp(callee, names[i]) == 0) return true;
    return false;
}

/* the node above n, skipping implicit casts and parentheses */
/* access: the node reported; base: the pointer; index: the subscript (NULL for *p and __ldg(p)) */
/* The lane coefficient of a global access (pointer and subscript together);
 * false when the pointer is not global memory or the sum is not understood. */
static bool access_lane(Analysis *a, const CuNode *base, const CuNode *index, CuLane *out, long long *elem_out) {
    long long elem = pointee_size(cu_strip((CuNode *)base)); /* -1 for a dependent type in a template */
    bool global = false;
    CuLane pl = cu_index_pointer_lane(a->ix, base, elem, &global);
    if (!global) return false;
    CuLane il = index ? cu_index_lane(a->ix, index) : (CuLane){CU_LANE_ZERO, 0, {0}, 0, NULL};
    if (pl.kind == CU_LANE_UNKNOWN || il.kind == CU_LANE_UNKNOWN) return false;
    /* a runtime part of each: the sum is not analysed */
    if (pl.kind != CU_LANE_ZERO && il.kind != CU_LANE_ZERO) return false;
    *out = pl.kind != CU_LANE_ZERO ? pl : il;
    *elem_out = elem;
    return true;
}

/* ---- the terms of an address --------------------------------------------------- */

typedef struct {
    int strided; /* terms multiplied by a runtime value */
    int plain;   /* terms that vary but are not multiplied by a runtime value */
    bool overflow;
} TermCount;

static bool is_runtime_factor(const CuNode *n) {
    long long v;
    n = cu_strip((CuNode *)n);
    return n && !cu_int_value(n, &v) &&
           (n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_MemberRefExpr ||
            n->kind == CXCursor_ArraySubscriptExpr || n->kind == CXCursor_BinaryOperator ||
            n->kind == CXCursor_ParenExpr);
}

static void count_int_terms(Analysis *a, const CuNode *n, TermCount *t, int depth) {
    n = cu_strip((CuNode *)n);
    long long v;
    if (!n || depth > 12) {
        t->overflow = true;
        return;
    }
    if (cu_int_value(n, &v)) return;
    if (n->kind == CXCursor_BinaryOperator && n->child_count == 2 &&
        (n->op == CXBinaryOperator_Add || n->op == CXBinaryOperator_Sub)) {
        count_int_terms(a, n->children[0], t, depth + 1);
        count_int_terms(a, n->children[1], t, depth + 1);
        return;
    }
    if (n->kind == CXCursor_DeclRefExpr && n->ref) {
        const CuNode *init = cu_index_single_value(a->ix, n->ref);
        if (init) {
            count_int_terms(a, init, t, depth + 1);
            return;
        }
    }
    if (n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Mul && n->child_count == 2 &&
        (is_runtime_factor(n->children[0]) && is_runtime_factor(n->children[1])))
        t->strided++;
    else
        t->plain++;
}

static void count_pointer_terms(Analysis *a, const CuNode *n, TermCount *t, int depth) {
    n = cu_strip((CuNode *)n);
    if (!n || depth > 12) {
        t->overflow = true;
        return;
    }
    if (n->kind == CXCursor_CXXReinterpretCastExpr || n->kind == CXCursor_CXXConstCastExpr) {
        if (n->child_count) count_pointer_terms(a, n->children[n->child_count - 1], t, depth + 1);
        return;
    }
    if (n->kind == CXCursor_DeclRefExpr) {
        const CuNode *values[8];
        int count = n->ref && n->ref->kind == CXCursor_VarDecl ? cu_index_values(a->ix, n->ref, values, 8) : 0;
        if (count < 0) {
            t->overflow = true;
            return;
        }
        if (count == 0) return; /* a parameter: the root */
        /* a pointer set in several places (`if (...) x = a + ...; else x = b + ...;`): each must qualify */
        TermCount merged = {0, 0, false};
        for (int i = 0; i < count; i++) {
            TermCount one = *t;
            count_pointer_terms(a, values[i], &one, depth + 1);
            if (i == 0 || one.strided < merged.strided) merged.strided = one.strided;
            if (i == 0 || one.plain > merged.plain) merged.plain = one.plain;
            merged.overflow |= one.overflow;
        }
        *t = merged;
        return;
    }
    if (n->kind == CXCursor_BinaryOperator && n->child_count == 2 &&
        (n->op == CXBinaryOperator_Add || n->op == CXBinaryOperator_Sub)) {
        bool left = is_pointer_type(cu_strip(n->children[0]));
        count_pointer_terms(a, n->children[left ? 0 : 1], t, depth + 1);
        count_int_terms(a, n->children[left ? 1 : 0], t, depth + 1);
        return;
    }
    if (n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_AddrOf && n->child_count == 1) {
        const CuNode *sub = cu_strip(n->children[0]);
        if (sub && sub->kind == CXCursor_ArraySubscriptExpr && sub->child_count == 2) {
            count_pointer_terms(a, sub->children[0], t, depth + 1);
            count_int_terms(a, sub->children[1], t, depth + 1);
            return;
        }
    }
    t->overflow = true;
}

/* Every varying term of the address has a runtime stride of its own (`src[i3*s03 + i2*s02 + i1*s01 +
 * i0*s00]`, `dst + i1*nb1 + i0*nb0`): a layout-generic access whose coalescing depends on the
 * strides it is given (the innermost one is usually 1). */
static bool layout_generic(Analysis *a, const CuNode *base, const CuNode *index) {
    TermCount t = {0, 0, false};
    count_pointer_terms(a, base, &t, 0);
    if (index) count_int_terms(a, index, &t, 0);
    return !t.overflow && t.plain == 0 && t.strided >= 2;
}

/* expr is a product with decl among its factors, through variables that take one value */
static bool multiple_of(Analysis *a, const CuNode *expr, const CuNode *decl, int depth) {
    expr = cu_strip((CuNode *)expr);
    if (!expr || depth > 8) return false;
    if (expr->kind == CXCursor_DeclRefExpr && expr->ref) {
        if (expr->ref == decl) return true;
        const CuNode *init = expr->ref->kind == CXCursor_VarDecl ? cu_index_single_value(a->ix, expr->ref) : NULL;
        return init && multiple_of(a, init, decl, depth + 1);
    }
    return expr->kind == CXCursor_BinaryOperator && expr->op == CXBinaryOperator_Mul && expr->child_count == 2 &&
           (multiple_of(a, expr->children[0], decl, depth + 1) || multiple_of(a, expr->children[1], decl, depth + 1));
}

static bool writes_var(const CuNode *n, void *var) {
    if ((n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Assign) ||
        n->kind == CXCursor_CompoundAssignOperator)
        return n->child_count == 2 && cu_refers_to(n->children[0], var);
    if (n->kind == CXCursor_UnaryOperator && n->child_count == 1 &&
        (n->op == CXUnaryOperator_PreInc || n->op == CXUnaryOperator_PostInc || n->op == CXUnaryOperator_PreDec ||
         n->op == CXUnaryOperator_PostDec || n->op == CXUnaryOperator_AddrOf))
        return cu_refers_to(n->children[0], var);
    return false;
}

/* A grid-stride loop over every `s`-th element (apex's strided_check_finite:
 * `i = tid * stride; for (j = i; j < n; j += nthreads * stride) p[j]`): the
 * index is the loop's variable, started at a multiple of the runtime stride s
 * and stepped by a multiple of it. The kernel reads one element in every s by
 * design, and any mapping of threads to those elements touches the same
 * sectors. Not this: a step that is not a multiple of s (the threads fill the
 * gaps on later passes), or `x[tid * s]` outside such a loop. */
static bool subsampling_loop(Analysis *a, const CuNode *index, const CuLane *l) {
    const CuNode *idx = cu_strip((CuNode *)index);
    if (!idx || idx->kind != CXCursor_DeclRefExpr || !idx->ref || idx->ref->kind != CXCursor_VarDecl ||
        l->factor_count != 1)
        return false;
    const CuNode *s = cu_strip((CuNode *)l->factors[0]);
    if (!s || s->kind != CXCursor_DeclRefExpr || !s->ref) return false;
    const CuNode *j = idx->ref, *stmt = j->parent, *loop = stmt ? stmt->parent : NULL;
    if (!stmt || stmt->kind != CXCursor_DeclStmt || !loop || loop->kind != CXCursor_ForStmt ||
        loop->child_count < 3 || loop->children[0] != stmt)
        return false;
    const CuNode *init = cu_initializer(j);
    if (!init || !multiple_of(a, init, s->ref, 0)) return false;
    /* the increment `j += step` with step a multiple of s, and nothing else writes j */
    bool stepped = false;
    for (uint32_t i = 1; i + 1 < loop->child_count; i++) {
        const CuNode *n = cu_strip(loop->children[i]);
        if (n && n->kind == CXCursor_CompoundAssignOperator && n->op == CXBinaryOperator_AddAssign &&
            n->child_count == 2 && cu_refers_to(n->children[0], j) && multiple_of(a, n->children[1], s->ref, 0) &&
            !cu_index_uses_thread(a->ix, n->children[1], 0))
            stepped = true;
    }
    return stepped && !cu_find(loop->children[loop->child_count - 1], writes_var, (void *)j);
}

/* A transpose: `access` is one side of a plain assignment whose other side
 * is an array access that threadIdx.x moves along by one element (its
 * contiguous dimension). Swapping the thread roles would only move the
 * strided access to that side. Returns the other side, or NULL. */
static const CuNode *coalesced_other_side(Analysis *a, const CuNode *access) {
    const CuNode *p = cu_plain_parent(access);
    if (!p || p->kind != CXCursor_BinaryOperator || p->op != CXBinaryOperator_Assign || p->child_count != 2) return NULL;
    const CuNode *lhs = cu_strip(p->children[0]), *rhs = cu_strip(p->children[1]);
    const CuNode *other = lhs == access ? rhs : rhs == access ? lhs : NULL;
    if (!other || other->kind != CXCursor_ArraySubscriptExpr || other->child_count != 2) return NULL;
    /* a pointer, or in a template a base whose type is not known yet (`output(row)[col]` on a PitchedPtr<T>);
     * either way only the wording of the finding depends on it */
    CXType t = clang_getCanonicalType(clang_getCursorType(cu_strip(other->children[0])->cursor));
    if (t.kind != CXType_Pointer && t.kind != CXType_Dependent) return NULL;
    CuLane l = cu_index_lane(a->ix, other->children[1]);
    return l.kind == CU_LANE_CONST && (l.c == 1 || l.c == -1) ? other : NULL;
}

/* The access is the left side of an assignment: `x[i] = v`, `x[i] += v`, and
 * for a struct or vector type (`float2`, `int4`) C++'s `operator=` call */
static bool is_assigned(const CuNode *access) {
    const CuNode *p = cu_plain_parent(access);
    if (!p || p->child_count < 2 || cu_strip(p->children[0]) != access) return false;
    if (p->kind == CXCursor_BinaryOperator) return p->op == CXBinaryOperator_Assign;
    if (p->kind == CXCursor_CompoundAssignOperator) return true;
    return p->kind == CXCursor_CallExpr && strcmp(cu_callee(p), "operator=") == 0;
}

static void check_access(Analysis *a, const CuNode *access, const CuNode *base, const CuNode *index) {
    CuLane l;
    long long elem;
    if (!access_lane(a, base, index, &l, &elem)) return;
    if (l.kind == CU_LANE_ZERO) return;
    /* a 16-byte vector per thread (int4, float4 through a cast): each thread fills half a sector, so
     * the loss is at most 2x, and it is often the tile's shape (a row of 8 halves per lane) */
    if (value_size(access) >= VECTOR_BYTES) return;
    if (l.kind == CU_LANE_CONST) {
        long long c = l.c < 0 ? -l.c : l.c;
        if (c <= 1 || (elem > 0 ? c * elem : c) < 32) return;
    }
    if (l.kind == CU_LANE_RUNTIME) {
        if (l.factor_count == 0 || stride_checked_against_one(a, &l) || stride_is_channel_count(a->src, &l) ||
            layout_generic(a, base, index) || (index && subsampling_loop(a, index, &l)))
            return;
    }
    if (single_thread(a, access)) return;
    const CuNode *root = cu_strip((CuNode *)base);
    if (seen(a, root && root->kind == CXCursor_DeclRefExpr ? root->ref : root, cu_statement_of(access),
             index ? index : base))
        return;

    char mult[160], dist[200], carrier[128], var[64], pointer[64];
    stride_text(a->src, &l, elem, mult, dist, sizeof mult);
    const CuNode *cn = l.carrier;
    if (cn && !cu_is_builtin_member(cn, "threadIdx", 'x')) {
        node_text(a->src, cn, var, sizeof var);
        snprintf(carrier, sizeof carrier, "`%s` (derived from threadIdx.x)", var);
    } else {
        snprintf(carrier, sizeof carrier, "threadIdx.x");
    }
    const CuNode *root_ptr = root;
    while (root_ptr && root_ptr->kind != CXCursor_DeclRefExpr && root_ptr->child_count > 0)
        root_ptr = cu_strip(root_ptr->children[0]);
    if (root_ptr && root_ptr->kind == CXCursor_DeclRefExpr)
        node_text(a->src, root_ptr, pointer, sizeof pointer);
    else
        snprintf(pointer, sizeof pointer, "the array");
    bool write = is_assigned(access);
    if (access->kind == CXCursor_CallExpr) write = strncmp(cu_callee(access), "__st", 4) == 0;
    const char *verb = write ? "write" : "read";

    const CuNode *y = index ? thread_y_carrier(a->ix, index) : NULL;
    const CuNode *loop_var = index && !y ? row_walk_variable(a, access, index) : NULL;
    const CuNode *other_side = y ? coalesced_other_side(a, access) : NULL;
    if (loop_var) {
        rule_report_cu(a->ctx, access,
                       "each thread walks its own row of `%s` in this loop: %s is multiplied by %s, so on every "
                       "iteration neighbouring threads %s addresses %s apart (a memory transaction per thread). "
                       "Let the threads of a warp or block share a row and stride over `%s` instead "
                       "(`%s = threadIdx.x; ...; %s += blockDim.x`), or transpose the data",
                       pointer, carrier, mult, verb, dist, loop_var->name, loop_var->name, loop_var->name);
    } else if (other_side) {
        char ytext[64], other[64];
        node_text(a->src, y, ytext, sizeof ytext);
        node_text(a->src, cu_strip(other_side->children[0]), other, sizeof other);
        const char *from = write ? other : pointer, *to = write ? pointer : other;
        rule_report_cu(a->ctx, access,
                       "this statement transposes `%s` into `%s`: in the index into `%s`, %s is multiplied by %s "
                       "while `%s` (from threadIdx.y) picks the contiguous position, so neighbouring threads %s "
                       "addresses %s apart; the access to `%s` is coalesced. Swapping the thread roles would only "
                       "move the strided access there: stage a tile through shared memory (load it with threadIdx.x "
                       "along `%s`'s contiguous dimension, `__syncthreads()`, store it with threadIdx.x along "
                       "`%s`'s; pad its rows by one element against bank conflicts) so that both global accesses "
                       "are coalesced",
                       from, to, pointer, carrier, mult, ytext, verb, dist, other, from, to);
    } else if (y) {
        char ytext[64];
        node_text(a->src, y, ytext, sizeof ytext);
        rule_report_cu(a->ctx, access,
                       "threadIdx.x is in the slow dimension of this 2-D index into `%s`: %s is multiplied by %s "
                       "while `%s` (from threadIdx.y) picks the contiguous position, so neighbouring threads %s "
                       "addresses %s apart. Swap the roles so that the threadIdx.x-derived variable indexes the "
                       "contiguous dimension, or go through a shared-memory tile",
                       pointer, carrier, mult, ytext, verb, dist);
    } else {
        rule_report_cu(a->ctx, access,
                       "uncoalesced %s of `%s`: %s is multiplied by %s, so neighbouring threads of a warp %s "
                       "addresses %s apart and the warp's access splits into up to 32 memory transactions. Make "
                       "threadIdx.x move along the contiguous dimension (or change the data layout)",
                       verb, pointer, carrier, mult, verb, dist);
    }
}

static bool visit(CuNode *n, void *data) {
    Analysis *a = data;
    if (n->kind == CXCursor_ArraySubscriptExpr && n->child_count == 2) {
        const CuNode *base = cu_strip(n->children[0]);
        if (!base || !is_pointer_type(base)) return true;
        const CuNode *p = cu_plain_parent(n);
        if (p && p->kind == CXCursor_UnaryOperator && p->op == CXUnaryOperator_AddrOf) {
            /* &x[i]: an access only when loaded through __ldg and friends */
            const CuNode *call = cu_plain_parent(p);
            if (!call || call->kind != CXCursor_CallExpr || !is_ldg_call(call)) return true;
        }
        check_access(a, n, n->children[0], n->children[1]);
    } else if (n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_Deref && n->child_count == 1) {
        const CuNode *p = cu_plain_parent(n);
        if (p && p->kind == CXCursor_UnaryOperator && p->op == CXUnaryOperator_AddrOf) return true;
        check_access(a, n, n->children[0], NULL);
    } else if (n->kind == CXCursor_CallExpr && is_ldg_call(n)) {
        /* __ldg(x + i * ld): the address is pointer arithmetic (&x[...] is handled above) */
        uint32_t count;
        CuNode **args = cu_call_args(n, &count);
        const CuNode *arg = count ? cu_strip(args[0]) : NULL;
        if (arg && is_pointer_type(arg) && !(arg->kind == CXCursor_UnaryOperator && arg->op == CXUnaryOperator_AddrOf))
            check_access(a, n, args[0], NULL);
    }
    return true;
}

static bool visit_kernels(CuNode *n, void *data) {
    RuleContext *ctx = data;
    if (!cu_is_kernel(n)) return n->kind == CXCursor_TranslationUnit || n->kind == CXCursor_Namespace ||
                                     n->kind == CXCursor_LinkageSpec || n->kind == CXCursor_UnexposedDecl;
    /* launched here only with one thread along x (`dim3 block(1, 256)`): threadIdx.x does not tell lanes apart */
    long long block_x;
    if (cu_kernel_block_x(ctx->cuda, n, &block_x) && block_x == 1) return false;
    Analysis a = {.ctx = ctx, .src = ctx->cuda, .fn = n, .ix = cu_index_new(ctx->cuda, n)};
    if (!a.ix) {
        ctx->out_of_memory = true;
        return false;
    }
    for (uint32_t i = 0; i < n->child_count; i++)
        if (n->children[i]->kind == CXCursor_CompoundStmt) cu_walk(n->children[i], visit, &a);
    cu_index_free(a.ix);
    for (size_t i = 0; i < a.seen_count; i++) free(a.seen_index[i]);
    free(a.seen_index);
    free(a.seen_base);
    free(a.seen_stmt);
    return false;
}

static void check(RuleContext *ctx) { rule_walk_cuda(ctx, visit_kernels, ctx); }

const Rule rule_cu004_uncoalesced_access = {
    .code = "CU004", .name = "uncoalesced-access", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_CUDA, .check = check, .measure = MEASURE_GLOBAL_ACCESS,
    .summary = "global-memory access where neighbouring threadIdx.x values land far apart",
    .advice = "make neighbouring threads (threadIdx.x) touch neighbouring addresses: swap the indexes, store a structure of arrays, or stage a tile through shared memory",
    .documentation = documentation};
