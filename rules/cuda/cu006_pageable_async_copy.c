/* CU006 pageable-async-copy: cudaMemcpyAsync (and its 2-D and symbol
 * variants) whose host side is pageable memory from malloc, calloc, new or a
 * std::vector. The copy silently becomes synchronous and is staged through a
 * driver buffer. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_host_buffer.h"
#include "rules/rule.h"
#include "analysis/base/text_format.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `cudaMemcpyAsync`, `cudaMemcpy2DAsync`, `cudaMemcpyToSymbolAsync` and\n"
    "`cudaMemcpyFromSymbolAsync` whose host pointer (the destination of a device-to-host copy,\n"
    "the source of a host-to-device copy) is pageable memory: it comes from `malloc`, `calloc`,\n"
    "`realloc`, `new T[n]`, or a `std::vector` (`v.data()`, `&v[0]`).\n"
    "\n"
    "The copy direction is read from the `cudaMemcpyKind` argument when it is written as an\n"
    "enumerator; with `cudaMemcpyDefault` or a variable the host side is unknown and nothing is\n"
    "reported. The pointer is followed through local variables, globals and struct fields of this\n"
    "file: every assignment to it must be a pageable allocation.\n"
    "\n"
    "Not flagged: pointers from `cudaMallocHost`, `cudaHostAlloc` or `cudaMallocManaged`,\n"
    "memory registered with `cudaHostRegister` (here or in a helper of this file that receives\n"
    "the pointer), function parameters and other pointers whose allocation is not visible,\n"
    "device-to-device copies, and synchronous `cudaMemcpy` (it blocks anyway).\n"
    "\n"
    "## Why is this slow?\n"
    "The GPU's copy engines can only read and write page-locked (pinned) host memory. For a\n"
    "pageable buffer the driver copies through a small pinned staging buffer, chunk by chunk,\n"
    "with the CPU taking part: the transfer runs at a fraction of the bus bandwidth and the call\n"
    "no longer returns at once. A device-to-host `cudaMemcpyAsync` into pageable memory returns\n"
    "only when the copy has finished, and a host-to-device one returns after staging, so the copy\n"
    "cannot overlap kernels or other copies: the stream pipeline the code was written for\n"
    "degrades to a serial one, silently.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "float *h_out = (float *)malloc(bytes);\n"
    "scale<<<grid, block, 0, stream>>>(d_out, n);\n"
    "cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, stream);\n"
    "cudaStreamSynchronize(stream);\n"
    "free(h_out);\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "float *h_out = nullptr;\n"
    "cudaMallocHost(&h_out, bytes);  // pinned: the copy engine reads it directly\n"
    "scale<<<grid, block, 0, stream>>>(d_out, n);\n"
    "cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, stream);\n"
    "cudaStreamSynchronize(stream);\n"
    "cudaFreeHost(h_out);\n"
    "```\n"
    "For a `std::vector`, keep the data in a pinned buffer instead, or pin the vector's storage\n"
    "once with `cudaHostRegister(v.data(), bytes, cudaHostRegisterDefault)` (and\n"
    "`cudaHostUnregister` before it is resized or destroyed). Pinned memory is a scarce resource:\n"
    "allocate it once, outside loops, and reuse it.\n"
    "\n"
    "## Fix safety\n"
    "When the pointer is a local variable allocated with `malloc(bytes)` or `new T[n]` (for a\n"
    "plain-data `T`, without an initializer) and released with `free`/`delete[]` in the same\n"
    "function, is assigned only once, is not moved, returned, stored elsewhere or captured by a\n"
    "lambda, the fix rewrites the allocation to `cudaMallocHost(&p, bytes)` (`n * sizeof(T)` for\n"
    "`new`) and every release to `cudaFreeHost(p)`. It is **unsafe**: pinned allocation is much\n"
    "slower than `malloc` (on the H200 host 16 MiB took 9 ms, 7x what `cudaHostRegister` of the\n"
    "same bytes takes), takes physical memory away from the system, and code that released the\n"
    "buffer some other way would now be wrong. Pinned, the asynchronous copies no longer wait:\n"
    "host code that reads or writes the buffer before synchronizing races with them (CU007 reports\n"
    "such reads). Memory from `calloc` (zero-filled), vectors and\n"
    "allocations elsewhere get advice only: pinning a vector in place (PR008's fix) would make its\n"
    "asynchronous copies really asynchronous, and code that reads or writes it before a\n"
    "synchronization, correct while the copy was staged, would race with the copy.\n";

/* --- small helpers ------------------------------------------------------ */

