/* CU009 launch-config: a block size that is not a multiple of the warp size,
 * and a constant grid too small to occupy the GPU's SMs. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_query.h"
#include "rules/rule.h"
#include "rules/cuda/support/grid_guard.h"

/* streaming multiprocessors of the reference GPU (H200); a profile's device
 * will supply the real count */
enum { SM_COUNT = 132, WARP = 32, MAX_BLOCK = 1024 };

static const char documentation[] =
    "## What it does\n"
    "Checks the `<<<grid, block>>>` configuration of kernel launches whose sizes are constants\n"
    "(literals, `dim3(x, y, z)` of literals, macros, `const`/`constexpr` variables, local `dim3`\n"
    "or integer variables that are never changed):\n"
    "\n"
    "- a block whose number of threads is not a multiple of 32 (the warp size);\n"
    "- a constant grid of fewer blocks than the GPU has SMs (132 on an H200) for a kernel whose\n"
    "  work grows with the problem size (a grid-stride loop, or a global index checked against a\n"
    "  size parameter).\n"
    "\n"
    "Launches written in a macro's body (`#define CALL_KERNEL(K) if (c == 280) K<<<grid, 140>>>(p); else\n"
    "...`, one launch per block size) are reported once per macro and file rather than once per launch\n"
    "and expansion: one finding at the macro's first expansion lists each odd block size with the\n"
    "share of its lanes that idle, and the file's other expansions of the macro are its related\n"
    "locations, with the macro's `#define` when the file defines it. A block size passed to the macro as an argument (`LAUNCH(K, 100)`) is written at\n"
    "each use and reported there, as is a launch whose size alone is a macro (`<<<g, THREADS>>>`).\n"
    "\n"
    "## Why is this slow?\n"
    "The GPU schedules threads in warps of 32. A block of 100 threads occupies 4 warps, and the\n"
    "last one runs 4 lanes with 28 idle: 22% of the execution slots of every block do nothing,\n"
    "and the block still counts fully against the SM's warp and block limits, lowering occupancy.\n"
    "\n"
    "A block runs on one SM. A grid of 8 blocks keeps at most 8 of an H200's 132 SMs busy, so\n"
    "more than 90% of the GPU idles however much work each block loops over.\n"
    "\n"
    "Not flagged: block sizes that are multiples of 32; configurations that are not constants\n"
    "(grids computed from the problem size); single-block launches (`<<<1, n>>>`: the waste is one\n"
    "partial warp) and single-thread launches; grids whose size is written in terms of the names\n"
    "passed to the kernel (`<<<N / 256, 256>>>(x, N)`: the problem itself is that small);\n"
    "grid-stride kernels launched with at least one block per SM; kernels that never read\n"
    "`blockIdx`/`gridDim` (designed for one block); kernels defined elsewhere, for the grid check;\n"
    "kernels that read neither `threadIdx` nor `blockIdx`, for the block check (every thread does\n"
    "the same work, as in `atomicAdd(&counter, 1)`: the thread count is the amount of work);\n"
    "cooperative launches (`cudaLaunchCooperativeKernel`), whose grid is bounded by residency.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__global__ void scale(float *x, float a, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] *= a;\n"
    "}\n"
    "scale<<<(n + 99) / 100, 100>>>(x, 2.0f, n);   // 100 threads: the 4th warp is 4/32 busy\n"
    "saxpy<<<16, 256>>>(x, y, a, n);               // grid-stride loop on 16 of 132 SMs\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "scale<<<(n + 127) / 128, 128>>>(x, 2.0f, n);\n"
    "int sms;\n"
    "cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);\n"
    "saxpy<<<4 * sms, 256>>>(x, y, a, n);\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "The block size is rounded up to the next multiple of 32 (a safe fix) only when that cannot\n"
    "change the results: the block is one-dimensional and written as a literal (in the launch or\n"
    "in a variable used by this launch alone), in a launch written out, not produced by a macro (a\n"
    "macro's argument may serve more than the block); the kernel is defined in this file and computes\n"
    "its index as `blockIdx.x * blockDim.x + threadIdx.x`, guards it against the problem size\n"
    "(`if (i < n) {...}`, `if (i >= n) return;`, or a grid-stride loop) before touching memory,\n"
    "uses no shared memory, barriers or warp-level primitives, and reads the thread and block\n"
    "indices nowhere else; and the grid either does not depend on the block size (more threads\n"
    "per block only add guarded ones) or is the ceiling division `(n + B - 1) / B` by the same\n"
    "variable. Otherwise the finding comes without a fix. The grid check has no fix: the right\n"
    "grid depends on the device and the kernel.\n";

/* ---- constants of the configuration ------------------------------------- */

typedef struct {
    long long v[3];
    CuNode *x_literal; /* the IntegerLiteral spelled in the source that gives x, when there is one */
    CuNode *var;       /* the variable whose initialiser holds the value, when it came from one */
} Dims;

