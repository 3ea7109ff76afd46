/* CU004 uncoalesced-access: a global-memory access in a kernel whose address
 * puts neighbouring threadIdx.x values far apart (threadIdx.x times a stride,
 * threadIdx.x in the slow dimension of a 2-D index, a thread-per-row loop). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../analysis/cuda_query.h"
#include "rule.h"

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
    "The message names the variable that carries `threadIdx.x` and the stride.\n"
    "\n"
    "## Why is this slow?\n"
    "The 32 threads of a warp issue a load or store together. When consecutive `threadIdx.x` values\n"
    "touch consecutive elements, the warp's request is served by a few 32-byte sectors (128 bytes for\n"
    "32 floats). When they are `stride` elements apart, every thread needs its own sector: up to 32\n"
    "transactions for one instruction, and 8x (floats) to 32x (bytes) more DRAM traffic than the data\n"
    "used. Memory-bound kernels slow down by about that factor.\n"
    "\n"
    "Not flagged: `x[blockIdx.x * blockDim.x + threadIdx.x]`, `x[row * width + col]` with `col` from\n"
    "`threadIdx.x`, grid-stride loops (`for (i = idx; i < n; i += blockDim.x * gridDim.x)`), warp- or\n"
    "block-per-row loops (`for (i = threadIdx.x; i < C; i += blockDim.x)`), small constant strides\n"
    "below 32 bytes (`x[2 * tid]`, `x[3 * tid + c]`: neighbouring threads still share sectors),\n"
    "runtime strides named as a channel or component count (`img[p * channels + c]`), strides that\n"
    "the kernel compares with 1 (a unit-stride fast path), `__shared__` and local arrays, accesses\n"
    "done by one thread (`if (threadIdx.x == 0)`), and index expressions it cannot analyse (division,\n"
    "modulo, bit operations, indirect indices, function calls): those are left alone.\n"
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
    "severity rises with the kernel's share of the run, to an error only from 4x.\n";

/* the coefficient of threadIdx.x in an integer expression */
typedef enum { LIN_ZERO, LIN_CONST, LIN_RUNTIME, LIN_UNKNOWN } LinKind;

enum { MAX_FACTORS = 4 };

typedef struct {
    LinKind kind;
    long long c; /* LIN_CONST: the coefficient; LIN_RUNTIME: its constant part */
    const CuNode *factors[MAX_FACTORS];   /* LIN_RUNTIME: the runtime multipliers */
    int factor_count;
    const CuNode *carrier; /* where threadIdx.x enters: a variable use or threadIdx.x itself */
} Lin;

typedef struct {
    const CuNode *decl;
    Lin lin;
    bool pointer;
    bool global; /* pointer: rooted in a kernel parameter */
    bool busy;   /* being computed (a cycle through assignments) */
    bool done;
} VarEntry;

typedef struct {
    RuleContext *ctx;
    const CudaSource *src;
    const CuNode *fn;
    VarEntry *vars;
    size_t var_count, var_cap;
    int depth;
    /* reported (base declaration, statement, index text) triples in this kernel */
    const CuNode **seen_base, **seen_stmt;
    char **seen_index;
    size_t seen_count, seen_cap;
} Analysis;

static const Lin lin_zero = {LIN_ZERO, 0, {0}, 0, NULL};
static const Lin lin_unknown = {LIN_UNKNOWN, 0, {0}, 0, NULL};

static Lin lin_of(Analysis *a, const CuNode *n);

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

static bool is_var_ref(const CuNode *n, const CuNode *decl) {
    n = cu_strip((CuNode *)n);
    return n && n->kind == CXCursor_DeclRefExpr && n->ref == decl;
}

/* a reference to a non-type template parameter somewhere in n: its value is unknown here */
static bool mentions_template_param(const CuNode *n) {
    if (!n) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_NonTypeTemplateParameter) return true;
    if (n->kind == CXCursor_DeclRefExpr && !n->ref) {
        CXCursor r = clang_getCursorReferenced(n->cursor);
        if (clang_getCursorKind(r) == CXCursor_NonTypeTemplateParameter) return true;
    }
    for (uint32_t i = 0; i < n->child_count; i++)
        if (mentions_template_param(n->children[i])) return true;
    return false;
}

