/* DataLoaders whose batches go to the GPU: a `for` loop over a
 * torch.utils.data.DataLoader made in this file (bound to a name, to
 * `self.name` in a class, passed to a function of this file, or used
 * directly; through enumerate() and tqdm()) whose body moves the batch, or
 * parts of it, to a CUDA device. What PY005 (pinned memory, non_blocking
 * copies) and PY014 (worker processes) ask, answered once here. */
#ifndef ADVISE_PYTHON_LOADERS_H
#define ADVISE_PYTHON_LOADERS_H

#include "analysis/python/python_query.h"

/* A move of (part of) a batch to the GPU inside a loop over a loader. */
typedef struct {
    TSNode loader;       /* the DataLoader(...) call the loop iterates */
    TSNode call;         /* `x.to(device)`, `batch["ids"].cuda()` */
    TSNode non_blocking; /* its non_blocking= value (or positional), or a null node */
    bool whole_batch;    /* the batch object itself (`batch.to(device)`), whose type may be a custom class */
} PyBatchMove;

typedef struct {
    TSNode call;          /* the DataLoader(...) call */
    const char *fed_in;   /* NULL: a loop of this file moves its batches; else the file of another module
                             (src->workspace) whose loop does, at line fed_line (a string of the workspace view) */
    unsigned fed_line;
} PyGpuLoader;

typedef struct {
    PyGpuLoader *loaders; /* DataLoader(...) calls whose batches go to the GPU: this file's loops first, in
                             source order, then those other modules feed */
    size_t loader_count, loader_cap;
    PyBatchMove *moves;  /* the moves in loops over those loaders that this file binds (not over parameters) */
    size_t move_count, move_cap;
    bool out_of_memory;
} PyGpuLoaders;

/* The loaders of src whose batches a loop moves to a CUDA device, except
 * those whose dataset the code shows on the GPU already
 * (`DataLoader(TensorDataset(x.cuda(), y.cuda()))`). False only when memory
 * runs out. */
bool py_gpu_loaders(const PySource *src, PyGpuLoaders *out);

/* The same analysis with another idea of a loader: any call is_loader
 * accepts (the workspace index asks which calls of other modules' functions
 * feed the GPU). No loaders fed elsewhere are added. */
typedef bool (*PyLoaderPredicate)(const PySource *src, TSNode call, void *data);
bool py_gpu_loaders_of(const PySource *src, PyLoaderPredicate is_loader, void *data, PyGpuLoaders *out);
void py_gpu_loaders_free(PyGpuLoaders *loaders);

/* " (by train.py, which gets this loader at line 42)" for a loader another
 * module's loop feeds to the GPU, "" for one this file's loop feeds; the
 * caller frees it. NULL only when memory runs out. */
char *py_gpu_loader_where_fed(const PyGpuLoader *loader);

/* A loop's iterable without its enumerate(...) and tqdm(...) wrappers (up
 * to four); *enumerates counts the enumerates. Null when a wrapper has no
 * argument. */
TSNode py_unwrap_iterable(const PySource *src, TSNode iter, int *enumerates);

/* The call is `torch.utils.data.DataLoader(...)` (any import spelling). */
bool py_is_dataloader_call(const PySource *src, TSNode call);

#endif
