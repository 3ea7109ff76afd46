/* CU010 unfused-elementwise-kernels: two elementwise kernels of this file
 * launched back to back with the same configuration, the second reading what
 * the first wrote. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_query.h"
#include "rules/rule.h"
#include "rules/cuda/support/grid_guard.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a kernel launch that directly follows the launch of another elementwise kernel of this\n"
    "file with the same `<<<grid, block, shared, stream>>>` configuration, when the second kernel\n"
    "reads a buffer the first one writes. An elementwise kernel computes\n"
    "`i = blockIdx.x * blockDim.x + threadIdx.x` (or loops over a grid stride), guards it against\n"
    "the size (`if (i < n)`, `if (i >= n) return;`), and reads and writes its arrays at index `i`\n"
    "only: no shared memory, no barriers, no atomics, no neighbouring elements.\n"
    "\n"
    "## Why is this slow?\n"
    "Each launch costs a few microseconds, and, above all, the intermediate buffer makes a round\n"
    "trip through global memory: the first kernel writes every element, the second reads it back.\n"
    "Elementwise kernels are bound by memory bandwidth, so one kernel that does both steps per\n"
    "element in registers moves a fraction of the bytes and runs up to twice as fast.\n"
    "\n"
    "Not flagged: kernels with different configurations or on different streams; stencils (they\n"
    "read neighbouring elements), reductions, kernels with shared memory or barriers; launches\n"
    "separated by host code (which may read the buffers); independent kernels that share no\n"
    "buffer or where the second does not read what the first wrote; kernels defined elsewhere.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__global__ void scale(const float *x, float *y, float a, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i];\n"
    "}\n"
    "__global__ void add_bias(float *y, float b, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] += b;\n"
    "}\n"
    "scale<<<blocks, 256>>>(x, y, 2.0f, n);\n"
    "add_bias<<<blocks, 256>>>(y, 1.0f, n);\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "__global__ void fused_scale_add_bias(const float *x, float *y, float a, int n, float b) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) {\n"
    "        y[i] = a * x[i];\n"
    "        y[i] += b;\n"
    "    }\n"
    "}\n"
    "fused_scale_add_bias<<<blocks, 256>>>(x, y, 2.0f, n, 1.0f);\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "When both kernels are simple per-element maps with the same index, the same kind of guard\n"
    "and the same bound, and every buffer is passed as a plain variable, the code action writes\n"
    "the fused kernel after the later of the two definitions (their bodies run one after the\n"
    "other for each element, with the second kernel's parameters renamed to the first's where\n"
    "they receive the same argument) and replaces the two launches with one. Since each thread\n"
    "touches only element `i`, running both bodies per element computes the same values. The fix\n"
    "is unsafe: it is wrong when two different pointers alias overlapping memory at an offset,\n"
    "and the fused kernel's register use, and so its best block size, differ. The original\n"
    "kernels stay in place.\n";

/* ---- text helpers ------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
    bool failed;
} Buf;

static void buf_add(Buf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (!array_reserve_n(&b->data, b->len, n + 1, &b->cap, 1, 256)) { /* + 1: the NUL */
        b->failed = true;
        return;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void buf_str(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

/* text with whitespace runs squeezed out, for comparing expressions */
static void squeeze(const char *t, size_t n, char *out, size_t size) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < size; i++)
        if (!isspace((unsigned char)t[i])) out[k++] = t[i];
    out[k] = '\0';
}

static bool same_text(const CudaSource *src, const CuNode *a, const CuNode *b) {
    if (!a || !b) return !a && !b;
    char x[512], y[512];
    if (cu_text_len(a) >= sizeof x || cu_text_len(b) >= sizeof y) return false;
    squeeze(cu_text(src, a), cu_text_len(a), x, sizeof x);
    squeeze(cu_text(src, b), cu_text_len(b), y, sizeof y);
    return strcmp(x, y) == 0;
}

/* the default stream, however it is spelled */
static bool is_default_stream(const CudaSource *src, const CuNode *s) {
    if (!s) return true;
    char t[64];
    if (cu_text_len(s) >= sizeof t) return false;
    squeeze(cu_text(src, s), cu_text_len(s), t, sizeof t);
    return strcmp(t, "0") == 0 || strcmp(t, "nullptr") == 0 || strcmp(t, "NULL") == 0 ||
           strcmp(t, "cudaStreamLegacy") == 0;
}

static bool is_zero(const CuNode *n) {
    long long v;
    return !n || (cu_int_value(n, &v) && v == 0);
}

/* ---- elementwise kernels ------------------------------------------------ */

enum { MAX_PARAMS = 32, MAX_STMTS = 64 };

/* the kernels it fuses keep only the index and the stride before the guard,
 * and leave early only on the bound itself: their guards merge */
enum { GUARD_OPTIONS = 0 };