static bool is_pointer_type(const CuNode *n) {
    return n && cu_canonical_type(n).kind == CXType_Pointer;
}

/* the declaration an object expression names (a variable or a field) */
static CuNode *object_decl(CuNode *obj) {
    obj = cu_strip(obj);
    if (obj && (obj->kind == CXCursor_DeclRefExpr || obj->kind == CXCursor_MemberRefExpr)) return obj->ref;
    return NULL;
}

/* --- where a host pointer comes from ---------------------------------- */

typedef enum {
    ORIGIN_UNKNOWN,
    ORIGIN_NULL,
    ORIGIN_PINNED,
    ORIGIN_MALLOC,
    ORIGIN_CALLOC,
    ORIGIN_PAGEABLE, /* realloc, aligned_alloc, posix_memalign, ... */
    ORIGIN_NEW_ARRAY,
    ORIGIN_NEW,
    ORIGIN_VECTOR,
} OriginKind;

typedef struct {
    OriginKind kind;
    CuNode *alloc;  /* the allocating expression (or the vector's declaration) */
    CuNode *decl;   /* the variable that holds the allocation directly */
    CuNode *def;    /* its defining node: the VarDecl or the assignment */
    size_t defs;    /* non-null definitions of decl */
    bool modified;  /* ++, +=, ... on decl */
} Origin;

typedef struct {
    RuleContext *ctx;
    CuNode *root;
} Check;

static const char *const pinned_allocators[] = {"cudaMallocHost", "cudaHostAlloc", "cudaMallocManaged", NULL};
static const char *const other_pageable[] = {"realloc", "aligned_alloc", "valloc", "memalign", "_aligned_malloc",
                                             "reallocf", NULL};

static void origin_of(Check *c, CuNode *expr, int depth, Origin *out);

typedef struct {
    Check *check;
    const CuNode *decl;
    int depth;
    Origin result;   /* the first pageable definition */
    bool unknown;
    bool pageable;
    size_t defs;
    bool modified;
} DefSearch;

static void add_def(DefSearch *s, CuNode *def, CuNode *value) {
    Origin o = {0};
    if (value) origin_of(s->check, value, s->depth + 1, &o);
    switch (o.kind) {
    case ORIGIN_NULL: return;
    case ORIGIN_UNKNOWN:
    case ORIGIN_PINNED: s->unknown = true; s->defs++; return;
    default: break;
    }
    s->defs++;
    if (!s->pageable) {
        s->pageable = true;
        s->result = o;
        if (!o.decl) { /* the allocation is assigned to this variable directly */
            s->result.decl = (CuNode *)s->decl;
            s->result.def = def;
        }
    }
}

static bool visit_defs(CuNode *n, void *data) {
    DefSearch *s = data;
    if (s->unknown) return false;
    if ((n->kind == CXCursor_VarDecl || n->kind == CXCursor_FieldDecl) && n == s->decl) {
        /* the initializer: the last expression child */
        CuNode *init = NULL;
        for (uint32_t i = 0; i < n->child_count; i++)
            if (clang_isExpression(n->children[i]->kind)) init = n->children[i];
        if (init) add_def(s, n, init);
        return true;
    }
    if (n->kind == CXCursor_MemberRef && n->ref == s->decl) { /* a constructor's initializer list */
        s->unknown = true;
        return false;
    }
    if (n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Assign && n->child_count == 2 &&
        cu_refers_to(n->children[0], s->decl)) {
        add_def(s, n, n->children[1]);
        return true;
    }
    if (n->kind == CXCursor_CompoundAssignOperator && n->child_count == 2 && cu_refers_to(n->children[0], s->decl)) {
        s->modified = true;
        return true;
    }
    if (n->kind == CXCursor_UnaryOperator && n->child_count == 1 && cu_refers_to(n->children[0], s->decl)) {
        if (n->op >= CXUnaryOperator_PostInc && n->op <= CXUnaryOperator_PreDec) {
            s->modified = true;
        } else if (n->op == CXUnaryOperator_AddrOf) {
            /* &p handed to an allocator (or to anything else: unknown) */
            const CuNode *child;
            CuNode *p = cu_logical_parent(n, &child);
            if (p && p->kind == CXCursor_CallExpr && cu_name_in(cu_callee(p), pinned_allocators)) {
                s->unknown = true; /* pinned */
                s->defs++;
            } else if (p && cu_is_call(p, "posix_memalign")) {
                if (!s->pageable) {
                    s->pageable = true;
                    s->result = (Origin){.kind = ORIGIN_PAGEABLE, .alloc = p, .decl = (CuNode *)s->decl, .def = p};
                }
                s->defs++;
            } else {
                s->unknown = true;
            }
        }
        return true;
    }
    return true;
}

