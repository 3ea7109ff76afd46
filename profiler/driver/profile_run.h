/* `advise profile -- CMD ARGS...`: runs CMD with the CUPTI injection library,
 * passes its output through untouched, then merges the parts its processes
 * wrote, resolves native call sites to lines, and writes one profile.
 * The command's exit status is returned (128 + signal when it was killed). */
#ifndef ADVISE_PROFILE_RUN_H
#define ADVISE_PROFILE_RUN_H

#include <stdbool.h>
#include <stdio.h>

typedef struct {
    char **command;          /* argv, NULL-terminated */
    const char *output;      /* -o FILE, or NULL: a fresh file in profile_dir */
    const char *profile_dir; /* absolute; used when output is NULL */
    const char *name;        /* --name, or NULL: derived from the command */
    const char *root;        /* project root, absolute */
    /* --source-metrics[=N]: at most N more runs, one kernel each (0: none) */
    int source_metrics_runs;
    const char *source_metrics_kernel; /* --source-metrics-kernel TEXT: only kernels whose name holds TEXT */
    bool memory;             /* --memory: PyTorch's allocator history (profiler/python/advise_memory.py) */
    bool memory_native;      /* --memory=native: with C++ frames on its stacks too */
    /* --steps N: record each process's first N optimizer steps, then detach
     * (0: the whole run); ADVISE_PROFILE_STEPS in the command's environment */
    unsigned long steps;
} ProfileRun;

/* Parses `[-o FILE] [--name NAME] [--profile-dir DIR] [--source-metrics[=N]]
 * [--source-metrics-kernel TEXT] [--memory] [--steps N] -- CMD ARGS...` (the
 * `--` may be left out when CMD does not start with '-'). Returns 0 on
 * success, -1 after printing usage for --help, 2 after printing an error. */
int profile_run_parse(int argc, char **argv, ProfileRun *run, const char **profile_dir_option);

int profile_run(const ProfileRun *run);

void profile_run_usage(FILE *out, const char *program);

#endif