typedef struct {
    CuNode *def;
    GridGuardKind shape;
    CuNode *index;   /* the index variable */
    CuNode *stride;  /* a variable holding blockDim.x * gridDim.x */
    CuNode *bound;   /* E in i < E */
    CuNode *guard;   /* the if or for statement */
    CuNode *stmts[MAX_STMTS]; /* the per-element body */
    uint32_t stmt_count;
    CuNode *params[MAX_PARAMS];
    uint32_t param_count;
    bool pointer[MAX_PARAMS], read[MAX_PARAMS], written[MAX_PARAMS];
} Elementwise;

static int param_index(const Elementwise *k, const CuNode *decl) {
    for (uint32_t i = 0; i < k->param_count; i++)
        if (k->params[i] == decl) return (int)i;
    return -1;
}

static bool is_pointer_type(const CuNode *n) {
    CXType t = clang_getCanonicalType(clang_getCursorType(n->cursor));
    return t.kind == CXType_Pointer;
}

/* a local of the element body (declared inside one of its statements) */
static bool declared_in_body(const Elementwise *k, const CuNode *decl) {
    for (uint32_t i = 0; i < k->stmt_count; i++)
        if (decl->start >= k->stmts[i]->start && decl->end <= k->stmts[i]->end) return true;
    return false;
}

static bool function_is_plain(const CuNode *fn, int depth);

static bool calls_block_level(const char *name) {
    static const char *const bad[] = {"sync", "shfl", "ballot", "activemask", "match_", "__any", "__all",
                                      "reduce", "atomic", "printf", "malloc", "free", "clock", "warp",
                                      "tiled_partition", "this_thread_block", "this_grid", "coalesced",
                                      "memcpy", "memset", "assert", "__trap", "__nanosleep", NULL};
    for (int i = 0; bad[i]; i++)
        if (strstr(name, bad[i])) return true;
    return false;
}

/* p[i] with p a pointer parameter: its parameter index, or -1 */
static int element_access(const Elementwise *k, CuNode *n) {
    n = cu_strip(n);
    if (!n || n->kind != CXCursor_ArraySubscriptExpr || n->child_count != 2) return -1;
    CuNode *base = cu_strip(n->children[0]);
    if (!base || base->kind != CXCursor_DeclRefExpr || !cu_refers_to(n->children[1], k->index)) return -1;
    int p = param_index(k, base->ref);
    return p >= 0 && k->pointer[p] ? p : -1;
}

static bool element_ok(Elementwise *k, CuNode *n, int depth);

static bool children_ok(Elementwise *k, CuNode *n, int depth) {
    for (uint32_t i = 0; i < n->child_count; i++)
        if (!element_ok(k, n->children[i], depth)) return false;
    return true;
}