static void origin_of_variable(Check *c, CuNode *decl, int depth, Origin *out) {
    out->kind = ORIGIN_UNKNOWN;
    if (!decl || depth > 4) return;
    if (decl->kind != CXCursor_VarDecl && decl->kind != CXCursor_FieldDecl) return; /* parameters: unknown */
    if (!is_pointer_type(decl)) return;
    if (decl->attrs & (CU_ATTR_DEVICE | CU_ATTR_CONSTANT | CU_ATTR_SHARED)) return;
    /* locals: their function; globals and fields: the whole file */
    CuNode *scope = decl->kind == CXCursor_VarDecl ? cu_function_of(decl) : NULL;
    if (!scope) scope = c->root;
    DefSearch s = {.check = c, .decl = decl, .depth = depth};
    cu_walk(scope, visit_defs, &s);
    if (s.unknown || !s.pageable) return;
    if (cu_is_host_registered(c->root, decl)) return;
    *out = s.result;
    if (out->decl == decl) {
        out->defs = s.defs;
        out->modified = s.modified;
    }
}

static void origin_of(Check *c, CuNode *expr, int depth, Origin *out) {
    memset(out, 0, sizeof *out);
    CuNode *e = cu_strip(expr);
    if (!e || depth > 6) return;
    switch (e->kind) {
    case CXCursor_CXXNullPtrLiteralExpr:
    case CXCursor_GNUNullExpr: out->kind = ORIGIN_NULL; return;
    case CXCursor_IntegerLiteral: {
        long long v;
        if (cu_int_value(e, &v) && v == 0) out->kind = ORIGIN_NULL;
        return;
    }
    case CXCursor_CXXNewExpr: {
        const char *t = cu_text(c->ctx->cuda, e);
        size_t len = cu_text_len(e), i = 3;
        if (len < 4 || strncmp(t, "new", 3) != 0) return;
        while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n')) i++;
        if (i < len && t[i] == '(') return; /* placement new */
        out->kind = memchr(t, '[', len) ? ORIGIN_NEW_ARRAY : ORIGIN_NEW;
        out->alloc = e;
        return;
    }
    case CXCursor_CallExpr: {
        const char *callee = cu_callee(e);
        if (strcmp(callee, "malloc") == 0) out->kind = ORIGIN_MALLOC;
        else if (strcmp(callee, "calloc") == 0) out->kind = ORIGIN_CALLOC;
        else if (cu_name_in(callee, other_pageable)) out->kind = ORIGIN_PAGEABLE;
        else if (strcmp(callee, "data") == 0) {
            const char *method;
            CuNode *obj = cu_member_call_object(e, &method);
            if (obj && cu_is_std_vector(obj)) {
                CuNode *d = object_decl(obj);
                if (d && cu_is_host_registered(c->root, d)) return;
                out->kind = ORIGIN_VECTOR;
                out->alloc = d ? d : e;
            }
            return;
        }
        if (out->kind != ORIGIN_UNKNOWN) out->alloc = e;
        return;
    }
    case CXCursor_BinaryOperator:
        if ((e->op == CXBinaryOperator_Add || e->op == CXBinaryOperator_Sub) && e->child_count == 2) {
            CuNode *p = is_pointer_type(cu_strip(e->children[0])) ? e->children[0] : e->children[1];
            if (e->op == CXBinaryOperator_Sub && p != e->children[0]) return;
            origin_of(c, p, depth + 1, out);
        }
        return;
    case CXCursor_UnaryOperator:
        if (e->op == CXUnaryOperator_AddrOf && e->child_count == 1) {
            CuNode *x = cu_strip(e->children[0]);
            if (x && x->kind == CXCursor_ArraySubscriptExpr && x->child_count == 2) {
                origin_of(c, x->children[0], depth + 1, out);
            } else if (x && x->kind == CXCursor_CallExpr) {
                const char *method;
                CuNode *obj = cu_member_call_object(x, &method);
                if (obj && (strcmp(method, "operator[]") == 0 || strcmp(method, "front") == 0 ||
                            strcmp(method, "at") == 0) &&
                    cu_is_std_vector(obj)) {
                    CuNode *d = object_decl(obj);
                    if (d && cu_is_host_registered(c->root, d)) return;
                    out->kind = ORIGIN_VECTOR;
                    out->alloc = d ? d : x;
                }
            }
        }
        return;
    case CXCursor_DeclRefExpr:
    case CXCursor_MemberRefExpr: origin_of_variable(c, e->ref, depth, out); return;
    default: return;
    }
}

