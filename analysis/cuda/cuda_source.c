#include "analysis/cuda/cuda_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/monotonic_clock.h"
#include "analysis/base/growable.h"
#include "analysis/finding.h"
#include "analysis/cuda/cuda_pch.h"
#include "analysis/cuda/cuda_preamble.h"
#include "analysis/cuda/include_search.h"
#include "analysis/base/text_format.h"

#define ARENA_BLOCK (64 * 1024)
#define MAX_INCLUDE_ROUNDS 6

struct CuArena {
    struct CuArena *next;
    size_t used, size;
    char data[];
};

static void *arena_alloc(CudaSource *src, size_t n) {
    n = (n + 15) & ~(size_t)15;
    struct CuArena *a = src->arena;
    if (!a || a->used + n > a->size) {
        size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        struct CuArena *b = malloc(sizeof *b + size);
        if (!b) return NULL;
        b->next = a;
        b->used = 0;
        b->size = size;
        src->arena = a = b;
    }
    void *p = a->data + a->used;
    a->used += n;
    return p;
}

static const char *arena_string(CudaSource *src, CXString s) {
    const char *c = clang_getCString(s);
    size_t n = c ? strlen(c) : 0;
    char *copy = arena_alloc(src, n + 1);
    if (copy) {
        if (n) memcpy(copy, c, n);
        copy[n] = '\0';
    }
    clang_disposeString(s);
    return copy ? copy : "";
}

static void arena_free(CudaSource *src) {
    struct CuArena *a = src->arena;
    while (a) {
        struct CuArena *next = a->next;
        free(a);
        a = next;
    }
    src->arena = NULL;
    src->root = NULL;
}

/* ---- snapshot ------------------------------------------------------------ */

typedef struct {
    CudaSource *src;
    CXFile main_file;
    CuNode *parent;
    /* declarations in the main file, for resolving references */
    CuNode **decls;
    size_t decl_count, decl_cap;
} Builder;

/* Where a location sits in the main file. Tokens written in a macro's
 * arguments (`CHECK(cudaMemcpyAsync(...))`) keep their own place: their file
 * location lies at or after the macro's use. Tokens from a macro's body map
 * to the macro's use (their file location is the #define, before the use). */
static bool main_offset(Builder *b, CXSourceLocation loc, unsigned *offset) {
    CXFile fe, ff;
    unsigned oe, of;
    clang_getExpansionLocation(loc, &fe, NULL, NULL, &oe);
    if (!fe || !clang_File_isEqual(fe, b->main_file)) return false;
    clang_getFileLocation(loc, &ff, NULL, NULL, &of);
    *offset = ff && clang_File_isEqual(ff, b->main_file) && of > oe ? of : oe;
    return true;
}

static bool offsets_of(Builder *b, CXCursor c, uint32_t *start, uint32_t *end) {
    CXSourceRange r = clang_getCursorExtent(c);
    unsigned oa, oz;
    if (!main_offset(b, clang_getRangeStart(r), &oa)) return false;
    if (!main_offset(b, clang_getRangeEnd(r), &oz) || oz < oa) oz = oa;
    size_t len = b->src->doc->length;
    *start = oa > len ? (uint32_t)len : oa;
    *end = oz > len ? (uint32_t)len : oz;
    return true;
}

