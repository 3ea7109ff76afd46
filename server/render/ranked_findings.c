/* Findings across files, merged with a profile and ranked by cost: the
 * files are walked as `advise check` walks them and each is checked by
 * check_file_text, the same code path as `advise check`. */
#include "server/render/ranked_findings.h"
#include "rules/rule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "server/workspace/check_file.h"
#include "server/workspace/check_pool.h"
#include "server/render/check_output.h"
#include "server/render/report_steps.h"
#include "server/workspace/file_walk.h"
#include "server/workspace/source_file.h"
#include "analysis/base/text_format.h"

static bool push(RankedFindings *r, size_t *capacity, RankedFinding item) {
    if (!array_reserve(&r->items, r->count, capacity, sizeof *r->items, 16)) return false;
    r->items[r->count++] = item;
    return true;
}

/* Moves the findings of one checked file into r. */
static bool take_findings(RankedFindings *r, size_t *capacity, const char *root, const char *path,
                          CheckedFile *checked) {
    char *rel = project_relative_path(root, path);
    const ProfProcess *steps = checked->profile ? report_steps_process(profile_view_profile(checked->profile)) : NULL;
    for (size_t i = 0; i < checked->findings.count; i++) {
        Finding *f = &checked->findings.items[i];
        RankedFinding item = {.finding = *f, .stale = checked->merge.stale};
        size_t line, col, end_line, end_col;
        display_position(checked->doc, f->range.start, &line, &col);
        display_position(checked->doc, f->range.end, &end_line, &end_col);
        item.line = (uint32_t)line;
        item.column = (uint32_t)col;
        item.end_line = (uint32_t)end_line;
        item.end_column = (uint32_t)end_col;
        item.profile_steps = steps ? steps->steps.count : 0;
        item.profile_steady_steps = steps ? steps->steps.steady_steps : 0;
        if (f->gain.present) item.cost_seconds = f->gain.seconds;
        else if (checked->profile)
            item.cost_seconds =
                (double)engine_measured_cost_ns(checked->doc, checked->profile, checked->profile_file, f) / 1e9;
        item.path = strdup(rel ? rel : path);
        if (!item.path || !push(r, capacity, item)) {
            free(item.path);
            /* the findings not moved yet stay with checked and are freed there */
            memmove(checked->findings.items, checked->findings.items + i,
                    (checked->findings.count - i) * sizeof *checked->findings.items);
            checked->findings.count -= i;
            free(rel);
            return false;
        }
    }
    checked->findings.count = 0; /* moved */
    free(rel);
    return true;
}

static int by_cost(const void *a, const void *b) {
    const RankedFinding *x = a, *y = b;
    if (x->cost_seconds != y->cost_seconds) return x->cost_seconds > y->cost_seconds ? -1 : 1;
    if (x->finding.severity != y->finding.severity) return x->finding.severity < y->finding.severity ? -1 : 1;
    int c = strcmp(x->path, y->path);
    if (c) return c;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->column != y->column) return x->column < y->column ? -1 : 1;
    return strcmp(x->finding.code, y->finding.code);
}

/* One file as collect_one leaves it for take_one. */
typedef struct {
    bool read;          /* it could be read */
    bool checked_ok;    /* checked holds its analysis */
    char *problem;      /* else what went wrong */
    CheckedFile checked;
} CollectedFile;

typedef struct {
    const char *const *paths;
    const char *root;
    const Config *cfg;
    const ProfileSource *profiles;
    PyWorkspaces *workspaces;
    RankedFindings *out;
    size_t capacity, readable;
    bool oom;
} Collection;

/* On a worker thread (check_pool.h): reads and checks one file. */
static void collect_one(void *ctx, size_t i, void *result) {
    Collection *c = ctx;
    CollectedFile *f = result;
    const char *path = c->paths[i];
    SourceFile source;
    if (!source_file_read(path, c->cfg->max_file_bytes, &source, &f->problem)) return;
    f->read = true;
    f->checked_ok = check_file_text(path, source.text, source.length, c->cfg, c->profiles, c->root, c->workspaces,
                                    &f->checked, &f->problem);
    source_file_free(&source);
}

