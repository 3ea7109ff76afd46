/* CU001 missing-syncthreads: a thread reads an element of a __shared__
 * array that another thread wrote, with no barrier between the write and
 * the read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_query.h"
#include "analysis/base/growable.h"
#include "rules/rule.h"
#include "analysis/base/text_format.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a read of a `__shared__` array (or `__shared__` variable) that can see an element another\n"
    "thread of the block wrote, when no barrier separates the write from the read: neither\n"
    "`__syncthreads()` (or `__syncthreads_count/_and/_or`), `__syncwarp()`, a cooperative-groups\n"
    "`sync(...)` / `block.sync()`, nor a call that may synchronize (a function of this file that\n"
    "does, a name containing `sync`, `wait` or `barrier`, a call that receives the array, inline\n"
    "`asm`).\n"
    "\n"
    "A read can see another thread's element when its index differs from the index of the write\n"
    "(`tile[ty][tx] = ...` then `tile[tx][ty]`, `s[tid] = ...` then `s[tid + 1]`, `s[0]` or\n"
    "`s[blockDim.x - 1 - tid]`), or when the element was written only by the threads of a\n"
    "thread-dependent branch (`if (tid == 0) s_total = ...;` then `s_total` read by every thread).\n"
    "Writes on one iteration of a loop read at the top of the next iteration (through the back edge)\n"
    "are flagged too when no barrier lies anywhere on that path.\n"
    "\n"
    "Not flagged: reads at the same index as a write of the same thread since the last barrier\n"
    "(indices are compared after substituting local variables such as `int tid = threadIdx.x`, so\n"
    "`s[tid]` and `s[threadIdx.x]` match), arrays that are not `__shared__` (registers, global memory),\n"
    "a barrier anywhere between the write and the read (even in a branch), writes and reads in the two\n"
    "branches of one `if`, a uniform slot that differs (`s[buf][tid]` written, `s[buf ^ 1][k]` read: a\n"
    "double buffer), indices that are never equal because they differ modulo a factor common to their\n"
    "terms (interleaved fields of one array: `s[6 * i + 0]` written, `s[6 * (i + d) + 1]` read), a read\n"
    "of an element written by all threads at the same uniform index, and elements written through\n"
    "pointers or aliases (not followed).\n"
    "\n"
    "## Why is this slow?\n"
    "It is a data race, not a slowdown: warps of a block run independently, so the reading warp can\n"
    "get there before the writing warp has stored its value. The kernel returns stale or partial data\n"
    "that changes from run to run and from GPU to GPU (since Volta even threads of one warp are not\n"
    "guaranteed to run in lockstep).\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__global__ void transpose(float *out, const float *in, int n) {\n"
    "    __shared__ float tile[32][33];\n"
    "    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "    tile[threadIdx.y][threadIdx.x] = in[y * n + x];\n"
    "    x = blockIdx.y * 32 + threadIdx.x;\n"
    "    y = blockIdx.x * 32 + threadIdx.y;\n"
    "    out[y * n + x] = tile[threadIdx.x][threadIdx.y];   // written by another thread\n"
    "}\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "    tile[threadIdx.y][threadIdx.x] = in[y * n + x];\n"
    "    __syncthreads();\n"
    "    ...\n"
    "    out[y * n + x] = tile[threadIdx.x][threadIdx.y];\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "*add sync*: inserts `__syncthreads();` on its own line before the statement that holds the read\n"
    "(or before the enclosing statement, when the read sits inside a thread-dependent branch and the\n"
    "write comes before that branch). The fix is offered only where every thread of the block reaches\n"
    "the new barrier (no thread-dependent condition, loop, `return`, `break` or `continue` on the way),\n"
    "and only when the statement starts its line. It is safe in a `__global__` function, and in a\n"
    "`__device__` function that already calls `__syncthreads()`; in other `__device__` functions it is\n"
    "marked unsafe, since a caller may call the function from divergent code. No fix when the write and\n"
    "the read are in the same statement (`s[tid] = s[tid + 1]` needs a temporary, not only a barrier).\n";

static const char *const block_barriers[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                             "__syncthreads_or", NULL};

/* ---- per-function context ---------------------------------------------------- */

typedef struct {
    const CudaSource *src;
    const CuNode *fn;
    CuIndex *ix; /* thread dependence, locals' values, divergence (analysis/cuda/cuda_index.h) */
} Fn;

static bool is_local_var(const Fn *f, const CuNode *decl) {
    return decl && decl->kind == CXCursor_VarDecl && !(decl->attrs & CU_ATTR_SHARED) && cu_function_of(decl) == f->fn;
}

static bool is_inc_dec(int op) {
    return op == CXUnaryOperator_PostInc || op == CXUnaryOperator_PostDec || op == CXUnaryOperator_PreInc ||
           op == CXUnaryOperator_PreDec;
}

/* a local variable with an initializer that is never changed: uses can be
 * replaced by the initializer */
static const CuNode *substitute(Fn *f, const CuNode *ref) {
    if (!ref || ref->kind != CXCursor_DeclRefExpr || !is_local_var(f, ref->ref)) return NULL;
    return cu_index_single_value(f->ix, ref->ref);
}

/* the value can differ between the threads of the block (per lane or per warp) */
static bool expr_tainted(Fn *f, const CuNode *n) { return cu_index_variance(f->ix, n) != CU_UNIFORM; }

static bool variable_tainted(Fn *f, const CuNode *decl) { return is_local_var(f, decl) && expr_tainted(f, decl); }

