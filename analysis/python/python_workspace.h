/* Facts that cross files: an index of the Python modules under a project's
 * root, so that rules reading one file know what the names it imports from
 * the others stand for. `from model import GPT` names an nn.Module;
 * `x, y = get_batch("train")` gives tensors when data.py's get_batch returns
 * them; `device` imported from config.py is a CUDA device.
 *
 * Each module is summarised once from its own parse (python_module_facts.c,
 * with the single-file facts of python_facts.h): its imports (relative ones
 * resolved), its classes with their bases and methods, its functions and
 * module-level variables with what they hold (a tensor, a module, a
 * DataLoader, an optimizer, a device) and which calls of other modules'
 * functions their results come from, and how it uses what it imports
 * (DataLoaders it feeds to the GPU, functions it calls in inference). A
 * question that crosses modules follows those links at query time, a few
 * steps deep.
 *
 * The index is incremental: a refresh re-reads only files whose size or
 * modification time changed, and an editor's buffer replaces its file's
 * summary without touching the others. Readers hold an immutable view
 * (refcounted), so the language server's workers read while the main thread
 * updates. The CLI and the server share this code; analysis never runs
 * the user's code. */
#ifndef ADVISE_PYTHON_WORKSPACE_H
#define ADVISE_PYTHON_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/python/python_source.h"

/* What a value holds (bits): as far as the code shows, never a guess. */
enum {
    PY_VALUE_TENSOR = 1 << 0,     /* a tensor, or a tuple of tensors */
    PY_VALUE_MODULE = 1 << 1,     /* an nn.Module instance (a model or a loss) */
    PY_VALUE_DATALOADER = 1 << 2, /* a torch DataLoader */
    PY_VALUE_OPTIMIZER = 1 << 3,  /* a torch.optim optimizer */
    PY_VALUE_DEVICE = 1 << 4,     /* a CUDA device (or one that is CUDA when a GPU is there) */
};

/* How a module uses a function it imports (bits, PyModuleFacts uses). */
enum {
    PY_USE_GPU_BATCHES = 1 << 0, /* the result is iterated and its batches moved to the GPU */
    PY_USE_NO_GRAD = 1 << 1,     /* called where gradients are off */
    PY_USE_INFERENCE = 1 << 2,   /* called, with gradients on, from a function that evaluates or infers (named
                                    so, or switching a model to eval) and does not train */
    PY_USE_TRAINING = 1 << 3,    /* called from a function that trains */
};

typedef struct PyModuleFacts PyModuleFacts;
typedef struct PyWorkspace PyWorkspace;
typedef struct PyWorkspaceView PyWorkspaceView;

/* The project root of a Python file: the nearest folder above it holding
 * .git, advise.toml, pyproject.toml, setup.py or setup.cfg; else the folder
 * above its outermost package (folders with __init__.py); else its folder.
 * Heap string, or NULL when the path cannot be resolved. */
char *py_workspace_root_for(const char *path);

PyWorkspace *py_workspace_new(const char *root);
void py_workspace_free(PyWorkspace *ws);
const char *py_workspace_root(const PyWorkspace *ws);

/* Reads the Python files under the root that are new or changed since the
 * last refresh (every file the first time), and drops those that are gone.
 * Files an editor updated (py_workspace_update) keep the editor's text. */
void py_workspace_refresh(PyWorkspace *ws);
/* The same when there was none yet, or the last is older than max_age seconds. */
void py_workspace_refresh_if_older(PyWorkspace *ws, double max_age);
/* Replaces the summary of src's file (src->doc->path, under the root) with
 * one of src's text: an editor's unsaved buffer. */
void py_workspace_update(PyWorkspace *ws, const PySource *src);
/* The editor closed the file: its summary comes from disk again at the
 * next refresh. */
void py_workspace_forget_editor(PyWorkspace *ws, const char *path);

/* The current view, with a reference for the caller. */
PyWorkspaceView *py_workspace_view(PyWorkspace *ws);
void py_workspace_view_release(PyWorkspaceView *view);

/* Workspaces by root, for a process that meets files of several projects
 * (a CLI run over folders, a server with files from anywhere). */
typedef struct PyWorkspaces PyWorkspaces;
PyWorkspaces *py_workspaces_new(void);
void py_workspaces_free(PyWorkspaces *all);
/* The workspace of path's project, made (and refreshed) on first use;
 * NULL when none can be had. */
PyWorkspace *py_workspaces_for(PyWorkspaces *all, const char *path);