static Lin lin_scale(Lin t, long long k) {
    if (k == 0) return lin_zero;
    if (t.kind == LIN_CONST || t.kind == LIN_RUNTIME) t.c *= k;
    return t;
}

static Lin lin_add(Lin x, Lin y, bool subtract) {
    if (x.kind == LIN_UNKNOWN || y.kind == LIN_UNKNOWN) return lin_unknown;
    if (y.kind == LIN_ZERO) return x;
    if (subtract) y = lin_scale(y, -1);
    if (x.kind == LIN_ZERO) return y;
    if (x.kind == LIN_CONST && y.kind == LIN_CONST) {
        x.c += y.c;
        if (x.c == 0) return lin_zero;
        return x;
    }
    return lin_unknown; /* a runtime coefficient plus something else: do not guess */
}

static Lin lin_mul(Analysis *a, const CuNode *l, const CuNode *r) {
    Lin x = lin_of(a, l), y = lin_of(a, r);
    if (x.kind == LIN_UNKNOWN || y.kind == LIN_UNKNOWN) return lin_unknown;
    if (x.kind == LIN_ZERO && y.kind == LIN_ZERO) return lin_zero;
    if (x.kind != LIN_ZERO && y.kind != LIN_ZERO) return lin_unknown;
    Lin t = x.kind != LIN_ZERO ? x : y;
    const CuNode *f = x.kind != LIN_ZERO ? r : l;
    long long k;
    if (cu_int_value(f, &k)) return lin_scale(t, k);
    if (mentions_template_param(f)) return lin_unknown;
    /* a runtime coefficient: c (kept as its constant part) times the factors */
    if (t.factor_count < MAX_FACTORS) t.factors[t.factor_count++] = f;
    t.kind = LIN_RUNTIME;
    return t;
}

static bool call_is_pure_math(const CuNode *call) {
    static const char *const names[] = {"min", "max", "umin", "umax", "llmin", "llmax", "abs", "__mul24",
                                        "__umul24", NULL};
    const char *callee = cu_callee(call);
    for (int i = 0; names[i]; i++)
        if (strcmp(callee, names[i]) == 0) return true;
    return false;
}

static VarEntry *var_entry(Analysis *a, const CuNode *decl) {
    for (size_t i = 0; i < a->var_count; i++)
        if (a->vars[i].decl == decl) return &a->vars[i];
    if (a->var_count == a->var_cap) {
        size_t cap = a->var_cap ? a->var_cap * 2 : 16;
        VarEntry *grown = realloc(a->vars, cap * sizeof *grown);
        if (!grown) return NULL;
        a->vars = grown;
        a->var_cap = cap;
    }
    VarEntry *e = &a->vars[a->var_count++];
    memset(e, 0, sizeof *e);
    e->decl = decl;
    return e;
}

/* combines the definitions of a variable: they must agree */
typedef struct {
    bool any;
    Lin lin;
    bool global;
} Defs;

static void defs_add(Defs *d, Lin l, bool global) {
    if (!d->any) {
        d->any = true;
        d->lin = l;
        d->global = global;
        return;
    }
    d->global = d->global && global;
    if (d->lin.kind == LIN_UNKNOWN) return;
    if (l.kind != d->lin.kind || (l.kind == LIN_CONST && l.c != d->lin.c)) d->lin = lin_unknown;
}

static Lin ptr_lin(Analysis *a, const CuNode *n, long long unit, bool *global);

static const CuNode *var_init(const CuNode *decl) {
    for (uint32_t i = decl->child_count; i-- > 0;) {
        const CuNode *c = decl->children[i];
        if (c->kind == CXCursor_TypeRef || c->kind == CXCursor_TemplateRef || c->kind == CXCursor_NamespaceRef ||
            c->kind == CXCursor_UnexposedAttr || clang_isAttribute(c->kind))
            continue;
        return c;
    }
    return NULL;
}

typedef struct {
    Analysis *a;
    const CuNode *decl;
    bool pointer;
    long long unit;
    Defs *defs;
    bool scaled;
} DefWalk;