/* n reads and writes only element i of pointer parameters */
static bool element_ok(Elementwise *k, CuNode *n, int depth) {
    if (depth > 64) return false;
    if (cu_is_any_builtin(n)) return false;
    switch (n->kind) {
    case CXCursor_IntegerLiteral:
    case CXCursor_FloatingLiteral:
    case CXCursor_CharacterLiteral:
    case CXCursor_CXXBoolLiteralExpr:
    case CXCursor_CXXNullPtrLiteralExpr:
    case CXCursor_TypeRef:
    case CXCursor_NullStmt:
        return true;
    case CXCursor_UnexposedExpr:
    case CXCursor_ParenExpr:
    case CXCursor_CStyleCastExpr:
    case CXCursor_CXXStaticCastExpr:
    case CXCursor_CXXFunctionalCastExpr:
    case CXCursor_ConditionalOperator:
    case CXCursor_CompoundStmt:
    case CXCursor_DeclStmt:
    case CXCursor_UnaryExpr: /* sizeof */
        return children_ok(k, n, depth + 1);
    case CXCursor_IfStmt:
        return children_ok(k, n, depth + 1);
    case CXCursor_VarDecl:
        if (n->attrs & (CU_ATTR_SHARED | CU_ATTR_CONSTANT)) return false;
        if (clang_Cursor_getStorageClass(n->cursor) == CX_SC_Static) return false;
        return children_ok(k, n, depth + 1);
    case CXCursor_MemberRefExpr: /* x[i].re */
        return children_ok(k, n, depth + 1);
    case CXCursor_ArraySubscriptExpr: {
        int p = element_access(k, n);
        if (p < 0) return false;
        k->read[p] = true;
        return true;
    }
    case CXCursor_DeclRefExpr: {
        CuNode *d = n->ref;
        if (!d) return !is_pointer_type(n); /* globals of headers, enumerators */
        if (d == k->index) return true;
        if (d->kind == CXCursor_ParmDecl) return param_index(k, d) >= 0 && !k->pointer[param_index(k, d)];
        if (d->kind == CXCursor_VarDecl) {
            if (declared_in_body(k, d)) return !is_pointer_type(d);
            /* a global: a __constant__ or const value, not memory of this launch */
            return !is_pointer_type(d) && (d->parent && d->parent->kind == CXCursor_TranslationUnit);
        }
        return d->kind == CXCursor_EnumConstantDecl || d->kind == CXCursor_FunctionDecl;
    }
    case CXCursor_UnaryOperator:
        if (n->op == CXUnaryOperator_Deref || n->op == CXUnaryOperator_AddrOf) return false;
        if (n->op == CXUnaryOperator_PreInc || n->op == CXUnaryOperator_PostInc || n->op == CXUnaryOperator_PreDec ||
            n->op == CXUnaryOperator_PostDec) {
            int p = n->child_count == 1 ? element_access(k, n->children[0]) : -1;
            if (p >= 0) {
                k->read[p] = k->written[p] = true;
                return true;
            }
            CuNode *v = n->child_count == 1 ? cu_strip(n->children[0]) : NULL;
            return v && v->kind == CXCursor_DeclRefExpr && v->ref && v->ref->kind == CXCursor_VarDecl &&
                   declared_in_body(k, v->ref);
        }
        return children_ok(k, n, depth + 1);
    case CXCursor_BinaryOperator:
    case CXCursor_CompoundAssignOperator: {
        if (n->child_count != 2) return false;
        bool assign = n->kind == CXCursor_CompoundAssignOperator || n->op == CXBinaryOperator_Assign;
        if (!assign) return n->op != CXBinaryOperator_Comma && children_ok(k, n, depth + 1);
        int p = element_access(k, n->children[0]);
        if (p >= 0) {
            k->written[p] = true;
            if (n->kind == CXCursor_CompoundAssignOperator) k->read[p] = true;
            return element_ok(k, n->children[1], depth + 1);
        }
        CuNode *v = cu_strip(n->children[0]);
        if (!v || v->kind != CXCursor_DeclRefExpr || !v->ref || v->ref->kind != CXCursor_VarDecl ||
            !declared_in_body(k, v->ref))
            return false;
        return element_ok(k, n->children[1], depth + 1);
    }
    case CXCursor_CallExpr: {
        const char *name = cu_callee(n);
        if (!*name || calls_block_level(name)) return false;
        if (n->ref && !function_is_plain(n->ref, 0)) return false;
        /* the callee expression, then the arguments */
        for (uint32_t i = 0; i < n->child_count; i++) {
            CuNode *c = cu_strip(n->children[i]);
            if (i == 0 && c && c->kind == CXCursor_DeclRefExpr && c->ref == n->ref) continue;
            if (i == 0 && c && c->kind == CXCursor_DeclRefExpr && !c->ref && strcmp(c->name, name) == 0) continue;
            if (!element_ok(k, n->children[i], depth + 1)) return false;
        }
        return true;
    }
    default:
        return false;
    }
}

typedef struct {
    int depth;
    bool bad;
} PlainSearch;

static bool visit_plain(CuNode *n, void *data) {
    PlainSearch *s = data;
    if (cu_is_any_builtin(n) || (n->kind == CXCursor_VarDecl && (n->attrs & CU_ATTR_SHARED))) s->bad = true;
    if (n->kind == CXCursor_CallExpr) {
        if (calls_block_level(cu_callee(n))) s->bad = true;
        else if (n->ref && n->ref->kind == CXCursor_FunctionDecl && !function_is_plain(n->ref, s->depth + 1))
            s->bad = true;
    }
    return !s->bad;
}

/* a device function of this file that neither looks at the thread layout
 * nor synchronizes (what it does with its arguments the caller checks) */
static bool function_is_plain(const CuNode *fn, int depth) {
    if (depth > 3) return false;
    if (fn->kind != CXCursor_FunctionDecl) return fn->kind == CXCursor_FunctionTemplate ? false : true;
    if (fn->attrs & CU_ATTR_GLOBAL) return false;
    /* pointer parameters could write anywhere */
    for (uint32_t i = 0; i < fn->child_count; i++)
        if (fn->children[i]->kind == CXCursor_ParmDecl && is_pointer_type(fn->children[i])) return false;
    PlainSearch s = {depth, false};
    cu_walk((CuNode *)fn, visit_plain, &s);
    return !s.bad;
}

static bool add_stmts(Elementwise *k, CuNode *s) {
    if (s->kind == CXCursor_CompoundStmt) {
        for (uint32_t i = 0; i < s->child_count; i++) {
            if (k->stmt_count == MAX_STMTS) return false;
            k->stmts[k->stmt_count++] = s->children[i];
        }
        return true;
    }
    if (k->stmt_count == MAX_STMTS) return false;
    k->stmts[k->stmt_count++] = s;
    return true;
}

