/* CU007 unsynchronized-host-read: the host reads a buffer that an
 * asynchronous device-to-host copy fills before anything waits for the copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_host_buffer.h"
#include "analysis/base/growable.h"
#include "rules/rule.h"
#include "analysis/base/text_format.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a host read of a buffer that an asynchronous device-to-host copy\n"
    "(`cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream)`, `cudaMemcpy2DAsync`,\n"
    "`cudaMemcpyFromSymbolAsync`) fills, when nothing between the copy and the read (in program\n"
    "order, in the same function) waits for the copy. A read is an element access (`h[i]`, `*h`,\n"
    "`h->x`, `v[i]`, `v.at(i)`), a range-for over the buffer, the buffer handed to a function that\n"
    "reads it (`memcpy` source, `std::accumulate`, `std::max_element`, ..., or a function of this\n"
    "file that indexes the matching parameter), or, for a scalar copied with `&x`, any use of `x`.\n"
    "The finding is on the first such read.\n"
    "\n"
    "Anything that may wait counts as synchronization, so that only certain races are reported:\n"
    "`cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaEventSynchronize`, `cudaStreamQuery`,\n"
    "`cudaEventQuery`, synchronous `cudaMemcpy*`/`cudaMemset`/`cudaFree*`, host callbacks,\n"
    "wrapper calls whose name says they synchronize or wait, calls to functions of this file that\n"
    "do any of these, and unknown functions that receive the copy's stream.\n"
    "\n"
    "Not flagged: reads after a synchronization, reads of other buffers, host-to-device copies,\n"
    "reads in another function or in a lambda, reads on a path that cannot follow the copy (the\n"
    "other branch of an `if`, after a `return`), and reads after the pointer was reassigned.\n"
    "Whether the host buffer is pinned does not matter: a device-to-host copy into pageable memory\n"
    "returns only once it is complete, but that is the slow path CU006 reports, and the read races\n"
    "as soon as the buffer is pinned (for example by CU006's fix).\n"
    "\n"
    "## Why is this slow?\n"
    "It is not slow, it is wrong. `cudaMemcpyAsync` only queues the copy on the stream and returns\n"
    "at once; the data arrives when the stream reaches it, after the kernels queued before it. A\n"
    "read before a synchronization sees whatever the buffer held before: stale or uninitialised\n"
    "values, differently on every run and on every GPU.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "reduce<<<blocks, threads, 0, stream>>>(d_in, d_partial, n);\n"
    "cudaMemcpyAsync(h_partial, d_partial, blocks * sizeof(float), cudaMemcpyDeviceToHost, stream);\n"
    "float sum = 0;\n"
    "for (int b = 0; b < blocks; b++) sum += h_partial[b];  // the copy may not have run yet\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "reduce<<<blocks, threads, 0, stream>>>(d_in, d_partial, n);\n"
    "cudaMemcpyAsync(h_partial, d_partial, blocks * sizeof(float), cudaMemcpyDeviceToHost, stream);\n"
    "cudaStreamSynchronize(stream);\n"
    "float sum = 0;\n"
    "for (int b = 0; b < blocks; b++) sum += h_partial[b];\n"
    "```\n"
    "To keep the host busy meanwhile, record an event after the copy and call\n"
    "`cudaEventSynchronize` just before the read.\n"
    "\n"
    "## Fix safety\n"
    "The fix inserts `cudaStreamSynchronize(stream);` with the copy's stream (or\n"
    "`cudaDeviceSynchronize();` when the copy uses the default stream, or when the stream\n"
    "expression cannot be evaluated again at that point, such as `streams[i]` after the loop) as a\n"
    "statement of its own just before the statement that holds the read, in the block where the\n"
    "read follows the copy: before a loop that reads, not inside it. It is **safe**: waiting for\n"
    "queued work never changes results, it only makes the read see the copied data. It is offered\n"
    "only when that statement starts its line and is not a `case` or a label.\n";

/* --- small helpers ------------------------------------------------------ */

static bool is_assign_target(const CuNode *n) {
    const CuNode *child;
    CuNode *p = cu_logical_parent(n, &child);
    return p && p->kind == CXCursor_BinaryOperator && p->op == CXBinaryOperator_Assign && p->child_count == 2 &&
           p->children[0] == child;
}