static bool add_child(CudaSource *src, CuNode *parent, CuNode *child) {
    if (parent->child_count % 8 == 0) {
        CuNode **grown = arena_alloc(src, (parent->child_count + 8) * sizeof *grown);
        if (!grown) return false;
        if (parent->child_count) memcpy(grown, parent->children, parent->child_count * sizeof *grown);
        parent->children = grown;
    }
    parent->children[parent->child_count++] = child;
    return true;
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData data) {
    Builder *b = data;
    enum CXCursorKind kind = clang_getCursorKind(c);
    /* attributes mark their parent declaration */
    if (kind == CXCursor_CUDAGlobalAttr || kind == CXCursor_CUDADeviceAttr || kind == CXCursor_CUDAHostAttr ||
        kind == CXCursor_CUDASharedAttr || kind == CXCursor_CUDAConstantAttr) {
        unsigned bit = kind == CXCursor_CUDAGlobalAttr   ? CU_ATTR_GLOBAL
                       : kind == CXCursor_CUDADeviceAttr ? CU_ATTR_DEVICE
                       : kind == CXCursor_CUDAHostAttr   ? CU_ATTR_HOST
                       : kind == CXCursor_CUDASharedAttr ? CU_ATTR_SHARED
                                                         : CU_ATTR_CONSTANT;
        if (b->parent) b->parent->attrs |= bit;
        return CXChildVisit_Continue;
    }
    uint32_t start, end;
    if (!offsets_of(b, c, &start, &end)) return CXChildVisit_Continue; /* headers: not ours */
    CuNode *n = arena_alloc(b->src, sizeof *n);
    if (!n) return CXChildVisit_Break;
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->cursor = c;
    n->start = start;
    n->end = end;
    n->parent = b->parent;
    /* spellings cost a string each: fetch them for the kinds that have names */
    bool named = clang_isDeclaration(kind) || clang_isReference(kind) || kind == CXCursor_DeclRefExpr ||
                 kind == CXCursor_MemberRefExpr || kind == CXCursor_CallExpr || kind == CXCursor_MacroExpansion;
    n->name = named ? arena_string(b->src, clang_getCursorSpelling(c)) : "";
    n->last_char = end > start ? b->src->doc->text[end - 1] : 0;
    if (kind == CXCursor_BinaryOperator || kind == CXCursor_CompoundAssignOperator)
        n->op = (int)clang_getCursorBinaryOperatorKind(c);
    else if (kind == CXCursor_UnaryOperator)
        n->op = (int)clang_getCursorUnaryOperatorKind(c);
    if (kind == CXCursor_DeclRefExpr || kind == CXCursor_MemberRefExpr || kind == CXCursor_CallExpr ||
        kind == CXCursor_TypeRef) {
        CXCursor r = clang_getCursorReferenced(c);
        if (!clang_Cursor_isNull(r)) n->ref_name = arena_string(b->src, clang_getCursorSpelling(r));
    }
    if (!n->ref_name) n->ref_name = "";
    if (b->parent && !add_child(b->src, b->parent, n)) return CXChildVisit_Break;
    if (clang_isDeclaration(kind)) {
        if (!array_reserve(&b->decls, b->decl_count, &b->decl_cap, sizeof *b->decls, 256)) return CXChildVisit_Break;
        b->decls[b->decl_count++] = n;
    }
    CuNode *saved = b->parent;
    b->parent = n;
    clang_visitChildren(c, visit, b);
    b->parent = saved;
    return CXChildVisit_Continue;
}

/* declarations by clang_hashCursor, for resolving references in linear time */
typedef struct {
    CuNode **slots;
    size_t mask;
} DeclTable;

static bool decl_table_build(DeclTable *t, const Builder *b) {
    size_t size = 16;
    while (size < b->decl_count * 2) size *= 2;
    t->slots = calloc(size, sizeof *t->slots);
    if (!t->slots) return false;
    t->mask = size - 1;
    for (size_t i = 0; i < b->decl_count; i++) {
        size_t h = clang_hashCursor(b->decls[i]->cursor) & t->mask;
        while (t->slots[h]) h = (h + 1) & t->mask;
        t->slots[h] = b->decls[i];
    }
    return true;
}

static CuNode *decl_table_find(const DeclTable *t, CXCursor c) {
    for (size_t h = clang_hashCursor(c) & t->mask; t->slots[h]; h = (h + 1) & t->mask)
        if (clang_equalCursors(t->slots[h]->cursor, c)) return t->slots[h];
    return NULL;
}

static void resolve_refs(const DeclTable *t, CuNode *n) {
    if (n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_MemberRefExpr || n->kind == CXCursor_CallExpr) {
        CXCursor r = clang_getCursorReferenced(n->cursor);
        if (!clang_Cursor_isNull(r)) {
            n->ref = decl_table_find(t, r);
            /* a call to a template's specialization: the template written here */
            CXCursor pattern = n->ref ? clang_getNullCursor() : clang_getSpecializedCursorTemplate(r);
            if (!clang_Cursor_isNull(pattern)) n->ref = decl_table_find(t, pattern);
        }
    }
    for (uint32_t i = 0; i < n->child_count; i++) resolve_refs(t, n->children[i]);
}

