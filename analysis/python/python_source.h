/* The Python front end: a tree-sitter parse tree kept per document (so that
 * an edit reparses incrementally) and the file's import table, which turns
 * local names such as `F.softmax` into qualified ones such as
 * `torch.nn.functional.softmax`. */
#ifndef ADVISE_PYTHON_SOURCE_H
#define ADVISE_PYTHON_SOURCE_H

#include <stdbool.h>
#include <tree_sitter/api.h>

#include "analysis/document.h"

typedef struct {
    char *local;     /* the name bound in this file: "F" */
    char *qualified; /* what it stands for: "torch.nn.functional" */
    size_t local_length; /* strlen(local): py_resolve_import runs once per name looked up */
} PyImport;

struct PyIndex;
struct PyWorkspaceView;
struct PyModuleFacts;

typedef struct {
    const Document *doc; /* not owned; must outlive the source */
    TSParser *parser;
    TSTree *tree;
    PyImport *imports;
    size_t import_count;
    size_t import_cap; /* room in imports (array_reserve) */
    bool uses_gpu;   /* the file mentions CUDA devices at all (a torch_xla file that never says "cuda" does not) */
    bool imports_torch; /* some import names a torch module */
    bool other_accelerator; /* a torch_xla (TPU) program that never mentions CUDA: not a GPU file */
    bool has_errors; /* the parse recovered from syntax errors */
    size_t first_error; /* byte offset of the first syntax error */
    struct PyIndex *index; /* lazily built lookups (python_index.h); dropped on reparse */
    /* the project's other modules (python_workspace.h), set by the caller
     * for facts that cross files; NULL: this file alone. Not owned. */
    const struct PyWorkspaceView *workspace;
    const struct PyModuleFacts *module; /* this file's summary in it, or NULL */
    /* the tree before the last reparse, kept until the next one (or until
     * the caller takes it: py_source_take_retired), so that freeing it (a
     * few ms on a large module) need not delay the answer */
    TSTree *retired;
    /* the edits noted since the last parse, and whether the imports could
     * change with them (py_source_note_edit); the last edit's span */
    unsigned edits_noted;
    bool imports_may_change;
    size_t edit_start, edit_old_end, edit_new_end;
    size_t touched_from, touched_to; /* the span of the old tree's statements the edit touched */
} PySource;

#define PY_PARSE_TIMEOUT_SECONDS 20

/* tree-sitter 0.20 corrupts memory when one node gets more than 65,535
 * children: a module of that many top-level lines is refused before parsing. */
#define PY_MAX_TOP_LEVEL_LINES 60000
bool py_source_too_wide(const Document *doc);

/* Parses doc from scratch. NULL when memory runs out, the grammar's ABI is
 * not accepted by the tree-sitter library, or parsing takes longer than
 * PY_PARSE_TIMEOUT_SECONDS (text that is not Python at all). */
PySource *py_source_new(const Document *doc);
/* The same with another limit on the parse's wall time: 0 for none (tests
 * of large valid files, whose parse is linear, give themselves no limit so
 * that a loaded machine cannot fail them). */
PySource *py_source_new_within(const Document *doc, unsigned timeout_seconds);
void py_source_free(PySource *src);

/* Incremental reparse: for each edit call py_source_note_edit (start and
 * old_end measured in the text before the edit, new_end in the text after
 * it), then py_source_reparse with the updated document: tree-sitter reuses
 * the unchanged parts of the old tree. src->doc must still hold the text
 * of the last parse when the edits are noted (the new text comes as a
 * document of its own). */
TSPoint py_point_at(const char *text, size_t offset);
void py_source_note_edit(PySource *src, size_t start, size_t old_end, size_t new_end,
                         TSPoint start_point, TSPoint old_end_point, TSPoint new_end_point);
bool py_source_reparse(PySource *src, const Document *doc);
/* The tree the last reparse replaced, for the caller to ts_tree_delete
 * (it shares no state with src any more); NULL when none is kept. */
TSTree *py_source_take_retired(PySource *src);

/* The qualified name a local name stands for ("F" -> "torch.nn.functional"),
 * or NULL when the file does not import it. */
const char *py_resolve_import(const PySource *src, const char *local, size_t length);
/* Two imports bind the name to different things (`if mup: from mup.optim
 * import MuAdam as Adam` / `else: from torch.optim import Adam`; a `try:`
 * of a fused implementation with a fallback): which one a call reaches
 * depends on the run. */
bool py_import_is_ambiguous(const PySource *src, const char *local, size_t length);

#endif