/* --- the fix ------------------------------------------------------------ */

static bool simple_expression(const char *t, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!(t[i] == '_' || t[i] == '.' || (t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'z') ||
              (t[i] >= 'A' && t[i] <= 'Z')))
            return false;
    return len > 0;
}

typedef struct {
    const CuNode *decl;
    CuNode *frees[16];
    size_t free_count;
    CuNode *deletes[16];
    size_t delete_count;
    bool bad;
} Releases;

static bool visit_releases(CuNode *n, void *data) {
    Releases *r = data;
    if (r->bad) return false;
    if (n->kind == CXCursor_LambdaExpr && cu_mentions(n, r->decl)) {
        r->bad = true; /* captured */
        return false;
    }
    if (n->kind == CXCursor_CallExpr) {
        const char *callee = cu_callee(n);
        uint32_t count;
        CuNode **args = cu_call_args(n, &count);
        if (strcmp(callee, "free") == 0 && count == 1 && cu_refers_to(args[0], r->decl)) {
            if (r->free_count == 16) r->bad = true;
            else r->frees[r->free_count++] = n;
            return false;
        }
        if (cu_name_in(callee, other_pageable) || strcmp(callee, "calloc") == 0)
            for (uint32_t i = 0; i < count; i++)
                if (cu_mentions(args[i], r->decl)) r->bad = true;
        return true;
    }
    if (n->kind == CXCursor_CXXDeleteExpr && n->child_count >= 1 && cu_refers_to(n->children[n->child_count - 1], r->decl)) {
        if (r->delete_count == 16) r->bad = true;
        else r->deletes[r->delete_count++] = n;
        return false;
    }
    if ((n->kind == CXCursor_DeclRefExpr) && n->ref == r->decl) {
        /* escapes: returned, stored in another variable or field */
        const CuNode *child;
        CuNode *p = cu_logical_parent(n, &child);
        if (p && p->kind == CXCursor_ReturnStmt) r->bad = true;
        if (p && p->kind == CXCursor_VarDecl && p != r->decl) r->bad = true;
        if (p && p->kind == CXCursor_BinaryOperator && p->op == CXBinaryOperator_Assign && p->child_count == 2 &&
            p->children[1] == child)
            r->bad = true;
        if (p && p->kind == CXCursor_InitListExpr) r->bad = true;
    }
    return true;
}

static bool delete_is_array(const CudaSource *src, const CuNode *del) {
    const char *t = cu_text(src, del);
    size_t len = cu_text_len(del), i = 6;
    if (len < 7 || strncmp(t, "delete", 6) != 0) return false;
    while (i < len && (t[i] == ' ' || t[i] == '\t')) i++;
    return i < len && t[i] == '[';
}