static bool is_address_taken(const CuNode *n) {
    CuNode *p = cu_logical_parent(n, NULL);
    return p && p->kind == CXCursor_UnaryOperator && p->op == CXUnaryOperator_AddrOf;
}

/* --- buffers ------------------------------------------------------------ */

typedef enum { BUF_POINTER, BUF_VECTOR, BUF_SCALAR } BufferMode;

typedef struct {
    CuNode *base; /* a DeclRefExpr or MemberRefExpr */
    BufferMode mode;
} Buffer;

/* member text without `this->` and blanks */
static void normalized_text(const CudaSource *src, const CuNode *n, char *buf, size_t size) {
    const char *t = cu_text(src, n);
    size_t len = cu_text_len(n), k = 0;
    if (len >= 6 && strncmp(t, "this->", 6) == 0) t += 6, len -= 6;
    for (size_t i = 0; i < len && k + 1 < size; i++)
        if (t[i] != ' ' && t[i] != '\t' && t[i] != '\n') buf[k++] = t[i];
    if (size) buf[k] = '\0';
}

static bool same_buffer(const CudaSource *src, const CuNode *a, const CuNode *b) {
    if (!a || !b || a->kind != b->kind || !a->ref || a->ref != b->ref) return false;
    if (a->kind == CXCursor_DeclRefExpr) return true;
    if (a->start == a->end || b->start == b->end) return false; /* macro arguments: no text */
    char ta[256], tb[256];
    normalized_text(src, a, ta, sizeof ta);
    normalized_text(src, b, tb, sizeof tb);
    return strcmp(ta, tb) == 0;
}

static bool buffer_of_copy(CuNode *dst, Buffer *out) {
    dst = cu_strip(dst);
    if (!dst) return false;
    /* &x of a scalar or a struct */
    if (dst->kind == CXCursor_UnaryOperator && dst->op == CXUnaryOperator_AddrOf && dst->child_count == 1) {
        CuNode *x = cu_strip(dst->children[0]);
        if (x && (x->kind == CXCursor_DeclRefExpr || x->kind == CXCursor_MemberRefExpr) && x->ref) {
            enum CXTypeKind k = cu_canonical_type(x).kind;
            if (k == CXType_ConstantArray) {
                out->base = x;
                out->mode = BUF_POINTER;
                return true;
            }
            if (k != CXType_Pointer && !cu_is_vector_or_array(x)) {
                out->base = x;
                out->mode = BUF_SCALAR;
                return true;
            }
            return false;
        }
    }
    CuNode *base = cu_buffer_reference(dst, CU_BUFFER_CONTAINER);
    if (!base) return false;
    enum CXTypeKind k = cu_canonical_type(base).kind;
    if (cu_is_vector_or_array(base)) out->mode = BUF_VECTOR;
    else if (k == CXType_Pointer || k == CXType_ConstantArray || k == CXType_IncompleteArray) out->mode = BUF_POINTER;
    else return false;
    out->base = base;
    return true;
}

/* --- reads ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    unsigned positions; /* bit i: argument i is read */
} Reader;

static const Reader readers[] = {
    {"memcpy", 1u << 1}, {"memmove", 1u << 1}, {"memcmp", 3u}, {"fwrite", 1u}, {"strlen", 1u},
    {"strcmp", 3u}, {"strncmp", 3u}, {"puts", 1u}, {"fputs", 1u}, {"accumulate", 3u}, {"reduce", 3u},
    {"copy", 3u}, {"copy_n", 1u}, {"equal", 7u}, {"mismatch", 7u}, {"inner_product", 7u},
    {"max_element", 3u}, {"min_element", 3u}, {"minmax_element", 3u}, {"find", 3u}, {"find_if", 3u},
    {"count", 3u}, {"count_if", 3u}, {"all_of", 3u}, {"any_of", 3u}, {"none_of", 3u}, {"for_each", 3u},
    {"transform", 3u}, {"is_sorted", 3u}, {"lexicographical_compare", 15u}, {"transform_reduce", 7u},
};

typedef struct {
    const CudaSource *src;
    const CuNode *fn;
    const Buffer *buf;
    CuNode **items;
    size_t count, capacity;
    bool oom;
} Reads;

static bool param_is_read(const CudaSource *src, const CuNode *callee, uint32_t index);

static void add_read(Reads *r, CuNode *n) {
    if (cu_function_of(n) != r->fn) return; /* a lambda */
    if (!array_reserve(&r->items, r->count, &r->capacity, sizeof *r->items, 16)) {
        r->oom = true;
        return;
    }
    r->items[r->count++] = n;
}

