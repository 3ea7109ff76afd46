/* A read-only view of one profile for the engine: the newest profile of a
 * folder (or a given file) with indexes by source line and by kernel, the
 * run's totals, and whether a source file changed since it was profiled.
 *
 * Pure C over profile.h; no rule, LSP or output knowledge. */
#ifndef ADVISE_PROFILE_VIEW_H
#define ADVISE_PROFILE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"

typedef struct ProfileView ProfileView;

/* path: a profile file, or a folder whose newest profile is taken (by
 * `created`, then file name; unreadable or invalid files are skipped with
 * their reason kept for profile_view_notes). NULL with *error set when
 * nothing usable is there. profile_set.h reads all of a folder's profiles. */
ProfileView *profile_view_load(const char *path, char **error);
/* Takes ownership of p (used by tests and by callers that built one). */
ProfileView *profile_view_new(Profile *p, const char *source_path);
void profile_view_free(ProfileView *v);

const Profile *profile_view_profile(const ProfileView *v);
const char *profile_view_path(const ProfileView *v);      /* the file it came from, or "" */
/* Why other files of the folder were skipped; *notes points into the view. */
size_t profile_view_notes(const ProfileView *v, const char *const **notes);
bool profile_view_add_note(ProfileView *v, const char *note);

/* The run's length: the longest process wall time, else the longest GPU
 * span. Shares ("11% of the run") are taken against this. */
uint64_t profile_view_run_ns(const ProfileView *v);
/* The most any process's host waited for the GPU (ProfProcess.host_wait_ns):
 * all that faster GPU work can give back. false when a process with GPU
 * work did not measure it. */
bool profile_view_host_wait_ns(const ProfileView *v, uint64_t *ns);
/* GPU time: kernels + copies + memsets, summed over all devices. */
uint64_t profile_view_gpu_ns(const ProfileView *v);
/* Kernel time alone, summed. */
uint64_t profile_view_kernel_ns(const ProfileView *v);
/* GPU busy time (union of kernel, copy and memset intervals), summed over
 * the timelines of all devices. */
uint64_t profile_view_busy_ns(const ProfileView *v);
/* GPU idle time (span - busy), summed over the timelines of all devices. */
uint64_t profile_view_idle_ns(const ProfileView *v);
/* The profiler's own cost on the threads that launched GPU work, as its
 * calibration measured it in the run (ProfCalibration): in a launch-bound
 * run it shows up as GPU idle time that an unprofiled run does not have.
 * 0 when the profile has no calibration (imported traces, older files). */
uint64_t profile_view_profiler_ns(const ProfileView *v);
/* Idle time less the profiler's cost (never below 0): the most that any
 * change could recover from the GPU's idle time. Where a process's training
 * steps and their idle time are known (ProfSteps), only its steady steps
 * count: start-up, warm-up, evaluation and checkpoints are phases, not gains.
 * Gains taken from idle time add up to no more than this (gain_cap.c). */
uint64_t profile_view_recoverable_idle_ns(const ProfileView *v);

/* The steady training steps, summed over the processes whose steps and idle
 * time by phase were recorded. */
typedef struct {
    bool known;
    uint64_t steps;
    uint64_t span_ns;       /* their time, once per device */
    uint64_t idle_ns;       /* the GPU's idle time in them */
    uint64_t activities;    /* kernels, copies and memsets started in them */
    uint64_t profiler_ns;   /* the profiler's cost on them (its share of the calibrated cost) */
} ProfileSteady;
/* NULL when no process recorded them (older profiles, no optimizer steps). */
const ProfileSteady *profile_view_steady(const ProfileView *v);
/* The first device described (the profiled GPU), or NULL. */
const ProfDevice *profile_view_device(const ProfileView *v);

/* Index into files of a root-relative path, or -1. */
int profile_view_file(const ProfileView *v, const char *path);
/* As profile_view_file for relative (may be NULL), else the longest file
 * path that absolute (may be NULL) ends with at a '/': a profile recorded
 * with another project root still finds the file. */
int profile_view_file_matching(const ProfileView *v, const char *relative, const char *absolute);

typedef enum { PROFILE_FRESH, PROFILE_STALE, PROFILE_NO_HASH } ProfileFreshness;
/* Compares the file's recorded sha256 with text's. */
ProfileFreshness profile_view_freshness(const ProfileView *v, int file, const char *text, size_t length);

/* The operations whose site is in file at a line within [first, last]
 * (1-based, inclusive), in profile order. Returns how many there are;
 * fills at most max pointers. */
size_t profile_view_ops_in(const ProfileView *v, int file, uint32_t first, uint32_t last, const ProfOp **out,
                           size_t max);

/* What one line of a file cost, all operations summed. */
typedef struct {
    uint32_t line;
    uint64_t launches;       /* kernel launches made there */
    uint64_t kernel_ns;      /* their GPU time */
    uint64_t copy_ns, copy_bytes, copies;
    uint64_t sync_ns, syncs; /* host time waiting */
    uint64_t alloc_ns, allocs;
} ProfileLineCost;

/* Every line of file with a cost, sorted by line. *out points into the view. */
size_t profile_view_lines(const ProfileView *v, int file, const ProfileLineCost **out);
/* The cost of one line (1-based), or NULL when the profile has none there. */
const ProfileLineCost *profile_view_line(const ProfileView *v, int file, uint32_t line);

/* A line's share: its GPU work (kernels, copies and memsets) over the
 * run's GPU time (profile_view_gpu_ns), 0 when there is none. The one
 * percentage a line is shown with, in lenses, hovers, heat maps and
 * findings, always named PROFILE_LINE_SHARE_OF. */
uint64_t profile_line_gpu_ns(const ProfileLineCost *c);
double profile_view_line_share(const ProfileView *v, const ProfileLineCost *c);
#define PROFILE_LINE_SHARE_OF "of GPU time"

/* A kernel's figures summed over its launch configurations, found by the
 * function's name ("transpose_naive" matches "transpose_naive(float*, ...)",
 * "void ns::transpose_naive<32>(...)"). false when the profile has none. */
bool profile_view_kernel(const ProfileView *v, const char *function, ProfStats *sum, const ProfKernel **example);

/* Sites whose launches ran this kernel (index into kernels). */
size_t profile_view_kernel_sites(const ProfileView *v, int kernel, int *sites, size_t max);

#endif