typedef CuGuard Guard;

/* thread-dependent conditions from n up to (not including) stop, innermost first */
static int divergent_guards(Fn *f, const CuNode *n, const CuNode *stop, Guard *out, int max) {
    return cu_index_divergent_guards(f->ix, n, stop, CU_WARP_UNIFORM, out, max);
}

/* every thread of the block reaches a barrier placed just before n */
static bool uniform_point(Fn *f, const CuNode *n) {
    Guard g;
    if (divergent_guards(f, n, f->fn, &g, 1) > 0) return false;
    CuExit e;
    return cu_index_divergent_exits(f->ix, n, CU_WARP_UNIFORM, &e, 1) == 0;
}

/* ---- barriers ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    bool result;
} BarrierEntry;

typedef struct {
    const CudaSource *src;
    BarrierEntry *entries;
    size_t count, cap;
    int depth;
} BarrierCache;

static bool body_has_barrier(BarrierCache *c, const CuNode *n);

static bool lower_contains(const char *name, const char *word) {
    char low[128];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof low; i++)
        low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    low[i] = '\0';
    return strstr(low, word) != NULL;
}

typedef struct {
    const char *name;
    const CuNode *found[8];
    int count;
} DefSearch;

static bool visit_def(CuNode *n, void *data) {
    DefSearch *d = data;
    if (n->kind == CXCursor_FunctionDecl || n->kind == CXCursor_FunctionTemplate || n->kind == CXCursor_CXXMethod) {
        if (strcmp(n->name, d->name) == 0 && d->count < 8) d->found[d->count++] = n;
        return false;
    }
    return n->kind == CXCursor_TranslationUnit || n->kind == CXCursor_Namespace || n->kind == CXCursor_StructDecl ||
           n->kind == CXCursor_ClassDecl || n->kind == CXCursor_ClassTemplate || n->kind == CXCursor_UnexposedDecl;
}

/* a function of this file with that name synchronizes the block */
static bool function_synchronizes(BarrierCache *c, const char *name) {
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->entries[i].name, name) == 0) return c->entries[i].result;
    if (c->depth > 4) return true; /* deep call chains: assume it may */
    DefSearch d = {name, {0}, 0};
    cu_walk(c->src->root, visit_def, &d);
    bool yes = false;
    c->depth++;
    for (int i = 0; i < d.count && !yes; i++) yes = body_has_barrier(c, d.found[i]);
    c->depth--;
    if (c->depth == 0) { /* results inside a recursion may be cut short */
        if (!array_reserve(&c->entries, c->count, &c->cap, sizeof *c->entries, 64)) return yes;
        c->entries[c->count++] = (BarrierEntry){name, yes};
    }
    return yes;
}

static bool is_shared_ref(const CuNode *n) {
    n = cu_strip((CuNode *)n);
    while (n && n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_AddrOf && n->child_count == 1)
        n = cu_strip(n->children[0]);
    while (n && (n->kind == CXCursor_ArraySubscriptExpr || n->kind == CXCursor_MemberRefExpr) && n->child_count >= 1)
        n = cu_strip(n->children[0]);
    return n && n->kind == CXCursor_DeclRefExpr && n->ref && (n->ref->attrs & CU_ATTR_SHARED);
}

/* a call or statement after which another thread's writes may be visible */
static bool is_barrier(BarrierCache *c, const CuNode *n) {
    if (n->kind == CXCursor_GCCAsmStmt || n->kind == CXCursor_MSAsmStmt) return true;
    if (n->kind != CXCursor_CallExpr) return false;
    const char *callee = cu_callee(n);
    if (cu_name_in(callee, block_barriers) || strcmp(callee, "__syncwarp") == 0) return true;
    if (lower_contains(callee, "sync") || lower_contains(callee, "wait") || lower_contains(callee, "barrier") ||
        lower_contains(callee, "arrive"))
        return true;
    if (strncmp(callee, "atomic", 6) == 0) return false;
    /* a call that receives a shared array may write it and synchronize */
    uint32_t argc;
    CuNode **args = cu_call_args(n, &argc);
    for (uint32_t i = 0; i < argc; i++)
        if (is_shared_ref(args[i])) {
            const CuNode *a = cu_strip(args[i]);
            /* a scalar element passed by value is only a read */
            if (!(a && (a->kind == CXCursor_ArraySubscriptExpr || a->kind == CXCursor_DeclRefExpr) &&
                  args[i]->kind == CXCursor_UnexposedExpr && a != args[i] &&
                  clang_getCursorType(a->cursor).kind != CXType_ConstantArray &&
                  clang_getCursorType(a->cursor).kind != CXType_IncompleteArray))
                return true;
        }
    if (*callee && function_synchronizes(c, callee)) return true;
    return false;
}

static bool matches_barrier(const CuNode *n, void *cache) { return is_barrier(cache, n); }

static bool body_has_barrier(BarrierCache *c, const CuNode *n) { return cu_find(n, matches_barrier, c) != NULL; }

/* ---- indices ------------------------------------------------------------------ */

enum { MAX_RANK = 4, MAX_TERMS = 12, TERM_LEN = 160 };

typedef struct {
    char text[TERM_LEN];
    bool thread;   /* depends on the thread index */
    bool constant;
    long long value;  /* a constant term's value */
    long long factor; /* a known multiple: 6 for `6 * (idx + d)`, 4 for `i << 2`; else 1 */
} Term;

