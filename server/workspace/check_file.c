#include "server/workspace/check_file.h"

#include "analysis/crash_guard.h"
#include "analysis/base/line_diff.h"
#include "analysis/base/text_format.h"
#include "profiler/profile_remap.h"
#include "profiler/sha256.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

char *project_relative_path(const char *root, const char *path) {
    char *abs = realpath(path, NULL);
    char *base = root ? realpath(root, NULL) : NULL;
    char *rel = NULL;
    if (abs && base) {
        size_t n = strlen(base);
        if (strcmp(base, "/") == 0) rel = strdup(abs + 1);
        else if (strncmp(abs, base, n) == 0 && abs[n] == '/') rel = strdup(abs + n + 1);
    }
    free(abs);
    free(base);
    return rel;
}

/* The profile and file for path, or NULL. */
static const ProfileView *profile_for(const ProfileSource *profiles, const char *root, const char *path, int *file) {
    *file = -1;
    if (!profiles || (!profiles->set && !profiles->view)) return NULL;
    char *rel = project_relative_path(root, path);
    char *abs = realpath(path, NULL);
    const ProfileView *v = NULL;
    if (profiles->set) v = profile_set_for_file(profiles->set, rel, abs, file);
    else if ((*file = profile_view_file_matching(profiles->view, rel, abs)) >= 0) v = profiles->view;
    free(rel);
    free(abs);
    return v;
}

typedef struct {
    const char *path, *text, *root;
    size_t length;
    const Config *cfg;
    const ProfileSource *profiles;
    PyWorkspaces *workspaces;
    CheckedFile *out;
    char **error;
    bool ok;
} CheckJob;

static void check_job(void *arg) {
    CheckJob *job = arg;
    const Config *cfg = job->cfg;
    CheckedFile *out = job->out;
    char **error = job->error;
    crash_guard_debug_crash_point(job->path);
    out->doc = document_new(job->path, language_for_path(job->path), job->text, job->length);
    if (!out->doc) {
        *error = format_string("out of memory");
        return;
    }
    finding_list_init(&out->findings);
    int file;
    const ProfileView *view = profile_for(job->profiles, job->root, job->path, &file);
    PySource *py = NULL;
    CudaSource *cuda = NULL;
    PyWorkspaceView *workspace = NULL;
    bool ok;
    if (view && out->doc->language == LANGUAGE_CUDA) { /* parse once for the rules and the merge */
        CudaFlagOptions options = {cfg->cuda_build_dir, cfg->cuda_gpu_arch, cfg->cuda_path};
        cuda = cuda_source_new(out->doc, &options, error);
        ok = cuda && engine_check_cuda(out->doc, cuda, cfg, &out->findings, &out->report, error);
    } else {
        PyWorkspace *ws = NULL;
        if (out->doc->language == LANGUAGE_PYTHON && !py_source_too_wide(out->doc)) {
            py = py_source_new(out->doc); /* NULL: engine_check says why */
            ws = py ? py_workspaces_for(job->workspaces, job->path) : NULL;
        }
        workspace = ws ? py_workspace_view(ws) : NULL;
        if (workspace) py_workspace_attach(py, workspace);
        ok = engine_check(out->doc, py, cfg, &out->findings, &out->report, error);
    }
    if (ok && view) {
        const char *profiled_path = profile_view_profile(view)->files[file].path;
        ok = engine_merge_profile_parsed(out->doc, py, cuda, profiled_path, view, cfg, &out->findings, &out->merge);
        if (!ok) *error = format_string("out of memory while merging the profile");
        out->profile = view;
        out->profile_file = file;
    }
    py_source_free(py);
    py_workspace_view_release(workspace);
    cuda_source_free(cuda);
    if (!ok) {
        checked_file_free(out);
        return;
    }
    job->ok = true;
}

bool check_file_text(const char *path, const char *text, size_t length, const Config *cfg,
                     const ProfileSource *profiles, const char *root, PyWorkspaces *workspaces, CheckedFile *out,
                     char **error) {
    memset(out, 0, sizeof *out);
    out->profile_file = -1;
    *error = NULL;
    CheckJob job = {path, text, root, length, cfg, profiles, workspaces, out, error, false};
    int sig;
    if (!crash_guard_run(check_job, &job, &sig)) {
        /* what the analysis built is left as it is (leaked), never used */
        memset(out, 0, sizeof *out);
        out->profile_file = -1;
        *error = format_string("advise crashed while analysing this file (%s), so its findings are left out; this "
                               "is a bug in advise, please report it with the file",
                               crash_guard_signal_name(sig));
        return false;
    }
    return job.ok;
}

void checked_file_free(CheckedFile *f) {
    finding_list_free(&f->findings);
    document_free(f->doc);
    memset(f, 0, sizeof *f);
    f->profile_file = -1;
}

ProfileView *profile_after_fixes(const ProfileSource *profiles, const char *root, const char *path,
                                 const char *before, size_t before_len, const char *after, size_t after_len) {
    int file;
    const ProfileView *view = profile_for(profiles, root, path, &file);
    if (!view || profile_view_freshness(view, file, before, before_len) != PROFILE_FRESH) return NULL;
    size_t lines = 0;
    uint32_t *to = line_diff_matches(before, before_len, after, after_len, &lines);
    if (!to) return NULL;
    char hex[SHA256_HEX_CHARS + 1];
    sha256_hex_of(after, after_len, hex);
    Profile *moved = profile_remap_lines(profile_view_profile(view), file, to, (uint32_t)lines, hex);
    free(to);
    ProfileView *v = moved ? profile_view_new(moved, profile_view_path(view)) : NULL;
    if (!v) profile_free(moved);
    return v;
}
