/* CU005 misaligned-vector-access: arrays of 12-byte structs (float3-like)
 * accessed per thread in a kernel, and vector casts (float4, int4, double2,
 * float2, ...) of a kernel pointer at an offset that is not a multiple of the
 * vector's alignment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_query.h"
#include "analysis/base/growable.h"
#include "rules/rule.h"

static const char documentation[] =
    "## What it does\n"
    "Flags two ways of defeating vectorized (16-byte) global-memory accesses in kernels:\n"
    "\n"
    "1. An array of 12-byte structs (three 4-byte members: a user-defined `struct { float x, y, z; }`,\n"
    "   or CUDA's `float3`, `int3`, `uint3`) read or written per thread (`p[i].x`, `p[i] = v` with `i`\n"
    "   from the thread index), through a kernel's pointer parameter.\n"
    "2. A cast to a vector pointer (`reinterpret_cast<float4 *>(x + k)`, also `int4`, `uint4`,\n"
    "   `double2`, `float2`, `__half2`, `uchar4`, ... any vector struct, or a scalar of 8 bytes or more;\n"
    "   C-style casts and `&x[k]` too) where `x` is a kernel's pointer parameter and the offset `k` is a\n"
    "   constant, or an expression such as `4 * i + 1`, that puts the address off the type's alignment.\n"
    "\n"
    "## Why is this slow?\n"
    "A 12-byte element has 4-byte alignment, so the compiler loads it with three 4-byte instructions\n"
    "(`ld.global.f32` x3) whose addresses stride by 12 bytes across the warp: three times the load/store\n"
    "instructions and three times the ideal L1 sectors per element (CUPTI's per-line metrics show it\n"
    "with `advise profile --source-metrics`). L1 and L2 absorb much of the repeated traffic, so the\n"
    "cost is in instructions and L1 bandwidth more than in DRAM bytes; the finding is therefore info.\n"
    "\n"
    "A vector access must be aligned to its size. `reinterpret_cast<float4 *>(x + 2)` on a 16-byte\n"
    "aligned `x` (every `cudaMalloc` pointer is 256-byte aligned) is 8 bytes off: the load faults\n"
    "with `cudaErrorMisalignedAddress` (\"misaligned address\") and the kernel is aborted. It is a bug\n"
    "before it is a performance problem (warning).\n"
    "\n"
    "Not flagged: structs already aligned (`__align__(16)`, `alignas(16)`), 16-byte structs\n"
    "(`float4`), 12-byte structs accessed by one thread or outside kernels, `__shared__` and local\n"
    "arrays, `reinterpret_cast<float4 *>(x)` with `x` a kernel parameter, offsets that are multiples\n"
    "of the vector's element count (`x + 4`, `x + 4 * i`, `&x[8]`), offsets whose alignment is\n"
    "unknown (`x + offset` with `offset` a parameter), pointers that are not kernel parameters, and\n"
    "host code.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "struct Particle { float x, y, z; };\n"
    "\n"
    "__global__ void advance(Particle *pos, const Particle *vel, float dt, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) {\n"
    "        pos[i].x += vel[i].x * dt;  // three 4-byte loads per element\n"
    "        pos[i].y += vel[i].y * dt;\n"
    "        pos[i].z += vel[i].z * dt;\n"
    "    }\n"
    "}\n"
    "\n"
    "__global__ void copy_tail(const float *src, float *dst, int n4) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    const float4 *s = reinterpret_cast<const float4 *>(src + 1);  // 4 bytes off: misaligned\n"
    "    if (i < n4) reinterpret_cast<float4 *>(dst)[i] = s[i];\n"
    "}\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "// a structure of arrays: consecutive threads read consecutive floats, no byte wasted\n"
    "struct Particles { float *x, *y, *z; };\n"
    "```\n"
    "Padding the struct (`struct __align__(16) Particle`, or float4 ignoring w) gives one 16-byte\n"
    "load per element but moves a third more bytes in every kernel and copy that touches the\n"
    "array. On an H200 it made the `elementwise_chain` sample slower (its `radius` kernel 5 -> 6 us,\n"
    "the particles' upload 1.27 -> 1.67 ms): pad only where the kernel is bound by instructions,\n"
    "not memory, and measure. For an offset that is not a multiple of 4 floats, handle the first\n"
    "elements with scalar accesses until the pointer is 16-byte aligned, then use vector accesses.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix. A structure of arrays rewrites every use of the array, and padding changes\n"
    "`sizeof` and the layout every copy, file and message relies on, and was measured to slow down\n"
    "memory-bound code. Earlier versions of advise offered `__align__(16)` as an unsafe fix; the H200\n"
    "evaluation (samples/RESULTS.md) showed it made the sample slower, so it was withdrawn.\n\n"
    "## With a profile\n"
    "With per-line metrics (`advise profile --source-metrics`, kernels built with `-lineinfo`) the\n"
    "finding shows the global-memory sectors its line moved against the ideal (three 4-byte\n"
    "accesses at a 12-byte stride move 3x). At 1.25x or less the line's accesses were as good as\n"
    "they get in the measured launch and the finding becomes a hint (a measured misaligned vector\n"
    "access did not fault there: other offsets may still); from 2x (and 10% of the kernel's\n"
    "sectors) its severity rises with the kernel's share of the run, to an error only from 4x.\n";

/* ---- 12-byte structs ---- */

