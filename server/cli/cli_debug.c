/* `advise debug-ast FILE`: prints the CUDA/C++ snapshot AST that rules see
 * (kind, offsets, name, operator, attributes, referenced name). For rule
 * authors; not part of the stable interface. */
#include <stdio.h>
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

int cli_debug_ast(int argc, char **argv) {
    if (argc != 2) {
        fputs("usage: advise debug-ast FILE.cu\n", stderr);
        return EXIT_TROUBLE;
    }
    SourceFile file;
    char *error = NULL;
    if (!source_file_read(argv[1], 64u << 20, &file, &error)) {
        fprintf(stderr, "advise: %s: %s\n", argv[1], error);
        return EXIT_TROUBLE;
    }
    Document *doc = document_new(argv[1], LANGUAGE_CUDA, file.text, file.length);
    CudaSource *src = cuda_source_new(doc, NULL, &error);
    if (!src) {
        fprintf(stderr, "advise: %s: %s\n", argv[1], error);
        return EXIT_TROUBLE;
    }
    printf("# flags:");
    for (size_t i = 0; i < src->flags.count; i++) printf(" %s", src->flags.args[i]);
    printf("\n# parsed in %.0f ms%s%s\n", src->parse_seconds * 1000, src->has_errors ? "; first error: " : "",
           src->has_errors ? src->first_error_message : "");
    dump(src, src->root, 0);
    cuda_source_free(src);
    document_free(doc);
    source_file_free(&file);
    return EXIT_CLEAN;
}
