/* Pinning a std::vector in place (pin_in_place_fix.h).
 *
 *     std::vector<float> h(n);
 *     bool h_pinned = false;  // advise: ...
 *     if (!h.empty()) {
 *         h_pinned = cudaHostRegister(h.data(), h.size() * sizeof(h[0]), cudaHostRegisterPortable) == cudaSuccess;
 *         if (!h_pinned) cudaGetLastError();  // ...
 *     }
 *     ...
 *     if (h_pinned) (void)cudaHostUnregister(h.data());
 *     return 0;
 *
 * A failed registration changes nothing but speed: the copies stay pageable,
 * and its error is cleared so that a later cudaGetLastError() check does not
 * report it. Portable, so that the pages count as pinned on every device the
 * program may switch to. Unpinning before each return matters: memory freed
 * while registered stays pinned and mapped, and a later buffer at the same
 * address would be copied from stale pages. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/cuda_host_buffer.h"
#include "pin_in_place_fix.h"

#define MAX_EDITS 64

typedef struct {
    const CudaSource *src;
    const CuNode *decl;
    size_t after; /* returns after the declaration count */
    CuNode *returns[MAX_EDITS];
    size_t count;
    bool too_many;
} Returns;

static bool visit_returns(CuNode *n, void *data) {
    Returns *r = data;
    if (n->kind == CXCursor_LambdaExpr) return false; /* a lambda's return does not end the vector's life */
    if (n->kind == CXCursor_ReturnStmt && n->start >= r->after) {
        if (r->count == MAX_EDITS) r->too_many = true;
        else r->returns[r->count++] = n;
        return false;
    }
    return true;
}

static bool is_identifier_char(char c) {
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* the identifier appears anywhere in the text (a name the fix must not take) */
static bool name_taken(const Document *doc, const char *name) {
    size_t len = strlen(name);
    for (const char *p = doc->text, *end = doc->text + doc->length; p + len <= end; p++) {
        p = memmem(p, (size_t)(end - p), name, len);
        if (!p) return false;
        bool before = p > doc->text && is_identifier_char(p[-1]);
        bool after = p + len < end && is_identifier_char(p[len]);
        if (!before && !after) return true;
    }
    return false;
}

/* the offset just past the `;` that ends statement n, or SIZE_MAX */
static size_t statement_end(const Document *doc, const CuNode *n) {
    size_t i = n->end;
    if (i > 0 && doc->text[i - 1] == ';') return i;
    while (i < doc->length && (doc->text[i] == ' ' || doc->text[i] == '\t')) i++;
    return i < doc->length && doc->text[i] == ';' ? i + 1 : SIZE_MAX;
}

/* the indentation one level in, after indent: four spaces, or a tab */
static void one_level_in(const char *indent, char *out, size_t size) {
    snprintf(out, size, "%s%s", indent, strchr(indent, '\t') ? "\t" : "    ");
}

static bool add(Fix *fix, size_t at, char *text) {
    bool ok = text && fix_add_edit(fix, at, at, text);
    free(text);
    return ok;
}

bool pin_in_place_fix(RuleContext *ctx, Finding *f, const CuNode *decl) {
    const CudaSource *src = ctx->cuda;
    const Document *doc = ctx->doc;
    const char *why;
    if (!src || !src->root || !cu_vector_storage_fixed(src, decl, &why)) return true;
    if (cu_is_host_registered(src->root, decl)) return true;
    const CuNode *stmt = decl->parent, *fn = cu_function_of(decl);
    const CuNode *body = fn->children[fn->child_count - 1];
    if (stmt->start == stmt->end || !cu_starts_line(src, stmt) || doc->text[stmt->end - 1] != ';') return true;
    char flag[160];
    if (snprintf(flag, sizeof flag, "%s_pinned", decl->name) >= (int)sizeof flag || name_taken(doc, flag)) return true;

    Returns r = {.src = src, .decl = decl, .after = stmt->end};
    cu_walk((CuNode *)body, visit_returns, &r);
    if (r.too_many) return true;
    /* where each return gets its unpinning: a line before it, or braces around it */
    for (size_t i = 0; i < r.count; i++) {
        const CuNode *ret = r.returns[i];
        if (ret->start == ret->end) return true; /* spelled in a macro */
        if (!(ret->parent && ret->parent->kind == CXCursor_CompoundStmt && cu_starts_line(src, ret)) &&
            statement_end(doc, ret) == SIZE_MAX)
            return true;
    }
    /* falling off the end of the body: before its closing brace, alone on its line */
    bool falls_off = body->child_count == 0 || body->children[body->child_count - 1]->kind != CXCursor_ReturnStmt;
    size_t close = body->end - 1;
    if (falls_off && (doc->text[close] != '}' || !cu_starts_line(src, &(CuNode){.start = (uint32_t)close})))
        return true;

    char indent[128], inner[136], title[200];
    cu_line_indent(src, stmt->start, indent, sizeof indent);
    one_level_in(indent, inner, sizeof inner);
    const char *v = decl->name;
    snprintf(title, sizeof title, "Pin `%s` in place with cudaHostRegister (unpinned before it goes)", v);
    Fix *fix = finding_add_fix(f, title, false);
    if (!fix) return false;
    char *unpin = format_string("if (%s) (void)cudaHostUnregister(%s.data());", flag, v);
    if (!unpin) return false;
    bool ok = add(fix, stmt->end,
                  format_string("\n%sbool %s = false;  // pinned in place (advise): copies to and from %s run at "
                                "full bus speed\n"
                                "%sif (!%s.empty()) {\n"
                                "%s%s = cudaHostRegister(%s.data(), %s.size() * sizeof(%s[0]),\n"
                                "%s    cudaHostRegisterPortable) == cudaSuccess;\n"
                                "%sif (!%s) cudaGetLastError();  // not pinned: the copies stay pageable, only slower\n"
                                "%s}",
                                indent, flag, v, indent, v, inner, flag, v, v, v, inner, inner, flag, indent));
    for (size_t i = 0; ok && i < r.count; i++) {
        const CuNode *ret = r.returns[i];
        if (ret->parent && ret->parent->kind == CXCursor_CompoundStmt && cu_starts_line(src, ret)) {
            char at[128];
            cu_line_indent(src, ret->start, at, sizeof at);
            ok = add(fix, ret->start, format_string("%s\n%s", unpin, at));
        } else { /* `if (x) return y;`: the return gets braces */
            ok = add(fix, ret->start, format_string("{ %s ", unpin)) &&
                 add(fix, statement_end(doc, ret), format_string(" }"));
        }
    }
    if (ok && falls_off) {
        size_t line_start = doc->line_starts[document_line_of(doc, close)];
        ok = add(fix, line_start, format_string("%s%s\n", indent, unpin));
    }
    free(unpin);
    return ok;
}
