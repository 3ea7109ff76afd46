/* The findings of a set of files with a profile merged, ranked by what they
 * cost: one list for `advise report`, the editor sidebar (`advise/findings`)
 * and any other face that shows findings across a workspace. */
#ifndef ADVISE_RANKED_FINDINGS_H
#define ADVISE_RANKED_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/python/python_workspace.h"
#include "rules/engine/config.h"
#include "analysis/finding.h"
#include "profiler/profile_set.h"
#include "profiler/profile_view.h"

typedef struct {
    char *path;          /* relative to the project root */
    uint32_t line, column; /* 1-based; column in code points */
    uint32_t end_line, end_column;
    Finding finding;     /* owned */
    /* The measured cost used for ranking: the estimated gain when there is
     * one, else the GPU and host-wait time measured at the finding's lines;
     * 0 when unmeasured. */
    double cost_seconds;
    bool stale;          /* the file changed since it was profiled */
    /* The optimizer steps of the run it was profiled in (its process with
     * the most steps), 0 when unknown: a whole-program gain over them is
     * its share per training step (ranked_finding_gain_per_step). */
    uint64_t profile_steps;
    uint64_t profile_steady_steps; /* of them, the steady ones */
} RankedFinding;

typedef struct {
    RankedFinding *items;
    size_t count;
    size_t files_checked;
} RankedFindings;

/* Checks paths (files and folders, walked as `advise check` walks them) with
 * cfg, merges profile when it is not NULL (engine_merge_profile), and sorts:
 * (workspaces: the Python workspace indexes to use, or NULL for the call's own)
 * cost descending, then severity, then path and line. Problems with single
 * files are reported on stderr as `advise check` does and skipped. False
 * only when memory runs out or no path could be read (with *error set). */
bool ranked_findings_collect(const char *const *paths, size_t path_count, const char *root, const Config *cfg,
                             const ProfileView *profile, PyWorkspaces *workspaces, RankedFindings *out,
                             char **error);
/* How a collection runs: files analysed at once (check_pool.h; the result
 * is the same whatever the number), and a progress line on stderr. */
typedef struct {
    unsigned jobs;
    bool progress;
} RankedCollectRun;

/* The same with a set of profiles (a folder): each file is merged with the
 * newest profile of the set that mentions it (profile_set.h). run: NULL for
 * one file at a time, no progress line. */
bool ranked_findings_collect_set(const char *const *paths, size_t path_count, const char *root, const Config *cfg,
                                 const ProfileSet *profiles, PyWorkspaces *workspaces, const RankedCollectRun *run,
                                 RankedFindings *out, char **error);
/* Sorts r as the collect functions do (for callers that collect file by
 * file, such as the editor's cancellable advise/findings), after dropping
 * the findings that repeat a program-wide gain measured at another file's
 * finding (Rule.subsumed_in_file_by across files: PR019 where PY009 in
 * another file counted the same kernels). */
void ranked_findings_sort(RankedFindings *r);
void ranked_findings_free(RankedFindings *r);

/* What a report shows before its ranked list: the findings about wrong
 * results (Rule.correctness), apart and never ranked by cost, and "what to
 * do first": the findings with the largest estimated gains, at most
 * RANKED_FIRST_MAX (indexes into the sorted list, largest gain first), and
 * none under RANKED_FIRST_FLOOR of the largest (a gain of microseconds
 * beside one of a second is not what to do first; it stays in the list). */
#define RANKED_FIRST_MAX 5
#define RANKED_FIRST_FLOOR 0.01
#define RANKED_CORRECTNESS_SHOWN 10
typedef struct {
    size_t first[RANKED_FIRST_MAX];
    size_t first_count;
    size_t correctness[RANKED_CORRECTNESS_SHOWN];
    size_t correctness_count; /* shown: at most RANKED_CORRECTNESS_SHOWN */
    size_t correctness_total;
} RankedFirst;

void ranked_findings_first(const RankedFindings *r, RankedFirst *out);
/* A whole-program gain spread over the profiled run's optimizer steps, in
 * seconds; 0 when the gain is local to a kernel or the run had fewer than 2
 * steps. A gain counted over the steady steps only (Gain.steady_steps) is
 * spread over those: its share of a steady step. Any other gain counts the
 * whole run, so phases outside the steps (start-up, evaluation) weigh on it
 * as they do on the gain. */
double ranked_finding_gain_per_step(const RankedFinding *r);
/* The steps that figure divides by: the steady ones or all. */
uint64_t ranked_finding_gain_steps(const RankedFinding *r);
bool ranked_finding_is_correctness(const RankedFinding *r);

#endif