static bool is_wrapper(const CuNode *n) {
    return n && (n->kind == CXCursor_UnexposedExpr || n->kind == CXCursor_ParenExpr) && n->child_count == 1;
}

/* an integer literal written as digits in the source (not through a macro) */
static bool is_source_literal(const CudaSource *src, const CuNode *n) {
    if (!n || n->kind != CXCursor_IntegerLiteral || n->end <= n->start) return false;
    const char *t = cu_text(src, n);
    size_t len = cu_text_len(n), i = 0;
    while (i < len && isdigit((unsigned char)t[i])) i++;
    if (i == 0 || (t[0] == '0' && i > 1)) return false; /* octal */
    while (i < len && strchr("uUlL", t[i])) i++;
    return i == len;
}

/* a use of var that may change it */
static bool modifies(const CuNode *n, void *var) {
    if (n->kind != CXCursor_DeclRefExpr || n->ref != var) return false;
    /* climb through member accesses and wrappers to the use */
    const CuNode *use = n;
    while (use->parent && (is_wrapper(use->parent) || use->parent->kind == CXCursor_MemberRefExpr)) use = use->parent;
    const CuNode *p = use->parent;
    if (!p) return false;
    if ((p->kind == CXCursor_BinaryOperator && p->op == CXBinaryOperator_Assign && p->children[0] == use) ||
        (p->kind == CXCursor_CompoundAssignOperator && p->children[0] == use))
        return true;
    if (p->kind == CXCursor_UnaryOperator &&
        (p->op == CXUnaryOperator_AddrOf || p->op == CXUnaryOperator_PreInc || p->op == CXUnaryOperator_PostInc ||
         p->op == CXUnaryOperator_PreDec || p->op == CXUnaryOperator_PostDec))
        return true;
    /* passed by reference to a function (no lvalue-to-rvalue wrapper) */
    return p->kind == CXCursor_CallExpr && use == n && strcmp(cu_callee(p), "dim3") != 0 &&
           !(p->child_count && p->children[0] == use);
}

static bool variable_modified(const CudaSource *src, const CuNode *var) {
    /* a local can only change inside its function; a global anywhere */
    CuNode *fn = cu_function_of(var);
    return cu_find(fn ? fn : src->root, modifies, (void *)var) != NULL;
}

static bool type_is_dim3(const CuNode *n) {
    char *t = cu_type_spelling(n);
    bool yes = t && strstr(t, "dim3") != NULL;
    free(t);
    return yes;
}

static bool scalar_value(const CudaSource *src, CuNode *n, long long *v, CuNode **literal, CuNode **var, int depth);

static bool dims_of(const CudaSource *src, CuNode *node, Dims *d, int depth) {
    CuNode *n = cu_strip(node);
    if (!n || depth > 6) return false;
    if (n->kind == CXCursor_CallExpr && strcmp(n->ref_name, "dim3") == 0) {
        CuNode *args[3];
        int count = 0;
        for (uint32_t i = 0; i < n->child_count; i++) {
            CuNode *c = n->children[i];
            if (c->kind == CXCursor_TypeRef) continue;
            if (count == 3) return false;
            args[count++] = c;
        }
        if (count == 1 && type_is_dim3(cu_strip(args[0]))) return dims_of(src, args[0], d, depth + 1);
        if (count == 0) return false;
        d->v[0] = d->v[1] = d->v[2] = 1;
        for (int i = 0; i < count; i++) {
            CuNode *lit = NULL, *var = NULL;
            if (!scalar_value(src, args[i], &d->v[i], &lit, &var, depth + 1)) return false;
            if (i == 0) {
                d->x_literal = lit;
                if (var) d->var = var;
            }
        }
        return true;
    }
    if (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl && type_is_dim3(n)) {
        CuNode *var = n->ref, *init = cu_initializer(var);
        if (!cu_function_of(var) && !clang_isConstQualifiedType(clang_getCursorType(var->cursor))) return false;
        if (!init || variable_modified(src, var)) return false;
        if (!dims_of(src, init, d, depth + 1)) return false;
        if (!d->var) d->var = var;
        return true;
    }
    CuNode *lit = NULL, *var = NULL;
    d->v[1] = d->v[2] = 1;
    if (!scalar_value(src, node, &d->v[0], &lit, &var, depth + 1)) return false;
    d->x_literal = lit;
    d->var = var;
    return true;
}

static bool scalar_value(const CudaSource *src, CuNode *node, long long *v, CuNode **literal, CuNode **var,
                         int depth) {
    CuNode *n = cu_strip(node);
    if (!n || depth > 8) return false;
    if (n->kind == CXCursor_IntegerLiteral) {
        if (!cu_int_value(n, v)) return false;
        if (is_source_literal(src, n)) *literal = n;
        return true;
    }
    if (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl) {
        CuNode *decl = n->ref, *init = cu_initializer(decl);
        /* a global that is not const may change elsewhere */
        bool local = cu_function_of(decl) != NULL;
        if (!local && !clang_isConstQualifiedType(clang_getCursorType(decl->cursor))) return cu_int_value(n, v);
        if (!init || variable_modified(src, decl)) return cu_int_value(n, v);
        CuNode *lit = NULL, *inner = NULL;
        if (!scalar_value(src, init, v, &lit, &inner, depth + 1)) return false;
        *literal = lit;
        *var = inner ? inner : decl;
        return true;
    }
    return cu_int_value(n, v);
}