typedef struct {
    Term terms[MAX_TERMS];
    int count;
    bool overflow;
    bool thread;
    char canon[MAX_TERMS * TERM_LEN / 2];
} Index;

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static void put(Buf *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) n = b->cap > b->len + 1 ? b->cap - b->len - 1 : 0;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void canon(Fn *f, const CuNode *n, Buf *b, int depth);

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* flattens a chain of one associative, commutative operator and sorts the operands */
static void collect_operands(const CuNode *n, int op, const CuNode **out, int *count, int max) {
    n = cu_strip((CuNode *)n);
    if (n && n->kind == CXCursor_BinaryOperator && n->op == op && n->child_count == 2) {
        collect_operands(n->children[0], op, out, count, max);
        collect_operands(n->children[1], op, out, count, max);
    } else if (*count < max) {
        out[(*count)++] = n;
    }
}

static void canon_sum(Fn *f, const CuNode *n, Buf *b, int depth);

static void canon(Fn *f, const CuNode *n, Buf *b, int depth) {
    char tmp[64];
    n = cu_strip((CuNode *)n);
    if (!n) return put(b, "?");
    if (depth > 12) return put(b, "...");
    long long v;
    if (n->kind != CXCursor_DeclRefExpr || !is_local_var(f, n->ref)) {
        if ((n->kind == CXCursor_IntegerLiteral || n->kind == CXCursor_DeclRefExpr ||
             n->kind == CXCursor_BinaryOperator || n->kind == CXCursor_UnaryOperator ||
             n->kind == CXCursor_UnaryExpr) &&
            cu_int_value(n, &v)) {
            snprintf(tmp, sizeof tmp, "%lld", v);
            return put(b, tmp);
        }
    }
    if (n->kind == CXCursor_MemberRefExpr && n->child_count == 1) {
        const CuNode *base = cu_strip(n->children[0]);
        if (base && base->kind == CXCursor_DeclRefExpr &&
            (strcmp(base->name, "threadIdx") == 0 || strcmp(base->name, "blockIdx") == 0 ||
             strcmp(base->name, "blockDim") == 0 || strcmp(base->name, "gridDim") == 0)) {
            snprintf(tmp, sizeof tmp, "%s.%c", base->name, n->last_char);
            return put(b, tmp);
        }
    }
    if (n->kind == CXCursor_DeclRefExpr) {
        const CuNode *init = substitute(f, n);
        if (init) return canon_sum(f, init, b, depth + 1);
        return put(b, n->name);
    }
    if (n->kind == CXCursor_BinaryOperator && n->child_count == 2) {
        int op = n->op;
        if (op == CXBinaryOperator_Add || op == CXBinaryOperator_Sub) return canon_sum(f, n, b, depth);
        if (op == CXBinaryOperator_Mul || op == CXBinaryOperator_And || op == CXBinaryOperator_Or ||
            op == CXBinaryOperator_Xor || op == CXBinaryOperator_EQ || op == CXBinaryOperator_NE) {
            const CuNode *ops[8];
            int count = 0;
            collect_operands(n, op, ops, &count, 8);
            char *texts[8];
            char storage[8][256];
            for (int i = 0; i < count; i++) {
                Buf sub = {storage[i], 0, sizeof storage[i]};
                storage[i][0] = '\0';
                canon(f, ops[i], &sub, depth + 1);
                texts[i] = storage[i];
            }
            qsort(texts, (size_t)count, sizeof *texts, cmp_str);
            put(b, "(");
            for (int i = 0; i < count; i++) {
                if (i) put(b, n->name);
                put(b, texts[i]);
            }
            return put(b, ")");
        }
        put(b, "(");
        canon(f, n->children[0], b, depth + 1);
        put(b, n->name);
        canon(f, n->children[1], b, depth + 1);
        return put(b, ")");
    }
    if (n->kind == CXCursor_UnaryOperator && n->child_count == 1) {
        snprintf(tmp, sizeof tmp, "u%d(", n->op);
        put(b, tmp);
        canon(f, n->children[0], b, depth + 1);
        return put(b, ")");
    }
    snprintf(tmp, sizeof tmp, "k%d:", (int)n->kind);
    put(b, tmp);
    put(b, n->kind == CXCursor_CallExpr ? cu_callee(n) : n->name);
    put(b, "(");
    for (uint32_t i = 0; i < n->child_count; i++) {
        if (i) put(b, ",");
        canon(f, n->children[i], b, depth + 1);
    }
    put(b, ")");
}

typedef struct {
    Fn *f;
    Index *ix;
    long long constant;
    int narrowed; /* inside a cast to, or a variable of, an integer type narrower than int */
} TermCtx;

/* n is a constant of the program: a literal, an expression of them, or a
 * name that is no local variable (a template parameter, a constexpr) */
static bool constant_value(Fn *f, const CuNode *n, long long *v) {
    n = cu_strip((CuNode *)n);
    return n &&
           (n->kind == CXCursor_IntegerLiteral || n->kind == CXCursor_BinaryOperator || n->kind == CXCursor_UnaryExpr ||
            (n->kind == CXCursor_DeclRefExpr && !is_local_var(f, n->ref))) &&
           cu_int_value(n, v);
}

static bool integer_type(CXType t) {
    t = clang_getCanonicalType(t);
    return t.kind >= CXType_Bool && t.kind <= CXType_Int128;
}

/* what every value of the term is a multiple of: c for `c * x` or `x * c`,
 * 2^k for `x << k`, in integer arithmetic (`(int)(u * 4)` with a float u
 * is no multiple of 4); 1 when nothing is known */