/* the name the main file is parsed under */
static const char *main_path(const Document *doc) { return doc->path ? doc->path : "unsaved.cu"; }

typedef struct {
    CXFile header, main_file;
    bool found;
    unsigned offset; /* of the #include in the main file that brings the header in */
} IncludeSearch;

static void find_include(CXFile included, CXSourceLocation *stack, unsigned depth, CXClientData data) {
    IncludeSearch *s = data;
    if (s->found || depth == 0 || !clang_File_isEqual(included, s->header)) return;
    CXFile file;
    unsigned offset;
    clang_getExpansionLocation(stack[depth - 1], &file, NULL, NULL, &offset);
    if (file && clang_File_isEqual(file, s->main_file)) {
        s->found = true;
        s->offset = offset;
    }
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The text of the line holding loc (in whichever file), for a look at what
 * an error is about; "" when it cannot be read. */
static void line_text(CXSourceLocation loc, char *buf, size_t size) {
    buf[0] = '\0';
    CXFile file;
    unsigned line;
    clang_getSpellingLocation(loc, &file, &line, NULL, NULL);
    if (!file || !line) return;
    CXString name = clang_getFileName(file);
    FILE *f = clang_getCString(name) ? fopen(clang_getCString(name), "r") : NULL;
    clang_disposeString(name);
    if (!f) return;
    for (unsigned i = 0; i < line && fgets(buf, (int)size, f); i++) {
    }
    fclose(f);
}

/* Errors clang 19 gives where nvcc accepts the code:
 * - a __host__ __device__ function that refers to a function of one side
 *   only (nvcc warns, and only when it is really used from the other side);
 * - `__shared__ alignas(16) float tile[...]`: a C++11 attribute after the
 *   GNU attribute `__shared__` expands to (gcc and nvcc take it; the
 *   declaration is built all the same);
 * - a __shared__ libcu++ object (`__shared__ cuda::barrier<...> b;`), whose
 *   constructor nvcc's configuration of libcu++ makes trivial and clang's
 *   does not. Other initialised __shared__ variables stay errors, as in nvcc;
 * - an initialised variable-length array in host code, which g++ (nvcc's
 *   host compiler) accepts as an extension. */
static bool nvcc_accepts(const char *message, CXSourceLocation loc) {
    if (strncmp(message, "reference to ", 13) == 0 && ends_with(message, "in __host__ __device__ function"))
        return true;
    if (strcmp(message, "an attribute list cannot appear here") == 0 ||
        strcmp(message, "variable-sized object may not be initialized") == 0)
        return true;
    if (strcmp(message, "initialization is not supported for __shared__ variables") == 0) {
        char line[512];
        line_text(loc, line, sizeof line);
        return strstr(line, "cuda::") != NULL;
    }
    return false;
}

/* "'ggml.h' file not found" (and "... with <angled> include; ..."): the
 * spelled header, heap, or NULL for other messages. */
static char *missing_header(const char *message) {
    if (message[0] != '\'' || !strstr(message, "' file not found")) return NULL;
    const char *end = strchr(message + 1, '\'');
    return end ? strndup(message + 1, (size_t)(end - message - 1)) : NULL;
}

static void remember_missing(CudaSource *src, char *header) {
    for (size_t i = 0; i < src->missing_header_count; i++)
        if (strcmp(src->missing_headers[i], header) == 0) {
            free(header);
            return;
        }
    if (!array_reserve(&src->missing_headers, src->missing_header_count, &src->missing_header_cap,
                       sizeof *src->missing_headers, 4)) {
        free(header);
        return;
    }
    src->missing_headers[src->missing_header_count++] = header;
}

static void forget_errors(CudaSource *src) {
    src->has_errors = false;
    src->error_count = 0;
    free(src->first_error_message);
    src->first_error_message = NULL;
    for (size_t i = 0; i < src->missing_header_count; i++) free(src->missing_headers[i]);
    free(src->missing_headers);
    src->missing_headers = NULL;
    src->missing_header_count = src->missing_header_cap = 0;
}

/* Records an error of the file: the first one's place and words, and the count. */
static void note_error(CudaSource *src, size_t offset, char *message) {
    src->error_count++;
    if (src->has_errors) {
        free(message);
        return;
    }
    src->has_errors = true;
    src->first_error = offset;
    src->first_error_message = message;
}

/* clang's words where they name something advise does not take: its
 * --cuda-path flag is advise's CUDA_PATH or [cuda] cuda-path (heap) */
static char *in_advise_words(const char *message) {
    if (strstr(message, "--cuda-path"))
        return format_string("cannot find the CUDA toolkit: set CUDA_PATH or [cuda] cuda-path in advise.toml (the "
                             "editor's cudaPath setting) to the folder that holds include/cuda_runtime.h");
    return strdup(message);
}

/* An error clang places in one of the project's headers: not in the file,
 * not in a system header (those are not the user's to see), not without a
 * place. note_errors shows these at the file's #include of the header. */
static bool in_project_header(CXSourceLocation loc, CXFile file, CXFile main_file) {
    return file && main_file && !clang_File_isEqual(file, main_file) && !clang_Location_isInSystemHeader(loc);
}

/* Whether one of tu's errors (severity error or fatal) matches: each is
 * handed with its words ("" when none) and place. */
typedef bool (*ErrorMatch)(const char *message, CXSourceLocation loc, const void *data);
static bool some_error(CXTranslationUnit tu, ErrorMatch match, const void *data) {
    unsigned n = clang_getNumDiagnostics(tu);
    bool found = false;
    for (unsigned i = 0; i < n && !found; i++) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
            CXString s = clang_getDiagnosticSpelling(d);
            const char *m = clang_getCString(s);
            found = match(m ? m : "", clang_getDiagnosticLocation(d), data);
            clang_disposeString(s);
        }
        clang_disposeDiagnostic(d);
    }
    return found;
}