/* ---- the kernel: may its block size change? ----------------------------- */

/* the block size may change when nothing but the guarded index reads it:
 * any pure values may be declared before the guard, and an early return
 * may test more than the bound */
enum { GUARD_OPTIONS = GRID_GUARD_OTHER_DECLS | GRID_GUARD_EXIT_OR };

typedef struct {
    const CudaSource *src;
    const GridGuard *g;
    const CuNode *allowed[4]; /* subtrees where builtins may appear */
    int depth;
    bool bad;
} BlockUse;

static bool kernel_block_independent(const CudaSource *src, const CuNode *fn, const GridGuard *g, int depth);

static bool visit_block_use(CuNode *n, void *data) {
    BlockUse *u = data;
    if (u->bad) return false;
    for (int i = 0; i < 4; i++)
        if (u->allowed[i] == n) return false;
    if ((n->kind == CXCursor_VarDecl && (n->attrs & CU_ATTR_SHARED)) || cu_is_any_builtin(n)) {
        u->bad = true;
        return false;
    }
    if (n->kind == CXCursor_CallExpr) {
        static const char *const block_level[] = {"sync",     "shfl",        "ballot",  "activemask", "match_",
                                                  "__any",    "__all",       "reduce_", "tiled_partition",
                                                  "this_thread_block", "this_grid", "coalesced", "clock",
                                                  "warp",     NULL};
        const char *name = cu_callee(n);
        for (int i = 0; block_level[i]; i++)
            if (strstr(name, block_level[i])) u->bad = true;
        /* a device function of this file must not look at the block either */
        if (!u->bad && n->ref && cu_is_function(n->ref) && n->ref->kind != CXCursor_LambdaExpr &&
            !kernel_block_independent(u->src, n->ref, NULL, u->depth + 1))
            u->bad = true;
    }
    /* the index variable is written only where the guard expects it */
    if ((n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Assign) ||
        n->kind == CXCursor_CompoundAssignOperator) {
        if (u->g && n->child_count == 2 && (cu_refers_to(n->children[0], u->g->index) ||
                                            (u->g->stride && cu_refers_to(n->children[0], u->g->stride))))
            u->bad = true;
    }
    return !u->bad;
}

/* nothing in fn depends on the block's size or shape beyond the guarded index */
static bool kernel_block_independent(const CudaSource *src, const CuNode *fn, const GridGuard *g, int depth) {
    if (depth > 3) return false;
    CuNode *body = cu_function_body(fn);
    if (!body) return false;
    BlockUse u = {.src = src, .g = g, .depth = depth};
    if (g) {
        u.allowed[0] = cu_initializer(g->index);
        if (g->stride) u.allowed[1] = cu_initializer(g->stride);
        if (g->kind == GRID_GUARD_STRIDE) {
            CuNode *loop = g->index->parent->parent; /* VarDecl -> DeclStmt -> ForStmt */
            u.allowed[2] = loop->children[2];
        }
    }
    cu_walk(body, visit_block_use, &u);
    return !u.bad;
}

/* ---- the grid ----------------------------------------------------------- */

