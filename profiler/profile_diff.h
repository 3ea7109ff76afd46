/* Two profiles side by side, for `advise diff BEFORE AFTER`: the run's
 * totals, and each kernel and each call site with its time before and after,
 * so that a change can be judged by what it saved.
 *
 * Kernels are matched by demangled name (summed over launch configurations
 * and processes); call sites by file path, line and kind of operation
 * (summed over processes and over the operations of that kind there).
 * Pure C over profile.h: no JSON and no output here. */
#ifndef ADVISE_PROFILE_DIFF_H
#define ADVISE_PROFILE_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"

/* What one profile measured in all, summed over processes and devices. */
typedef struct {
    uint64_t kernel_ns, launches;            /* GPU time of every kernel */
    uint64_t copy_ns, copies, copy_bytes;    /* GPU time of the copies */
    uint64_t memset_ns, memsets;
    uint64_t sync_ns, syncs;                 /* host time waiting */
    uint64_t alloc_ns, allocs;               /* host time allocating */
    uint64_t wall_ns;                        /* the longest process's wall time */
    uint64_t span_ns, busy_ns;               /* every device's timeline, summed */
    /* the GPU time of kernels, copies and memsets on the critical path, and
     * the host's wait for the GPU (FORMAT.md critical_ns, host_wait_ns);
     * each known only when every entry and process measured it */
    bool critical_known, host_wait_known;
    uint64_t critical_ns, host_wait_ns;
} ProfileTotals;

void profile_totals(const Profile *p, ProfileTotals *out);
/* busy_ns / span_ns, or -1 when no timeline was recorded. */
double profile_totals_busy_share(const ProfileTotals *t);

/* Which profile holds an entry. */
typedef enum { DIFF_BOTH, DIFF_BEFORE_ONLY, DIFF_AFTER_ONLY } DiffSide;

/* One side's figures of an entry: how often and how long in all. */
typedef struct {
    uint64_t count;
    uint64_t total_ns;
} DiffFigures;

typedef struct {
    char *name;                 /* demangled */
    DiffSide side;
    DiffFigures before, after;  /* zero on the side that lacks it */
} DiffKernel;

typedef struct {
    char *path;                 /* relative to the project root; NULL: no user frame was found */
    uint32_t line;              /* 0 with path NULL */
    ProfOpKind kind;
    char *function;             /* the enclosing function (either side's), or NULL */
    DiffSide side;
    DiffFigures before, after;  /* GPU time for launches, copies and memsets; host time for syncs and allocations */
} DiffSite;

typedef struct {
    ProfileTotals before, after;
    /* Kernels and sites in three groups, each in its own order: those in both
     * by time saved (before - after, largest first), those only in BEFORE by
     * their time before, those only in AFTER by their time after. */
    DiffKernel *kernels;
    size_t kernel_count;
    DiffSite *sites;
    size_t site_count;
    /* Negative when BEFORE was recorded first (by `created`), positive when
     * AFTER was, 0 when in the same second; seconds between the two in
     * created_gap_s (absolute). */
    int older;
    int64_t created_gap_s;
    /* The GPUs of each profile in words ("NVIDIA H200", "2 x NVIDIA H200",
     * "no GPU recorded"), heap, and whether they differ. */
    char *before_gpu, *after_gpu;
    bool different_gpu;
    bool different_command;     /* the argv differ */
    bool different_source;      /* one cupti, the other an imported trace */
} ProfileDiff;

/* Compares before with after. False only when memory runs out. */
bool profile_diff(const Profile *before, const Profile *after, ProfileDiff *out);
void profile_diff_free(ProfileDiff *d);

/* before - after as a signed figure (time saved; negative when it grew). */
int64_t diff_saved_ns(DiffFigures before, DiffFigures after);
/* before / after, or -1 when either is 0 (no ratio to give). */
double diff_speedup(DiffFigures before, DiffFigures after);

/* The GPUs of a profile in words (as before_gpu), heap; NULL when out of memory. */
char *profile_gpu_description(const Profile *p);

#endif