static void note_errors(CudaSource *src) {
    forget_errors(src);
    unsigned n = clang_getNumDiagnostics(src->tu);
    CXFile main_file = clang_getFile(src->tu, main_path(src->doc));
    for (unsigned i = 0; i < n; i++) {
        CXDiagnostic d = clang_getDiagnostic(src->tu, i);
        enum CXDiagnosticSeverity sev = clang_getDiagnosticSeverity(d);
        CXString s = clang_getDiagnosticSpelling(d);
        const char *message = clang_getCString(s);
        if (!message) message = "";
        if (sev >= CXDiagnostic_Error && !nvcc_accepts(message, clang_getDiagnosticLocation(d))) {
            CXSourceLocation loc = clang_getDiagnosticLocation(d);
            CXFile file;
            unsigned offset, line;
            clang_getExpansionLocation(loc, &file, &line, NULL, &offset);
            bool in_system_header = file && clang_Location_isInSystemHeader(loc);
            char *header = in_system_header ? NULL : missing_header(message);
            if (header) remember_missing(src, header);
            if (file && main_file && clang_File_isEqual(file, main_file)) {
                note_error(src, offset, in_advise_words(message));
            } else if (!file) {
                note_error(src, 0, in_advise_words(message)); /* a fatal error with no location (bad flags) */
            } else if (in_project_header(loc, file, main_file)) {
                /* errors in the project's own headers show at the #include, as
                 * clangd shows them */
                IncludeSearch search = {file, main_file, false, 0};
                clang_getInclusions(src->tu, find_include, &search);
                if (search.found) {
                    /* clang points at the file name: start at the directive */
                    const Document *doc = src->doc;
                    size_t at = doc->line_starts[document_line_of(doc, search.offset)];
                    while (at < search.offset && (doc->text[at] == ' ' || doc->text[at] == '\t')) at++;
                    CXString name = clang_getFileName(file);
                    note_error(src, at, format_string("in included file %s:%u: %s", clang_getCString(name), line,
                                                      message));
                    clang_disposeString(name);
                }
            }
        }
        clang_disposeString(s);
        clang_disposeDiagnostic(d);
    }
}

