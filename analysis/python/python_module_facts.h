/* One module's summary for the workspace index (python_workspace.h): what
 * its parse shows about the names it defines and imports. Built from a
 * PySource with the single-file facts only; the workspace links summaries
 * across modules at query time. Immutable once built, shared between
 * workspace views by reference count. */
#ifndef ADVISE_PYTHON_MODULE_FACTS_H
#define ADVISE_PYTHON_MODULE_FACTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "analysis/python/python_source.h"

typedef struct PyModuleFacts PyModuleFacts;

typedef struct {
    char *local;  /* the name bound in the module: "GPT", "F", "models" */
    char *target; /* the absolute dotted name: "pkg.model.GPT" (relative imports resolved) */
} PyFactImport;

/* What a function returns, or a variable holds. */
typedef struct {
    char *name;
    unsigned kinds;   /* PY_VALUE_* the module's own text shows */
    char **calls;     /* dotted callees (as the module spells them) whose results it returns or holds */
    size_t call_count;
    uint32_t line;    /* 1-based */
    /* the first float32 matmul site at scale in its body or value
     * (python_precision.h), 0: none; from_parameters: its sizes came from
     * parameters, which another module's call may set otherwise */
    uint32_t matmul_at_scale_line;
    bool matmul_at_scale_from_parameters;
} PyFactValue;

typedef struct {
    char *name;
    char **bases;     /* as the module spells them */
    size_t base_count;
    PyFactValue *methods;
    size_t method_count;
    bool matmul_work; /* builds nn.Linear/Conv/attention layers or multiplies matrices */
    char **parts;     /* the project classes it builds (`Block(cfg)`), as the module spells them */
    size_t part_count;
    uint32_t line;
    /* the first float32 matmul site at scale in its own body (not its parts
     * or bases), 0: none; as PyFactValue's */
    uint32_t matmul_at_scale_line;
    bool matmul_at_scale_from_parameters;
} PyFactClass;

/* A call of an imported function, and how its result is used. */
typedef struct {
    char *callee;     /* as the module spells it */
    unsigned uses;    /* PY_USE_* */
    uint32_t line;    /* 1-based */
} PyFactUse;

struct PyModuleFacts {
    int refcount;
    char *path;       /* absolute */
    char *name;       /* dotted, relative to the workspace root ("pkg.sub.mod"; a package's __init__ is "pkg.sub") */
    bool is_package;
    bool from_editor; /* made from an editor's buffer, not the file on disk */
    time_t mtime;
    off_t size;
    PyFactImport *imports;
    size_t import_count;
    PyFactValue *functions;
    size_t function_count;
    PyFactClass *classes;
    size_t class_count;
    PyFactValue *variables;
    size_t variable_count;
    PyFactUse *uses;
    size_t use_count;
    bool uses_gpu;    /* the module's own text mentions CUDA or a device (PySource.uses_gpu) */
    bool other_accelerator; /* a torch_xla (TPU) module that never mentions CUDA */
    /* precision (python_precision.h): the first line that makes a precision
     * choice (TF32, autocast, a half/bf16 cast, ...), and the first float32
     * matmul site at scale anywhere in the module; 0: none */
    uint32_t precision_choice_line;
    uint32_t matmul_at_scale_line;
    /* the first line that makes CUDA the default device of torch's
     * factories (py_call_sets_cuda_default), 0: none */
    uint32_t cuda_default_line;
    /* the modules its import statements load, absolute dotted names:
     * `import a.b.c` -> "a.b.c"; `from .x import y` in pkg -> "pkg.x" and
     * "pkg.x.y" (y may be a submodule); in any order, repeats allowed */
    char **loaded_modules;
    size_t loaded_module_count;
};

/* Summarises a parsed module. name: its dotted name; is_package: it is a
 * package's __init__.py (relative imports start from it, not its parent).
 * NULL when memory runs out. */
PyModuleFacts *py_module_facts_extract(const PySource *src, const char *path, const char *name, bool is_package);
void py_module_facts_ref(PyModuleFacts *m);
void py_module_facts_unref(PyModuleFacts *m);

#endif