static bool visit_def(CuNode *n, void *data) {
    DefWalk *w = data;
    if (n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Assign && n->child_count == 2 &&
        is_var_ref(n->children[0], w->decl)) {
        if (w->pointer) {
            bool g = false;
            Lin l = ptr_lin(w->a, n->children[1], w->unit, &g);
            defs_add(w->defs, l, g);
        } else {
            defs_add(w->defs, lin_of(w->a, n->children[1]), true);
        }
    } else if (n->kind == CXCursor_CompoundAssignOperator && n->child_count == 2 &&
               is_var_ref(n->children[0], w->decl)) {
        /* `i += step` keeps the coefficient when step is the same for every thread */
        Lin r = lin_of(w->a, n->children[1]);
        if (r.kind != LIN_ZERO)
            defs_add(w->defs, lin_unknown, false);
        else if (n->op != CXBinaryOperator_AddAssign && n->op != CXBinaryOperator_SubAssign)
            w->scaled = true;
    } else if (n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_AddrOf && n->child_count == 1 &&
               is_var_ref(n->children[0], w->decl)) {
        defs_add(w->defs, lin_unknown, false);
    }
    return true;
}

/* walks the kernel for the assignments to a local variable */
static void collect_defs(Analysis *a, const CuNode *decl, bool pointer, long long unit, Defs *d) {
    DefWalk w = {a, decl, pointer, unit, d, false};
    cu_walk((CuNode *)a->fn, visit_def, &w);
    if (w.scaled && d->any && d->lin.kind != LIN_ZERO) d->lin = lin_unknown;
}

static Lin var_lin(Analysis *a, const CuNode *decl) {
    VarEntry *e = var_entry(a, decl);
    if (!e || e->busy || e->pointer || a->depth > 10) return lin_unknown;
    if (e->done) return e->lin;
    size_t index = (size_t)(e - a->vars);
    e->busy = true;
    a->depth++;
    Defs d = {0};
    const CuNode *init = var_init(decl);
    if (init) defs_add(&d, lin_of(a, init), true);
    collect_defs(a, decl, false, 0, &d);
    a->depth--;
    e = &a->vars[index]; /* the table may have moved */
    e->busy = false;
    e->done = true;
    e->lin = d.any ? d.lin : lin_unknown;
    return e->lin;
}