/* Lets src's facts ask the view (src->workspace, src->module): the file's
 * summary is the one at src's path. A file that never says "cuda" or
 * "device" but imports a device another module makes (`from config import
 * accelerator`), or whose functions a module using the GPU calls, uses the
 * GPU all the same: src->uses_gpu is widened (until the next reparse
 * recomputes it). One that imports from a torch_xla module of the project
 * and never says "cuda" is a TPU program's file: not a GPU file. view may
 * be NULL (detaches). */
void py_workspace_attach(PySource *src, const PyWorkspaceView *view);

/* ---- questions (on a view) ------------------------------------------- */

size_t py_workspace_module_count(const PyWorkspaceView *view);
/* The module of path (absolute or relative to the working folder), or NULL. */
const PyModuleFacts *py_workspace_module(const PyWorkspaceView *view, const char *path);
/* Its dotted name ("pkg.train"). */
const char *py_module_name(const PyModuleFacts *module);

/* What calling `callee` gives, callee spelled as module `from` spells it
 * (`build_model`, `models.resnet50`, `data.get_batch`): a class of the
 * workspace (an instance; PY_VALUE_MODULE when it derives from nn.Module),
 * or a function whose returns show it. 0 when the workspace does not know. */
unsigned py_workspace_call_kinds(const PyWorkspaceView *view, const PyModuleFacts *from, const char *callee);
/* What `obj.method(...)` gives when obj is an instance of the class that
 * `class_name` names (spelled as `from` spells it). */
unsigned py_workspace_method_kinds(const PyWorkspaceView *view, const PyModuleFacts *from, const char *class_name,
                                   const char *method);
/* What a module-level variable holds (`device` from config.py). */
unsigned py_workspace_name_kinds(const PyWorkspaceView *view, const PyModuleFacts *from, const char *name);
/* The name is a function that a module of the workspace defines. */
bool py_workspace_is_function(const PyWorkspaceView *view, const PyModuleFacts *from, const char *name);
/* The name is a class of the workspace that derives from torch.nn.Module. */
bool py_workspace_is_module_class(const PyWorkspaceView *view, const PyModuleFacts *from, const char *name);
/* The class (or, for a module-level instance or a function returning one,
 * its class) contains matrix work: nn.Linear/Conv/attention layers, or a
 * matmul in its methods. For programs whose models live in another file. */
bool py_workspace_has_matmul_work(const PyWorkspaceView *view, const PyModuleFacts *from, const char *name);

/* How the other modules use the function `function` defined in `module`
 * (PY_USE_* bits), and where one such use is (its module and 1-based line)
 * when where is not NULL. */
unsigned py_workspace_uses_of(const PyWorkspaceView *view, const PyModuleFacts *module, const char *function,
                              const PyModuleFacts **where_module, unsigned *where_line);
/* The path of a module. */
const char *py_module_path(const PyModuleFacts *module);

/* ---- precision (python_precision.h) ----------------------------------- */

/* A module that `from` imports makes a precision choice (TF32, autocast, a
 * half/bfloat16 cast, ...): one it imports directly or through the project
 * modules those import, or a package above one of them (its __init__ runs
 * first). `from` itself is not asked. where_module and where_line (either
 * may be NULL) get the first such module found and its line. */
bool py_workspace_imports_precision_choice(const PyWorkspaceView *view, const PyModuleFacts *from,
                                           const PyModuleFacts **where_module, unsigned *where_line);
/* A module that makes CUDA the default device of torch's factories
 * (`torch.set_default_device("cuda")`,
 * `torch.set_default_tensor_type(torch.cuda.HalfTensor)`) is `module`, or
 * loads it, directly or through project modules: llama's generation.py does
 * so before it builds the model of model.py. A script elsewhere in the
 * project that does not load it does not count. where_module and where_line
 * (either may be NULL) get the first such module and line. */
bool py_workspace_default_cuda_for(const PyWorkspaceView *view, const PyModuleFacts *module,
                                   const PyModuleFacts **where_module, unsigned *where_line);
/* The class, function or module-level variable `name` (spelled as `from`
 * spells it) has float32 matmul work at scale: a site in its own body or
 * value, in the project classes it builds (`parts`), its bases, or what it
 * returns or holds (every one of them, when a builder returns one of
 * several), followed as py_workspace_has_matmul_work follows them.
 * where_module and where_line (may be NULL) get the site, preferring one
 * whose sizes do not come from parameters; from_parameters (may be NULL)
 * says whether that site's do (a caller passing other sizes may make it
 * small). */
bool py_workspace_matmul_at_scale(const PyWorkspaceView *view, const PyModuleFacts *from, const char *name,
                                  const PyModuleFacts **where_module, unsigned *where_line, bool *from_parameters);

#endif
