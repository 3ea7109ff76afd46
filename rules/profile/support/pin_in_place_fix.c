/* Pinning a std::vector in place (pin_in_place_fix.h): one local guard,
 * declared right after the vector, pins its storage and unpins it in its
 * destructor:
 *
 *     std::vector<float> h(n);
 *     // pinned in place (advise): ...
 *     struct h_pin_guard {
 *         void *p = nullptr;
 *         h_pin_guard(void *q, size_t n) { ... cudaHostRegister(q, n, cudaHostRegisterPortable) ... }
 *         ~h_pin_guard() { if (p) (void)cudaHostUnregister(p); }
 *         ...
 *     } h_pinned(h.data(), h.size() * sizeof(h[0]));
 *
 * Destroyed in reverse order of declaration, the guard unpins the storage
 * just before the vector frees it, on every way out of the scope: returns
 * (also those spelled in macros or in #ifdef branches libclang did not
 * parse), exceptions, breaks out of nothing else. Memory freed while still
 * registered stays pinned and mapped, and a later buffer at the same address
 * would be copied from stale pages. A failed registration changes nothing
 * but speed: its error is cleared so that a later cudaGetLastError() check
 * does not report it. Portable, so that the pages count as pinned on every
 * device the program may switch to. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_host_buffer.h"
#include "rules/profile/support/pin_in_place_fix.h"
#include "analysis/base/text_format.h"

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

/* Where the guard goes: the end of the declaration's last line, when only
 * blanks or a `//` comment follow its `;` there (the comment stays with the
 * declaration); SIZE_MAX otherwise. *crlf: that line ends in "\r\n". */
static size_t insertion_point(const Document *doc, const CuNode *stmt, bool *crlf) {
    size_t line = document_line_of(doc, stmt->end - 1);
    size_t end = document_line_end(doc, line);
    size_t i = stmt->end;
    while (i < end && (doc->text[i] == ' ' || doc->text[i] == '\t')) i++;
    if (i < end && !(doc->text[i] == '/' && i + 1 < end && doc->text[i + 1] == '/') && doc->text[i] != '\r')
        return SIZE_MAX;
    *crlf = end > 0 && doc->text[end - 1] == '\r';
    return *crlf ? end - 1 : end;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* What makes pinning unsafe beyond the vector's storage: an asynchronous
 * call that uses it (a pageable cudaMemcpyAsync completes or stages before
 * it returns, and the code may rely on that; pinned, it would race with the
 * host), the function pinning or unpinning memory itself (a second
 * registration of the same pages fails), longjmp (it skips the guard's
 * destructor). */
static bool refuses_pinning(const CuNode *n, void *vector) {
    if (n->kind != CXCursor_CallExpr) return false;
    const char *callee = cu_callee(n);
    return strcmp(callee, "longjmp") == 0 || strcmp(callee, "siglongjmp") == 0 ||
           strcmp(callee, "cudaHostRegister") == 0 || strcmp(callee, "cudaHostUnregister") == 0 ||
           (ends_with(callee, "Async") && cu_mentions(n, vector));
}

/* the indentation one level in, after indent: four spaces, or a tab */
static void one_level_in(const char *indent, char *out, size_t size) {
    snprintf(out, size, "%s%s", indent, strchr(indent, '\t') ? "\t" : "    ");
}

bool pin_in_place_fix(RuleContext *ctx, Finding *f, const CuNode *decl) {
    const CudaSource *src = ctx->cuda;
    const Document *doc = ctx->doc;
    const char *why;
    if (!src || !src->root || !cu_vector_storage_fixed(decl, &why)) return true;
    if (cu_is_host_registered(src->root, decl)) return true;
    const CuNode *stmt = decl->parent, *fn = cu_function_of(decl);
    if (cu_find(fn->children[fn->child_count - 1], refuses_pinning, (void *)decl)) return true;
    if (stmt->start == stmt->end || !cu_starts_line(src, stmt) || doc->text[stmt->end - 1] != ';') return true;
    bool crlf = false;
    size_t at = insertion_point(doc, stmt, &crlf);
    if (at == SIZE_MAX) return true;
    const char *v = decl->name;
    char guard[160], object[160];
    if (snprintf(guard, sizeof guard, "%s_pin_guard", v) >= (int)sizeof guard ||
        snprintf(object, sizeof object, "%s_pinned", v) >= (int)sizeof object || name_taken(doc, guard) ||
        name_taken(doc, object))
        return true;

    char indent[128], in[136], title[200];
    cu_line_indent(src, stmt->start, indent, sizeof indent);
    one_level_in(indent, in, sizeof in);
    const char *nl = crlf ? "\r\n" : "\n";
    char *text = format_string(
        "%s%s// pinned in place (advise): copies to and from %s run at full bus speed; unpinned before it goes%s"
        "%sstruct %s {%s"
        "%svoid *p = nullptr;%s"
        "%s%s(void *q, size_t bytes) {%s"
        "%s    if (bytes && cudaHostRegister(q, bytes, cudaHostRegisterPortable) == cudaSuccess) p = q;%s"
        "%s    else if (bytes) cudaGetLastError();  // not pinned: the copies stay pageable, only slower%s"
        "%s}%s"
        "%s~%s() { if (p) (void)cudaHostUnregister(p); }%s"
        "%s%s(const %s &) = delete;%s"
        "%s%s &operator=(const %s &) = delete;%s"
        "%s} %s(%s.data(), %s.size() * sizeof(%s[0]));",
        nl, indent, v, nl,                 /* the comment */
        indent, guard, nl,                 /* struct */
        in, nl,                            /* the pointer */
        in, guard, nl,                     /* constructor */
        in, nl, in, nl, in, nl,            /* its body */
        in, guard, nl,                     /* destructor */
        in, guard, guard, nl,              /* no copies */
        in, guard, guard, nl,              /* no assignment */
        indent, object, v, v, v);
    if (!text) return false;
    snprintf(title, sizeof title, "Pin `%s` in place with cudaHostRegister (unpinned before it goes)", v);
    Fix *fix = finding_add_fix(f, title, false);
    bool ok = fix && fix_add_edit(fix, at, at, text);
    free(text);
    return ok;
}