static long long term_factor(Fn *f, const CuNode *n) {
    long long c;
    if (n->kind != CXCursor_BinaryOperator || n->child_count != 2 || !integer_type(clang_getCursorType(n->cursor)))
        return 1;
    if (n->op == CXBinaryOperator_Mul &&
        (constant_value(f, n->children[0], &c) || constant_value(f, n->children[1], &c)) && c != 0 &&
        c > -(1LL << 30) && c < (1LL << 30))
        return c < 0 ? -c : c;
    if (n->op == CXBinaryOperator_Shl && constant_value(f, n->children[1], &c) && c >= 0 && c < 30) return 1LL << c;
    return 1;
}

/* an explicit cast, or a variable, of an integer type narrower than int:
 * its values wrap, so what they are multiples of is not known */
static bool narrows(const CuNode *n) {
    for (int i = 0; n && i < 32; i++, n = cu_unwrap_once(n)) { /* as far as cu_strip looks */
        bool cast = n->kind == CXCursor_CStyleCastExpr || n->kind == CXCursor_CXXFunctionalCastExpr ||
                    n->kind == CXCursor_CXXStaticCastExpr;
        if (!cast && n->kind != CXCursor_DeclRefExpr) continue;
        CXType t = clang_getCanonicalType(clang_getCursorType(n->cursor));
        long long size = clang_Type_getSizeOf(t);
        if (integer_type(t) && size > 0 && size < 4) return true;
    }
    return false;
}

static void add_terms_of(TermCtx *t, const CuNode *n, bool negative, int depth);

static void add_terms(TermCtx *t, const CuNode *n, bool negative, int depth) {
    bool narrow = narrows(n);
    t->narrowed += narrow;
    add_terms_of(t, n, negative, depth);
    t->narrowed -= narrow;
}

static void add_terms_of(TermCtx *t, const CuNode *n, bool negative, int depth) {
    n = cu_strip((CuNode *)n);
    if (!n) return;
    long long v;
    if (constant_value(t->f, n, &v)) {
        t->constant += negative ? -v : v;
        return;
    }
    if (depth < 12 && n->kind == CXCursor_BinaryOperator && n->child_count == 2 &&
        (n->op == CXBinaryOperator_Add || n->op == CXBinaryOperator_Sub)) {
        add_terms(t, n->children[0], negative, depth + 1);
        add_terms(t, n->children[1], n->op == CXBinaryOperator_Sub ? !negative : negative, depth + 1);
        return;
    }
    if (depth < 12 && n->kind == CXCursor_DeclRefExpr) {
        const CuNode *init = substitute(t->f, n);
        if (init) {
            add_terms(t, init, negative, depth + 1);
            return;
        }
    }
    if (t->ix->count >= MAX_TERMS) {
        t->ix->overflow = true;
        return;
    }
    Term *term = &t->ix->terms[t->ix->count++];
    Buf b = {term->text, 0, sizeof term->text};
    term->text[0] = '\0';
    if (negative) put(&b, "-");
    canon(t->f, n, &b, depth + 1);
    term->thread = expr_tainted(t->f, n);
    term->constant = false;
    term->factor = t->narrowed ? 1 : term_factor(t->f, n);
}

static int cmp_term(const void *a, const void *b) { return strcmp(((const Term *)a)->text, ((const Term *)b)->text); }

static void canon_sum(Fn *f, const CuNode *n, Buf *b, int depth) {
    Index *ix = calloc(1, sizeof *ix);
    if (!ix) return put(b, "?");
    TermCtx t = {f, ix, 0, 0};
    add_terms(&t, n, false, depth);
    qsort(ix->terms, (size_t)ix->count, sizeof ix->terms[0], cmp_term);
    put(b, "(");
    for (int i = 0; i < ix->count; i++) {
        if (i) put(b, "+");
        put(b, ix->terms[i].text);
    }
    if (t.constant || ix->count == 0) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "%s%lld", ix->count ? "+" : "", t.constant);
        put(b, tmp);
    }
    put(b, ")");
    free(ix);
}

static void build_index(Fn *f, const CuNode *sub, Index *ix) {
    memset(ix, 0, sizeof *ix);
    TermCtx t = {f, ix, 0, 0};
    add_terms(&t, sub, false, 0);
    if (t.constant && ix->count == MAX_TERMS) ix->overflow = true; /* the constant would be lost */
    if (t.constant && ix->count < MAX_TERMS) {
        Term *term = &ix->terms[ix->count++];
        snprintf(term->text, sizeof term->text, "%lld", t.constant);
        term->thread = false;
        term->constant = true;
        term->value = t.constant;
        term->factor = 1;
    }
    qsort(ix->terms, (size_t)ix->count, sizeof ix->terms[0], cmp_term);
    Buf b = {ix->canon, 0, sizeof ix->canon};
    ix->canon[0] = '\0';
    for (int i = 0; i < ix->count; i++) {
        if (i) put(&b, "+");
        put(&b, ix->terms[i].text);
        ix->thread |= ix->terms[i].thread;
    }
    if (ix->count == 0) put(&b, "0");
}

/* ---- accesses ------------------------------------------------------------------ */

typedef struct {
    const CuNode *node; /* the full subscript (or the variable, for a scalar) */
    const CuNode *shown; /* the same with its `.field`, for messages */
    const CuNode *var;
    const CuNode *stmt;
    bool write, read;
    size_t effect_end;  /* writes: where the store has happened */
    int rank;
    Index idx[MAX_RANK];
    bool thread;        /* some subscript depends on the thread index */
    bool strided;       /* the index uses a thread-dependent variable that changes (a strided loop) */
    char member[64];    /* `.field` after the element, "" when none */
    bool exact;         /* indices were fully understood */
} Access;

