/* Requests of advise's own for editor views over the profiles:
 * `advise/profileSummary` (the runs merged: GPU busy and idle, top kernels
 * and largest gaps, each with the line it came from) and `advise/lineCosts`
 * (a document's lines with their share of the run's GPU time, or with
 * "metric": "memory" of the device memory at the peak, for heat maps).
 * Both read the immutable, reference-counted profiles of the document's
 * project, and answer on the main thread: they only look up figures the
 * profile already holds. docs/lsp.md documents their shapes. */
#define _GNU_SOURCE /* strptime, timegm */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/base/text_format.h"
#include "analysis/units.h"
#include "profiler/kernel_name.h"
#include "profiler/profile_diff.h"
#include "profiler/profile_view.h"
#include "server/lsp/jsonrpc.h"
#include "server/lsp/lsp_memory_views.h"
#include "server/lsp/lsp_profile.h"
#include "server/lsp/lsp_server.h"
#include "server/render/line_memory.h"
#include "server/workspace/source_file.h"

#define SUMMARY_MAX_ITEMS 10

static double seconds(uint64_t ns) { return (double)ns / 1e9; }

/* Seconds since an ISO 8601 UTC stamp ("2026-11-30T19:14:48Z"), or -1. */
static double age_of(const char *created) {
    struct tm tm = {0};
    if (!created) return -1;
    const char *end = strptime(created, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end) return -1;
    time_t then = timegm(&tm);
    double age = difftime(time(NULL), then);
    return age < 0 ? 0 : age;
}

/* {"uri", "range"} of a site's line, or null (unresolved sites, lines that
 * are not in a file of the project). Character 0 in every encoding. */
static json_t *site_location(const LspProfiles *lp, const Profile *p, int site) {
    if (site < 0 || (size_t)site >= p->site_count) return json_null();
    const ProfSite *s = &p->sites[site];
    if (s->file < 0 || (size_t)s->file >= p->file_count || s->line == 0) return json_null();
    char *path = format_string("%s/%s", lp->root, p->files[s->file].path);
    char *uri = path ? file_uri_from_path(path) : NULL;
    free(path);
    if (!uri) return json_null();
    int line = (int)s->line - 1;
    json_t *at = json_pack("{s:s,s:{s:{s:i,s:i},s:{s:i,s:i}}}", "uri", uri, "range", "start", "line", line,
                           "character", 0, "end", "line", line, "character", 0);
    free(uri);
    return at ? at : json_null();
}

static int by_time_desc(const void *a, const void *b) {
    const ProfKernelTotal *x = a, *y = b;
    return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

/* The site whose launches of kernels named `name` took the most GPU time. */
static int hottest_site_of(const Profile *p, const char *name) {
    int best = -1;
    uint64_t best_ns = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind != PROF_OP_LAUNCH || op->site < 0 || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count)
            continue;
        if (strcmp(p->kernels[op->kernel].name, name) != 0 || op->stats.total_ns <= best_ns) continue;
        best = op->site;
        best_ns = op->stats.total_ns;
    }
    return best;
}

static json_t *top_kernels(const LspProfiles *lp, const ProfileView *v) {
    const Profile *p = profile_view_profile(v);
    json_t *out = json_array();
    size_t n;
    ProfKernelTotal *k = profile_kernels_by_name(p, &n);
    if (!k) return out;
    qsort(k, n, sizeof *k, by_time_desc);
    uint64_t gpu = profile_view_gpu_ns(v);
    for (size_t i = 0; i < n && i < SUMMARY_MAX_ITEMS; i++) {
        char name[96];
        kernel_short_name(k[i].name, name, sizeof name);
        json_array_append_new(out, json_pack("{s:s,s:s,s:f,s:f,s:I,s:o}", "name", name, "full_name", k[i].name,
                                             "gpu_seconds",
                                             seconds(k[i].total_ns), "share",
                                             gpu ? (double)k[i].total_ns / (double)gpu : 0.0, "launches",
                                             (json_int_t)k[i].count, "location",
                                             site_location(lp, p, hottest_site_of(p, k[i].name))));
    }
    free(k);
    return out;
}

static int gap_desc(const void *a, const void *b) {
    const ProfGap *x = *(const ProfGap *const *)a, *y = *(const ProfGap *const *)b;
    return (x->duration_ns < y->duration_ns) - (x->duration_ns > y->duration_ns);
}

/* "line 95" or "an unknown line" for a gap's neighbour */
static void site_words(const Profile *p, int site, char *buf, size_t size) {
    if (site >= 0 && (size_t)site < p->site_count && p->sites[site].file >= 0 &&
        (size_t)p->sites[site].file < p->file_count && p->sites[site].line)
        snprintf(buf, size, "%s:%u", p->files[p->sites[site].file].path, p->sites[site].line);
    else
        snprintf(buf, size, "an unknown line");
}

