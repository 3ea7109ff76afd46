/* CU003 shared-bank-conflict: a 2-D __shared__ array whose rows are a
 * multiple of 128 bytes, indexed with threadIdx.x in the row subscript (the
 * threads of a warp walk down a column, and every element of a column sits in
 * the same bank), and a 1-D __shared__ array indexed with threadIdx.x times a
 * multiple of 32 words. */
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
    "Flags a `__shared__` array of two (or more) dimensions whose rows are a multiple of 128 bytes\n"
    "(32 elements of 4 bytes: `float`, `int`, `unsigned`; or 16 elements of 8 bytes: `double`,\n"
    "`long long`) when it is accessed with `threadIdx.x` (or a variable computed from it) in the row\n"
    "subscript, e.g. `tile[threadIdx.x][k]` or `tile[tx][ty]`. The finding sits on the declaration;\n"
    "the conflicting accesses are listed as related locations.\n"
    "\n"
    "The row subscript must move with `threadIdx.x` linearly (`tx`, `tx + k`, `2 * tx`, a loop variable\n"
    "that starts at `tx` and steps by a uniform amount, `tx % 32`, `tx & 31`).\n"
    "\n"
    "Not flagged: rows that are not a multiple of 128 bytes (`[32][33]`: already padded; `[16][16]`\n"
    "floats), `threadIdx.x` in the column (last) subscript (`tile[ty][tx]`: consecutive threads read\n"
    "consecutive words), a column that also depends on `threadIdx.x` (`s[tx][tx]`, `s[lane][tx / 32]`:\n"
    "not analysed), row subscripts that only change every 32 threads (`s[tx / 32][k]`: a broadcast),\n"
    "accesses under `if (threadIdx.x == ...)` (one thread), element types of other sizes (2-byte `half`\n"
    "needs a padding of two elements; structs and vector types such as `float2` or `float4` are not\n"
    "analysed), and arrays whose size depends on a template parameter.\n"
    "\n"
    "A one-dimensional `__shared__` array (sized, or `extern __shared__ T s[]`) is flagged when its\n"
    "subscript moves by a multiple of 32 elements of 4 bytes (16 of 8 bytes) when `threadIdx.x` moves\n"
    "by one: `s[tx * 64 + k]`, `s[block.thread_rank() * 32 + k]`, a local `base = tx * 32` added to\n"
    "the subscript. The lane's coefficient is followed through local variables, `%` and `/` with a\n"
    "large enough divisor, masks and shifts, as CU004 does (one shared analysis). Not flagged: other\n"
    "strides (`s[tx * 33 + k]`, an odd stride, is the usual cure; `s[tx * 2]` gives at most a 2-way\n"
    "conflict), the lane in the fast position (`s[k * 64 + tx]`), a warp index in the slow position\n"
    "(`s[(tx / 32) * 64 + lane]`), and accesses by one thread. There is no automatic fix for 1-D\n"
    "arrays: the stride lives in the index expressions, and the array's size has to grow with it.\n"
    "\n"
    "8-byte elements: a warp's 64-bit shared-memory request is served as two half-warps of 16 threads\n"
    "(128 bytes each). With rows of a multiple of 16 `double`s the 16 threads of a half-warp hit the\n"
    "same pair of banks (16-way conflict), and a padding of one element makes the access conflict-free,\n"
    "so these are flagged too; rows of other lengths are not.\n"
    "\n"
    "## Why is this slow?\n"
    "Shared memory is split into 32 banks of 4 bytes; word `i` lives in bank `i % 32`. A warp's access\n"
    "completes in one step only when its 32 threads touch 32 different banks (or the same word). When\n"
    "each thread takes a different row of a `[32][32]` float array, the addresses are 32 words apart,\n"
    "so all 32 threads hit the same bank and the hardware serializes them: a 32-way bank conflict, 32\n"
    "times the latency of a conflict-free access. Transposes and column-wise reductions through a\n"
    "shared tile are the classic cases.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "__shared__ float tile[32][32];\n"
    "tile[threadIdx.y][threadIdx.x] = in[y * n + x];\n"
    "__syncthreads();\n"
    "out[y2 * n + x2] = tile[threadIdx.x][threadIdx.y];   // a column: 32-way conflict\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Pad each row by one element, so that consecutive rows start in consecutive banks:\n"
    "```cuda\n"
    "__shared__ float tile[32][33];\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "*fix alignment*: adds one element to the last dimension of the declaration (`[32][32]` becomes\n"
    "`[32][33]`, `[TILE][TILE]` becomes `[TILE][TILE + 1]`). Padding changes only the layout: every\n"
    "index stays valid and addresses the same logical element. The fix is offered only when the array\n"
    "is declared inside the function with constant sizes, every use of it is a full subscript (an\n"
    "element read or written, or `&element` passed to an atomic), nothing takes its address, converts\n"
    "it to a pointer, or relies on its size (`sizeof`, `memcpy`), and the function's static shared\n"
    "memory stays within 48 KiB after padding. Padding costs one column of shared memory per array,\n"
    "which can lower occupancy for very large tiles.\n"
    "\n"
    "## With a profile\n"
    "With per-line metrics (`advise profile --source-metrics`, kernels built with `-lineinfo`) the\n"
    "finding shows the shared-memory wavefronts its conflicting accesses took against the ideal\n"
    "(`32.0x the ideal wavefronts` for a 32-way conflict). At 1.25x or less the accesses were free of\n"
    "conflicts in the measured launch and the finding becomes a hint; from 2x (and 10% of the\n"
    "kernel's wavefronts) its severity rises with the kernel's share of the run, to an error only\n"
    "from 4x.\n";

enum { STATIC_SHARED_LIMIT = 48 * 1024, MAX_RANK = 8, MAX_RELATED = 8 };

/* one CuIndex per function that uses the array (a file-scope array can be used by several) */
enum { MAX_FUNCTIONS = 16 };

typedef struct {
    const CudaSource *src;
    CuIndex *ix[MAX_FUNCTIONS];
    int count;
} Indexes;

static CuIndex *index_for(Indexes *s, const CuNode *n) {
    const CuNode *fn = cu_function_of(n);
    for (int i = 0; i < s->count; i++)
        if (cu_index_function(s->ix[i]) == fn) return s->ix[i];
    if (s->count == MAX_FUNCTIONS) return NULL;
    CuIndex *ix = cu_index_new(s->src, fn);
    if (ix) s->ix[s->count++] = ix;
    return ix;
}

static void indexes_free(Indexes *s) {
    for (int i = 0; i < s->count; i++) cu_index_free(s->ix[i]);
    s->count = 0;
}

/* the constant threadIdx.x coefficient of a subscript (0 when it does not move with the lane) */
static bool lane_coefficient(CuIndex *ix, const CuNode *n, long long *coef) {
    CuLane l = cu_index_lane(ix, n);
    if (l.kind == CU_LANE_ZERO) *coef = 0;
    else if (l.kind == CU_LANE_CONST) *coef = l.c;
    else return false;
    return true;
}

/* under `if (x == ...)` on threadIdx.x: a single thread */
static bool single_lane(CuIndex *ix, const CuNode *n) {
    const CuNode *child = n;
    for (const CuNode *p = n->parent; p; child = p, p = p->parent) {
        if (p->kind == CXCursor_FunctionDecl || p->kind == CXCursor_FunctionTemplate || p->kind == CXCursor_LambdaExpr)
            return false;
        if (p->kind != CXCursor_IfStmt || p->child_count < 2 || child == p->children[0] || child != p->children[1])
            continue;
        /* the then branch: look at the && chain of the condition */
        const CuNode *stack[16];
        int sp = 0;
        stack[sp++] = cu_strip(p->children[0]);
        while (sp > 0) {
            const CuNode *c = stack[--sp];
            if (!c || c->kind != CXCursor_BinaryOperator || c->child_count != 2) continue;
            if (c->op == CXBinaryOperator_LAnd && sp + 2 <= 16) {
                stack[sp++] = cu_strip(c->children[0]);
                stack[sp++] = cu_strip(c->children[1]);
            } else if (c->op == CXBinaryOperator_EQ) {
                long long a, b;
                if (lane_coefficient(ix, c->children[0], &a) && lane_coefficient(ix, c->children[1], &b) &&
                    (a != 0) != (b != 0))
                    return true;
            }
        }
    }
    return false;
}

typedef struct {
    const CuNode *decl;
    const CuNode **refs;
    size_t count, cap;
    bool oom;
} RefSearch;

static bool visit_refs(CuNode *n, void *data) {
    RefSearch *s = data;
    if (n->kind == CXCursor_DeclRefExpr && n->ref == s->decl) {
        if (!array_reserve(&s->refs, s->count, &s->cap, sizeof *s->refs, 16)) {
            s->oom = true;
            return false;
        }
        s->refs[s->count++] = n;
    }
    return true;
}

/* the subscripts of a full element access through ref, NULL when ref is not one */
static const CuNode *full_access(const CuNode *ref, int rank, const CuNode **subs) {
    const CuNode *x = ref;
    for (int got = 0; got < rank; got++) {
        const CuNode *prev = x, *p = x->parent;
        while (p && (p->kind == CXCursor_UnexposedExpr || p->kind == CXCursor_ParenExpr)) {
            prev = p;
            p = p->parent;
        }
        if (!p || p->kind != CXCursor_ArraySubscriptExpr || p->child_count != 2 || p->children[0] != prev) return NULL;
        subs[got] = p->children[1];
        x = p;
    }
    return x;
}

/* the element is only read or written (or handed to an atomic): padding cannot change what the code does */
static bool plain_element_use(const CuNode *access) {
    const CuNode *y = access, *p = access->parent;
    while (p && (p->kind == CXCursor_ParenExpr || (p->kind == CXCursor_MemberRefExpr && p->children[0] == y))) {
        y = p;
        p = p->parent;
    }
    if (!p) return false;
    if (p->kind == CXCursor_UnaryOperator && p->op == CXUnaryOperator_AddrOf) {
        const CuNode *q = p->parent;
        while (q && q->kind == CXCursor_UnexposedExpr) q = q->parent;
        return q && q->kind == CXCursor_CallExpr && strncmp(cu_callee(q), "atomic", 6) == 0;
    }
    return true;
}

typedef struct {
    long long total;
    const CuNode *fn;
} SharedBytes;

static bool visit_shared_bytes(CuNode *n, void *data) {
    SharedBytes *s = data;
    if (n->kind == CXCursor_VarDecl && (n->attrs & CU_ATTR_SHARED)) {
        long long size = cu_type_size(n);
        if (size > 0) s->total += size;
    }
    return n->kind != CXCursor_LambdaExpr;
}

static bool ident_char(char c, bool first) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

static bool is_ident(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!ident_char(s[i], i == 0)) return false;
    return true;
}