/* (X + B - 1) / B, (X - 1) / B + 1, or ceil_div(X, B) with B the variable */
static bool is_ceiling_division(CuNode *e, const CuNode *var) {
    e = cu_strip(e);
    if (!e) return false;
    if (e->kind == CXCursor_CallExpr && strcmp(e->ref_name, "dim3") == 0) {
        uint32_t argc = 0;
        CuNode *only = NULL;
        for (uint32_t i = 0; i < e->child_count; i++)
            if (e->children[i]->kind != CXCursor_TypeRef) {
                argc++;
                only = e->children[i];
            }
        return argc == 1 && is_ceiling_division(only, var);
    }
    if (e->kind == CXCursor_CallExpr) {
        const char *name = cu_callee(e);
        char lower[64];
        size_t i = 0;
        for (; name[i] && i + 1 < sizeof lower; i++) lower[i] = (char)tolower((unsigned char)name[i]);
        lower[i] = '\0';
        uint32_t argc;
        CuNode **args = cu_call_args(e, &argc);
        return (strstr(lower, "ceil") || strstr(lower, "divup") || strstr(lower, "div_up") || strstr(lower, "cdiv")) &&
               argc == 2 && cu_refers_to(args[1], var);
    }
    if (e->kind != CXCursor_BinaryOperator || e->child_count != 2) return false;
    CuNode *l = cu_strip(e->children[0]), *r = cu_strip(e->children[1]);
    long long one;
    if (e->op == CXBinaryOperator_Div && cu_refers_to(r, var)) {
        /* (X + B - 1) / B  or  (X + (B - 1)) / B */
        if (!l || l->kind != CXCursor_BinaryOperator || l->child_count != 2) return false;
        CuNode *a = cu_strip(l->children[0]), *b = cu_strip(l->children[1]);
        if (l->op == CXBinaryOperator_Sub && cu_int_value(b, &one) && one == 1 && a &&
            a->kind == CXCursor_BinaryOperator && a->op == CXBinaryOperator_Add && a->child_count == 2)
            return cu_refers_to(a->children[1], var) || cu_refers_to(a->children[0], var);
        if (l->op == CXBinaryOperator_Add && b && b->kind == CXCursor_BinaryOperator &&
            b->op == CXBinaryOperator_Sub && b->child_count == 2 && cu_refers_to(b->children[0], var) &&
            cu_int_value(cu_strip(b->children[1]), &one) && one == 1)
            return true;
        return false;
    }
    if (e->op == CXBinaryOperator_Add && cu_int_value(r, &one) && one == 1 && l &&
        l->kind == CXCursor_BinaryOperator && l->op == CXBinaryOperator_Div && l->child_count == 2 &&
        cu_refers_to(l->children[1], var)) {
        /* (X - 1) / B + 1 */
        CuNode *x = cu_strip(l->children[0]);
        return x && x->kind == CXCursor_BinaryOperator && x->op == CXBinaryOperator_Sub && x->child_count == 2 &&
               cu_int_value(cu_strip(x->children[1]), &one) && one == 1;
    }
    return false;
}

typedef struct {
    const CuNode *var;
    const CuNode *inside_a, *inside_b; /* allowed subtrees */
    bool elsewhere, any;
} RefSearch;

static bool visit_refs(CuNode *n, void *data) {
    RefSearch *s = data;
    if (n == s->inside_a || n == s->inside_b) return false;
    if ((n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_MemberRefExpr) && n->ref == s->var)
        s->elsewhere = true;
    return !s->elsewhere;
}

static bool visit_any_ref(CuNode *n, void *data) {
    RefSearch *s = data;
    if (n->kind == CXCursor_DeclRefExpr && n->ref == s->var) s->any = true;
    return !s->any;
}

static bool mentions(CuNode *tree, const CuNode *var) {
    RefSearch s = {.var = var};
    cu_walk(tree, visit_any_ref, &s);
    return s.any;
}

/* identifiers of text, each checked against the kernel arguments */
static bool word_in(const char *text, size_t len, const char *word, size_t wlen) {
    for (size_t i = 0; i + wlen <= len; i++) {
        if (memcmp(text + i, word, wlen) != 0) continue;
        bool before = i > 0 && (isalnum((unsigned char)text[i - 1]) || text[i - 1] == '_');
        bool after = i + wlen < len && (isalnum((unsigned char)text[i + wlen]) || text[i + wlen] == '_');
        if (!before && !after) return true;
    }
    return false;
}

/* the grid is written in terms of a name that is also passed to the kernel */
static bool grid_names_an_argument(const CudaSource *src, const CuLaunch *l) {
    const char *t = cu_text(src, l->grid);
    size_t len = cu_text_len(l->grid);
    for (size_t i = 0; i < len;) {
        if (!(isalpha((unsigned char)t[i]) || t[i] == '_')) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && (isalnum((unsigned char)t[j]) || t[j] == '_')) j++;
        if (!(j - i == 4 && memcmp(t + i, "dim3", 4) == 0))
            for (uint32_t a = 0; a < l->arg_count; a++)
                if (word_in(cu_text(src, l->args[a]), cu_text_len(l->args[a]), t + i, j - i)) return true;
        i = j;
    }
    return false;
}

/* ---- the check ---------------------------------------------------------- */

/* n (a kernel's body, or the kernel) reads the builtin a or b (`blockIdx`, ...) */
static bool reads_builtin(const CuNode *n, const char *a, const char *b) {
    if (cu_is_builtin_member(n, a, 0) || cu_is_builtin_member(n, b, 0)) return true;
    for (uint32_t i = 0; i < n->child_count; i++)
        if (reads_builtin(n->children[i], a, b)) return true;
    return false;
}

/* the kernel tells its blocks apart: one that does not is designed for one block */
static bool kernel_uses_blocks(const CuNode *n) { return reads_builtin(n, "blockIdx", "gridDim"); }

/* The kernel tells its threads apart (threadIdx or blockIdx); one that does
 * not (`atomicAdd(counter, 1)`) does the same work in every thread, so its
 * thread count is the amount of work, not a shape to round. */
static bool kernel_indexes_threads(const CuNode *n) { return reads_builtin(n, "threadIdx", "blockIdx"); }

/* ---- launches written in a macro's body ----------------------------------- */