static void offer_fix(Check *c, Finding *f, const Origin *o, const CuNode *copy) {
    const CudaSource *src = c->ctx->cuda;
    const CuNode *decl = o->decl, *def = o->def, *alloc = o->alloc;
    if (!decl || !def || !alloc || decl->kind != CXCursor_VarDecl) return;
    if (o->kind != ORIGIN_MALLOC && o->kind != ORIGIN_NEW_ARRAY) return;
    CuNode *fn = cu_function_of(decl);
    if (!fn || fn != cu_function_of(copy) || fn->kind == CXCursor_LambdaExpr) return;
    if (o->defs != 1 || o->modified) return;
    if (alloc->start == alloc->end || def->start == def->end) return; /* inside a macro */

    /* the size in bytes */
    char *bytes = NULL;
    if (o->kind == ORIGIN_MALLOC) {
        uint32_t count;
        CuNode **args = cu_call_args(alloc, &count);
        if (count != 1 || args[0]->start == args[0]->end) return;
        bytes = strndup(cu_text(src, args[0]), cu_text_len(args[0]));
    } else {
        const char *t = cu_text(src, alloc);
        size_t len = cu_text_len(alloc);
        const char *open = memchr(t, '[', len);
        if (!open || t[len - 1] != ']') return; /* an initializer follows */
        CXType pointee = clang_getPointeeType(clang_getCursorType(alloc->cursor));
        if (pointee.kind == CXType_Invalid || !clang_isPODType(pointee)) return;
        const char *n = open + 1;
        size_t n_len = (size_t)(t + len - 1 - n);
        while (n_len && *n == ' ') n++, n_len--;
        while (n_len && n[n_len - 1] == ' ') n_len--;
        CXString ts = clang_getTypeSpelling(pointee);
        bool simple = simple_expression(n, n_len);
        bytes = format_string(simple ? "%.*s * sizeof(%s)" : "(%.*s) * sizeof(%s)", (int)n_len, n,
                              clang_getCString(ts));
        clang_disposeString(ts);
    }
    if (!bytes) return;

    Releases r = {.decl = decl};
    cu_walk(fn, visit_releases, &r);
    bool ok = !r.bad;
    if (o->kind == ORIGIN_MALLOC) ok = ok && r.free_count > 0 && r.delete_count == 0;
    else {
        ok = ok && r.delete_count > 0 && r.free_count == 0;
        for (size_t i = 0; ok && i < r.delete_count; i++) ok = delete_is_array(src, r.deletes[i]);
    }

    /* the allocation: `T *p = ...;` or `p = ...;` */
    char indent[128];
    size_t def_start = 0, def_end = 0;
    char *def_text = NULL;
    if (ok && def->kind == CXCursor_VarDecl) {
        CuNode *stmt = def->parent;
        CuNode *init = NULL;
        for (uint32_t i = 0; i < def->child_count; i++)
            if (clang_isExpression(def->children[i]->kind)) init = def->children[i];
        ok = stmt && stmt->kind == CXCursor_DeclStmt && stmt->child_count == 1 && stmt->parent &&
             stmt->parent->kind == CXCursor_CompoundStmt && cu_starts_line(src, stmt) && init &&
             stmt->end > stmt->start && src->doc->text[stmt->end - 1] == ';' && init->end <= stmt->end - 1 &&
             init->start > def->start;
        /* `auto p = nullptr` would change the type */
        if (ok && memmem(src->doc->text + def->start, init->start - def->start, "auto", 4)) ok = false;
        if (ok) {
            /* only `= init` between the name and the initializer; only `;` after it */
            size_t eq = init->start;
            while (eq > def->start && (src->doc->text[eq - 1] == ' ' || src->doc->text[eq - 1] == '\t')) eq--;
            ok = eq > def->start && src->doc->text[eq - 1] == '=';
            for (size_t i = init->end; ok && i < stmt->end - 1; i++)
                ok = src->doc->text[i] == ' ' || src->doc->text[i] == '\t';
        }
        if (ok) {
            cu_line_indent(src, stmt->start, indent, sizeof indent);
            def_start = init->start;
            def_end = stmt->end;
            def_text = format_string("nullptr;\n%scudaMallocHost(&%s, %s);", indent, decl->name, bytes);
        }
    } else if (ok && def->kind == CXCursor_BinaryOperator) {
        CuNode *lhs = cu_strip(def->children[0]);
        ok = cu_statement_of(def) == def && def->parent && def->parent->kind == CXCursor_CompoundStmt && lhs &&
             lhs->kind == CXCursor_DeclRefExpr && cu_text_eq(src, lhs, decl->name);
        if (ok) {
            def_start = def->start;
            def_end = def->end;
            def_text = format_string("cudaMallocHost(&%s, %s)", decl->name, bytes);
        }
    } else {
        ok = false;
    }
    free(bytes);
    if (!ok || !def_text) {
        free(def_text);
        return;
    }
    /* releases: `free(p)` -> `cudaFreeHost(p)`, `delete[] p` -> `cudaFreeHost(p)` */
    for (size_t i = 0; ok && i < r.free_count; i++) {
        CuNode *callee = r.frees[i]->children[0];
        ok = r.frees[i]->start < r.frees[i]->end && (cu_text_eq(src, callee, "free") || cu_text_eq(src, callee, "std::free"));
    }
    for (size_t i = 0; ok && i < r.delete_count; i++) ok = r.deletes[i]->start < r.deletes[i]->end;
    if (!ok) {
        free(def_text);
        return;
    }
    char title[256];
    snprintf(title, sizeof title, "Allocate `%s` with cudaMallocHost and release it with cudaFreeHost", decl->name);
    Fix *fix = finding_add_fix(f, title, false);
    if (!fix || !fix_add_edit(fix, def_start, def_end, def_text)) c->ctx->out_of_memory = true;
    free(def_text);
    for (size_t i = 0; fix && i < r.free_count; i++) {
        CuNode *callee = r.frees[i]->children[0];
        if (!fix_add_edit(fix, callee->start, callee->end, "cudaFreeHost")) c->ctx->out_of_memory = true;
    }
    for (size_t i = 0; fix && i < r.delete_count; i++) {
        char *text = format_string("cudaFreeHost(%s)", decl->name);
        if (!text || !fix_add_edit(fix, r.deletes[i]->start, r.deletes[i]->end, text)) c->ctx->out_of_memory = true;
        free(text);
    }
}