typedef struct {
    Fn f;
    BarrierCache *bc;
    Access *acc;
    size_t acc_count, acc_cap;
    size_t *barriers; /* start offsets, in walk order */
    size_t barrier_count, barrier_cap;
    bool oom;
} Scan;

static int array_rank(const CuNode *decl) {
    CXType t = clang_getCanonicalType(clang_getCursorType(decl->cursor));
    int rank = 0;
    while (rank < 8 && (t.kind == CXType_ConstantArray || t.kind == CXType_IncompleteArray ||
                        t.kind == CXType_VariableArray || t.kind == CXType_DependentSizedArray)) {
        rank++;
        t = clang_getCanonicalType(clang_getArrayElementType(t));
    }
    return rank;
}

static bool uses_changing_thread_var(Fn *f, const CuNode *n, int depth) {
    n = cu_strip((CuNode *)n);
    if (!n || depth > 12) return false;
    if (n->kind == CXCursor_DeclRefExpr) {
        const CuNode *init = substitute(f, n);
        if (init) return uses_changing_thread_var(f, init, depth + 1);
        return is_local_var(f, n->ref) && variable_tainted(f, n->ref);
    }
    for (uint32_t i = 0; i < n->child_count; i++)
        if (uses_changing_thread_var(f, n->children[i], depth + 1)) return true;
    return false;
}

static void add_access(Scan *s, const CuNode *ref) {
    const CuNode *decl = ref->ref;
    int rank = array_rank(decl);
    if (rank > MAX_RANK) return;
    const CuNode *subs[MAX_RANK];
    const CuNode *x = ref;
    int got = 0;
    while (got < rank) {
        const CuNode *prev = x, *p = x->parent;
        while (p && (p->kind == CXCursor_UnexposedExpr || p->kind == CXCursor_ParenExpr)) {
            prev = p;
            p = p->parent;
        }
        if (!p || p->kind != CXCursor_ArraySubscriptExpr || p->child_count != 2 || p->children[0] != prev) return;
        subs[got++] = p->children[1];
        x = p;
    }
    /* how the element is used */
    const CuNode *y = x, *p = x->parent;
    while (p && (p->kind == CXCursor_ParenExpr || (p->kind == CXCursor_MemberRefExpr && p->children[0] == y))) {
        y = p;
        p = p->parent;
    }
    if (!p) return;
    {
        /* a member array (`sm.a[i]`) is not followed */
        const CuNode *q = p, *qprev = y;
        while (q && q->kind == CXCursor_UnexposedExpr) {
            qprev = q;
            q = q->parent;
        }
        if (y != x && q && q->kind == CXCursor_ArraySubscriptExpr && q->child_count == 2 && q->children[0] == qprev)
            return;
    }
    char member[64] = "";
    for (const CuNode *m = y; m != x && m; m = m->child_count ? m->children[0] : NULL) {
        if (m->kind != CXCursor_MemberRefExpr) continue;
        size_t len = strlen(member);
        snprintf(member + len, sizeof member - len, ".%s", m->name);
    }
    bool write = false, read = false;
    size_t effect_end = 0;
    if (p->kind == CXCursor_BinaryOperator && p->op == CXBinaryOperator_Assign && p->children[0] == y) {
        write = true;
        effect_end = p->end;
    } else if (p->kind == CXCursor_CompoundAssignOperator && p->children[0] == y) {
        write = true;
        effect_end = p->end;
    } else if (p->kind == CXCursor_UnaryOperator && is_inc_dec(p->op)) {
        write = true;
        effect_end = p->end;
    } else if (p->kind == CXCursor_UnaryOperator && p->op == CXUnaryOperator_AddrOf) {
        const CuNode *q = p->parent;
        while (q && q->kind == CXCursor_UnexposedExpr) q = q->parent;
        if (q && q->kind == CXCursor_CallExpr && strncmp(cu_callee(q), "atomic", 6) == 0) {
            write = true;
            effect_end = q->end;
        } else {
            return; /* an address escapes: not followed */
        }
    } else if (p->kind == CXCursor_UnaryExpr || p->kind == CXCursor_DeclStmt || p->kind == CXCursor_VarDecl) {
        /* sizeof, decltype; a reference bound to the element: not followed */
        if (p->kind != CXCursor_VarDecl || rank == 0) return;
        read = true;
    } else {
        read = true;
    }
    if (rank == 0 && read && x->parent && x->parent->kind != CXCursor_UnexposedExpr &&
        x->parent->kind != CXCursor_MemberRefExpr)
        return; /* a scalar used as an lvalue we do not understand */
    if (!array_reserve(&s->acc, s->acc_count, &s->acc_cap, sizeof *s->acc, 32)) {
        s->oom = true;
        return;
    }
    Access *a = &s->acc[s->acc_count++];
    memset(a, 0, sizeof *a);
    a->node = x;
    a->shown = y;
    a->var = decl;
    a->stmt = cu_statement_of(x);
    a->write = write;
    a->read = read;
    a->effect_end = effect_end;
    a->rank = rank;
    a->exact = true;
    snprintf(a->member, sizeof a->member, "%s", member);
    for (int i = 0; i < rank; i++) {
        build_index(&s->f, subs[i], &a->idx[i]);
        a->thread |= a->idx[i].thread;
        a->exact &= !a->idx[i].overflow;
        if (uses_changing_thread_var(&s->f, subs[i], 0)) a->strided = true;
    }
}