/* A macro that expands several launches (apex's CALL_TWO_PASS_KERNEL picks one
 * of eleven block sizes), expanded at many places of a file, would give a
 * finding per odd size per expansion. Its launches are gathered by macro and
 * reported once per file, at the first expansion, listing each odd size. */
enum { MAX_SIZES = 16 };

typedef struct {
    long long v[3];
} OddSize;

typedef struct {
    const char *name;          /* the macro as written at its first expansion (in the document) */
    size_t name_len;
    size_t *expansions;        /* offsets of its expansions in this file, in order */
    size_t expansion_count, expansion_cap;
    OddSize sizes[MAX_SIZES];  /* the distinct odd block sizes, in order */
    int size_count, more_sizes;
    size_t define_start, define_end; /* its #define's lines, when this file defines it (end 0: not) */
} MacroGroup;

typedef struct {
    RuleContext *ctx;
    MacroGroup *groups;
    size_t count, cap;
} Walk;

/* where loc's macro expansion starts in the main file, when loc is a token of
 * a macro's body (not an argument written at the use, not plain source) */
static bool body_expansion(CXSourceLocation loc, unsigned *offset) {
    CXFile fe, ff, fs;
    unsigned oe, of, os;
    clang_getExpansionLocation(loc, &fe, NULL, NULL, &oe);
    clang_getFileLocation(loc, &ff, NULL, NULL, &of); /* an argument's own place, else the expansion */
    clang_getSpellingLocation(loc, &fs, NULL, NULL, &os); /* in the #define for a body's token */
    if (!fe || !ff || !fs || !clang_File_isEqual(fe, ff) || of != oe) return false;
    if (clang_File_isEqual(fe, fs) && os == oe) return false; /* written here */
    *offset = oe;
    return true;
}

/* The launch's `<<<...>>>` is spelled where it stands, not produced by a
 * macro: a fix may edit its block size only then. In `LAUNCH(k, 100)` the
 * literal is the macro's argument, which the body may use again (in the grid,
 * as a kernel argument), so rounding it up would change more than the block. */
static bool config_written_here(const CuLaunch *l) {
    CXSourceLocation loc = clang_getRangeStart(clang_getCursorExtent(l->config->cursor));
    CXFile fe, fs;
    unsigned oe, os;
    clang_getExpansionLocation(loc, &fe, NULL, NULL, &oe);
    clang_getSpellingLocation(loc, &fs, NULL, NULL, &os);
    return fe && fs && clang_File_isEqual(fe, fs) && oe == os;
}

/* The launch, block size included, is written in a macro's body: *offset gets
 * the expansion's place (the macro's name). `k<<<g, THREADS>>>(x)` is not: only
 * its block size comes from a macro. */
static bool launch_in_macro(const CudaSource *src, const CuLaunch *l, size_t *offset, size_t *name_len) {
    unsigned a, b;
    /* the `<<<...>>>` configuration (the call's own extent spans the arguments, written at the use) */
    if (!body_expansion(clang_getRangeStart(clang_getCursorExtent(l->block->cursor)), &a) ||
        !body_expansion(clang_getRangeStart(clang_getCursorExtent(l->config->cursor)), &b) || a != b ||
        a >= src->doc->length)
        return false;
    const char *t = src->doc->text;
    size_t i = a;
    while (i < src->doc->length && (isalnum((unsigned char)t[i]) || t[i] == '_')) i++;
    if (i == a) return false;
    *offset = a;
    *name_len = i - a;
    return true;
}

static MacroGroup *group_of(Walk *w, const char *name, size_t len) {
    for (size_t i = 0; i < w->count; i++)
        if (w->groups[i].name_len == len && memcmp(w->groups[i].name, name, len) == 0) return &w->groups[i];
    if (!array_reserve(&w->groups, w->count, &w->cap, sizeof *w->groups, 4)) return NULL;
    MacroGroup *g = &w->groups[w->count++];
    memset(g, 0, sizeof *g);
    g->name = name;
    g->name_len = len;
    return g;
}

/* The first line of the #define of macro `name` whose body spells the
 * launch's configuration, when that is in this file (a header's macro is not
 * this file's to show); found by walking up the lines the #define continues
 * with a backslash. Not when the body belongs to another macro that `name`
 * expands (`#define OUTER(k) INNER(k)`). */
