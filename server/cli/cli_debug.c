/* `advise debug-ast FILE...`: prints the CUDA/C++ snapshot AST that rules see
 * (kind, offsets, name, operator, attributes, referenced name) and clang's
 * diagnostics. For rule authors; not part of the stable interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_query.h"
#include "server/cli/cli.h"
#include "server/workspace/source_file.h"

static void dump(const CudaSource *src, const CuNode *n, int depth) {
    CXString kind = clang_getCursorKindSpelling(n->kind);
    long long v;
    bool has_value = (n->kind == CXCursor_IntegerLiteral) && cu_int_value(n, &v);
    printf("%*s%s [%u,%u) '%s'", depth * 2, "", clang_getCString(kind), n->start, n->end, n->name);
    clang_disposeString(kind);
    if (n->op) printf(" op=%d", n->op);
    if (n->attrs) printf(" attrs=%#x", n->attrs);
    if (n->ref_name && *n->ref_name) printf(" ref=%s%s", n->ref_name, n->ref ? "(here)" : "");
    if (has_value) printf(" value=%lld", v);
    size_t len = cu_text_len(n);
    printf("  `%.*s`\n", (int)(len > 50 ? 50 : len), cu_text(src, n));
    for (uint32_t i = 0; i < n->child_count; i++) dump(src, n->children[i], depth + 1);
}

static int dump_file(const char *path) {
    SourceFile file;
    char *error = NULL;
    if (!source_file_read(path, 64u << 20, &file, &error)) {
        fprintf(stderr, "advise: %s: %s\n", path, error);
        free(error);
        return EXIT_TROUBLE;
    }
    Document *doc = document_new(path, LANGUAGE_CUDA, file.text, file.length);
    CudaSource *src = cuda_source_new(doc, NULL, &error);
    if (!src) {
        fprintf(stderr, "advise: %s: %s\n", path, error);
        free(error);
        document_free(doc);
        source_file_free(&file);
        return EXIT_TROUBLE;
    }
    printf("# file: %s\n# flags:", path);
    for (size_t i = 0; i < src->flags.count; i++) printf(" %s", src->flags.args[i]);
    printf("\n# parsed in %.0f ms%s%s%s\n", src->parse_seconds * 1000,
           !src->pch        ? ""
           : src->preamble ? " (the CUDA headers and the file's #include lines from a precompiled prefix)"
                           : " (the CUDA headers from the precompiled prefix)",
           src->has_errors ? "; first error: " : "", src->has_errors ? src->first_error_message : "");
    unsigned n = clang_getNumDiagnostics(src->tu);
    for (unsigned i = 0; i < n; i++) { /* as clang says them, warnings of the file included */
        CXDiagnostic d = clang_getDiagnostic(src->tu, i);
        CXString s = clang_formatDiagnostic(d, CXDiagnostic_DisplaySourceLocation | CXDiagnostic_DisplayColumn);
        printf("# diagnostic: %s\n", clang_getCString(s));
        clang_disposeString(s);
        clang_disposeDiagnostic(d);
    }
    dump(src, src->root, 0);
    cuda_source_free(src);
    document_free(doc);
    source_file_free(&file);
    return EXIT_CLEAN;
}

/* Files after the first with the same flags read the CUDA headers from the
 * precompiled prefix (cuda_pch.h); the output is the same without it. */
int cli_debug_ast(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs("usage: advise debug-ast FILE.cu...\n", argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_TROUBLE : EXIT_CLEAN;
    }
    int status = EXIT_CLEAN;
    for (int i = 1; i < argc; i++)
        if (dump_file(argv[i]) != EXIT_CLEAN) status = EXIT_TROUBLE;
    return status;
}