static bool analyse_kernel(const CudaSource *src, CuNode *decl, Elementwise *k) {
    memset(k, 0, sizeof *k);
    CuNode *def = cu_definition_of(src, decl);
    if (!def || def->kind != CXCursor_FunctionDecl || !(def->attrs & CU_ATTR_GLOBAL)) return false;
    k->def = def;
    for (uint32_t i = 0; i < def->child_count; i++) {
        CuNode *c = def->children[i];
        if (c->kind != CXCursor_ParmDecl) continue;
        if (k->param_count == MAX_PARAMS) return false;
        k->pointer[k->param_count] = is_pointer_type(c);
        k->params[k->param_count++] = c;
    }
    GridGuard g;
    if (!grid_guard_of(src, def, GUARD_OPTIONS, &g)) return false;
    k->shape = g.kind;
    k->index = g.index;
    k->stride = g.stride;
    k->bound = cu_strip(g.bound);
    k->guard = g.guard;
    if (g.kind == GRID_GUARD_IF && !add_stmts(k, g.guard->children[1])) return false;
    if (g.kind == GRID_GUARD_STRIDE && !add_stmts(k, g.guard->children[3])) return false;
    for (uint32_t i = g.guard_at + 1; g.kind == GRID_GUARD_RETURN && i < g.body->child_count; i++)
        if (!add_stmts(k, g.body->children[i])) return false;
    if (k->stmt_count == 0) return false;
    for (uint32_t i = 0; i < k->stmt_count; i++)
        if (!element_ok(k, k->stmts[i], 0)) return false;
    /* writes something */
    for (uint32_t i = 0; i < k->param_count; i++)
        if (k->written[i]) return true;
    return false;
}

/* ---- launches ----------------------------------------------------------- */

typedef struct {
    CuNode *stmt;   /* the statement (the launch, maybe wrapped) */
    CuLaunch l;
} Launch;

static bool launch_statement(CuNode *stmt, Launch *out) {
    CuNode *e = cu_strip(stmt);
    if (!e || e->kind != CXCursor_CallExpr || !cu_launch(e, &out->l)) return false;
    out->stmt = stmt;
    return out->l.grid && out->l.block;
}

static bool same_config(const CudaSource *src, const CuLaunch *a, const CuLaunch *b) {
    if (!same_text(src, a->grid, b->grid) || !same_text(src, a->block, b->block)) return false;
    bool za = is_zero(a->shared_bytes), zb = is_zero(b->shared_bytes);
    if (za != zb || (!za && !same_text(src, a->shared_bytes, b->shared_bytes))) return false;
    bool da = is_default_stream(src, a->stream), db = is_default_stream(src, b->stream);
    return da == db && (da || same_text(src, a->stream, b->stream));
}

/* any pointer argument text in common */
static bool share_buffers(const CudaSource *src, const CuLaunch *a, const CuLaunch *b) {
    for (uint32_t i = 0; i < a->arg_count; i++) {
        if (!is_pointer_type(cu_strip(a->args[i]))) continue;
        for (uint32_t j = 0; j < b->arg_count; j++)
            if (is_pointer_type(cu_strip(b->args[j])) && same_text(src, a->args[i], b->args[j])) return true;
    }
    return false;
}

/* the buffer the second kernel reads from what the first wrote, or -1 (index into a's args) */
static int flowing_buffer(const CudaSource *src, const Elementwise *ka, const CuLaunch *a, const Elementwise *kb,
                          const CuLaunch *b) {
    if (a->arg_count != ka->param_count || b->arg_count != kb->param_count) return -1;
    for (uint32_t i = 0; i < a->arg_count; i++) {
        if (!ka->written[i]) continue;
        for (uint32_t j = 0; j < b->arg_count; j++)
            if (kb->read[j] && same_text(src, a->args[i], b->args[j])) return (int)i;
    }
    return -1;
}

/* ---- the fused kernel --------------------------------------------------- */

typedef struct {
    char name[64];
    char *decl;         /* declaration text */
    const CuNode *arg;  /* the argument passed */
    bool const_pointee; /* pointer to const */
} FusedParam;

typedef struct {
    const CuNode *from; /* a declaration of the second kernel */
    char to[64];
} Rename;

static bool side_effect_free(const CuNode *n) {
    if (n->kind == CXCursor_CallExpr || n->kind == CXCursor_CompoundAssignOperator ||
        (n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Assign) ||
        (n->kind == CXCursor_UnaryOperator &&
         (n->op == CXUnaryOperator_PreInc || n->op == CXUnaryOperator_PostInc || n->op == CXUnaryOperator_PreDec ||
          n->op == CXUnaryOperator_PostDec)))
        return false;
    for (uint32_t i = 0; i < n->child_count; i++)
        if (!side_effect_free(n->children[i])) return false;
    return true;
}

static bool plain_variable(const CuNode *arg) {
    CuNode *s = cu_strip((CuNode *)arg);
    return s && s->kind == CXCursor_DeclRefExpr;
}

static bool pointee_is_const(const CuNode *param) {
    CXType t = clang_getCanonicalType(clang_getCursorType(param->cursor));
    return t.kind == CXType_Pointer && clang_isConstQualifiedType(clang_getPointeeType(t));
}