static bool define_lines(const CudaSource *src, const CuLaunch *l, const char *name, size_t name_len, size_t *start,
                         size_t *end) {
    CXSourceLocation loc = clang_getRangeStart(clang_getCursorExtent(l->config->cursor));
    CXFile fe, fs;
    unsigned os;
    clang_getExpansionLocation(loc, &fe, NULL, NULL, NULL);
    clang_getSpellingLocation(loc, &fs, NULL, NULL, &os);
    const Document *doc = src->doc;
    if (!fe || !fs || !clang_File_isEqual(fe, fs) || os >= doc->length) return false;
    const char *t = doc->text;
    size_t line = document_line_of(doc, os);
    /* up through the lines that continue onto this one */
    while (line > 0) {
        size_t prev_end = doc->line_starts[line]; /* the previous line's '\n' is just before */
        size_t k = prev_end >= 1 ? prev_end - 1 : 0;
        while (k > doc->line_starts[line - 1] && (t[k - 1] == '\r' || t[k - 1] == '\n')) k--;
        while (k > doc->line_starts[line - 1] && (t[k - 1] == ' ' || t[k - 1] == '\t')) k--;
        if (k == doc->line_starts[line - 1] || t[k - 1] != '\\') break;
        line--;
    }
    size_t at = doc->line_starts[line];
    while (at < doc->length && (t[at] == ' ' || t[at] == '\t')) at++;
    if (doc->length - at < 7 || t[at] != '#') return false;
    size_t k = at + 1;
    while (k < doc->length && (t[k] == ' ' || t[k] == '\t')) k++;
    if (doc->length - k < 6 || memcmp(t + k, "define", 6) != 0) return false;
    k += 6;
    if (k >= doc->length || (t[k] != ' ' && t[k] != '\t')) return false;
    while (k < doc->length && (t[k] == ' ' || t[k] == '\t')) k++;
    if (doc->length - k < name_len || memcmp(t + k, name, name_len) != 0) return false;
    k += name_len;
    if (k < doc->length && (isalnum((unsigned char)t[k]) || t[k] == '_')) return false; /* a longer name */
    /* the end of the #define's first line: the finding points at its name, not its whole body */
    const char *nl = memchr(t + at, '\n', doc->length - at);
    *start = at;
    *end = nl ? (size_t)(nl - t) : doc->length;
    if (*end > at && t[*end - 1] == '\r') (*end)--;
    return true;
}

static bool group_add(Walk *w, const CuLaunch *l, size_t offset, size_t name_len, const Dims *d) {
    MacroGroup *g = group_of(w, w->ctx->cuda->doc->text + offset, name_len);
    if (!g) return false;
    if (!g->define_end) {
        size_t start, end;
        if (define_lines(w->ctx->cuda, l, g->name, g->name_len, &start, &end))
            g->define_start = start, g->define_end = end;
    }
    if (!g->expansion_count || g->expansions[g->expansion_count - 1] != offset) {
        bool known = false;
        for (size_t i = 0; i < g->expansion_count && !known; i++) known = g->expansions[i] == offset;
        if (!known) {
            if (!array_reserve(&g->expansions, g->expansion_count, &g->expansion_cap, sizeof *g->expansions, 8))
                return false;
            g->expansions[g->expansion_count++] = offset;
        }
    }
    for (int i = 0; i < g->size_count; i++)
        if (memcmp(g->sizes[i].v, d->v, sizeof d->v) == 0) return true;
    if (g->size_count == MAX_SIZES) {
        g->more_sizes++;
        return true;
    }
    memcpy(g->sizes[g->size_count++].v, d->v, sizeof d->v);
    return true;
}

/* "140 threads (the last of its 5 warps runs 12 of 32 lanes: 13% idle)" */
static void size_text(const OddSize *s, char *buf, size_t size) {
    long long threads = s->v[0] * s->v[1] * s->v[2];
    long long warps = (threads + WARP - 1) / WARP, lanes = warps * WARP, idle = lanes - threads;
    long long percent = (idle * 100 + lanes / 2) / lanes;
    char shape[48] = "";
    if (s->v[1] != 1 || s->v[2] != 1) {
        if (s->v[2] != 1)
            snprintf(shape, sizeof shape, "dim3(%lld, %lld, %lld) = ", s->v[0], s->v[1], s->v[2]);
        else
            snprintf(shape, sizeof shape, "dim3(%lld, %lld) = ", s->v[0], s->v[1]);
    }
    if (warps == 1)
        snprintf(buf, size, "%s%lld thread%s (%lld of the 32 lanes of its only warp: %lld%% idle)", shape, threads,
                 threads == 1 ? "" : "s", threads, percent);
    else
        snprintf(buf, size, "%s%lld threads (the last of its %lld warps runs %lld of 32 lanes: %lld%% idle)", shape,
                 threads, warps, WARP - idle, percent);
}