static bool snapshot(CudaSource *src) {
    arena_free(src);
    Builder b = {.src = src};
    b.main_file = clang_getFile(src->tu, main_path(src->doc));
    CuNode *root = arena_alloc(src, sizeof *root);
    if (!root || !b.main_file) return false;
    memset(root, 0, sizeof *root);
    root->kind = CXCursor_TranslationUnit;
    root->cursor = clang_getTranslationUnitCursor(src->tu);
    root->end = (uint32_t)src->doc->length;
    root->name = root->ref_name = "";
    b.parent = root;
    clang_visitChildren(root->cursor, visit, &b);
    DeclTable table;
    if (decl_table_build(&table, &b)) {
        resolve_refs(&table, root);
        free(table.slots);
    }
    free(b.decls);
    src->root = root;
    note_errors(src);
    return true;
}

/* ---- parsing ----------------------------------------------------------------- */

static const char *error_text(enum CXErrorCode e) {
    switch (e) {
    case CXError_Failure: return "libclang failed to parse the file";
    case CXError_Crashed: return "libclang crashed while parsing the file";
    case CXError_InvalidArguments: return "libclang rejected the arguments";
    case CXError_ASTReadError: return "libclang could not read its AST (a clang older than 19?)";
    default: return "unknown libclang error";
    }
}

static bool has_include(const CudaFlags *f, const char *dir) {
    for (size_t i = 0; i + 1 < f->count; i++)
        if ((strcmp(f->args[i], "-I") == 0 || strcmp(f->args[i], "-idirafter") == 0) &&
            strcmp(f->args[i + 1], dir) == 0)
            return true;
    return false;
}

static bool names_the_pch(const char *message, CXSourceLocation loc, const void *pch) {
    (void)loc;
    return strstr(message, pch) || strstr(message, "precompiled header") || strstr(message, "PCH file");
}

/* clang turned the precompiled prefix down (a header changed since it was
 * built): a fatal error that names it. */
static bool pch_refused(CXTranslationUnit tu, const char *pch) { return some_error(tu, names_the_pch, pch); }

/* text: what clang parses as the file (the document's text, or the same
 * with its preamble blanked) */
static enum CXErrorCode parse_with(CudaSource *src, const Document *doc, const char *pch, const char *text) {
    const char *path = main_path(doc);
    struct CXUnsavedFile unsaved = {path, text, (unsigned long)doc->length};
    unsigned opts = CXTranslationUnit_PrecompiledPreamble |
                    CXTranslationUnit_KeepGoing | CXTranslationUnit_SkipFunctionBodies |
                    CXTranslationUnit_LimitSkipFunctionBodiesToPreamble |
                    CXTranslationUnit_IgnoreNonErrorsFromIncludedFiles;
    if (src->editing) opts |= CXTranslationUnit_CreatePreambleOnFirstParse;
    const char **args = (const char **)src->flags.args;
    size_t count = src->flags.count;
    if (pch) { /* the same flags, and what they make clang read before the first line, read from pch */
        args = malloc((count + 2) * sizeof *args);
        if (!args) return CXError_Failure;
        if (count) memcpy(args, src->flags.args, count * sizeof *args);
        args[count++] = "-include-pch";
        args[count++] = pch;
    }
    enum CXErrorCode e = clang_parseTranslationUnit2(src->index, path, args, (int)count, &unsaved, 1, opts, &src->tu);
    if (pch) free(args);
    if (e != CXError_Success && src->tu) {
        clang_disposeTranslationUnit(src->tu);
        src->tu = NULL;
    }
    return src->tu ? e : (e == CXError_Success ? CXError_Failure : e);
}

static bool shown_at_an_include(const char *message, CXSourceLocation loc, const void *main_file) {
    CXFile file = NULL;
    clang_getExpansionLocation(loc, &file, NULL, NULL, NULL);
    return !nvcc_accepts(message, loc) && in_project_header(loc, file, (CXFile)main_file);
}

/* An error in one of the project's headers, which note_errors shows at the
 * file's #include of it: with those lines read from a precompiled preamble
 * it has no #include to show at. */
static bool error_in_project_header(CXTranslationUnit tu, const char *path) {
    return some_error(tu, shown_at_an_include, clang_getFile(tu, path));
}