static void discard_one(void *ctx, size_t i, void *result) {
    (void)ctx;
    (void)i;
    CollectedFile *f = result;
    free(f->problem);
    if (f->checked_ok) checked_file_free(&f->checked);
    memset(f, 0, sizeof *f);
}

/* On the calling thread, in the files' order: says what went wrong, takes
 * the findings. */
static void take_one(void *ctx, size_t i, void *result) {
    Collection *c = ctx;
    CollectedFile *f = result;
    const char *path = c->paths[i];
    if (f->read) c->readable++;
    if (!f->checked_ok) {
        fprintf(stderr, "advise: %s: %s\n", path, f->problem ? f->problem : "out of memory");
    } else {
        c->out->files_checked++;
        const EngineReport *report = &f->checked.report;
        if (report->syntax_error) {
            size_t line, col;
            display_position(f->checked.doc, report->error_offset, &line, &col);
            fprintf(stderr, "advise: %s:%zu:%zu: %s%s%s; findings cover the parts that parsed\n", path, line, col,
                    f->checked.doc->language == LANGUAGE_CUDA ? "does not compile here" : "syntax error",
                    report->error_message[0] ? ": " : "", report->error_message);
        }
        if (!c->oom) c->oom = !take_findings(c->out, &c->capacity, c->root, path, &f->checked);
    }
    discard_one(ctx, i, result);
}

static bool collect(const char *const *paths, size_t path_count, const char *root, const Config *cfg,
                    const ProfileSource *profiles, PyWorkspaces *workspaces, const RankedCollectRun *run,
                    RankedFindings *out, char **error) {
    memset(out, 0, sizeof *out);
    PyWorkspaces *own = workspaces ? NULL : py_workspaces_new();
    if (!workspaces) workspaces = own;
    FileList files;
    file_walk(paths, path_count, cfg, root, &files);
    for (size_t i = 0; i < files.error_count; i++)
        fprintf(stderr, "advise: %s: %s\n", files.errors[i].path, files.errors[i].message);
    const char **unique = files.count ? malloc(files.count * sizeof *unique) : NULL;
    size_t count = 0;
    for (size_t i = 0; unique && i < files.count; i++)
        if (i == 0 || strcmp(files.files[i], files.files[i - 1]) != 0) /* named twice: once */
            unique[count++] = files.files[i];
    Collection c = {unique, root, cfg, profiles, workspaces, out, 0, 0, files.count && !unique};
    if (unique) {
        check_pool_index_projects(workspaces, unique, count);
        CheckPool pool = {.count = count,
                          .jobs = run ? run->jobs : 1,
                          .result_size = sizeof(CollectedFile),
                          .progress = run && run->progress,
                          .ordered_learning = run != NULL, /* the editor's calls, one file each, learn as before */
                          .work = collect_one,
                          .discard = discard_one,
                          .emit = take_one,
                          .ctx = &c};
        check_pool_run(&pool);
    }
    bool nothing = files.count > 0 ? c.readable == 0 : files.error_count > 0;
    free(unique);
    file_list_free(&files);
    py_workspaces_free(own);
    if (c.oom || nothing) {
        *error = format_string(c.oom ? "out of memory" : "no file could be read");
        ranked_findings_free(out);
        return false;
    }
    ranked_findings_sort(out);
    return true;
}

bool ranked_findings_collect(const char *const *paths, size_t path_count, const char *root, const Config *cfg,
                             const ProfileView *profile, PyWorkspaces *workspaces, RankedFindings *out,
                             char **error) {
    ProfileSource source = {NULL, profile};
    return collect(paths, path_count, root, cfg, &source, workspaces, NULL, out, error);
}

