/* What `advise profile` and its --source-metrics re-runs share (internal to
 * profiler/driver/profile_run.c and profiler/driver/source_metrics_run.c). */
#ifndef ADVISE_PROFILE_RUN_INTERNAL_H
#define ADVISE_PROFILE_RUN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "profiler/profile.h"
#include "profiler/driver/profile_run.h"

#define SOURCE_METRICS_DEFAULT_RUNS 3

/* Runs command with the injection library (when inject is not NULL) writing
 * parts into parts; metrics_kernel (mangled) turns the run into a
 * --source-metrics run for that kernel. Returns the command's exit status. */
int run_child(char **command, const char *inject, const char *parts, const char *root, const char *metrics_kernel);

/* The folder temporary files go to: $TMPDIR, else /tmp. */
const char *profile_tmp_dir(void);
/* Creates a fresh folder PREFIX-XXXXXX there for a run's parts, its path in
 * out (PATH_MAX bytes); false with errno set when it cannot. */
bool parts_dir_create(const char *prefix, char *out, size_t size);
/* Seconds since t0 (CLOCK_MONOTONIC). */
double seconds_since(const struct timespec *t0);

/* Reads, merges and deletes the parts in parts_dir (and the folder); NULL
 * when there are none. */
Profile *merge_parts(const char *parts_dir);

/* --memory (memory_run.c). The variable tells the injection library where
 * advise_memory.py is; memory_recording_start sets it in our environment
 * for the child to inherit, false (with a message) when the module is not
 * beside the injection library. With native, the second variable asks the
 * recorder for C++ frames on the stacks too (PyTorch's stacks="all"). */
#define MEMORY_ENV "ADVISE_PROFILE_MEMORY"
#define MEMORY_STACKS_ENV "ADVISE_PROFILE_MEMORY_STACKS"
#define STEPS_ENV "ADVISE_PROFILE_STEPS" /* --steps N, read by inject/recording_window.c */
bool memory_recording_start(const char *inject, bool native);
/* The memory-PID.json parts, read and deleted (before merge_parts removes the folder). */
typedef struct {
    char **texts;
    size_t *lengths;
    char **names;
    size_t count;
} MemoryParts;
MemoryParts memory_parts_take(const char *parts_dir);
/* Adds them to p; says which could not be added, and when there were none. */
void memory_parts_add(Profile *p, const MemoryParts *parts);
void memory_parts_free(MemoryParts *parts);

/* Re-runs the command once per chosen kernel (hottest first, at most
 * run->source_metrics_runs times) and adds the per-line metrics to p. p's
 * kernel names are still mangled. first_run_s is how long the profiled run
 * took, to tell the user what the re-runs will cost. */
void source_metrics_collect(Profile *p, const ProfileRun *run, const char *inject, double first_run_s);

#endif