/* A parse with the file's include preamble read from a precompiled header
 * (cuda_pch_for_preamble) and blanked in the text: true when it was used.
 * Only on a file's first parse: a reparse reads the editor's whole text. */
static bool parse_with_preamble(CudaSource *src, const Document *doc) {
    size_t preamble = cuda_preamble_length(doc->text, doc->length);
    const char *pch = preamble ? cuda_pch_for_preamble(&src->flags, main_path(doc), doc->text, preamble) : NULL;
    if (!pch) return false;
    char *blanked = cuda_preamble_blanked(doc->text, doc->length, preamble);
    enum CXErrorCode e = blanked ? parse_with(src, doc, pch, blanked) : CXError_Failure;
    free(blanked);
    if (e != CXError_Success) {
        if (e == CXError_ASTReadError) cuda_pch_reject(pch); /* the header, not this file, failed */
        return false;
    }
    if (pch_refused(src->tu, pch) || error_in_project_header(src->tu, main_path(doc))) {
        if (pch_refused(src->tu, pch)) cuda_pch_reject(pch);
        clang_disposeTranslationUnit(src->tu);
        src->tu = NULL;
        return false;
    }
    src->pch = pch;
    src->preamble = preamble;
    return true;
}

/* a fresh parse of doc into src->tu: with the file's include preamble and
 * the CUDA prefix precompiled when files before it opened with the same
 * lines; else with the precompiled CUDA prefix for its flags when there is
 * one (cuda_pch.h); else as clang reads it */
static enum CXErrorCode parse_tu(CudaSource *src, const Document *doc, bool first) {
    double t0 = monotonic_seconds();
    src->preamble = 0;
    if (first && parse_with_preamble(src, doc)) {
        src->parse_seconds = monotonic_seconds() - t0;
        return CXError_Success;
    }
    const char *pch = cuda_pch_for(&src->flags);
    enum CXErrorCode e = pch ? parse_with(src, doc, pch, doc->text) : CXError_Failure;
    if (pch && e == CXError_Success && pch_refused(src->tu, pch)) {
        clang_disposeTranslationUnit(src->tu);
        src->tu = NULL;
        e = CXError_Failure;
    }
    if (pch && e != CXError_Success) cuda_pch_reject(pch);
    src->pch = pch && e == CXError_Success ? pch : NULL;
    if (!src->pch) e = parse_with(src, doc, NULL, doc->text);
    src->parse_seconds = monotonic_seconds() - t0;
    return e;
}

/* Without a compile database, headers of the project that the build would
 * find through its -I folders are missing: find them in the project, add
 * their folders and parse again, until no new folder turns up (a header
 * found can include others). */
static enum CXErrorCode find_project_headers(CudaSource *src, const Document *doc) {
    char *dir = strdup(main_path(doc));
    if (!dir) return CXError_Success;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else strcpy(dir, ".");
    enum CXErrorCode e = CXError_Success;
    for (int round = 0; round < MAX_INCLUDE_ROUNDS && e == CXError_Success; round++) {
        note_errors(src);
        size_t added = 0;
        for (size_t i = 0; i < src->missing_header_count; i++) {
            char *found = include_search_find(dir, src->missing_headers[i]);
            if (found && !has_include(&src->flags, found) && cuda_flags_add_fallback_include(&src->flags, found)) {
                added++;
                src->inferred_includes++;
            }
            free(found);
        }
        if (!added) break;
        clang_disposeTranslationUnit(src->tu);
        src->tu = NULL;
        e = parse_tu(src, doc, true);
    }
    free(dir);
    return e;
}

/* The folders other files of the project needed (include_search_learned). */
static void add_learned_includes(CudaSource *src, const Document *doc) {
    char *dir = strdup(main_path(doc));
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else strcpy(dir, ".");
    char **dirs;
    size_t n = include_search_learned(dir, &dirs);
    for (size_t i = 0; i < n; i++) {
        if (!has_include(&src->flags, dirs[i])) cuda_flags_add_fallback_include(&src->flags, dirs[i]);
        free(dirs[i]);
    }
    free(dirs);
    free(dir);
}