bool ranked_findings_collect_set(const char *const *paths, size_t path_count, const char *root, const Config *cfg,
                                 const ProfileSet *profiles, PyWorkspaces *workspaces, const RankedCollectRun *run,
                                 RankedFindings *out, char **error) {
    ProfileSource source = {profiles, NULL};
    return collect(paths, path_count, root, cfg, &source, workspaces, run, out, error);
}

/* A finding of a rule whose Rule.subsumed_in_file_by names a rule with a
 * measured program-wide gain elsewhere in the list repeats that gain (PR019
 * in a model's file where PY009 in the entry point measured the same
 * kernels): within a file the engine drops it; across files, here. */
static void drop_repeated_gains(RankedFindings *r) {
    size_t kept = 0;
    for (size_t i = 0; i < r->count; i++) {
        const Rule *rule = r->items[i].finding.code ? rule_find(r->items[i].finding.code) : NULL;
        bool repeated = false;
        for (size_t j = 0; rule && rule->subsumed_in_file_by && !repeated && j < r->count; j++) {
            const Finding *other = &r->items[j].finding;
            repeated = j != i && other->code && strcmp(other->code, rule->subsumed_in_file_by) == 0 &&
                       other->gain.present && other->gain.scope && strcmp(other->gain.scope, "program") == 0;
        }
        if (repeated) {
            free(r->items[i].path);
            finding_free(&r->items[i].finding);
        } else {
            r->items[kept++] = r->items[i];
        }
    }
    r->count = kept;
}

void ranked_findings_sort(RankedFindings *r) {
    drop_repeated_gains(r);
    if (r->count) qsort(r->items, r->count, sizeof *r->items, by_cost);
}

bool ranked_finding_is_correctness(const RankedFinding *r) {
    const Rule *rule = r->finding.code ? rule_find(r->finding.code) : NULL;
    return rule && rule->correctness;
}

void ranked_findings_first(const RankedFindings *r, RankedFirst *out) {
    memset(out, 0, sizeof *out);
    double largest = 0;
    for (size_t i = 0; r && i < r->count; i++) {
        const RankedFinding *item = &r->items[i];
        if (ranked_finding_is_correctness(item)) {
            out->correctness_total++;
            continue;
        }
        double gain = item->finding.gain.present && !item->stale ? item->finding.gain.seconds : 0;
        /* in gain order: the cost of a finding with a gain is its gain, so the first is the largest */
        if (gain > 0 && !largest) largest = gain;
        if (gain > 0 && gain >= largest * RANKED_FIRST_FLOOR && out->first_count < RANKED_FIRST_MAX)
            out->first[out->first_count++] = i;
    }
    /* the wrong results that matter most first: by severity, then in the list's order */
    for (int sev = SEVERITY_ERROR; sev <= SEVERITY_HINT; sev++)
        for (size_t i = 0; r && i < r->count && out->correctness_count < RANKED_CORRECTNESS_SHOWN; i++)
            if (r->items[i].finding.severity == (Severity)sev && ranked_finding_is_correctness(&r->items[i]))
                out->correctness[out->correctness_count++] = i;
}

uint64_t ranked_finding_gain_steps(const RankedFinding *r) {
    const Gain *g = &r->finding.gain;
    return g->steady_steps && r->profile_steady_steps ? r->profile_steady_steps : r->profile_steps;
}

double ranked_finding_gain_per_step(const RankedFinding *r) {
    const Gain *g = &r->finding.gain;
    uint64_t steps = ranked_finding_gain_steps(r);
    if (!g->present || !g->scope || strcmp(g->scope, "program") != 0 || r->profile_steps < 2 || !steps) return 0;
    return g->seconds / (double)steps;
}

void ranked_findings_free(RankedFindings *r) {
    for (size_t i = 0; i < r->count; i++) {
        free(r->items[i].path);
        finding_free(&r->items[i].finding);
    }
    free(r->items);
    memset(r, 0, sizeof *r);
}