static bool matches(Reads *r, CuNode *e) {
    CuNode *b = cu_buffer_reference(e, CU_BUFFER_CONTAINER);
    return b && same_buffer(r->src, b, r->buf->base);
}

static bool call_reads_argument(const CudaSource *src, const CuNode *call, uint32_t i) {
    const char *callee = cu_callee(call);
    for (size_t k = 0; k < sizeof readers / sizeof *readers; k++)
        if (strcmp(callee, readers[k].name) == 0) return i < 32 && (readers[k].positions >> i) & 1u;
    return param_is_read(src, call->ref, i);
}

static bool visit_reads(CuNode *n, void *data) {
    Reads *r = data;
    if (r->oom) return false;
    if (n->kind == CXCursor_UnaryExpr) return false; /* sizeof, alignof: not evaluated */
    const Buffer *buf = r->buf;
    if (buf->mode == BUF_SCALAR) {
        if ((n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_MemberRefExpr) &&
            same_buffer(r->src, n, buf->base) && !is_address_taken(n) && !is_assign_target(n))
            add_read(r, n);
        return true;
    }
    switch (n->kind) {
    case CXCursor_ArraySubscriptExpr:
        if (n->child_count == 2 && matches(r, n->children[0]) && !is_assign_target(n) && !is_address_taken(n))
            add_read(r, n);
        break;
    case CXCursor_UnaryOperator:
        if (n->op == CXUnaryOperator_Deref && n->child_count == 1 && matches(r, n->children[0]) &&
            !is_assign_target(n) && !is_address_taken(n))
            add_read(r, n);
        break;
    case CXCursor_MemberRefExpr:
        /* h->field */
        if (buf->mode == BUF_POINTER && n->child_count == 1 && n->children[0]->end < n->end &&
            matches(r, n->children[0]) && !is_assign_target(n)) {
            const char *t = r->src->doc->text + n->children[0]->end;
            if (t[0] == '-' && t[1] == '>') add_read(r, n);
        }
        break;
    case CXCursor_CXXForRangeStmt:
        if (n->child_count >= 2 && matches(r, n->children[n->child_count - 2]))
            add_read(r, n->children[n->child_count - 2]);
        break;
    case CXCursor_CallExpr: {
        const char *method;
        CuNode *obj = cu_member_call_object(n, &method);
        if (buf->mode == BUF_VECTOR && obj && matches(r, obj)) {
            static const char *const element_reads[] = {"operator[]", "at", "front", "back", NULL};
            if (cu_name_in(method, element_reads) && !is_assign_target(n) && !is_address_taken(n)) add_read(r, n);
            break;
        }
        uint32_t count;
        CuNode **args = cu_call_args(n, &count);
        for (uint32_t i = 0; i < count; i++)
            if (matches(r, args[i]) && call_reads_argument(r->src, n, i)) {
                add_read(r, args[i]);
                break;
            }
        break;
    }
    default: break;
    }
    return true;
}

/* an element of param read (indexed or dereferenced, not assigned) */
static bool reads_param(const CuNode *n, void *param) {
    CuNode *x = NULL;
    if (n->kind == CXCursor_ArraySubscriptExpr && n->child_count == 2) x = n->children[0];
    else if (n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_Deref && n->child_count == 1)
        x = n->children[0];
    if (x) {
        CuNode *b = cu_buffer_reference(x, CU_BUFFER_CONTAINER);
        if (b && b->kind == CXCursor_DeclRefExpr && b->ref == param && !is_assign_target(n)) return true;
    }
    return false;
}

/* a host function of this file whose i-th parameter it indexes or dereferences */
static bool param_is_read(const CudaSource *src, const CuNode *callee, uint32_t index) {
    (void)src;
    if (!callee || (callee->kind != CXCursor_FunctionDecl && callee->kind != CXCursor_FunctionTemplate) ||
        cu_is_device_code(callee))
        return false;
    CuNode *body = cu_function_body(callee);
    if (!body) return false;
    uint32_t k = 0;
    const CuNode *param = NULL;
    for (uint32_t i = 0; i < callee->child_count; i++)
        if (callee->children[i]->kind == CXCursor_ParmDecl && k++ == index) param = callee->children[i];
    if (!param) return false;
    return cu_find(body, reads_param, (void *)param) != NULL;
}