typedef struct {
    int fields;
    bool ok;
} FieldCheck;

static bool is_four_byte_scalar(CXType t) {
    t = clang_getCanonicalType(t);
    switch (t.kind) {
    case CXType_Float:
    case CXType_Int:
    case CXType_UInt:
    case CXType_Long:
    case CXType_ULong:
        return clang_Type_getSizeOf(t) == 4;
    default:
        return false;
    }
}

static enum CXVisitorResult visit_field(CXCursor field, CXClientData data) {
    FieldCheck *fc = data;
    CXType t = clang_getCanonicalType(clang_getCursorType(field));
    if (t.kind == CXType_ConstantArray) {
        if (!is_four_byte_scalar(clang_getArrayElementType(t))) fc->ok = false;
        fc->fields += (int)clang_getArraySize(t);
    } else if (is_four_byte_scalar(t)) {
        fc->fields++;
    } else {
        fc->ok = false;
    }
    return fc->ok ? CXVisit_Continue : CXVisit_Break;
}

/* a 12-byte, 4-byte-aligned record of three 4-byte scalars */
static bool is_twelve_byte_record(CXType t) {
    t = clang_getCanonicalType(t);
    if (t.kind != CXType_Record) return false;
    if (clang_Type_getSizeOf(t) != 12 || clang_Type_getAlignOf(t) != 4) return false;
    FieldCheck fc = {0, true};
    clang_Type_visitFields(t, visit_field, &fc);
    return fc.ok && fc.fields == 3;
}

typedef struct {
    RuleContext *ctx;
    const CudaSource *src;
    const CuNode *fn;
    /* (kernel, base declaration) pairs already reported */
    const CuNode **seen;
    size_t seen_count, seen_cap;
} Scan;

static bool already_seen(Scan *s, const CuNode *base) {
    for (size_t i = 0; i < s->seen_count; i++)
        if (s->seen[i] == base) return true;
    if (!array_reserve(&s->seen, s->seen_count, &s->seen_cap, sizeof *s->seen, 8)) return false;
    s->seen[s->seen_count++] = base;
    return false;
}

/* the kernel parameter a pointer expression comes from (`p`, `p + k`, `&p[k]`,
 * or a local pointer initialised so), or NULL */
static const CuNode *param_root(const CuNode *fn, const CuNode *n, int depth) {
    n = cu_strip((CuNode *)n);
    if (!n || depth > 4) return NULL;
    if (n->kind == CXCursor_DeclRefExpr && n->ref) {
        const CuNode *d = n->ref;
        if (d->kind == CXCursor_ParmDecl) return cu_function_of(d) == fn ? d : NULL;
        if (d->kind == CXCursor_VarDecl && !(d->attrs & CU_ATTR_SHARED) && cu_function_of(d) == fn) {
            for (uint32_t i = d->child_count; i-- > 0;) {
                const CuNode *c = d->children[i];
                if (c->kind == CXCursor_TypeRef || c->kind == CXCursor_TemplateRef || clang_isAttribute(c->kind))
                    continue;
                return param_root(fn, c, depth + 1);
            }
        }
        return NULL;
    }
    if (n->kind == CXCursor_BinaryOperator && n->child_count == 2 &&
        (n->op == CXBinaryOperator_Add || n->op == CXBinaryOperator_Sub)) {
        CXType lt = clang_getCanonicalType(clang_getCursorType(cu_strip(n->children[0])->cursor));
        return param_root(fn, lt.kind == CXType_Pointer ? n->children[0] : n->children[1], depth + 1);
    }
    if (n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_AddrOf && n->child_count == 1) {
        const CuNode *sub = cu_strip(n->children[0]);
        if (sub && sub->kind == CXCursor_ArraySubscriptExpr && sub->child_count == 2)
            return param_root(fn, sub->children[0], depth + 1);
    }
    return NULL;
}