static Lin lin_of(Analysis *a, const CuNode *n) {
    n = cu_strip((CuNode *)n);
    if (!n) return lin_unknown;
    switch (n->kind) {
    case CXCursor_IntegerLiteral:
    case CXCursor_CharacterLiteral:
    case CXCursor_CXXBoolLiteralExpr:
    case CXCursor_UnaryExpr: /* sizeof, alignof */
        return lin_zero;
    case CXCursor_MemberRefExpr: {
        if (cu_is_builtin_member(n, "threadIdx", 'x')) {
            Lin l = {LIN_CONST, 1, {0}, 0, n};
            return l;
        }
        if (cu_is_builtin_member(n, "threadIdx", 0) || cu_is_builtin_member(n, "blockIdx", 0) ||
            cu_is_builtin_member(n, "blockDim", 0) || cu_is_builtin_member(n, "gridDim", 0))
            return lin_zero;
        if (n->child_count == 1) {
            const CuNode *base = cu_strip(n->children[0]);
            if (base && base->kind == CXCursor_DeclRefExpr && base->ref && base->ref->kind == CXCursor_ParmDecl)
                return lin_zero; /* a field of a by-value kernel argument */
        }
        return lin_unknown;
    }
    case CXCursor_DeclRefExpr: {
        const CuNode *d = n->ref;
        if (!d) {
            if (n->ref_name && (strcmp(n->ref_name, "warpSize") == 0)) return lin_zero;
            CXCursor r = clang_getCursorReferenced(n->cursor);
            enum CXCursorKind k = clang_getCursorKind(r);
            if (k == CXCursor_EnumConstantDecl || k == CXCursor_NonTypeTemplateParameter) return lin_zero;
            if (k == CXCursor_VarDecl) {
                /* a global constant or variable from a header: the same for every thread */
                CXType t = clang_getCursorType(r);
                return clang_isConstQualifiedType(t) ? lin_zero : lin_unknown;
            }
            return lin_unknown;
        }
        if (d->kind == CXCursor_ParmDecl || d->kind == CXCursor_EnumConstantDecl ||
            d->kind == CXCursor_NonTypeTemplateParameter)
            return lin_zero;
        if (d->kind == CXCursor_VarDecl) {
            if (cu_function_of(d) != a->fn) {
                /* file-scope: a __constant__ or const value is uniform */
                if (d->attrs & CU_ATTR_CONSTANT) return lin_zero;
                CXType t = clang_getCursorType(d->cursor);
                return clang_isConstQualifiedType(t) ? lin_zero : lin_unknown;
            }
            if (is_pointer_type(d)) return lin_unknown;
            Lin l = var_lin(a, d);
            /* a variable that is the thread index (coefficient 1) carries it; one that
             * already holds a stride keeps the carrier found in its definition */
            if (l.kind == LIN_CONST && (l.c == 1 || l.c == -1)) l.carrier = n;
            else if ((l.kind == LIN_CONST || l.kind == LIN_RUNTIME) && !l.carrier) l.carrier = n;
            return l;
        }
        return lin_unknown;
    }
    case CXCursor_BinaryOperator: {
        if (n->child_count != 2) return lin_unknown;
        const CuNode *l = n->children[0], *r = n->children[1];
        switch (n->op) {
        case CXBinaryOperator_Add:
            if (is_pointer_type(n)) return lin_unknown;
            return lin_add(lin_of(a, l), lin_of(a, r), false);
        case CXBinaryOperator_Sub:
            if (is_pointer_type(l)) return lin_unknown;
            return lin_add(lin_of(a, l), lin_of(a, r), true);
        case CXBinaryOperator_Mul:
            return lin_mul(a, l, r);
        case CXBinaryOperator_Shl: {
            Lin x = lin_of(a, l);
            long long k;
            if (x.kind == LIN_UNKNOWN) return x;
            if (cu_int_value(r, &k) && k >= 0 && k < 31) return lin_scale(x, 1LL << k);
            return x.kind == LIN_ZERO && lin_of(a, r).kind == LIN_ZERO ? lin_zero : lin_unknown;
        }
        case CXBinaryOperator_Comma:
            return lin_of(a, r);
        default: {
            Lin x = lin_of(a, l), y = lin_of(a, r);
            return x.kind == LIN_ZERO && y.kind == LIN_ZERO ? lin_zero : lin_unknown;
        }
        }
    }
    case CXCursor_UnaryOperator: {
        if (n->child_count != 1) return lin_unknown;
        Lin x = lin_of(a, n->children[0]);
        if (n->op == CXUnaryOperator_Minus) return lin_scale(x, -1);
        if (n->op == CXUnaryOperator_Plus) return x;
        if (n->op == CXUnaryOperator_Deref) {
            bool g = false;
            Lin p = ptr_lin(a, n->children[0], 0, &g);
            return p.kind == LIN_ZERO ? lin_zero : lin_unknown;
        }
        return x.kind == LIN_ZERO && n->op != CXUnaryOperator_PostInc && n->op != CXUnaryOperator_PostDec &&
                       n->op != CXUnaryOperator_PreInc && n->op != CXUnaryOperator_PreDec
                   ? lin_zero
                   : lin_unknown;
    }
    case CXCursor_ConditionalOperator: {
        if (n->child_count != 3) return lin_unknown;
        Lin c = lin_of(a, n->children[0]), x = lin_of(a, n->children[1]), y = lin_of(a, n->children[2]);
        if (c.kind != LIN_ZERO) return x.kind == LIN_ZERO && y.kind == LIN_ZERO ? lin_zero : lin_unknown;
        if (x.kind == LIN_ZERO && y.kind == LIN_ZERO) return lin_zero;
        return lin_unknown;
    }
    case CXCursor_ArraySubscriptExpr: {
        if (n->child_count != 2) return lin_unknown;
        /* a load: the same for every thread when its address is */
        Lin x = lin_of(a, n->children[1]);
        if (x.kind != LIN_ZERO) return lin_unknown;
        const CuNode *base = cu_strip(n->children[0]);
        if (base && base->kind == CXCursor_DeclRefExpr && base->ref && base->ref->kind == CXCursor_VarDecl &&
            !is_pointer_type(base))
            return lin_zero; /* an array at a uniform index */
        bool g = false;
        return ptr_lin(a, n->children[0], 0, &g).kind == LIN_ZERO ? lin_zero : lin_unknown;
    }
    case CXCursor_CallExpr: {
        if (!call_is_pure_math(n)) return lin_unknown;
        uint32_t count;
        CuNode **args = cu_call_args(n, &count);
        for (uint32_t i = 0; i < count; i++)
            if (lin_of(a, args[i]).kind != LIN_ZERO) return lin_unknown;
        return lin_zero;
    }
    default:
        return lin_unknown;
    }
}