static bool visit_scan(CuNode *n, void *data) {
    Scan *s = data;
    if (s->oom) return false;
    if (n->kind == CXCursor_LambdaExpr) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl &&
        (n->ref->attrs & CU_ATTR_SHARED))
        add_access(s, n);
    if (is_barrier(s->bc, n)) {
        if (!array_reserve(&s->barriers, s->barrier_count, &s->barrier_cap, sizeof *s->barriers, 16)) {
            s->oom = true;
            return false;
        }
        s->barriers[s->barrier_count++] = n->start;
    }
    return true;
}

static bool barrier_in(const Scan *s, size_t from, size_t to) {
    for (size_t i = 0; i < s->barrier_count; i++)
        if (s->barriers[i] >= from && s->barriers[i] < to) return true;
    return false;
}

static bool same_index(const Access *a, const Access *b) {
    if (a->rank != b->rank || !a->exact || !b->exact) return false;
    for (int i = 0; i < a->rank; i++)
        if (strcmp(a->idx[i].canon, b->idx[i].canon) != 0) return false;
    return true;
}

/* The read runs only where `e == c` for a thread-dependent e (`if (tid == 0)`), and
 * each subscript of the write is e where the read's is c, or both are equal: the
 * thread reads the element it wrote itself. */
static bool owned_under_equality(Fn *f, const Access *w, const Access *r) {
    if (w->rank != r->rank || w->rank == 0 || !w->exact || !r->exact) return false;
    Index *e = malloc(sizeof *e);
    if (!e) return false;
    bool owned = false;
    const CuNode *child = r->node;
    for (const CuNode *p = r->node->parent; p && !cu_is_function(p) && !owned; child = p, p = p->parent) {
        bool polarity;
        const CuNode *cond = cu_guard_of(f->src, p, child, &polarity);
        if (!cond || !polarity) continue;
        const CuNode *parts[8];
        int count = 0;
        collect_operands(cond, CXBinaryOperator_LAnd, parts, &count, 8);
        for (int i = 0; i < count && !owned; i++) {
            const CuNode *eq = parts[i];
            if (!eq || eq->kind != CXCursor_BinaryOperator || eq->op != CXBinaryOperator_EQ || eq->child_count != 2)
                continue;
            long long c;
            const CuNode *side;
            if (cu_int_value(eq->children[1], &c)) side = eq->children[0];
            else if (cu_int_value(eq->children[0], &c)) side = eq->children[1];
            else continue;
            if (!expr_tainted(f, side)) continue;
            build_index(f, side, e);
            char value[32];
            snprintf(value, sizeof value, "%lld", c);
            bool all = true;
            for (int k = 0; k < w->rank && all; k++)
                all = strcmp(w->idx[k].canon, r->idx[k].canon) == 0 ||
                      (strcmp(w->idx[k].canon, e->canon) == 0 && strcmp(r->idx[k].canon, value) == 0);
            owned = all;
        }
    }
    free(e);
    return owned;
}

/* In one branch each of an if/?: or in different cases of a switch: never
 * one after the other on one pass. */
static bool exclusive(const CudaSource *src, const CuNode *a, const CuNode *b) {
    const CuNode *lca = cu_common_ancestor(a, b);
    if (!lca) return true;
    if (lca->kind == CXCursor_CompoundStmt && lca->parent && lca->parent->kind == CXCursor_SwitchStmt) return true;
    if (lca->kind == CXCursor_IfStmt) {
        size_t h = cu_header_end(src, lca, NULL, NULL);
        if (!h) return true;
        return a->start >= h && b->start >= h;
    }
    if (lca->kind == CXCursor_ConditionalOperator && lca->child_count == 3)
        return !cu_contains(lca->children[0], a) && !cu_contains(lca->children[0], b);
    return false;
}

typedef enum { PATH_NONE, PATH_FORWARD, PATH_BACK_EDGE } Path;

/* W's store can reach R without passing a barrier */
static Path unsynchronized_path(const Scan *s, const Access *w, const Access *r, const CuNode **loop_out) {
    *loop_out = NULL;
    bool forward = r->node->start >= w->effect_end && !exclusive(s->f.src, w->node, r->node);
    if (forward) return barrier_in(s, w->effect_end, r->node->start) ? PATH_NONE : PATH_FORWARD;
    const CuNode *lca = cu_common_ancestor(w->node, r->node), *loop = NULL;
    for (const CuNode *p = lca; p && p != s->f.fn && !cu_is_function(p); p = p->parent)
        if (cu_is_loop(p)) {
            loop = p;
            break;
        }
    if (!loop) return PATH_NONE;
    if (barrier_in(s, w->effect_end, loop->end) || barrier_in(s, loop->start, r->node->start)) return PATH_NONE;
    *loop_out = loop;
    return PATH_BACK_EDGE;
}

/* the then-branch conditions (split at &&) and else-branch conditions on the way up from n */
static bool implied_by(Fn *f, const Guard *g, const CuNode *r) {
    char want[512], have[512];
    Buf wb = {want, 0, sizeof want};
    want[0] = '\0';
    canon(f, g->cond, &wb, 0);
    const CuNode *child = r;
    for (const CuNode *p = r->parent; p && !cu_is_function(p); child = p, p = p->parent) {
        bool polarity;
        const CuNode *cond = cu_guard_of(f->src, p, child, &polarity);
        if (!cond || polarity != g->polarity) continue;
        const CuNode *parts[8];
        int count = 0;
        if (polarity) collect_operands(cond, CXBinaryOperator_LAnd, parts, &count, 8);
        else parts[count++] = cond;
        for (int i = 0; i < count; i++) {
            Buf hb = {have, 0, sizeof have};
            have[0] = '\0';
            canon(f, parts[i], &hb, 0);
            if (strcmp(have, want) == 0) return true;
        }
    }
    return false;
}