static void check_struct_access(Scan *s, const CuNode *access) {
    CXType t = clang_getCanonicalType(clang_getCursorType(access->cursor));
    if (!is_twelve_byte_record(t)) return;
    const CuNode *base = cu_strip(access->children[0]);
    CXType bt = clang_getCanonicalType(clang_getCursorType(base->cursor));
    if (bt.kind != CXType_Pointer) return;
    const CuNode *param = param_root(s->fn, base, 0);
    if (!param) return;
    if (!cu_depends_on_thread(s->src, access->children[1], 0)) return;
    /* `&p[i]`, `&p[i].x`: an address handed on (to an atomic, a helper), not a load */
    const CuNode *p = cu_plain_parent(access);
    while (p && p->kind == CXCursor_MemberRefExpr) p = cu_plain_parent(p);
    if (p && p->kind == CXCursor_UnaryOperator && p->op == CXUnaryOperator_AddrOf) return;
    const CuNode *root = base->kind == CXCursor_DeclRefExpr && base->ref ? base->ref : param;
    if (already_seen(s, root)) return;

    CXString spelled = clang_getTypeSpelling(clang_getUnqualifiedType(t));
    char type_name[96];
    snprintf(type_name, sizeof type_name, "%s", clang_getCString(spelled));
    clang_disposeString(spelled);
    char pointer[64];
    snprintf(pointer, sizeof pointer, "%.*s", (int)(cu_text_len(base) < 60 ? cu_text_len(base) : 60),
             cu_text(s->src, base));

    /* Advice only, at info: padding to 16 bytes (the obvious fix) trades a
     * third more bytes for one vector load, and on the H200 it made the
     * elementwise_chain sample slower (radius 5 -> 6 us, its upload 1.27 ->
     * 1.67 ms); a structure of arrays removes the waste without extra bytes,
     * but it is a rewrite of every use, so no fix is offered. */
    Finding *f = rule_report_cu(s->ctx, access,
                       "`%s` is an array of `%s`, a 12-byte struct of three 4-byte members, read or written per "
                       "thread: each member it touches is a separate 4-byte access with a 12-byte stride across the "
                       "warp (three times the ideal L1 sectors). A structure of arrays (separate x, y and z arrays) makes each "
                       "access coalesced without moving more bytes. Padding to 16 bytes (`__align__(16)`, float4) "
                       "gives one vector access per element but moves a third more bytes, which slows memory-bound "
                       "kernels and copies: measure before padding",
                       pointer, type_name);
    if (f) f->severity = SEVERITY_INFO;
}

/* ---- misaligned vector casts ---- */

/* an assignment, ++/-- or & of the variable decl */
static bool modifies(const CuNode *x, void *decl) {
    const CuNode *target = NULL;
    if (((x->kind == CXCursor_BinaryOperator && x->op == CXBinaryOperator_Assign) ||
         x->kind == CXCursor_CompoundAssignOperator) &&
        x->child_count == 2)
        target = cu_strip(x->children[0]);
    else if (x->kind == CXCursor_UnaryOperator && x->child_count == 1 &&
             (x->op == CXUnaryOperator_PreInc || x->op == CXUnaryOperator_PreDec || x->op == CXUnaryOperator_PostInc ||
              x->op == CXUnaryOperator_PostDec || x->op == CXUnaryOperator_AddrOf))
        target = cu_strip(x->children[0]);
    return target && target->kind == CXCursor_DeclRefExpr && target->ref == decl;
}