static bool all_digits(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

/* The edit that pads the last dimension: its text between the last [ and ]. */
static bool padding_edit(const CudaSource *src, const CuNode *decl, long long row, size_t *start, size_t *end,
                         char **text) {
    const char *t = src->doc->text;
    size_t e = decl->end;
    while (e > decl->start && (t[e - 1] == ' ' || t[e - 1] == '\t')) e--;
    if (e == decl->start || t[e - 1] != ']') return false;
    size_t rb = e - 1, lb = rb;
    while (lb > decl->start && t[lb] != '[') {
        if (t[lb - 1] == ']' || t[lb - 1] == '\n') return false;
        lb--;
    }
    if (t[lb] != '[') return false;
    size_t a = lb + 1, b = rb;
    while (a < b && (t[a] == ' ' || t[a] == '\t')) a++;
    while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t')) b--;
    if (a == b) return false;
    /* the expression clang saw between these brackets */
    const CuNode *dim = NULL;
    for (uint32_t i = 0; i < decl->child_count; i++) {
        const CuNode *c = decl->children[i];
        if (c->start >= a && c->end <= b && clang_isExpression(c->kind)) dim = c;
    }
    long long v;
    if (!dim || !cu_int_value(dim, &v) || v != row) return false;
    const CuNode *core = dim;
    while (core->kind == CXCursor_UnexposedExpr && core->child_count == 1) core = core->children[0];
    size_t n = b - a;
    const char *s = t + a;
    if (all_digits(s, n)) *text = format_string("%lld", row + 1);
    else if (is_ident(s, n) && (core->kind == CXCursor_IntegerLiteral || core->kind == CXCursor_ParenExpr ||
                                core->kind == CXCursor_DeclRefExpr))
        *text = format_string("%.*s + 1", (int)n, s);
    else /* an expression, or a macro that expands to one: parentheses keep the precedence */
        *text = format_string("(%.*s) + 1", (int)n, s);
    *start = a;
    *end = b;
    return *text != NULL;
}

/* A 1-D array indexed with threadIdx.x times a stride of a multiple of 32
 * words (16 for 8-byte elements): `s[tx * 64 + k]`. */
/* the type's spelling, for the message */
static void type_name(CXType t, char *buf, size_t size) {
    CXString ts = clang_getTypeSpelling(t);
    snprintf(buf, size, "%s", clang_getCString(ts));
    clang_disposeString(ts);
}

static void analyze_flat(RuleContext *ctx, const CuNode *decl, CXType elem_type, long long elem, bool four,
                         const CuNode **refs, size_t ref_count, Indexes *ixs) {
    const CudaSource *src = ctx->cuda;
    const CuNode *conflicts[MAX_RELATED];
    long long coefs[MAX_RELATED];
    size_t conflict_count = 0;
    long long period = four ? 32 : 16;
    for (size_t i = 0; i < ref_count; i++) {
        const CuNode *sub;
        const CuNode *access = full_access(refs[i], 1, &sub);
        if (!access) continue;
        CuIndex *ix = index_for(ixs, access);
        long long coef;
        if (!ix || !lane_coefficient(ix, sub, &coef) || coef == 0 || coef % period != 0 || single_lane(ix, access))
            continue;
        if (conflict_count < MAX_RELATED) {
            coefs[conflict_count] = coef;
            conflicts[conflict_count++] = access;
        }
    }
    if (conflict_count == 0) return;
    char type_text[64], access_text[96];
    type_name(elem_type, type_text, sizeof type_text);
    cu_snippet(src, conflicts[0], access_text, sizeof access_text);
    long long stride = coefs[0] < 0 ? -coefs[0] : coefs[0];
    int ways = four ? 32 : 16;
    Finding *f = rule_report_cu(ctx, decl,
                                "__shared__ `%s` (%s) is indexed with threadIdx.x times %lld (`%s`, line %zu): the "
                                "threads of a %s touch addresses %lld bytes apart, all in the same bank, so the access "
                                "is serialized %d ways; make the stride an odd number of elements (%lld instead of "
                                "%lld) and size the array for it",
                                decl->name, type_text, stride, access_text,
                                document_line_of(ctx->doc, conflicts[0]->start) + 1, four ? "warp" : "half-warp",
                                stride * elem, ways, stride + 1, stride);
    if (!f) return;
    for (size_t i = 0; i < conflict_count; i++)
        finding_add_related(f, (ByteRange){conflicts[i]->start, conflicts[i]->end},
                            "threadIdx.x times a multiple of 32 words: a bank conflict");
}

static void analyze(RuleContext *ctx, const CuNode *decl) {
    const CudaSource *src = ctx->cuda;
    CXType type = clang_getCanonicalType(clang_getCursorType(decl->cursor));
    long long dims[MAX_RANK];
    int rank = 0;
    bool flat = type.kind == CXType_IncompleteArray; /* extern __shared__ float s[]; */
    if (flat) type = clang_getCanonicalType(clang_getArrayElementType(type));
    while (!flat && type.kind == CXType_ConstantArray) {
        if (rank == MAX_RANK) return;
        dims[rank++] = clang_getArraySize(type);
        type = clang_getCanonicalType(clang_getArrayElementType(type));
    }
    if (rank == 1) flat = true;
    if (!flat && rank < 2) return; /* also leaves out template-dependent sizes */
    long long elem = clang_Type_getSizeOf(type);
    bool four = elem == 4 && (type.kind == CXType_Float || type.kind == CXType_Int || type.kind == CXType_UInt ||
                              type.kind == CXType_Long || type.kind == CXType_ULong);
    bool eight = elem == 8 && (type.kind == CXType_Double || type.kind == CXType_LongLong ||
                               type.kind == CXType_ULongLong || type.kind == CXType_Long || type.kind == CXType_ULong);
    if (!four && !eight) return;
    long long row = flat ? 0 : dims[rank - 1];
    if (!flat && !(four && row > 0 && row % 32 == 0) && !(eight && row > 0 && row % 16 == 0)) return;

    RefSearch refs = {decl, NULL, 0, 0, false};
    cu_walk(src->root, visit_refs, &refs);
    if (refs.oom) {
        free(refs.refs);
        return;
    }
    Indexes ixs = {src, {0}, 0};
    if (flat) {
        analyze_flat(ctx, decl, type, elem, four, refs.refs, refs.count, &ixs);
        indexes_free(&ixs);
        free(refs.refs);
        return;
    }
    bool fixable = cu_function_of(decl) != NULL && decl->parent && decl->parent->kind == CXCursor_DeclStmt;
    const CuNode *conflicts[MAX_RELATED];
    long long coefs[MAX_RELATED];
    size_t conflict_count = 0;
    for (size_t i = 0; i < refs.count; i++) {
        const CuNode *subs[MAX_RANK];
        const CuNode *access = full_access(refs.refs[i], rank, subs);
        if (!access) {
            fixable = false; /* a row pointer, a decayed array, sizeof: relies on the layout */
            continue;
        }
        if (!plain_element_use(access)) fixable = false;
        CuIndex *ix = index_for(&ixs, access);
        if (!ix || cu_index_uses_thread(ix, subs[rank - 1], 'x')) continue;
        long long coef;
        if (!lane_coefficient(ix, subs[rank - 2], &coef) || coef == 0 || single_lane(ix, access)) continue;
        if (conflict_count < MAX_RELATED) {
            coefs[conflict_count] = coef;
            conflicts[conflict_count++] = access;
        }
    }
    indexes_free(&ixs);
    free(refs.refs);
    if (conflict_count == 0) return;

    char type_text[64], access_text[96];
    type_name(type, type_text, sizeof type_text);
    cu_snippet(src, conflicts[0], access_text, sizeof access_text);
    long long stride = coefs[0] * row * elem;
    if (stride < 0) stride = -stride;
    int ways = four ? 32 : 16;
    char dims_text[96];
    size_t w = 0;
    for (int i = 0; i < rank && w + 24 < sizeof dims_text; i++)
        w += (size_t)snprintf(dims_text + w, sizeof dims_text - w, "[%lld]", dims[i]);
    Finding *f = rule_report_cu(ctx, decl,
                                "__shared__ `%s` (%s%s) is indexed with threadIdx.x in the row subscript "
                                "(`%s`, line %zu): the threads of a %s touch addresses %lld bytes apart, all in the "
                                "same bank, so the access is serialized %d ways; pad the rows by one element",
                                decl->name, type_text, dims_text, access_text,
                                document_line_of(ctx->doc, conflicts[0]->start) + 1,
                                four ? "warp" : "half-warp", stride, ways);
    if (!f) return;
    for (size_t i = 0; i < conflict_count; i++)
        finding_add_related(f, (ByteRange){conflicts[i]->start, conflicts[i]->end},
                            "threadIdx.x selects the row here: a bank conflict");
    if (!fixable) return;
    /* the function's static shared memory after padding */
    SharedBytes sb = {0, cu_function_of(decl)};
    cu_walk((CuNode *)sb.fn, visit_shared_bytes, &sb);
    long long outer = 1;
    for (int i = 0; i < rank - 1; i++) outer *= dims[i];
    if (sb.total + outer * elem > STATIC_SHARED_LIMIT) return;
    size_t start, end;
    char *text = NULL;
    if (!padding_edit(src, decl, row, &start, &end, &text)) return;
    Fix *fix = finding_add_fix(f, "fix alignment: pad each row by one element", true);
    if (fix) fix_add_edit(fix, start, end, text);
    free(text);
}

static bool visit(CuNode *n, void *data) {
    RuleContext *ctx = data;
    if (n->kind == CXCursor_VarDecl && (n->attrs & CU_ATTR_SHARED)) analyze(ctx, n);
    return true;
}

static void check(RuleContext *ctx) { rule_walk_cuda(ctx, visit, ctx); }

const Rule rule_cu003_shared_bank_conflict = {
    .code = "CU003", .name = "shared-bank-conflict", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true, .measure = MEASURE_SHARED_ACCESS,
    .summary = "__shared__ array whose lanes land in one bank (a 2-D tile read down a column, a 1-D stride of 32 words)",
    .documentation = documentation};