/* The threadIdx.x coefficient of a pointer expression, in elements of `unit`
 * bytes (0: any unit, only a zero coefficient is wanted); *global when it is
 * rooted in a pointer parameter of the kernel. */
static Lin ptr_lin(Analysis *a, const CuNode *n, long long unit, bool *global) {
    *global = false;
    CuNode *s = cu_strip((CuNode *)n);
    if (!s) return lin_unknown;
    if (s->kind == CXCursor_CXXReinterpretCastExpr || s->kind == CXCursor_CXXConstCastExpr ||
        s->kind == CXCursor_CStyleCastExpr) {
        /* a cast between pointer types: the unit changes */
        const CuNode *inner = s->child_count ? s->children[s->child_count - 1] : NULL;
        if (!inner || !is_pointer_type(inner)) return lin_unknown;
        long long inner_unit = pointee_size(inner);
        Lin l = ptr_lin(a, inner, inner_unit, global);
        if (l.kind == LIN_ZERO || l.kind == LIN_UNKNOWN) return l;
        if (unit > 0 && inner_unit == unit) return l;
        return lin_unknown;
    }
    if (!is_pointer_type(s)) return lin_unknown;
    long long my_unit = pointee_size(s);
    if (unit > 0 && my_unit != unit) {
        /* only a zero coefficient survives a change of unit */
        Lin l = ptr_lin(a, s, my_unit, global);
        return l.kind == LIN_ZERO ? l : lin_unknown;
    }
    switch (s->kind) {
    case CXCursor_DeclRefExpr: {
        const CuNode *d = s->ref;
        if (!d) return lin_unknown;
        if (d->kind == CXCursor_ParmDecl) {
            *global = cu_function_of(d) == a->fn;
            return lin_zero;
        }
        if (d->kind != CXCursor_VarDecl || cu_function_of(d) != a->fn || (d->attrs & CU_ATTR_SHARED))
            return lin_unknown;
        VarEntry *e = var_entry(a, d);
        if (!e || e->busy || a->depth > 10) return lin_unknown;
        size_t index = (size_t)(e - a->vars);
        if (e->done) {
            if (!e->pointer) return lin_unknown;
            *global = e->global;
            return e->lin;
        }
        e->busy = true;
        a->depth++;
        Defs defs = {0};
        const CuNode *init = var_init(d);
        if (init) {
            bool g = false;
            Lin l = ptr_lin(a, init, my_unit, &g);
            defs_add(&defs, l, g);
        }
        collect_defs(a, d, true, my_unit, &defs);
        a->depth--;
        e = &a->vars[index];
        e->busy = false;
        e->done = true;
        e->pointer = true;
        e->global = defs.any && defs.global;
        e->lin = defs.any ? defs.lin : lin_unknown;
        *global = e->global;
        return e->lin;
    }
    case CXCursor_BinaryOperator: {
        if (s->child_count != 2 || (s->op != CXBinaryOperator_Add && s->op != CXBinaryOperator_Sub))
            return lin_unknown;
        const CuNode *l = s->children[0], *r = s->children[1];
        bool lp = is_pointer_type(cu_strip((CuNode *)l));
        if (s->op == CXBinaryOperator_Sub && !lp) return lin_unknown;
        const CuNode *p = lp ? l : r, *i = lp ? r : l;
        Lin pl = ptr_lin(a, p, my_unit, global);
        return lin_add(pl, lin_of(a, i), s->op == CXBinaryOperator_Sub);
    }
    case CXCursor_UnaryOperator: {
        if (s->op != CXUnaryOperator_AddrOf || s->child_count != 1) return lin_unknown;
        const CuNode *sub = cu_strip(s->children[0]);
        if (!sub || sub->kind != CXCursor_ArraySubscriptExpr || sub->child_count != 2) return lin_unknown;
        if (!is_pointer_type(cu_strip(sub->children[0]))) return lin_unknown;
        Lin pl = ptr_lin(a, sub->children[0], my_unit, global);
        return lin_add(pl, lin_of(a, sub->children[1]), false);
    }
    default:
        return lin_unknown;
    }
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
static void stride_text(const CudaSource *src, const Lin *l, long long elem, char *mult, char *dist, size_t size) {
    mult[0] = dist[0] = '\0';
    if (l->kind == LIN_CONST) {
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

typedef struct {
    const CuNode *decl;
    bool found;
} OneCheck;

static bool visit_one_check(CuNode *n, void *data) {
    OneCheck *c = data;
    if (c->found) return false;
    if (n->kind == CXCursor_BinaryOperator && (n->op == CXBinaryOperator_EQ || n->op == CXBinaryOperator_NE) &&
        n->child_count == 2) {
        long long v;
        if ((is_var_ref(n->children[0], c->decl) && cu_int_value(n->children[1], &v) && v == 1) ||
            (is_var_ref(n->children[1], c->decl) && cu_int_value(n->children[0], &v) && v == 1))
            c->found = true;
    }
    return !c->found;
}

/* the runtime stride is compared with 1 somewhere in the kernel: a unit-stride fast path exists */
static bool stride_checked_against_one(const Analysis *a, const Lin *l) {
    for (int i = 0; i < l->factor_count; i++) {
        const CuNode *f = cu_strip((CuNode *)l->factors[i]);
        if (!f || f->kind != CXCursor_DeclRefExpr || !f->ref) continue;
        OneCheck c = {f->ref, false};
        cu_walk((CuNode *)a->fn, visit_one_check, &c);
        if (c.found) return true;
    }
    return false;
}

/* a runtime stride named as a (small) channel or component count */
static bool stride_is_channel_count(const CudaSource *src, const Lin *l) {
    static const char *const words[] = {"chan", "comp", "bpp", "pixel_size", "pixelsize", NULL};
    for (int i = 0; i < l->factor_count; i++) {
        char text[64];
        node_text(src, l->factors[i], text, sizeof text);
        for (char *p = text; *p; p++) *p = (char)tolower((unsigned char)*p);
        for (int w = 0; words[w]; w++)
            if (strstr(text, words[w])) return true;
    }
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
    Lin x = lin_of(a, t->children[0]), y = lin_of(a, t->children[1]);
    return (x.kind == LIN_CONST && y.kind == LIN_ZERO) || (y.kind == LIN_CONST && x.kind == LIN_ZERO);
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
        if (n->kind == CXCursor_UnaryOperator && n->child_count == 1 && is_var_ref(n->children[0], var) &&
            (n->op == CXUnaryOperator_PreInc || n->op == CXUnaryOperator_PostInc))
            return true;
        long long v;
        if (n->kind == CXCursor_CompoundAssignOperator && n->op == CXBinaryOperator_AddAssign && n->child_count == 2 &&
            is_var_ref(n->children[0], var) && cu_int_value(n->children[1], &v) && v == 1)
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
            if (var_lin(a, var).kind == LIN_ZERO) return var;
        }
    }
    return NULL;
}

typedef struct {
    const CudaSource *src;
    const CuNode *found;
} YWalk;

static bool visit_y(CuNode *n, void *data) {
    YWalk *w = data;
    if (w->found) return false;
    if (cu_is_builtin_member(n, "threadIdx", 'y') ||
        (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl &&
         cu_depends_on_thread(w->src, n, 'y')))
        w->found = n;
    return !w->found;
}

/* the first use of threadIdx.y (or a variable derived from it) in the index */
static const CuNode *thread_y_carrier(const CudaSource *src, const CuNode *index) {
    YWalk w = {src, NULL};
    cu_walk((CuNode *)index, visit_y, &w);
    return w.found;
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
    if (a->seen_count == a->seen_cap) {
        size_t cap = a->seen_cap ? a->seen_cap * 2 : 16;
        const CuNode **b = realloc(a->seen_base, cap * sizeof *b);
        if (b) a->seen_base = b;
        const CuNode **st = b ? realloc(a->seen_stmt, cap * sizeof *st) : NULL;
        if (st) a->seen_stmt = st;
        char **t = st ? realloc(a->seen_index, cap * sizeof *t) : NULL;
        if (t) a->seen_index = t;
        if (!b || !st || !t) {
            free(text);
            return false;
        }
        a->seen_cap = cap;
    }
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
static const CuNode *parent_of(const CuNode *n) {
    const CuNode *p = n->parent;
    while (p && (p->kind == CXCursor_UnexposedExpr || p->kind == CXCursor_ParenExpr) && p->child_count == 1)
        p = p->parent;
    return p;
}

/* access: the node reported; base: the pointer; index: the subscript (NULL for *p and __ldg(p)) */
static void check_access(Analysis *a, const CuNode *access, const CuNode *base, const CuNode *index) {
    long long elem = pointee_size(cu_strip((CuNode *)base)); /* -1 for a dependent type in a template */
    bool global = false;
    Lin pl = ptr_lin(a, base, elem, &global);
    if (!global) return;
    Lin il = index ? lin_of(a, index) : lin_zero;
    if (pl.kind == LIN_UNKNOWN || il.kind == LIN_UNKNOWN) return;
    /* a runtime part of each: the sum is not analysed */
    if (pl.kind != LIN_ZERO && il.kind != LIN_ZERO) return;
    Lin l = pl.kind != LIN_ZERO ? pl : il;
    if (l.kind == LIN_ZERO) return;
    if (l.kind == LIN_CONST) {
        long long c = l.c < 0 ? -l.c : l.c;
        if (c <= 1 || (elem > 0 ? c * elem : c) < 32) return;
    }
    if (l.kind == LIN_RUNTIME) {
        if (l.factor_count == 0 || stride_checked_against_one(a, &l) || stride_is_channel_count(a->src, &l)) return;
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
    const CuNode *p = parent_of(access);
    bool write = p &&
                 ((p->kind == CXCursor_BinaryOperator && p->op == CXBinaryOperator_Assign) ||
                  p->kind == CXCursor_CompoundAssignOperator) &&
                 p->child_count == 2 && cu_strip(p->children[0]) == access;
    if (access->kind == CXCursor_CallExpr) write = strncmp(cu_callee(access), "__st", 4) == 0;
    const char *verb = write ? "write" : "read";

    const CuNode *y = index ? thread_y_carrier(a->src, index) : NULL;
    const CuNode *loop_var = index && !y ? row_walk_variable(a, access, index) : NULL;
    if (loop_var) {
        rule_report_cu(a->ctx, access,
                       "each thread walks its own row of `%s` in this loop: %s is multiplied by %s, so on every "
                       "iteration neighbouring threads %s addresses %s apart (a memory transaction per thread). "
                       "Let the threads of a warp or block share a row and stride over `%s` instead "
                       "(`%s = threadIdx.x; ...; %s += blockDim.x`), or transpose the data",
                       pointer, carrier, mult, verb, dist, loop_var->name, loop_var->name, loop_var->name);
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
        const CuNode *p = parent_of(n);
        if (p && p->kind == CXCursor_UnaryOperator && p->op == CXUnaryOperator_AddrOf) {
            /* &x[i]: an access only when loaded through __ldg and friends */
            const CuNode *call = parent_of(p);
            if (!call || call->kind != CXCursor_CallExpr || !is_ldg_call(call)) return true;
        }
        check_access(a, n, n->children[0], n->children[1]);
    } else if (n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_Deref && n->child_count == 1) {
        const CuNode *p = parent_of(n);
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
    Analysis a = {.ctx = ctx, .src = ctx->cuda, .fn = n};
    for (uint32_t i = 0; i < n->child_count; i++)
        if (n->children[i]->kind == CXCursor_CompoundStmt) cu_walk(n->children[i], visit, &a);
    free(a.vars);
    for (size_t i = 0; i < a.seen_count; i++) free(a.seen_index[i]);
    free(a.seen_index);
    free(a.seen_base);
    free(a.seen_stmt);
    return false;
}

static void check(RuleContext *ctx) {
    if (ctx->cuda && ctx->cuda->root) cu_walk(ctx->cuda->root, visit_kernels, ctx);
}

const Rule rule_cu004_uncoalesced_access = {
    .code = "CU004",
    .name = "uncoalesced-access",
    .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_CUDA,
    .summary = "global-memory access where neighbouring threadIdx.x values land far apart",
    .documentation = documentation,
    .check = check,
    .measure = MEASURE_GLOBAL_ACCESS,
};
