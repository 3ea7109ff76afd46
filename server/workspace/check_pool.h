/* Checking many files on worker threads, each file's result handed back on
 * the calling thread in the files' order, so that `advise check -j N` and
 * `advise report -j N` print the same bytes whatever N is.
 *
 * What would make a file's analysis depend on the files analysed before it
 * is settled here too: the Python projects are indexed before any file is
 * analysed (check_pool_index_projects), and each file's header searches
 * learn in a lesson committed in the files' order (include_search.h); a
 * file that started from what a file before it had not yet learned is
 * analysed again, on the calling thread, before it is handed back. The
 * order of the results is the order of the items, and nothing else
 * depends on which thread took which item. */
#ifndef ADVISE_CHECK_POOL_H
#define ADVISE_CHECK_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/python/python_workspace.h"

typedef struct {
    size_t count;       /* items (files) */
    unsigned jobs;      /* worker threads; 1: every item on the calling thread, and no thread is made */
    size_t result_size; /* bytes of each item's result slot, zeroed before work fills it */
    bool progress;      /* "advise: 37/120 files" on stderr, rewritten in place, cleared at the end */
    /* Header searches learn in lessons committed in item order (the run's
     * own learning); false: in the process-wide lists, as one file at a
     * time does (the language server's calls). */
    bool ordered_learning;
    /* On a worker thread: analyse item into result. Reads what it needs,
     * writes nothing (no file, no output). */
    void (*work)(void *ctx, size_t item, void *result);
    /* Frees what work put into result, which is then worked again. */
    void (*discard)(void *ctx, size_t item, void *result);
    /* On the calling thread, in item order: print, count, write; then free
     * what result holds. */
    void (*emit)(void *ctx, size_t item, void *result);
    void *ctx;
} CheckPool;

/* Runs every item; returns when the last was emitted. Threads that cannot
 * be started leave their share to the others (to the calling thread when
 * none starts). */
void check_pool_run(const CheckPool *pool);

/* The number of online CPUs (at least 1): the default of -j. */
unsigned check_pool_default_jobs(void);

/* "4" -> 4. False for 0, a negative number or anything but a number. */
bool check_pool_parse_jobs(const char *text, unsigned *jobs);

/* Indexes the Python projects of the .py files among paths (the workspace
 * of each, py_workspaces_for) on the calling thread, each under a crash
 * guard: every file of the run then sees the same index, whichever thread
 * gets to it first, and `--fix` writes nothing before the index has read
 * it. */
void check_pool_index_projects(PyWorkspaces *workspaces, const char *const *paths, size_t count);

#endif