/* a parameter's declaration text with its name replaced */
static char *param_decl_as(const CudaSource *src, const CuNode *param, const char *name) {
    const char *t = cu_text(src, param);
    size_t len = cu_text_len(param);
    CXSourceLocation loc = clang_getCursorLocation(param->cursor);
    unsigned off;
    CXFile f;
    clang_getExpansionLocation(loc, &f, NULL, NULL, &off);
    size_t nl = strlen(param->name);
    if (!nl || off < param->start || off + nl > param->end || strncmp(src->doc->text + off, param->name, nl) != 0)
        return NULL;
    size_t at = off - param->start;
    Buf b = {0};
    buf_add(&b, t, at);
    buf_str(&b, name);
    buf_add(&b, t + at + nl, len - at - nl);
    return b.failed ? (free(b.data), NULL) : b.data;
}

static bool name_taken(FusedParam *ps, int count, const char *name, const Elementwise *ka) {
    for (int i = 0; i < count; i++)
        if (strcmp(ps[i].name, name) == 0) return true;
    return strcmp(name, ka->index->name) == 0 || (ka->stride && strcmp(name, ka->stride->name) == 0);
}

typedef struct {
    const CudaSource *src;
    const Rename *renames;
    int rename_count;
    Buf *out;
    size_t pos; /* next byte of the source to copy */
    bool failed;
} Emit;

static bool visit_renames(CuNode *n, void *data) {
    Emit *e = data;
    if (n->kind != CXCursor_DeclRefExpr || !n->ref) return true;
    for (int i = 0; i < e->rename_count; i++)
        if (e->renames[i].from == n->ref) {
            if (n->start < e->pos || n->end - n->start != strlen(n->ref->name) ||
                strncmp(cu_text(e->src, n), n->ref->name, n->end - n->start) != 0) {
                e->failed = true; /* a macro or an odd spelling */
                return false;
            }
            buf_add(e->out, e->src->doc->text + e->pos, n->start - e->pos);
            buf_str(e->out, e->renames[i].to);
            e->pos = n->end;
        }
    return true;
}

/* the statement's source text, through its `;` */
static size_t statement_end(const CudaSource *src, const CuNode *s) {
    const Document *doc = src->doc;
    size_t end = s->end;
    if (end > 0 && (doc->text[end - 1] == ';' || doc->text[end - 1] == '}')) return end;
    size_t i = end;
    while (i < doc->length && (doc->text[i] == ' ' || doc->text[i] == '\t')) i++;
    return i < doc->length && doc->text[i] == ';' ? i + 1 : SIZE_MAX;
}

/* appends the element body, one statement a line at indent, renaming */
static bool emit_body(const CudaSource *src, const Elementwise *k, const Rename *renames, int rename_count,
                      const char *indent, Buf *out) {
    const Document *doc = src->doc;
    for (uint32_t i = 0; i < k->stmt_count; i++) {
        CuNode *s = k->stmts[i];
        size_t end = statement_end(src, s);
        if (end == SIZE_MAX || s->end <= s->start) return false;
        /* the statement's own indentation, removed from its continuation lines */
        char old_indent[128];
        size_t old_len = cu_line_indent(src, s->start, old_indent, sizeof old_indent);
        Buf text = {0};
        Emit e = {src, renames, rename_count, &text, s->start, false};
        cu_walk(s, visit_renames, &e);
        if (e.failed) {
            free(text.data);
            return false;
        }
        buf_add(&text, doc->text + e.pos, end - e.pos);
        if (text.failed) return false;
        buf_str(out, indent);
        for (const char *p = text.data; *p; p++) {
            buf_add(out, p, 1);
            if (*p == '\n') {
                const char *q = p + 1;
                if (strncmp(q, old_indent, old_len) == 0) p += old_len;
                buf_str(out, indent);
            }
        }
        buf_str(out, "\n");
        free(text.data);
    }
    return !out->failed;
}

static bool collect_locals(const Elementwise *k, char names[][64], int *count, int max) {
    for (uint32_t i = 0; i < k->stmt_count; i++) {
        CuNode *stack[256];
        int sp = 0;
        stack[sp++] = k->stmts[i];
        while (sp > 0) {
            CuNode *n = stack[--sp];
            if (n->kind == CXCursor_VarDecl) {
                if (*count == max) return false;
                snprintf(names[(*count)++], 64, "%s", n->name);
            }
            for (uint32_t c = 0; c < n->child_count; c++) {
                if (sp == 256) return false;
                stack[sp++] = n->children[c];
            }
        }
    }
    return true;
}