static void report_group(RuleContext *ctx, const MacroGroup *g) {
    size_t len = g->name_len, cap = 256 + (size_t)(g->size_count + 1) * 112, used = 0;
    char *list = malloc(cap);
    if (!list) {
        ctx->out_of_memory = true;
        return;
    }
    list[0] = '\0';
    for (int i = 0; i < g->size_count; i++) {
        char one[112];
        size_text(&g->sizes[i], one, sizeof one);
        const char *sep = i == 0 ? "" : i + 1 == g->size_count && !g->more_sizes ? " and " : ", ";
        used += (size_t)snprintf(list + used, cap - used, "%s%s", sep, one);
    }
    if (g->more_sizes)
        snprintf(list + used, cap - used, " and %d more size%s", g->more_sizes, g->more_sizes == 1 ? "" : "s");
    char where[128] = "";
    if (g->expansion_count > 1)
        snprintf(where, sizeof where,
                 "; reported once for its %zu expansions in this file (the others are listed as related locations)",
                 g->expansion_count);
    int sizes = g->size_count + g->more_sizes;
    Finding *f = rule_report(ctx, g->expansions[0], g->expansions[0] + len, "macro `%.*s` launches %s (the warp size): %s%s",
                             (int)len, g->name,
                             sizes == 1 ? "a block whose size is not a multiple of 32"
                                        : "blocks whose sizes are not multiples of 32",
                             list, where);
    free(list);
    if (!f) return;
    if (g->define_end &&
        !finding_add_related(f, (ByteRange){g->define_start, g->define_end},
                             "the macro is defined here: its body holds the launches and their block sizes")) {
        ctx->out_of_memory = true;
        return;
    }
    for (size_t i = 1; i < g->expansion_count; i++) {
        char message[96];
        snprintf(message, sizeof message, "`%.*s` expanded here too", (int)(len < 64 ? len : 64), g->name);
        if (!finding_add_related(f, (ByteRange){g->expansions[i], g->expansions[i] + len}, message)) {
            ctx->out_of_memory = true;
            return;
        }
    }
}

static void check_block(Walk *w, const CuLaunch *l, const Dims *grid, bool grid_known) {
    RuleContext *ctx = w->ctx;
    const CudaSource *src = ctx->cuda;
    Dims d = {{1, 1, 1}, NULL, NULL};
    if (!dims_of(src, l->block, &d, 0)) return;
    long long threads = d.v[0] * d.v[1] * d.v[2];
    if (d.v[0] <= 0 || d.v[1] <= 0 || d.v[2] <= 0 || threads > MAX_BLOCK || threads % WARP == 0) return;
    /* one block (or one thread): the waste is a single partial warp */
    if (grid_known && grid->v[0] * grid->v[1] * grid->v[2] == 1) return;
    const CuNode *defined = cu_definition_of(src, l->kernel_decl);
    if (defined && defined->kind == CXCursor_FunctionDecl && !kernel_indexes_threads(defined)) return;
    size_t expansion, name_len;
    if (launch_in_macro(src, l, &expansion, &name_len)) {
        if (!group_add(w, l, expansion, name_len, &d)) ctx->out_of_memory = true;
        return;
    }
    long long warps = (threads + WARP - 1) / WARP;
    long long lanes = warps * WARP, idle = lanes - threads, rounded = lanes;
    long long percent = (idle * 100 + lanes / 2) / lanes;
    char advice[96] = "";
    if (d.v[1] != 1 || d.v[2] != 1)
        snprintf(advice, sizeof advice, "; make blockDim.x a multiple of 32, for example dim3(32, %lld)",
                 rounded / WARP);
    Finding *f;
    if (warps == 1)
        f = rule_report_cu(ctx, l->block,
                           "block of %lld thread%s fills %lld of the 32 lanes of its only warp: %lld%% of the lanes "
                           "idle%s",
                           threads, threads == 1 ? "" : "s", threads, percent, advice);
    else
        f = rule_report_cu(ctx, l->block,
                           "block of %lld threads is not a multiple of 32: the last of its %lld warps runs %lld of "
                           "32 lanes, so %lld%% of every block's lanes idle%s",
                           threads, warps, WARP - idle, percent, advice);
    if (!f || advice[0]) return;
    /* the fix: round up, when the kernel cannot tell the difference */
    CuNode *kernel = cu_definition_of(src, l->kernel_decl);
    if (!d.x_literal || rounded > MAX_BLOCK || !kernel || kernel->kind != CXCursor_FunctionDecl ||
        !config_written_here(l))
        return;
    GridGuard g;
    if (!grid_guard_of(src, kernel, GUARD_OPTIONS, &g) || !kernel_block_independent(src, kernel, &g, 0)) return;
    long long shared = 0;
    if (l->shared_bytes && !(cu_int_value(l->shared_bytes, &shared) && shared == 0))
        return; /* dynamic shared memory is sized for a block */
    if (d.var) {
        /* the variable serves this launch alone, and the grid divides by it rounding up */
        RefSearch s = {.var = d.var, .inside_a = l->block, .inside_b = l->grid};
        for (uint32_t i = 0; i < src->root->child_count && !s.elsewhere; i++) cu_walk(src->root->children[i], visit_refs, &s);
        /* the declaration's own initialiser is not a use */
        if (s.elsewhere) return;
        if (mentions(l->grid, d.var) && !is_ceiling_division(l->grid, d.var)) return;
    }
    char text[32], title[64];
    snprintf(text, sizeof text, "%lld", rounded);
    snprintf(title, sizeof title, "Round the block size up to %lld", rounded);
    Fix *fix = finding_add_fix(f, title, true);
    if (!fix || !fix_add_edit(fix, d.x_literal->start, d.x_literal->end, text)) ctx->out_of_memory = true;
}

