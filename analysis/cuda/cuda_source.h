/* The CUDA/C++ front end: libclang 19 parses the editor's buffer from memory
 * (unsaved files), keeps the translation unit so that a reparse reuses the
 * precompiled preamble, and snapshots the main file's AST into plain nodes
 * that rules walk without callbacks. Each node keeps its CXCursor for
 * questions the snapshot does not answer (types, constant values). */
#ifndef ADVISE_CUDA_SOURCE_H
#define ADVISE_CUDA_SOURCE_H

#include <clang-c/Index.h>
#include <stdbool.h>
#include <stdint.h>

#include "analysis/cuda/cuda_flags.h"
#include "analysis/document.h"

enum { /* CuNode.attrs */
    CU_ATTR_GLOBAL = 1 << 0,
    CU_ATTR_DEVICE = 1 << 1,
    CU_ATTR_HOST = 1 << 2,
    CU_ATTR_SHARED = 1 << 3,
    CU_ATTR_CONSTANT = 1 << 4,
};

typedef struct CuNode CuNode;
struct CuNode {
    enum CXCursorKind kind;
    CXCursor cursor;   /* valid until the next reparse */
    uint32_t start, end; /* byte offsets in the main file (macro expansions at their use) */
    const char *name;  /* cursor spelling ("" when none) */
    int op;            /* CXBinaryOperatorKind or CXUnaryOperatorKind, 0 when not an operator */
    unsigned attrs;
    char last_char;    /* the last character of the node's text (member names libclang leaves blank) */
    const char *ref_name; /* the referenced declaration's name (DeclRefExpr, CallExpr, MemberRefExpr) */
    CuNode *ref;       /* that declaration, when it is in the main file */
    CuNode *parent;
    CuNode **children;
    uint32_t child_count;
};

typedef struct {
    const Document *doc;
    CXIndex index;
    CXTranslationUnit tu;
    CudaFlags flags;
    CuNode *root;        /* the translation unit; children: declarations in the main file */
    bool has_errors;     /* clang reported errors in the main file */
    size_t first_error;  /* offset of the first one */
    char *first_error_message;
    size_t error_count;  /* errors of the file (not those nvcc would accept) */
    char **missing_headers; /* headers the file (or a project header) includes that were not found */
    size_t missing_header_count;
    size_t missing_header_cap; /* room in missing_headers (array_reserve) */
    size_t inferred_includes; /* -I folders found by include_search (no database) */
    double parse_seconds;
    const char *pch;     /* the precompiled CUDA prefix the last parse read (cuda_pch.h), or NULL */
    size_t preamble;     /* with pch: the bytes of the file's include preamble it held too (blanked in the
                          * text clang parsed; cuda_preamble.h), else 0 */
    bool editing;        /* reparsed at least once (an editor's document): a fresh parse then builds
                          * libclang's preamble at once, for the edits that follow */
    /* node storage */
    struct CuArena *arena;
} CudaSource;

/* Parses doc (its text, not the file on disk) with flags for doc->path.
 * NULL with *error set when libclang produces no translation unit. */
CudaSource *cuda_source_new(const Document *doc, const CudaFlagOptions *options, char **error);
/* Reparses after the document's text changed (reuses the preamble). */
bool cuda_source_reparse(CudaSource *src, const Document *doc, char **error);
void cuda_source_free(CudaSource *src);

/* The text of a node (not NUL-terminated at the node's end) */
const char *cu_text(const CudaSource *src, const CuNode *n);
size_t cu_text_len(const CuNode *n);
bool cu_text_eq(const CudaSource *src, const CuNode *n, const char *text);

typedef bool (*CuVisitor)(CuNode *node, void *data);
/* Preorder walk; the visitor returns false to skip a node's children. */
void cu_walk(CuNode *root, CuVisitor visit, void *data);

#endif
