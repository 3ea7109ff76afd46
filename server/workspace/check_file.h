/* One file's findings as every face shows them: the text parsed once, the
 * rules run (engine_check / engine_check_cuda) and, when a profile mentions
 * the file, the profile merged (engine_merge_profile_parsed). Shared by
 * `advise check` and ranked_findings (report, sidebar). */
#ifndef ADVISE_CHECK_FILE_H
#define ADVISE_CHECK_FILE_H

#include "analysis/python/python_workspace.h"
#include "profiler/profile_set.h"
#include "rules/engine/engine.h"

/* Where a file's figures come from: the newest profile of set that
 * mentions it, or the one view; both NULL: no profile. */
typedef struct {
    const ProfileSet *set;
    const ProfileView *view;
} ProfileSource;

typedef struct {
    Document *doc;
    FindingList findings;
    EngineReport report;
    MergeReport merge;
    const ProfileView *profile; /* the profile merged into it, or NULL */
    int profile_file;           /* its file in that profile, or -1 */
} CheckedFile;

/* path as the user gave it; root: the project root (absolute), against
 * which profile paths are taken. workspaces: the Python workspace indexes
 * of this run (facts that cross files), or NULL for each file alone. On
 * failure *error is set and out holds nothing to free. */
bool check_file_text(const char *path, const char *text, size_t length, const Config *cfg,
                     const ProfileSource *profiles, const char *root, PyWorkspaces *workspaces, CheckedFile *out,
                     char **error);
void checked_file_free(CheckedFile *f);

/* path's profile moved onto `after`, the text fixes made of `before`, so
 * that its figures stay on the lines they measured (lines the fixes changed
 * lose theirs): a heap view (profile_view_free), or NULL when no profile
 * mentions path, before is not the text it measured, or the texts are too
 * far apart to follow. */
ProfileView *profile_after_fixes(const ProfileSource *profiles, const char *root, const char *path,
                                 const char *before, size_t before_len, const char *after, size_t after_len);

/* path relative to root ('/'-separated), heap; NULL when it is not below
 * root or cannot be resolved. */
char *project_relative_path(const char *root, const char *path);

#endif