static json_t *largest_gaps(const LspProfiles *lp, const ProfileView *v) {
    const Profile *p = profile_view_profile(v);
    json_t *out = json_array();
    const ProfGap **gaps = p->gap_count ? malloc(p->gap_count * sizeof *gaps) : NULL;
    if (!gaps) return out;
    for (size_t i = 0; i < p->gap_count; i++) gaps[i] = &p->gaps[i];
    qsort(gaps, p->gap_count, sizeof *gaps, gap_desc);
    uint64_t run = profile_view_run_ns(v);
    for (size_t i = 0; i < p->gap_count && i < SUMMARY_MAX_ITEMS; i++) {
        const ProfGap *g = gaps[i];
        char idle[UNITS_BUF], before[512], after[512];
        units_ns(g->duration_ns, idle, sizeof idle);
        site_words(p, g->before_site, before, sizeof before);
        site_words(p, g->after_site, after, sizeof after);
        char *description =
            format_string("the GPU sat idle %s after the work of %s, until the work of %s arrived", idle, before, after);
        json_array_append_new(out, json_pack("{s:f,s:f,s:o,s:s}", "seconds", seconds(g->duration_ns), "share_of_run",
                                             run ? (double)g->duration_ns / (double)run : 0.0, "location",
                                             site_location(lp, p, g->after_site), "description",
                                             description ? description : ""));
        free(description);
    }
    free(gaps);
    return out;
}

static json_t *profile_json(const LspProfiles *lp, const ProfileView *v) {
    const Profile *p = profile_view_profile(v);
    ProfileTotals t;
    profile_totals(p, &t);
    double busy_share = profile_totals_busy_share(&t);
    char *gpu = profile_gpu_description(p);
    double age = age_of(p->created);
    json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:s,s:f,s:f,s:f,s:o,s:o,s:o}", "path", profile_view_path(v), "name",
                          p->name ? p->name : "", "created", p->created ? p->created : "", "age_seconds",
                          age >= 0 ? json_real(age) : json_null(), "gpu", gpu ? gpu : "", "run_seconds",
                          seconds(profile_view_run_ns(v)), "gpu_busy_seconds", seconds(t.busy_ns),
                          "gpu_idle_seconds", seconds(t.span_ns > t.busy_ns ? t.span_ns - t.busy_ns : 0),
                          "gpu_busy_share", busy_share >= 0 ? json_real(busy_share) : json_null(), "kernels",
                          top_kernels(lp, v), "gaps", largest_gaps(lp, v));
    free(gpu);
    return o ? o : json_null();
}

/* Whether the file on disk differs from the profiled file (for documents
 * the editor does not have open). Lock not held. */
static bool stale_on_disk(LspServer *s, const ProfileView *v, int file, const char *path) {
    pthread_mutex_lock(&s->lock);
    size_t max_bytes = s->config.max_file_bytes;
    pthread_mutex_unlock(&s->lock);
    SourceFile f;
    char *error = NULL;
    if (!source_file_read(path, max_bytes, &f, &error)) {
        free(error);
        return false;
    }
    bool stale = profile_view_freshness(v, file, f.text, f.length) == PROFILE_STALE;
    source_file_free(&f);
    return stale;
}

/* The view that applies to the document: for an open one, moved onto its
 * lines through the edits since it was profiled (*moved, freed by the
 * caller), with *stale from its text; else the profile's own, *stale from
 * the file on disk. NULL when no profile mentions it. Lock not held. */
static const ProfileView *document_view(LspServer *s, const LspProfiles *lp, const char *uri, const char *path,
                                        int *file, ProfileView **moved, bool *stale) {
    *moved = NULL;
    *stale = false;
    if (!lp) return NULL;
    pthread_mutex_lock(&s->lock);
    LspDocument *d = lsp_find_document(s, uri);
    const ProfileView *v = NULL;
    bool open = d && d->doc;
    if (open) {
        v = lsp_profiles_view_through(lp, path, d->doc, &d->line_map, file, moved);
        *stale = v && profile_view_freshness(v, *file, d->doc->text, d->doc->length) == PROFILE_STALE;
    }
    pthread_mutex_unlock(&s->lock);
    if (open) return v;
    v = lsp_profiles_view_for(lp, path, file);
    *stale = v && stale_on_disk(s, v, *file, path);
    return v;
}

/* The uri param as a path; sends the error and answers NULL when absent. */
static char *param_path(json_t *id, json_t *params, const char **uri, bool required) {
    *uri = json_string_value(json_object_get(params, "uri"));
    if (!*uri) {
        if (required) jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "uri is missing");
        return NULL;
    }
    char *path = file_uri_to_path(*uri);
    if (!path) jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "uri is not a file: URI");
    return path;
}