/* the residue of an integer expression modulo m (a power of two), when the code shows it */
static bool residue(const CuNode *fn, const CuNode *n, long long m, long long *out, int depth) {
    n = cu_strip((CuNode *)n);
    if (!n || depth > 8) return false;
    long long v;
    if (cu_int_value(n, &v)) {
        *out = ((v % m) + m) % m;
        return true;
    }
    if (n->kind == CXCursor_BinaryOperator && n->child_count == 2) {
        long long a, b;
        bool ha = residue(fn, n->children[0], m, &a, depth + 1);
        bool hb = residue(fn, n->children[1], m, &b, depth + 1);
        switch (n->op) {
        case CXBinaryOperator_Add:
            if (!ha || !hb) return false;
            *out = (a + b) % m;
            return true;
        case CXBinaryOperator_Sub:
            if (!ha || !hb) return false;
            *out = ((a - b) % m + m) % m;
            return true;
        case CXBinaryOperator_Mul:
            if ((ha && a == 0) || (hb && b == 0)) {
                *out = 0;
                return true;
            }
            if (!ha || !hb) return false;
            *out = (a * b) % m;
            return true;
        case CXBinaryOperator_Shl:
            if (!hb || !cu_int_value(n->children[1], &v) || v < 0 || v > 62) return false;
            if ((1LL << v) % m == 0) {
                *out = 0;
                return true;
            }
            if (!ha) return false;
            *out = (a << v) % m;
            return true;
        default:
            return false;
        }
    }
    if (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl && cu_function_of(n->ref) == fn) {
        /* a local initialised once and never assigned */
        const CuNode *d = n->ref;
        const CuNode *init = NULL;
        for (uint32_t i = d->child_count; i-- > 0;) {
            const CuNode *c = d->children[i];
            if (c->kind == CXCursor_TypeRef || clang_isAttribute(c->kind)) continue;
            init = c;
            break;
        }
        if (!init) return false;
        if (cu_find(fn, modifies, (void *)d)) return false;
        return residue(fn, init, m, out, depth + 1);
    }
    return false;
}

/* Splits a pointer expression into a kernel parameter plus offsets (`p + k`,
 * `k + p`, `p - k`, `&p[k]`, nested), with the offsets' sum modulo m. */
static bool pointer_offset(const CuNode *fn, const CuNode *n, long long m, const CuNode **root, long long *sum,
                           int *terms, int depth) {
    n = cu_strip((CuNode *)n);
    if (!n || depth > 8) return false;
    if (n->kind == CXCursor_DeclRefExpr) {
        const CuNode *d = n->ref;
        if (!d || d->kind != CXCursor_ParmDecl || cu_function_of(d) != fn) return false;
        CXType t = clang_getCanonicalType(clang_getCursorType(d->cursor));
        if (t.kind != CXType_Pointer) return false;
        *root = d;
        return true;
    }
    const CuNode *ptr = NULL, *offset = NULL;
    bool negative = false;
    if (n->kind == CXCursor_BinaryOperator && n->child_count == 2 &&
        (n->op == CXBinaryOperator_Add || n->op == CXBinaryOperator_Sub)) {
        CXType lt = clang_getCanonicalType(clang_getCursorType(cu_strip(n->children[0])->cursor));
        bool left_ptr = lt.kind == CXType_Pointer;
        if (n->op == CXBinaryOperator_Sub && !left_ptr) return false;
        ptr = n->children[left_ptr ? 0 : 1];
        offset = n->children[left_ptr ? 1 : 0];
        negative = n->op == CXBinaryOperator_Sub;
    } else if (n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_AddrOf && n->child_count == 1) {
        const CuNode *sub = cu_strip(n->children[0]);
        if (!sub || sub->kind != CXCursor_ArraySubscriptExpr || sub->child_count != 2) return false;
        ptr = sub->children[0];
        offset = sub->children[1];
    } else {
        return false;
    }
    /* the inner pointer must keep the element type: no casts in between */
    CXType outer = clang_getCanonicalType(clang_getCursorType(cu_strip((CuNode *)ptr)->cursor));
    if (outer.kind != CXType_Pointer) return false;
    long long r;
    if (!residue(fn, offset, m, &r, 0)) return false;
    if (!pointer_offset(fn, ptr, m, root, sum, terms, depth + 1)) return false;
    *sum = ((*sum + (negative ? m - r : r)) % m + m) % m;
    (*terms)++;
    return true;
}

/* the offset of a one-term pointer expression (`p + k`, `p - k`: -k is not
 * needed, only whether it is constant; `&p[k]`) */
static const CuNode *offset_expr(const CuNode *n) {
    if (n->kind == CXCursor_BinaryOperator && n->child_count == 2) {
        CXType lt = clang_getCanonicalType(clang_getCursorType(cu_strip(n->children[0])->cursor));
        return n->children[lt.kind == CXType_Pointer ? 1 : 0];
    }
    if (n->kind == CXCursor_UnaryOperator && n->child_count == 1) {
        const CuNode *sub = cu_strip(n->children[0]);
        if (sub && sub->child_count == 2) return sub->children[1];
    }
    return n;
}