typedef enum { WHY_OTHER_INDEX, WHY_GUARDED } Why;

static long long gcd(long long a, long long b) {
    while (b) {
        long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The index is its constant modulo the returned m (every other term is a
 * known multiple of m); 0 when the index is constant; 1 when nothing is known. */
static long long index_modulus(const Index *ix, long long *constant) {
    long long m = 0;
    *constant = 0;
    if (ix->overflow) return 1;
    for (int i = 0; i < ix->count; i++) {
        const Term *t = &ix->terms[i];
        if (t->constant) *constant = t->value;
        else if ((m = gcd(m, t->factor)) == 1) return 1;
    }
    return m;
}

/* `s[6 * idx + 0]` and `s[6 * (idx + d) + 1]`: the two indices differ modulo
 * a common factor of their terms, so no element is both (interleaved fields
 * of one shared array) */
static bool disjoint_residues(const Index *wi, const Index *ri) {
    long long cw, cr;
    long long mw = index_modulus(wi, &cw), mr = index_modulus(ri, &cr);
    if (mw == 1 || mr == 1 || (mw == 0 && mr == 0)) return false;
    long long m = gcd(mw, mr);
    if (m <= 1) return false;
    return ((cw % m) + m) % m != ((cr % m) + m) % m;
}

/* W's element can be one that R reads while another thread wrote it */
static bool conflicts(Scan *s, const Access *w, const Access *r, Why *why, Guard *guard_out) {
    if (w->rank != r->rank) return false;
    if (w->thread) {
        if (same_index(w, r) || !w->exact || !r->exact) return false;
        for (int k = 0; k < w->rank; k++) {
            const Index *wi = &w->idx[k], *ri = &r->idx[k];
            if (disjoint_residues(wi, ri)) return false;
            /* a different uniform slot (double buffers): unknown, assume disjoint */
            if (!wi->thread && !ri->thread && strcmp(wi->canon, ri->canon) != 0) return false;
            /* the write's uniform, non-constant offsets must reappear in the read */
            for (int i = 0; i < wi->count; i++) {
                if (wi->terms[i].thread || wi->terms[i].constant) continue;
                bool found = false;
                for (int j = 0; j < ri->count && !found; j++) found = strcmp(wi->terms[i].text, ri->terms[j].text) == 0;
                if (!found) return false;
            }
        }
        if ((w->strided || r->strided) && r->thread) return false; /* ownership in a strided loop: unknown */
        *why = WHY_OTHER_INDEX;
        return true;
    }
    /* every writing thread stores to the same element: only a problem when
     * some threads do not write it */
    if (!same_index(w, r)) return false;
    if (w->member[0] && r->member[0] && strcmp(w->member, r->member) != 0) return false; /* other fields */
    const CuNode *lca = cu_common_ancestor(w->node, r->node);
    Guard guards[8];
    int n = divergent_guards(&s->f, w->node, lca, guards, 8);
    if (n == 0 || n > 8) return false;
    for (int i = 0; i < n; i++) {
        if (guards[i].construct->kind != CXCursor_IfStmt) return false; /* loops: too subtle */
        if (!implied_by(&s->f, &guards[i], r->node)) {
            *why = WHY_GUARDED;
            *guard_out = guards[i];
            return true;
        }
    }
    return false;
}

/* ---- the fix ----------------------------------------------------------------- */

typedef struct {
    const Access *w;
    const CuNode *loop; /* back edge: the loop */
} Conflict;

static const CuNode *insertion_point(Scan *s, const Access *r, const Conflict *conf, int count) {
    const CudaSource *src = s->f.src;
    for (const CuNode *stmt = r->stmt; stmt && stmt != s->f.fn; stmt = cu_statement_of(stmt->parent)) {
        if (stmt->kind == CXCursor_CaseStmt || stmt->kind == CXCursor_DefaultStmt ||
            stmt->kind == CXCursor_LabelStmt)
            return NULL;
        for (int i = 0; i < count; i++) {
            if (cu_contains(stmt, conf[i].w->node)) return NULL;
            if (conf[i].loop && (stmt == conf[i].loop || !cu_contains(conf[i].loop, stmt))) return NULL;
        }
        if (!stmt->parent || stmt->parent->kind != CXCursor_CompoundStmt) continue;
        if (!uniform_point(&s->f, stmt)) continue;
        if (!cu_starts_line(src, stmt)) return NULL;
        return stmt;
    }
    return NULL;
}

/* ---- the rule --------------------------------------------------------------------- */

static bool visit_block_barrier(CuNode *n, void *data) {
    bool *found = data;
    if (*found || n->kind == CXCursor_LambdaExpr) return false;
    if (n->kind == CXCursor_CallExpr && cu_name_in(cu_callee(n), block_barriers)) *found = true;
    return !*found;
}

/* a __device__ function that already synchronizes the block is called by all its threads */
static bool calls_block_barrier(CuNode *fn) {
    bool found = false;
    cu_walk(fn, visit_block_barrier, &found);
    return found;
}

static void check_function(RuleContext *ctx, BarrierCache *bc, CuNode *fn) {
    Scan s = {.f = {.src = ctx->cuda, .fn = fn, .ix = cu_index_new(ctx->cuda, fn)}, .bc = bc};
    if (!s.f.ix) {
        ctx->out_of_memory = true;
        return;
    }
    cu_walk(fn, visit_scan, &s);
    const CuNode **reported = calloc(s.acc_count + 1, sizeof *reported);
    size_t reported_count = 0;
    Conflict conf[16];
    for (size_t ri = 0; ri < s.acc_count && !s.oom && reported; ri++) {
        Access *r = &s.acc[ri];
        if (!r->read || !r->stmt) continue;
        bool done = false;
        for (size_t k = 0; k < reported_count && !done; k++) done = reported[k] == r->stmt;
        if (done) continue;
        /* own element: this thread wrote the same index since the last barrier */
        bool own = false;
        for (size_t wi = 0; wi < s.acc_count && !own; wi++) {
            const Access *w = &s.acc[wi];
            const CuNode *loop;
            if (w->write && w->var == r->var && w->thread &&
                (same_index(w, r) || owned_under_equality(&s.f, w, r)) &&
                unsynchronized_path(&s, w, r, &loop) != PATH_NONE)
                own = true;
        }
        if (own) continue;
        int count = 0;
        const Access *first = NULL;
        Path first_path = PATH_NONE;
        Why first_why = WHY_OTHER_INDEX;
        Guard first_guard = {0};
        for (size_t wi = 0; wi < s.acc_count; wi++) {
            const Access *w = &s.acc[wi];
            if (!w->write || w->var != r->var || w == r) continue;
            const CuNode *loop;
            Path path = unsynchronized_path(&s, w, r, &loop);
            if (path == PATH_NONE) continue;
            Why why = WHY_OTHER_INDEX;
            Guard g = {0};
            if (!conflicts(&s, w, r, &why, &g)) continue;
            if (!first) {
                first = w;
                first_path = path;
                first_why = why;
                first_guard = g;
            }
            if (count < 16) conf[count++] = (Conflict){w, loop};
            else count = 17;
        }
        if (!first) continue;
        reported[reported_count++] = r->stmt;
        char rtext[96], wtext[96], gtext[96];
        cu_snippet(ctx->cuda, r->shown, rtext, sizeof rtext);
        const CuNode *wstmt = first->stmt ? first->stmt : first->node;
        cu_snippet(ctx->cuda, wstmt, wtext, sizeof wtext);
        size_t wline = document_line_of(ctx->doc, first->node->start) + 1;
        const char *var = first->var->name;
        Finding *f;
        if (first_why == WHY_GUARDED) {
            cu_snippet(ctx->cuda, first_guard.cond, gtext, sizeof gtext);
            f = rule_report_cu(ctx, r->node,
                               "`%s` reads __shared__ `%s`, which is stored only by the threads for which `%s` %s "
                               "(line %zu: `%s`), with no __syncthreads() in between: the other threads can read it "
                               "before it is written",
                               rtext, var, gtext, first_guard.polarity ? "holds" : "does not hold", wline, wtext);
        } else {
            f = rule_report_cu(ctx, r->node,
                               "`%s` reads an element of __shared__ `%s` that another thread stores at line %zu "
                               "(`%s`)%s with no __syncthreads() in between: the read races with the write",
                               rtext, var, wline, wtext,
                               first_path == PATH_BACK_EDGE ? " on the previous iteration of the loop," : "");
        }
        if (!f) break;
        finding_add_related(f, (ByteRange){first->node->start, first->node->end}, "written here by another thread");
        if (count > 16) continue;
        const CuNode *at = insertion_point(&s, r, conf, count);
        if (!at) continue;
        char indent[128];
        cu_line_indent(ctx->cuda, at->start, indent, sizeof indent);
        char *text = format_string("%s__syncthreads();\n", indent);
        if (!text) break;
        size_t line_start = ctx->doc->line_starts[document_line_of(ctx->doc, at->start)];
        bool safe = cu_is_kernel(fn) || calls_block_barrier(fn);
        Fix *fix = finding_add_fix(f, "add sync: insert __syncthreads() before the read", safe);
        if (fix) fix_add_edit(fix, line_start, line_start, text);
        free(text);
    }
    free(reported);
    free(s.acc);
    free(s.barriers);
    cu_index_free(s.f.ix);
}

typedef struct {
    RuleContext *ctx;
    BarrierCache *bc;
} Walk;

static bool visit(CuNode *n, void *data) {
    Walk *w = data;
    if (n->kind == CXCursor_FunctionDecl || n->kind == CXCursor_FunctionTemplate || n->kind == CXCursor_CXXMethod) {
        if (cu_is_device_code(n)) {
            bool has_body = false;
            for (uint32_t i = 0; i < n->child_count; i++) has_body |= n->children[i]->kind == CXCursor_CompoundStmt;
            if (has_body) check_function(w->ctx, w->bc, n);
        }
        return false;
    }
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->cuda || !ctx->cuda->root) return;
    BarrierCache bc = {.src = ctx->cuda};
    Walk w = {ctx, &bc};
    cu_walk(ctx->cuda->root, visit, &w);
    free(bc.entries);
}

const Rule rule_cu001_missing_syncthreads = {
    .code = "CU001", .name = "missing-syncthreads", .severity = SEVERITY_WARNING, .correctness = true,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true,
    .summary = "a __shared__ element written by one thread is read by another with no __syncthreads() between",
    .documentation = documentation};