void lsp_handle_profile_summary(LspServer *s, json_t *id, json_t *params) {
    const char *uri;
    char *path = param_path(id, params, &uri, false);
    if (uri && !path) return;
    LspProfiles *lp;
    if (path) {
        lp = lsp_profiles_for_document(s, path);
    } else {
        pthread_mutex_lock(&s->lock);
        lsp_profiles_wait_ready(s);
        lp = lsp_profiles_ref(s);
        pthread_mutex_unlock(&s->lock);
    }
    json_t *profiles = json_array(), *document = json_null();
    if (lp && lp->set)
        for (size_t i = 0; i < profile_set_count(lp->set); i++)
            json_array_append_new(profiles, profile_json(lp, profile_set_at(lp->set, i)));
    if (path) {
        int file;
        ProfileView *moved;
        bool stale;
        const ProfileView *v = document_view(s, lp, uri, path, &file, &moved, &stale);
        json_decref(document);
        document = json_pack("{s:s,s:o,s:b}", "uri", uri, "profile",
                             v ? json_string(profile_view_path(v)) : json_null(), "stale", stale);
        profile_view_free(moved);
    }
    pthread_mutex_lock(&s->lock);
    if (lp) lsp_profiles_unref(lp);
    pthread_mutex_unlock(&s->lock);
    free(path);
    jsonrpc_send_result(id, json_pack("{s:o,s:o}", "profiles", profiles, "document", document ? document : json_null()));
}

/* The lines of `advise/lineCosts` with "metric": "memory": each line that
 * held or allocated device memory, its share of the peak of its GPU. */
static json_t *memory_lines(const ProfileView *v, int file, uint64_t *peak) {
    json_t *lines = json_array();
    *peak = 0;
    if (!v) return lines;
    const Profile *p = profile_view_profile(v);
    for (size_t i = 0; i < p->memory_count; i++)
        if (p->memories[i].peak_allocated > *peak) *peak = p->memories[i].peak_allocated;
    size_t n;
    LineMemory *l = line_memory_of_file(p, file, &n);
    for (size_t i = 0; i < n; i++) {
        json_t *line = lsp_memory_line_json(&l[i]);
        if (line) json_array_append_new(lines, line);
    }
    free(l);
    return lines;
}

/* advise/lineCosts with "metric": "memory" (takes path) */
static void line_memory_costs(LspServer *s, json_t *id, const char *uri, char *path) {
    LspProfiles *lp = lsp_profiles_for_document(s, path);
    int file;
    ProfileView *moved;
    bool stale;
    const ProfileView *v = document_view(s, lp, uri, path, &file, &moved, &stale);
    uint64_t peak;
    json_t *lines = memory_lines(v, file, &peak);
    json_t *result = json_pack("{s:s,s:o,s:b,s:s,s:s,s:I,s:o}", "uri", uri, "profile",
                               v ? json_string(profile_view_path(v)) : json_null(), "stale", stale, "metric", "memory",
                               "denominator", LSP_MEMORY_SHARE_DENOMINATOR, "peak_bytes",
                               (json_int_t)(peak > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : peak), "lines", lines);
    profile_view_free(moved);
    pthread_mutex_lock(&s->lock);
    if (lp) lsp_profiles_unref(lp);
    pthread_mutex_unlock(&s->lock);
    free(path);
    jsonrpc_send_result(id, result ? result : json_null());
}

void lsp_handle_line_costs(LspServer *s, json_t *id, json_t *params) {
    json_t *metric = json_object_get(params, "metric");
    const char *metric_name = !metric || json_is_null(metric) ? "time" : json_string_value(metric);
    if (!metric_name || (strcmp(metric_name, "time") != 0 && strcmp(metric_name, "memory") != 0)) {
        jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "metric must be \"time\" or \"memory\"");
        return;
    }
    const char *uri;
    char *path = param_path(id, params, &uri, true);
    if (!path) return;
    if (strcmp(metric_name, "memory") == 0) {
        line_memory_costs(s, id, uri, path);
        return;
    }
    LspProfiles *lp = lsp_profiles_for_document(s, path);
    int file;
    ProfileView *moved;
    bool stale;
    const ProfileView *v = document_view(s, lp, uri, path, &file, &moved, &stale);
    json_t *lines = json_array();
    uint64_t gpu_total = v ? profile_view_gpu_ns(v) : 0;
    if (v) {
        const ProfileLineCost *c;
        size_t n = profile_view_lines(v, file, &c);
        for (size_t i = 0; i < n; i++) {
            uint64_t gpu = profile_line_gpu_ns(&c[i]);
            if (c[i].line == 0 || (!gpu && !c[i].sync_ns)) continue;
            json_array_append_new(lines, json_pack("{s:i,s:f,s:f,s:f,s:I}", "line", (int)c[i].line - 1, "gpu_seconds",
                                                   seconds(gpu), "share", profile_view_line_share(v, &c[i]),
                                                   "host_wait_seconds", seconds(c[i].sync_ns), "launches",
                                                   (json_int_t)c[i].launches));
        }
    }
    json_t *result = json_pack("{s:s,s:o,s:b,s:s,s:s,s:f,s:o}", "uri", uri, "profile",
                               v ? json_string(profile_view_path(v)) : json_null(), "stale",
                               stale, "metric", "time", "denominator", LSP_SHARE_DENOMINATOR,
                               "total_gpu_seconds", seconds(gpu_total), "lines", lines);
    profile_view_free(moved);
    pthread_mutex_lock(&s->lock);
    if (lp) lsp_profiles_unref(lp);
    pthread_mutex_unlock(&s->lock);
    free(path);
    jsonrpc_send_result(id, result ? result : json_null());
}