static bool in_names(char names[][64], int count, const char *name) {
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

typedef struct {
    const char *name;
    bool found;
} FnSearch;

static bool visit_fn_name(CuNode *n, void *data) {
    FnSearch *s = data;
    if ((n->kind == CXCursor_FunctionDecl || n->kind == CXCursor_FunctionTemplate || n->kind == CXCursor_VarDecl) &&
        strcmp(n->name, s->name) == 0)
        s->found = true;
    return !s->found && n->kind != CXCursor_FunctionDecl;
}

/* the line range [start, end) holding the whole statement, or false */
static bool whole_lines(const CudaSource *src, const CuNode *stmt, size_t *start, size_t *end) {
    const Document *doc = src->doc;
    if (!cu_starts_line(src, stmt)) return false;
    size_t semi = statement_end(src, stmt);
    if (semi == SIZE_MAX) return false;
    size_t line = document_line_of(doc, semi - 1);
    size_t line_end = document_line_end(doc, line);
    for (size_t i = semi; i < line_end; i++)
        if (doc->text[i] != ' ' && doc->text[i] != '\t') return false;
    *start = doc->line_starts[document_line_of(doc, stmt->start)];
    *end = line + 1 < doc->line_count ? doc->line_starts[line + 1] : doc->length;
    return true;
}

static void add_fuse_fix(RuleContext *ctx, Finding *f, const Elementwise *ka, const Launch *a, const Elementwise *kb,
                         const Launch *b) {
    const CudaSource *src = ctx->cuda;
    /* at file scope, so that the fused kernel's name and types resolve where it is launched */
    for (int i = 0; i < 2; i++) {
        const CuNode *parent = (i ? kb : ka)->def->parent;
        if (!parent || (parent->kind != CXCursor_TranslationUnit && parent->kind != CXCursor_LinkageSpec)) return;
    }
    /* `if (i < n) {...}` and `if (i >= n) return; ...` fuse alike */
    if ((ka->shape == GRID_GUARD_STRIDE) != (kb->shape == GRID_GUARD_STRIDE)) return;
    /* the same bound: parameters receiving the same argument, or the same text */
    int pa = ka->bound->kind == CXCursor_DeclRefExpr ? param_index(ka, ka->bound->ref) : -1;
    int pb = kb->bound->kind == CXCursor_DeclRefExpr ? param_index(kb, kb->bound->ref) : -1;
    if (pa >= 0 && pb >= 0) {
        if (!same_text(src, a->l.args[pa], b->l.args[pb]) || !side_effect_free(a->l.args[pa])) return;
    } else if (pa >= 0 || pb >= 0 || !same_text(src, ka->bound, kb->bound)) {
        return;
    } else {
        /* the bound is global: it must not name locals of either kernel */
        if (ka->bound->kind == CXCursor_DeclRefExpr && ka->bound->ref && ka->bound->ref->parent &&
            ka->bound->ref->parent->kind != CXCursor_TranslationUnit)
            return;
    }
    for (uint32_t i = 0; i < a->l.arg_count; i++)
        if (ka->pointer[i] && !plain_variable(a->l.args[i])) return;
    for (uint32_t i = 0; i < b->l.arg_count; i++)
        if (kb->pointer[i] && !plain_variable(b->l.args[i])) return;

    /* the launches: whole lines, adjacent, the second's config text reused */
    size_t a_start, a_end, b_start, b_end;
    if (!whole_lines(src, a->stmt, &a_start, &a_end) || !whole_lines(src, b->stmt, &b_start, &b_end)) return;

    /* the name */
    char name[160];
    const char *first = ka->def->name;
    if (strncmp(first, "fused_", 6) == 0) snprintf(name, sizeof name, "%s_%s", first, kb->def->name);
    else snprintf(name, sizeof name, "fused_%s_%s", first, kb->def->name);
    if (strlen(name) >= 64) return;
    FnSearch fs = {name, false};
    cu_walk(src->root, visit_fn_name, &fs);
    if (fs.found) return;

    /* parameters: the first kernel's, then the second's that receive a new argument */
    FusedParam ps[2 * MAX_PARAMS];
    int pc = 0;
    Rename rn[MAX_PARAMS + 2];
    int rc = 0;
    bool ok = true;
    for (uint32_t i = 0; i < ka->param_count && ok; i++) {
        FusedParam *p = &ps[pc++];
        snprintf(p->name, sizeof p->name, "%s", ka->params[i]->name);
        p->decl = strndup(cu_text(src, ka->params[i]), cu_text_len(ka->params[i]));
        p->arg = a->l.args[i];
        p->const_pointee = pointee_is_const(ka->params[i]);
        if (!p->decl || !*p->name) ok = false;
    }
    for (uint32_t j = 0; j < kb->param_count && ok; j++) {
        const CuNode *param = kb->params[j];
        const CuNode *arg = b->l.args[j];
        int same = -1;
        for (int i = 0; i < pc && same < 0; i++)
            if (same_text(src, ps[i].arg, arg) && side_effect_free(arg) &&
                kb->pointer[j] == is_pointer_type(cu_strip((CuNode *)ps[i].arg)))
                same = i;
        if (same >= 0) {
            /* one parameter for both; it must allow the second kernel's writes */
            if (kb->written[j] && ps[same].const_pointee) {
                char *decl = param_decl_as(src, param, ps[same].name);
                if (!decl) {
                    ok = false;
                    break;
                }
                free(ps[same].decl);
                ps[same].decl = decl;
                ps[same].const_pointee = false;
            }
            if (strcmp(param->name, ps[same].name) != 0) {
                rn[rc].from = param;
                snprintf(rn[rc++].to, sizeof rn[0].to, "%s", ps[same].name);
            }
            continue;
        }
        char fresh[64];
        snprintf(fresh, sizeof fresh, "%s", param->name);
        for (int suffix = 2; name_taken(ps, pc, fresh, ka) && suffix < 10; suffix++)
            snprintf(fresh, sizeof fresh, "%s_%d", param->name, suffix);
        if (name_taken(ps, pc, fresh, ka)) {
            ok = false;
            break;
        }
        FusedParam *p = &ps[pc++];
        snprintf(p->name, sizeof p->name, "%s", fresh);
        p->decl = strcmp(fresh, param->name) == 0 ? strndup(cu_text(src, param), cu_text_len(param))
                                                 : param_decl_as(src, param, fresh);
        p->arg = arg;
        p->const_pointee = pointee_is_const(param);
        if (!p->decl) ok = false;
        if (strcmp(fresh, param->name) != 0) {
            rn[rc].from = param;
            snprintf(rn[rc++].to, sizeof rn[0].to, "%s", fresh);
        }
    }
    if (ok && strcmp(kb->index->name, ka->index->name) != 0) {
        rn[rc].from = kb->index;
        snprintf(rn[rc++].to, sizeof rn[0].to, "%s", ka->index->name);
    }
    /* the second body's locals must not capture a renamed reference */
    char locals_a[64][64], locals_b[64][64];
    int la = 0, lb = 0;
    if (ok && (!collect_locals(ka, locals_a, &la, 64) || !collect_locals(kb, locals_b, &lb, 64))) ok = false;
    for (int i = 0; i < rc && ok; i++)
        if (in_names(locals_b, lb, rn[i].to)) ok = false;
    /* nor may they hide a fused parameter the second body uses */
    for (int i = 0; i < pc && ok; i++)
        if (in_names(locals_b, lb, ps[i].name) && i < (int)ka->param_count) {
            /* a local of the second body named like a parameter of the first: fine unless the second
             * body refers to that parameter through a rename */
            for (int r = 0; r < rc; r++)
                if (strcmp(rn[r].to, ps[i].name) == 0) ok = false;
        }
    bool scoped = la > 0; /* the first body's locals stay out of the second's way */

    Buf k = {0};
    if (ok) {
        buf_str(&k, "\n\n__global__ void ");
        buf_str(&k, name);
        buf_str(&k, "(");
        for (int i = 0; i < pc; i++) {
            if (i) buf_str(&k, ", ");
            buf_str(&k, ps[i].decl);
        }
        buf_str(&k, ") {\n");
        const char *in1 = scoped ? "            " : "        ";
        if (ka->shape == GRID_GUARD_STRIDE) {
            CuNode *loop = ka->guard;
            CuNode *loop_body = loop->children[3];
            if (ka->stride) {
                CuNode *stride_stmt = ka->stride->parent;
                buf_str(&k, "    ");
                buf_add(&k, cu_text(src, stride_stmt), cu_text_len(stride_stmt));
                buf_str(&k, "\n");
            }
            buf_str(&k, "    ");
            buf_add(&k, cu_text(src, loop), loop_body->start - loop->start);
            buf_str(&k, "{\n");
        } else {
            CuNode *idx_stmt = ka->index->parent;
            buf_str(&k, "    ");
            buf_add(&k, cu_text(src, idx_stmt), cu_text_len(idx_stmt));
            buf_str(&k, "\n    if (");
            buf_str(&k, ka->index->name);
            buf_str(&k, " < ");
            buf_add(&k, cu_text(src, ka->bound), cu_text_len(ka->bound));
            buf_str(&k, ") {\n");
        }
        if (scoped) buf_str(&k, "        {\n");
        ok = emit_body(src, ka, NULL, 0, in1, &k);
        if (scoped) buf_str(&k, "        }\n        {\n");
        ok = ok && emit_body(src, kb, rn, rc, in1, &k);
        if (scoped) buf_str(&k, "        }\n");
        buf_str(&k, "    }\n}");
    }
    /* the launch */
    Buf call = {0};
    if (ok) {
        char indent[128];
        cu_line_indent(src, b->stmt->start, indent, sizeof indent);
        CuNode *config = b->l.grid->parent;
        while (config && !(config->kind == CXCursor_CallExpr && strcmp(cu_callee(config), "__cudaPushCallConfiguration") == 0))
            config = config->parent;
        if (!config || config->end <= config->start) ok = false;
        else {
            buf_str(&call, indent);
            buf_str(&call, name);
            buf_add(&call, cu_text(src, config), cu_text_len(config));
            buf_str(&call, "(");
            for (int i = 0; i < pc; i++) {
                if (i) buf_str(&call, ", ");
                buf_add(&call, cu_text(src, ps[i].arg), cu_text_len(ps[i].arg));
            }
            buf_str(&call, ");\n");
        }
    }
    for (int i = 0; i < pc; i++) free(ps[i].decl);
    if (ok && !call.failed) {
        /* the fused kernel goes after the later definition */
        const CuNode *later = ka->def->end > kb->def->end ? ka->def : kb->def;
        /* a blank line after the fused kernel when the next line has code */
        const Document *doc = src->doc;
        size_t line = document_line_of(doc, later->end);
        if (line + 1 < doc->line_count) {
            size_t a0 = doc->line_starts[line + 1], a1 = document_line_end(doc, line + 1);
            bool blank = true;
            for (size_t i = a0; i < a1; i++)
                if (!isspace((unsigned char)doc->text[i])) blank = false;
            if (!blank) buf_str(&k, "\n");
        }
        char title[200];
        snprintf(title, sizeof title, "Fuse %s and %s into %s", ka->def->name, kb->def->name, name);
        Fix *fix = k.failed ? NULL : finding_add_fix(f, title, false);
        if (!fix || !fix_add_edit(fix, later->end, later->end, k.data) || !fix_add_edit(fix, a_start, a_end, "") ||
            !fix_add_edit(fix, b_start, b_end, call.data))
            ctx->out_of_memory = true;
    }
    free(k.data);
    free(call.data);
}

/* ---- the check ---------------------------------------------------------- */

static void check_pair(RuleContext *ctx, const Launch *a, const Launch *b, bool adjacent) {
    const CudaSource *src = ctx->cuda;
    if (!same_config(src, &a->l, &b->l)) return;
    Elementwise *ka = malloc(sizeof *ka), *kb = malloc(sizeof *kb);
    if (!ka || !kb) {
        free(ka);
        free(kb);
        ctx->out_of_memory = true;
        return;
    }
    if (analyse_kernel(src, a->l.kernel_decl, ka) && analyse_kernel(src, b->l.kernel_decl, kb)) {
        int buffer = flowing_buffer(src, ka, &a->l, kb, &b->l);
        if (buffer >= 0) {
            const CuNode *arg = a->l.args[buffer];
            int len = (int)cu_text_len(arg);
            Finding *f = rule_report_cu(ctx, b->l.call,
                                        "%s reads %.*s right after %s wrote it, with the same launch configuration: "
                                        "both are elementwise, and one fused kernel would keep the values in "
                                        "registers instead of a round trip through global memory and a second "
                                        "launch",
                                        b->l.kernel, len > 40 ? 40 : len, cu_text(src, arg), a->l.kernel);
            if (f) {
                if (!finding_add_related(f, (ByteRange){a->l.call->start, a->l.call->end},
                                         "the launch that writes it"))
                    ctx->out_of_memory = true;
                if (adjacent && ka->def->kind == CXCursor_FunctionDecl &&
                    ka->def->end < cu_function_of(a->l.call)->start && kb->def->end < cu_function_of(a->l.call)->start)
                    add_fuse_fix(ctx, f, ka, a, kb, b);
            }
        }
    }
    free(ka);
    free(kb);
}

static bool visit(CuNode *n, void *data) {
    RuleContext *ctx = data;
    if (n->kind != CXCursor_CompoundStmt) return true;
    CuNode *fn = cu_function_of(n);
    if (!fn || cu_is_device_code(fn)) return true;
    for (uint32_t j = 1; j < n->child_count; j++) {
        Launch b;
        if (!launch_statement(n->children[j], &b)) continue;
        /* back through launches that share nothing with b, to one that does */
        for (uint32_t i = j; i-- > 0;) {
            Launch a;
            if (!launch_statement(n->children[i], &a)) break;
            if (!share_buffers(ctx->cuda, &a.l, &b.l)) continue;
            /* what lies between must not touch a's buffers either */
            bool clear = true;
            for (uint32_t m = i + 1; m < j && clear; m++) {
                Launch mid;
                if (launch_statement(n->children[m], &mid) && share_buffers(ctx->cuda, &a.l, &mid.l)) clear = false;
            }
            if (clear) check_pair(ctx, &a, &b, i + 1 == j);
            break;
        }
    }
    return true;
}

static void check(RuleContext *ctx) { rule_walk_cuda(ctx, visit, ctx); }

const Rule rule_cu010_unfused_elementwise_kernels = {
    .code = "CU010", .name = "unfused-elementwise-kernels", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true, .measure = MEASURE_LAUNCHES,
    .summary = "Back-to-back elementwise kernels over the same buffers that one fused kernel could do",
    .documentation = documentation};
