/* Parsing a CUDA text and finding its variables, for the tests of the CUDA
 * index analysis (tests/test_cuda_index.c, tests/test_cuda_record.c). */
#ifndef ADVISE_TESTS_CUDA_NODES_H
#define ADVISE_TESTS_CUDA_NODES_H

#include <criterion/criterion.h>
#include <string.h>

#include "analysis/cuda/cuda_query.h"
#include "analysis/cuda/cuda_source.h"

typedef struct {
    const char *name;
    CuNode *found;
} CudaFindVar;

static inline bool cuda_find_var_visit(CuNode *n, void *data) {
    CudaFindVar *f = data;
    if (f->found) return false;
    if (n->kind == CXCursor_VarDecl && strcmp(n->name, f->name) == 0) {
        f->found = n;
        return false;
    }
    return true;
}

/* the first variable declared with this name, in source order */
static inline CuNode *cuda_var(const CudaSource *src, const char *name) {
    CudaFindVar f = {name, NULL};
    cu_walk(src->root, cuda_find_var_visit, &f);
    cr_assert_not_null(f.found, "no variable %s", name);
    return f.found;
}

/* text parsed as the .cu file at path (which need not exist) */
static inline CudaSource *cuda_parse_text(const char *path, const char *text, Document **doc_out) {
    Document *doc = document_new(path, LANGUAGE_CUDA, text, strlen(text));
    cr_assert_not_null(doc);
    char *error = NULL;
    CudaSource *src = cuda_source_new(doc, NULL, &error);
    cr_assert_not_null(src, "cuda_source_new failed: %s", error ? error : "?");
    *doc_out = doc;
    return src;
}

#endif