static void check_cast(Scan *s, const CuNode *cast) {
    if (cast->child_count == 0) return;
    CXType to = clang_getCanonicalType(clang_getCursorType(cast->cursor));
    if (to.kind != CXType_Pointer) return;
    CXType vec = clang_getCanonicalType(clang_getPointeeType(to));
    long long align = clang_Type_getAlignOf(vec);
    if (align < 4 || (align & (align - 1)) != 0) return;
    /* vector types (structs: float4, int2, __half2, ...) and 8-byte-or-wider types */
    if (vec.kind != CXType_Record && align < 8) return;
    const CuNode *operand = cu_strip(cast->children[cast->child_count - 1]);
    if (!operand) return;
    CXType from = clang_getCanonicalType(clang_getCursorType(operand->cursor));
    if (from.kind != CXType_Pointer) return;
    long long elem = clang_Type_getSizeOf(clang_getPointeeType(from));
    long long elem_align = clang_Type_getAlignOf(clang_getPointeeType(from));
    if (elem <= 0 || elem_align <= 0 || elem_align >= align) return;

    /* the pointer: a parameter of the kernel (cudaMalloc memory is 256-byte aligned) plus offsets */
    const CuNode *root = NULL;
    long long r = 0;
    int terms = 0;
    long long g = align, e = elem; /* offsets matter modulo align / gcd(elem, align) elements */
    while (e) {
        long long t = g % e;
        g = e;
        e = t;
    }
    if (!pointer_offset(s->fn, operand, align / g, &root, &r, &terms, 0) || terms == 0) return;
    long long bytes = (r * elem) % align;
    if (bytes == 0) return;
    CXString vs = clang_getTypeSpelling(clang_getUnqualifiedType(vec));
    CXString es = clang_getTypeSpelling(clang_getUnqualifiedType(clang_getPointeeType(from)));
    char vec_name[64], elem_name[64], pname[64], where[256];
    snprintf(vec_name, sizeof vec_name, "%s", clang_getCString(vs));
    snprintf(elem_name, sizeof elem_name, "%s", clang_getCString(es));
    clang_disposeString(vs);
    clang_disposeString(es);
    snprintf(pname, sizeof pname, "%s", root->name);
    long long per = align / elem; /* elements per alignment unit */
    long long k;
    if (cu_int_value(offset_expr(operand), &k) && terms == 1)
        snprintf(where, sizeof where, "%lld bytes (%lld %s element%s)", k * elem, k, elem_name,
                 k == 1 || k == -1 ? "" : "s");
    else
        snprintf(where, sizeof where, "%lld bytes modulo %lld (`%.*s`)", bytes, align,
                 (int)(cu_text_len(operand) < 60 ? cu_text_len(operand) : 60), cu_text(s->src, operand));
    rule_report_cu(s->ctx, cast,
                   "misaligned %s access: the pointer is `%s` offset by %s, not a multiple of %lld bytes (%s's "
                   "alignment). `%s` is a kernel argument (cudaMalloc memory is 256-byte aligned), so this %s "
                   "load/store faults with a misaligned address error (cudaErrorMisalignedAddress). Handle the "
                   "first elements with scalar accesses until the offset is a multiple of %lld %s elements, or "
                   "keep scalar accesses",
                   vec_name, pname, where, align, vec_name, pname, vec_name, per, elem_name);
}

static bool visit(CuNode *n, void *data) {
    Scan *s = data;
    if (n->kind == CXCursor_ArraySubscriptExpr && n->child_count == 2)
        check_struct_access(s, n);
    else if (n->kind == CXCursor_CXXReinterpretCastExpr || n->kind == CXCursor_CStyleCastExpr)
        check_cast(s, n);
    return true;
}

static bool visit_kernels(CuNode *n, void *data) {
    RuleContext *ctx = data;
    if (!cu_is_kernel(n)) return n->kind == CXCursor_TranslationUnit || n->kind == CXCursor_Namespace ||
                                     n->kind == CXCursor_LinkageSpec || n->kind == CXCursor_UnexposedDecl;
    Scan s = {.ctx = ctx, .src = ctx->cuda, .fn = n};
    for (uint32_t i = 0; i < n->child_count; i++)
        if (n->children[i]->kind == CXCursor_CompoundStmt) cu_walk(n->children[i], visit, &s);
    free(s.seen);
    return false;
}

static void check(RuleContext *ctx) { rule_walk_cuda(ctx, visit_kernels, ctx); }

const Rule rule_cu005_misaligned_vector_access = {
    .code = "CU005", .name = "misaligned-vector-access", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true, .measure = MEASURE_GLOBAL_ACCESS,
    .summary = "12-byte structs read per thread, or vector casts at an offset that is not a multiple of 4",
    .advice = "read aligned 4-, 8- or 16-byte types (a structure of arrays, float4), or pad the struct to 16 bytes",
    .documentation = documentation};