CudaSource *cuda_source_new(const Document *doc, const CudaFlagOptions *options, char **error) {
    CudaSource *src = calloc(1, sizeof *src);
    if (!src) return NULL;
    src->doc = doc;
    cuda_flags_for_file(main_path(doc), options, &src->flags);
    if (src->flags.problem) { /* a setting makes the parse pointless: say so instead of clang's failure */
        *error = format_string("%s", src->flags.problem);
        cuda_source_free(src);
        return NULL;
    }
    src->index = clang_createIndex(0, 0);
    if (!src->flags.database || src->flags.database_inferred) add_learned_includes(src, doc);
    enum CXErrorCode e = parse_tu(src, doc, true);
    if (e == CXError_Success && (!src->flags.database || src->flags.database_inferred))
        e = find_project_headers(src, doc);
    if (e != CXError_Success) {
        *error = format_string("%s", error_text(e));
        cuda_source_free(src);
        return NULL;
    }
    if (!snapshot(src)) {
        *error = format_string("cannot read the parsed file (out of memory?)");
        cuda_source_free(src);
        return NULL;
    }
    return src;
}

bool cuda_source_reparse(CudaSource *src, const Document *doc, char **error) {
    src->doc = doc;
    src->editing = true;
    arena_free(src); /* the cursors die with the reparse */
    if (src->tu && src->preamble) {
        /* the first parse read the file's #include lines from a precompiled
         * preamble, with those lines blanked: the editor's text has them, so
         * parse it afresh, as clang reads it, building libclang's own
         * preamble at once for the reparses that follow */
        clang_disposeTranslationUnit(src->tu);
        src->tu = NULL;
    }
    if (!src->tu) { /* an earlier reparse failed, or the first read a preamble: start again */
        enum CXErrorCode e = parse_tu(src, doc, false);
        if (e != CXError_Success) {
            *error = format_string("%s", error_text(e));
            return false;
        }
    } else {
        const char *path = main_path(doc);
        struct CXUnsavedFile unsaved = {path, doc->text, (unsigned long)doc->length};
        double t0 = monotonic_seconds();
        int rc = clang_reparseTranslationUnit(src->tu, 1, &unsaved, clang_defaultReparseOptions(src->tu));
        src->parse_seconds = monotonic_seconds() - t0;
        /* the CUDA headers changed since the precompiled prefix was built (a long
         * editor session): libclang fails the reparse, or reports the header */
        bool stale_pch = src->pch && (rc != 0 || pch_refused(src->tu, src->pch));
        if (rc != 0 || stale_pch) {
            /* libclang: after a failed reparse the only safe call is dispose */
            clang_disposeTranslationUnit(src->tu);
            src->tu = NULL;
            if (!stale_pch) {
                *error = format_string("libclang failed to reparse the file (error %d)", rc);
                return false;
            }
            cuda_pch_reject(src->pch);
            enum CXErrorCode e = parse_tu(src, doc, false); /* afresh, without it */
            if (e != CXError_Success) {
                *error = format_string("%s", error_text(e));
                return false;
            }
        }
    }
    if (!snapshot(src)) {
        *error = format_string("cannot read the parsed file (out of memory?)");
        return false;
    }
    return true;
}

void cuda_source_free(CudaSource *src) {
    if (!src) return;
    arena_free(src);
    if (src->tu) clang_disposeTranslationUnit(src->tu);
    if (src->index) clang_disposeIndex(src->index);
    cuda_flags_free(&src->flags);
    forget_errors(src);
    free(src);
}

const char *cu_text(const CudaSource *src, const CuNode *n) { return src->doc->text + n->start; }
size_t cu_text_len(const CuNode *n) { return n->end - n->start; }
bool cu_text_eq(const CudaSource *src, const CuNode *n, const char *text) {
    size_t len = cu_text_len(n);
    return strlen(text) == len && memcmp(cu_text(src, n), text, len) == 0;
}

static void walk(CuNode *n, CuVisitor visit, void *data, int depth) {
    if (depth > 2000 || !visit(n, data)) return;
    for (uint32_t i = 0; i < n->child_count; i++) walk(n->children[i], visit, data, depth + 1);
}

void cu_walk(CuNode *root, CuVisitor visit, void *data) {
    if (root) walk(root, visit, data, 0);
}