/* --- the check ---------------------------------------------------------- */

/* the asynchronous copies: the synchronous ones block anyway */
static const char *const async_copies[] = {"cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaMemcpyToSymbolAsync",
                                           "cudaMemcpyFromSymbolAsync", NULL};

static const char *origin_words(OriginKind k) {
    switch (k) {
    case ORIGIN_MALLOC: return "malloc";
    case ORIGIN_CALLOC: return "calloc";
    case ORIGIN_NEW_ARRAY: return "new[]";
    case ORIGIN_NEW: return "new";
    case ORIGIN_VECTOR: return "a std::vector";
    default: return "a pageable allocator";
    }
}

static bool visit(CuNode *n, void *data) {
    Check *c = data;
    if (n->kind != CXCursor_CallExpr) return true;
    if (!cu_name_in(cu_callee(n), async_copies)) return true;
    CuNode *fn = cu_function_of(n);
    if (!fn || cu_is_device_code(fn)) return true;
    CuNode *host;
    CuCopyDirection dir = cu_copy_host_argument(n, &host);
    if (dir == CU_COPY_OTHER) return true;
    Origin o;
    origin_of(c, host, 0, &o);
    if (o.kind == ORIGIN_UNKNOWN || o.kind == ORIGIN_NULL || o.kind == ORIGIN_PINNED || !o.alloc) return true;

    char what[160];
    if (o.decl) snprintf(what, sizeof what, "`%s` is allocated with %s", o.decl->name, origin_words(o.kind));
    else if (o.kind == ORIGIN_VECTOR && o.alloc->name && *o.alloc->name)
        snprintf(what, sizeof what, "`%s` is a std::vector", o.alloc->name);
    else snprintf(what, sizeof what, "the buffer comes from %s", origin_words(o.kind));
    ByteRange at = cu_report_range(n);
    Finding *f = rule_report(
        c->ctx, at.start, at.end,
        "%s %s pageable host memory (%s): the driver stages it through a pinned buffer, so the copy is "
        "synchronous with the host and cannot overlap other work; allocate the buffer with cudaMallocHost or pin it "
        "with cudaHostRegister",
        cu_callee(n), dir == CU_COPY_TO_HOST ? "writes into" : "reads from", what);
    if (!f) return true;
    char *msg = format_string("%s: pageable memory", o.kind == ORIGIN_VECTOR ? "std::vector storage" : "allocated here");
    if (!msg || !finding_add_related(f, cu_report_range(o.alloc), msg)) c->ctx->out_of_memory = true;
    free(msg);
    offer_fix(c, f, &o, n);
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->cuda || !ctx->cuda->root) return;
    Check c = {ctx, ctx->cuda->root};
    cu_walk(ctx->cuda->root, visit, &c);
}

const Rule rule_cu006_pageable_async_copy = {
    .code = "CU006", .name = "pageable-async-copy", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true, .measure = MEASURE_COPY,
    .summary = "cudaMemcpyAsync with pageable host memory (malloc, new, std::vector) runs synchronously",
    .documentation = documentation};