static void check_grid(RuleContext *ctx, const CuLaunch *l, const Dims *grid) {
    const CudaSource *src = ctx->cuda;
    long long blocks = grid->v[0] * grid->v[1] * grid->v[2];
    if (blocks <= 0 || blocks >= SM_COUNT) return;
    Dims b = {{1, 1, 1}, NULL, NULL};
    bool block_known = dims_of(src, l->block, &b, 0);
    long long threads = block_known ? b.v[0] * b.v[1] * b.v[2] : 0;
    if (block_known && threads * blocks <= 1) return; /* a serial kernel */
    if (grid_names_an_argument(src, l)) return;
    CuNode *kernel = cu_definition_of(src, l->kernel_decl);
    if (!kernel || !kernel_uses_blocks(cu_function_body(kernel))) return;
    GridGuard g;
    if (!grid_guard_of(src, kernel, GUARD_OPTIONS, &g)) return;
    /* the work must grow with the problem: a bound that is not a constant, or a
     * constant bound larger than the threads launched */
    long long bound;
    bool constant_bound = cu_int_value(cu_strip(g.bound), &bound);
    if (constant_bound && (!block_known || bound <= threads * blocks)) return;
    /* a size parameter that this launch passes as a small constant */
    CuNode *b_ref = cu_strip(g.bound);
    if (b_ref && b_ref->kind == CXCursor_DeclRefExpr && b_ref->ref && b_ref->ref->kind == CXCursor_ParmDecl) {
        uint32_t p = 0;
        for (uint32_t i = 0; i < kernel->child_count; i++) {
            CuNode *c = kernel->children[i];
            if (c == b_ref->ref) break;
            if (c->kind == CXCursor_ParmDecl) p++;
        }
        long long passed;
        if (p < l->arg_count && cu_int_value(cu_strip(l->args[p]), &passed) &&
            (!block_known || passed <= threads * blocks))
            return;
    }
    char per_sm[64] = "";
    if (block_known)
        snprintf(per_sm, sizeof per_sm, " (%lld threads each)", threads);
    const char *plural = blocks == 1 ? "" : "s";
    if (g.kind == GRID_GUARD_STRIDE) {
        rule_report_cu(ctx, l->grid,
                       "constant grid of %lld block%s%s: the grid-stride loop runs on at most %lld of the GPU's %d "
                       "SMs and the rest idle; launch a multiple of the SM count (cudaDevAttrMultiProcessorCount) "
                       "instead",
                       blocks, plural, per_sm, blocks, SM_COUNT);
        return;
    }
    const char *bound_text = cu_text(src, g.bound);
    int bound_len = (int)cu_text_len(g.bound);
    if (bound_len > 40 || bound_len == 0) {
        bound_text = "n";
        bound_len = 1;
    }
    Finding *f;
    if (block_known)
        f = rule_report_cu(ctx, l->grid,
                           "constant grid of %lld block%s: at most %lld of the GPU's %d SMs work, and when `%.*s` "
                           "exceeds the %lld threads launched the kernel skips the rest; size the grid from the "
                           "problem, (%.*s + %lld) / %lld",
                           blocks, plural, blocks, SM_COUNT, bound_len, bound_text, threads * blocks, bound_len,
                           bound_text, threads - 1, threads);
    else
        f = rule_report_cu(ctx, l->grid,
                           "constant grid of %lld block%s: at most %lld of the GPU's %d SMs work; size the grid from "
                           "the problem",
                           blocks, plural, blocks, SM_COUNT);
    if (f) f->severity = SEVERITY_HINT;
}

static bool visit(CuNode *n, void *data) {
    Walk *w = data;
    RuleContext *ctx = w->ctx;
    CuLaunch l;
    if (n->kind != CXCursor_CallExpr || !cu_launch(n, &l) || !l.grid || !l.block) return true;
    CuNode *fn = cu_function_of(n);
    if (fn && fn->kind == CXCursor_FunctionTemplate) return true; /* dependent sizes */
    Dims grid = {{1, 1, 1}, NULL, NULL};
    bool grid_known = dims_of(ctx->cuda, l.grid, &grid, 0);
    check_block(w, &l, &grid, grid_known);
    if (grid_known) check_grid(ctx, &l, &grid);
    return true;
}

static void check(RuleContext *ctx) {
    Walk w = {.ctx = ctx};
    rule_walk_cuda(ctx, visit, &w);
    for (size_t i = 0; i < w.count; i++) {
        const MacroGroup *g = &w.groups[i];
        if (g->expansion_count && !ctx->out_of_memory) report_group(ctx, g);
        free(g->expansions);
    }
    free(w.groups);
}

const Rule rule_cu009_launch_config = {
    .code = "CU009", .name = "launch-config", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true, .measure = MEASURE_GPU_TIME,
    .summary = "Block size not a multiple of 32, or a constant grid smaller than the GPU's SM count",
    .documentation = documentation};