static int by_start(const void *a, const void *b) {
    const CuNode *x = *(const CuNode *const *)a, *y = *(const CuNode *const *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* --- synchronization -------------------------------------------------------- */

/* the name, in lower case and without "async", says it synchronizes or waits */
static bool waiting_name(const char *name) {
    char low[128];
    size_t k = 0;
    for (size_t i = 0; name[i] && k + 1 < sizeof low; i++) {
        char ch = name[i];
        low[k++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    }
    low[k] = '\0';
    for (char *a = strstr(low, "async"); a; a = strstr(a, "async")) memset(a, '_', 5);
    static const char *const words[] = {"sync", "wait", "query", "join", "barrier", NULL};
    for (size_t i = 0; words[i]; i++)
        if (strstr(low, words[i])) return true;
    return false;
}

static bool contains_sync(const CudaSource *src, const CuNode *n, const char *stream_text, int depth);

static bool call_may_wait(const CudaSource *src, const CuNode *call, const char *stream_text, int depth) {
    const char *name = cu_callee(call);
    if (!*name) return false;
    if (waiting_name(name)) return true;
    if (strncmp(name, "cudaMemcpy", 10) == 0 || strncmp(name, "cudaMemset", 10) == 0 ||
        strncmp(name, "cuMemcpy", 8) == 0)
        return strstr(name, "Async") == NULL;
    static const char *const waiting[] = {"cudaFree", "cudaFreeHost", "cudaFreeArray", "cudaDeviceReset",
                                          "cudaLaunchHostFunc", "cudaStreamAddCallback", "cudaHostUnregister",
                                          "cudaGraphicsUnmapResources", NULL};
    if (cu_name_in(name, waiting)) return true;
    if (strncmp(name, "cuda", 4) == 0 || strncmp(name, "__cuda", 6) == 0) return false;
    CuNode *callee = call->ref;
    if (callee && cu_is_function(callee)) {
        CuNode *body = cu_function_body(callee);
        if (body) return depth < 3 && contains_sync(src, body, stream_text, depth + 1);
    }
    /* an unknown function that is handed the stream may wait on it */
    if (stream_text && *stream_text) {
        uint32_t count;
        CuNode **args = cu_call_args(call, &count);
        for (uint32_t i = 0; i < count; i++)
            if (args[i]->start < args[i]->end && cu_text_eq(src, args[i], stream_text)) return true;
    }
    return false;
}

typedef struct {
    const CudaSource *src;
    const char *stream_text;
    const CuNode *skip; /* the copy itself */
    size_t from, to;    /* search [from, to); 0, SIZE_MAX for the whole node */
    int depth;
    bool found;
} SyncSearch;

static bool visit_sync(CuNode *n, void *data) {
    SyncSearch *s = data;
    if (s->found || n == s->skip) return false;
    if (n->end < s->from || n->start >= s->to) return false; /* children lie inside their parent */
    if (n->kind == CXCursor_CallExpr && n->start >= s->from && n->start < s->to &&
        call_may_wait(s->src, n, s->stream_text, s->depth))
        s->found = true;
    return !s->found;
}

static bool contains_sync(const CudaSource *src, const CuNode *n, const char *stream_text, int depth) {
    SyncSearch s = {src, stream_text, NULL, 0, SIZE_MAX, depth, false};
    cu_walk((CuNode *)n, visit_sync, &s);
    return s.found;
}

static bool sync_between(const CudaSource *src, const CuNode *fn, const CuNode *copy, size_t to,
                         const char *stream_text) {
    SyncSearch s = {src, stream_text, copy, copy->end, to, 0, false};
    cu_walk((CuNode *)fn, visit_sync, &s);
    return s.found;
}

typedef struct {
    const CudaSource *src;
    const Buffer *buf;
    size_t from, to;
} Reassign;

/* the buffer's variable assigned or stepped in [from, to) */
static bool reassigns(const CuNode *n, void *data) {
    const Reassign *r = data;
    if (n->start >= r->from && n->start < r->to && n->kind == CXCursor_BinaryOperator &&
        n->op == CXBinaryOperator_Assign && n->child_count == 2) {
        CuNode *lhs = cu_strip(n->children[0]);
        if (lhs && (lhs->kind == CXCursor_DeclRefExpr || lhs->kind == CXCursor_MemberRefExpr) &&
            same_buffer(r->src, lhs, r->buf->base))
            return true;
    }
    if (n->start >= r->from && n->start < r->to && n->kind == CXCursor_UnaryOperator && n->child_count == 1 &&
        n->op >= CXUnaryOperator_PostInc && n->op <= CXUnaryOperator_PreDec) {
        CuNode *x = cu_strip(n->children[0]);
        if (x && (x->kind == CXCursor_DeclRefExpr || x->kind == CXCursor_MemberRefExpr) &&
            same_buffer(r->src, x, r->buf->base))
            return true;
    }
    return false;
}

/* --- control flow ------------------------------------------------------------ */

static bool is_jump(const CuNode *s) {
    CuNode *e = cu_strip((CuNode *)s);
    if (!e) return false;
    switch (e->kind) {
    case CXCursor_ReturnStmt:
    case CXCursor_BreakStmt:
    case CXCursor_ContinueStmt:
    case CXCursor_GotoStmt:
    case CXCursor_IndirectGotoStmt:
    case CXCursor_CXXThrowExpr: return true;
    case CXCursor_CallExpr: {
        static const char *const noreturn[] = {"exit", "abort", "_Exit", "quick_exit", "terminate", NULL};
        return cu_name_in(cu_callee(e), noreturn);
    }
    default: return false;
    }
}

/* Where the read follows the copy: the statement of a block that holds the
 * read and comes after the statement holding the copy (in that block or an
 * enclosing one). NULL when the read cannot follow the copy (other branch,
 * a return in between, ...). */
static CuNode *statement_after(const CuNode *copy, const CuNode *read, const CuNode *fn) {
    const CuNode *child = copy;
    for (CuNode *p = copy->parent; p && p != fn; child = p, p = p->parent) {
        if (cu_is_function(p)) return NULL;
        if (p->kind != CXCursor_CompoundStmt) continue;
        uint32_t i = 0;
        while (i < p->child_count && p->children[i] != child) i++;
        bool in_block = read->start >= p->start && read->end <= p->end && cu_contains(p, read);
        for (uint32_t k = i + 1; k < p->child_count; k++) {
            CuNode *s = p->children[k];
            if (in_block && cu_contains(s, read)) return s;
            if (is_jump(s)) return NULL;
        }
        if (in_block) return NULL; /* the read is before the copy, or inside its statement */
    }
    return NULL;
}

/* --- the check ------------------------------------------------------------ */

typedef struct {
    const char *name;
    int dst, kind, stream; /* argument positions */
    bool default_d2h;      /* the kind argument defaults to device-to-host */
} CopyApi;

static const CopyApi copy_apis[] = {
    {"cudaMemcpyAsync", 0, 3, 4, false},
    {"cudaMemcpy2DAsync", 0, 6, 7, false},
    {"cudaMemcpyFromSymbolAsync", 0, 4, 5, true},
};

typedef struct {
    CuNode *copy, *read, *stmt, *fn;
    char *sync;   /* the statement to insert, NULL when no fix */
    bool inserts; /* reported with that fix */
} Candidate;

typedef struct {
    RuleContext *ctx;
    Candidate *items;
    size_t count, capacity;
} Check;

static bool is_d2h(const CuNode *call, const CopyApi *api) {
    uint32_t count;
    cu_call_args(call, &count);
    if ((uint32_t)api->kind >= count) return api->default_d2h;
    CuNode *k = cu_call_arg(call, api->kind);
    return k && k->kind == CXCursor_DeclRefExpr && k->ref_name && strcmp(k->ref_name, "cudaMemcpyDeviceToHost") == 0;
}

/* The text of an expression; inside a macro argument (where the snapshot's
 * range is empty) the text where it is spelled. Heap string or NULL. */
static char *expression_text(const CudaSource *src, const CuNode *n) {
    if (n->start < n->end) return strndup(cu_text(src, n), cu_text_len(n));
    CXSourceRange r = clang_getCursorExtent(n->cursor);
    CXFile f1, f2, main;
    unsigned a, b, x;
    clang_getSpellingLocation(clang_getRangeStart(r), &f1, NULL, NULL, &a);
    clang_getSpellingLocation(clang_getRangeEnd(r), &f2, NULL, NULL, &b);
    clang_getExpansionLocation(clang_getRangeStart(r), &main, NULL, NULL, &x);
    if (!f1 || !main || !clang_File_isEqual(f1, f2) || !clang_File_isEqual(f1, main) || b <= a ||
        b > src->doc->length || b - a > 200)
        return NULL;
    /* inside the macro call's parentheses */
    if (a < n->start) return NULL;
    return strndup(src->doc->text + a, b - a);
}

static bool is_default_stream(const CudaSource *src, CuNode *stream) {
    if (!stream) return true;
    CuNode *s = cu_strip(stream);
    long long v;
    if (s && (s->kind == CXCursor_CXXNullPtrLiteralExpr || s->kind == CXCursor_GNUNullExpr)) return true;
    if (s && cu_int_value(s, &v) && v == 0) return true;
    char *t = expression_text(src, stream);
    bool yes = t && (strcmp(t, "0") == 0 || strcmp(t, "NULL") == 0 || strcmp(t, "nullptr") == 0 ||
                     strcmp(t, "cudaStreamLegacy") == 0);
    free(t);
    return yes;
}

typedef struct {
    const CuNode *decl;
    size_t from, to;
} AssignSearch;

/* decl assigned in [from, to) */
static bool assigns(const CuNode *n, void *data) {
    const AssignSearch *a = data;
    if (n->start < a->from || n->start >= a->to || n->kind != CXCursor_BinaryOperator ||
        n->op != CXBinaryOperator_Assign || n->child_count != 2)
        return false;
    CuNode *lhs = cu_strip(n->children[0]);
    return lhs && lhs->ref == a->decl;
}

/* the stream expression names the same stream again at `at` */
static bool stream_is_stable(const CuNode *stream, const CuNode *fn, const CuNode *copy, const CuNode *at,
                             int depth) {
    CuNode *s = cu_strip((CuNode *)stream);
    if (!s || depth > 4) return false;
    if (s->kind == CXCursor_CXXThisExpr) return true;
    if (s->kind == CXCursor_MemberRefExpr) {
        if (s->child_count == 0) return true; /* an implicit this->member */
        return stream_is_stable(s->children[0], fn, copy, at, depth + 1);
    }
    if (s->kind != CXCursor_DeclRefExpr || !s->ref) return false;
    CuNode *decl = s->ref;
    if (decl->kind == CXCursor_ParmDecl) {
        if (decl->parent != fn) return false;
    } else if (decl->kind == CXCursor_VarDecl) {
        CuNode *dfn = cu_function_of(decl);
        if (dfn && dfn != fn) return false;
        if (dfn) {
            CuNode *scope = decl->parent ? decl->parent->parent : NULL; /* DeclStmt -> block / for */
            if (!scope || !cu_contains(scope, at)) return false;
        }
    } else {
        return false;
    }
    AssignSearch a = {decl, copy->end, at->start};
    return !cu_find(fn, assigns, &a);
}

static void consider_copy(Check *c, CuNode *copy, const CopyApi *api) {
    const CudaSource *src = c->ctx->cuda;
    CuNode *fn = cu_function_of(copy);
    if (!fn || cu_is_device_code(fn) || !is_d2h(copy, api)) return;
    Buffer buf;
    if (!buffer_of_copy(cu_call_arg(copy, api->dst), &buf)) return;
    uint32_t count;
    CuNode **args = cu_call_args(copy, &count);
    CuNode *stream = (uint32_t)api->stream < count ? args[api->stream] : NULL;
    bool default_stream = is_default_stream(src, stream);
    char *stream_text = NULL;
    if (!default_stream) stream_text = expression_text(src, stream);

    Reads r = {.src = src, .fn = fn, .buf = &buf};
    cu_walk(fn, visit_reads, &r);
    if (r.oom) c->ctx->out_of_memory = true;
    if (r.count > 1) qsort(r.items, r.count, sizeof *r.items, by_start);
    for (size_t i = 0; i < r.count; i++) {
        CuNode *read = r.items[i];
        if (read->start < copy->end || cu_contains(copy, read)) continue;
        CuNode *stmt = statement_after(copy, read, fn);
        if (!stmt) continue;
        /* the first read that can follow the copy: is anything waiting before it? */
        if (sync_between(src, fn, copy, read->start, stream_text)) break;
        Reassign ra = {src, &buf, copy->end, read->start};
        if (cu_find(fn, reassigns, &ra)) break;
        if (!array_reserve(&c->items, c->count, &c->capacity, sizeof *c->items, 8)) {
            c->ctx->out_of_memory = true;
            break;
        }
        Candidate *cand = &c->items[c->count++];
        *cand = (Candidate){copy, read, stmt, fn, NULL, false};
        /* the fix: a statement of its own before `stmt` */
        bool can_insert = cu_starts_line(src, stmt) && stmt->start < stmt->end && stmt->kind != CXCursor_CaseStmt &&
                          stmt->kind != CXCursor_DefaultStmt && stmt->kind != CXCursor_LabelStmt;
        if (can_insert) {
            if (default_stream || !stream_text || !stream_is_stable(stream, fn, copy, stmt, 0))
                cand->sync = strdup("cudaDeviceSynchronize();");
            else
                cand->sync = format_string("cudaStreamSynchronize(%s);", stream_text);
        }
        break;
    }
    free(r.items);
    free(stream_text);
}

static bool visit(CuNode *n, void *data) {
    Check *c = data;
    if (n->kind != CXCursor_CallExpr) return true;
    for (size_t i = 0; i < sizeof copy_apis / sizeof *copy_apis; i++)
        if (cu_is_call(n, copy_apis[i].name)) {
            consider_copy(c, n, &copy_apis[i]);
            break;
        }
    return true;
}

static int by_read(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->read->start != y->read->start) return x->read->start < y->read->start ? -1 : 1;
    return x->copy->start < y->copy->start ? -1 : x->copy->start > y->copy->start;
}

static const char *buffer_name(const CuNode *base) { return base->name && *base->name ? base->name : "buffer"; }

static void check(RuleContext *ctx) {
    if (!ctx->cuda || !ctx->cuda->root) return;
    Check c = {ctx, NULL, 0, 0};
    cu_walk(ctx->cuda->root, visit, &c);
    if (c.count > 1) qsort(c.items, c.count, sizeof *c.items, by_read);
    const CudaSource *src = ctx->cuda;
    for (size_t i = 0; i < c.count; i++) {
        Candidate *cand = &c.items[i];
        /* a synchronization that an earlier finding's fix inserts between this copy and read */
        bool covered = false;
        for (size_t k = 0; k < i && !covered; k++) {
            const Candidate *e = &c.items[k];
            if (e->inserts && e->fn == cand->fn && e->stmt->start >= cand->copy->end &&
                e->stmt->start <= cand->read->start)
                covered = true;
        }
        if (covered) {
            free(cand->sync);
            cand->sync = NULL;
            continue;
        }
        Buffer buf;
        const CopyApi *api = NULL;
        for (size_t k = 0; k < sizeof copy_apis / sizeof *copy_apis; k++)
            if (cu_is_call(cand->copy, copy_apis[k].name)) api = &copy_apis[k];
        bool known = api && buffer_of_copy(cu_call_arg(cand->copy, api->dst), &buf);
        size_t copy_line = document_line_of(src->doc, cand->copy->start) + 1;
        ByteRange at = cu_report_range(cand->read);
        Finding *f = rule_report(ctx, at.start, at.end,
                                    "`%s` is read before the %s on line %zu that fills it has finished: the copy is "
                                    "only queued on its stream, and nothing waits for it before this read",
                                    known ? buffer_name(buf.base) : "buffer", cu_callee(cand->copy), copy_line);
        if (f) {
            if (!finding_add_related(f, cu_report_range(cand->copy),
                                     "the asynchronous device-to-host copy"))
                ctx->out_of_memory = true;
            if (cand->sync) {
                char indent[128];
                cu_line_indent(src, cand->stmt->start, indent, sizeof indent);
                size_t line = document_line_of(src->doc, cand->stmt->start);
                char *text = format_string("%s%s\n", indent, cand->sync);
                char title[160];
                snprintf(title, sizeof title, "Insert `%s` before the read", cand->sync);
                Fix *fix = finding_add_fix(f, title, true);
                if (!text || !fix || !fix_add_edit(fix, src->doc->line_starts[line], src->doc->line_starts[line], text))
                    ctx->out_of_memory = true;
                cand->inserts = true;
                free(text);
            }
        }
        free(cand->sync);
        cand->sync = NULL;
    }
    free(c.items);
}

const Rule rule_cu007_unsynchronized_host_read = {
    .code = "CU007", .name = "unsynchronized-host-read", .severity = SEVERITY_ERROR, .correctness = true,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true,
    .summary = "Host reads a buffer that an asynchronous device-to-host copy fills, before synchronizing",
    .documentation = documentation};
