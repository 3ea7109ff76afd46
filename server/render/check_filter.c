#include "server/render/check_filter.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/base/growable.h"
#include "analysis/base/text_format.h"
#include "server/render/check_pr_output.h"
#include "server/workspace/check_file.h"

typedef char Fingerprint[SHA256_HEX_CHARS + 1];

struct CheckFilter {
    pthread_mutex_t lock;
    char *root;
    GitChanges *changes;
    char *diff_ref;
    Baseline *baseline;
    /* per baseline entry */
    bool *matched;      /* a finding of this run has it */
    bool *file_checked; /* its file was checked and parsed cleanly */
    bool *roaming;      /* its file is gone (renamed?): any file's finding with its fingerprint has it */
    size_t *by_key;     /* entries by (path, fingerprint) */
    size_t *by_print;   /* roaming entries by fingerprint */
    size_t roaming_count;
    bool record;
    Baseline recorded;
    bool record_failed;
    size_t skipped_unencodable;
    /* counts */
    size_t outside_changes, files_unchanged, known, reported;
};

/* ---- git's lines ---------------------------------------------------------------------- */

bool git_line_index_init(GitLineIndex *index, const Document *doc) {
    *index = (GitLineIndex){0};
    size_t cap = 0;
    for (const char *p = doc->text, *end = doc->text + doc->length; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break;
        if (!array_reserve(&index->newlines, index->count, &cap, sizeof *index->newlines, 256)) {
            git_line_index_free(index);
            return false;
        }
        index->newlines[index->count++] = (size_t)(nl - doc->text);
        p = nl + 1;
    }
    return true;
}

void git_line_index_free(GitLineIndex *index) {
    free(index->newlines);
    *index = (GitLineIndex){0};
}

/* 1-based line of the byte at offset: one more than the '\n's before it */
static size_t git_line(const GitLineIndex *index, size_t offset) {
    size_t lo = 0, hi = index->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (index->newlines[mid] < offset) lo = mid + 1;
        else hi = mid;
    }
    return lo + 1;
}

static bool range_on_change(const GitLineIndex *index, ByteRange r, const ChangedLines *lines) {
    size_t first = git_line(index, r.start);
    size_t last = r.end > r.start ? git_line(index, r.end - 1) : first;
    return changed_lines_touch(lines, first, last < first ? first : last);
}

bool finding_on_change(const GitLineIndex *index, const Finding *finding, const ChangedLines *lines) {
    if (!lines) return false;
    if (range_on_change(index, finding->range, lines)) return true;
    for (size_t i = 0; i < finding->related_count; i++)
        if (range_on_change(index, finding->related[i].range, lines)) return true;
    return false;
}

/* ---- the baseline's index ----------------------------------------------------------------- */

static const Baseline *sort_base; /* qsort has no context argument; set under sort_lock */
static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

static int key_order(const void *pa, const void *pb) {
    const BaselineEntry *a = &sort_base->items[*(const size_t *)pa], *b = &sort_base->items[*(const size_t *)pb];
    int c = strcmp(a->path, b->path);
    if (!c) c = strcmp(a->fingerprint, b->fingerprint);
    return c ? c : (*(const size_t *)pa > *(const size_t *)pb) - (*(const size_t *)pa < *(const size_t *)pb);
}

static int print_order(const void *pa, const void *pb) {
    const BaselineEntry *a = &sort_base->items[*(const size_t *)pa], *b = &sort_base->items[*(const size_t *)pb];
    int c = strcmp(a->fingerprint, b->fingerprint);
    return c ? c : (*(const size_t *)pa > *(const size_t *)pb) - (*(const size_t *)pa < *(const size_t *)pb);
}

/* the entry's file is gone: it may have been renamed */
static bool file_gone(const char *root, const char *path) {
    char *full = path[0] == '/' || !root ? strdup(path) : format_string("%s/%s", root, path);
    struct stat st;
    bool gone = full && stat(full, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
    free(full);
    return gone;
}

static bool index_baseline(CheckFilter *f) {
    size_t n = f->baseline->count;
    f->matched = calloc(n ? n : 1, sizeof *f->matched);
    f->file_checked = calloc(n ? n : 1, sizeof *f->file_checked);
    f->roaming = calloc(n ? n : 1, sizeof *f->roaming);
    f->by_key = calloc(n ? n : 1, sizeof *f->by_key);
    f->by_print = calloc(n ? n : 1, sizeof *f->by_print);
    if (!f->matched || !f->file_checked || !f->roaming || !f->by_key || !f->by_print) return false;
    for (size_t i = 0; i < n; i++) {
        f->by_key[i] = i;
        if ((f->roaming[i] = file_gone(f->root, f->baseline->items[i].path))) f->by_print[f->roaming_count++] = i;
    }
    pthread_mutex_lock(&sort_lock);
    sort_base = f->baseline;
    qsort(f->by_key, n, sizeof *f->by_key, key_order);
    qsort(f->by_print, f->roaming_count, sizeof *f->by_print, print_order);
    sort_base = NULL;
    pthread_mutex_unlock(&sort_lock);
    return true;
}

/* the first position in by_key whose entry is at or after (path, print); print NULL: the path's first */
static size_t key_lower_bound(const CheckFilter *f, const char *path, const char *print) {
    size_t lo = 0, hi = f->baseline->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const BaselineEntry *e = &f->baseline->items[f->by_key[mid]];
        int c = strcmp(e->path, path);
        if (!c && print) c = strcmp(e->fingerprint, print);
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* an entry of the baseline not yet matched that has this finding: first
 * one of its own file, else a roaming one; -1 when none */
static long match_entry(CheckFilter *f, const char *path, const char *print) {
    const BaselineEntry *items = f->baseline->items;
    for (size_t k = key_lower_bound(f, path, print); k < f->baseline->count; k++) {
        size_t i = f->by_key[k];
        if (strcmp(items[i].path, path) != 0 || strcmp(items[i].fingerprint, print) != 0) break;
        if (!f->matched[i]) return (long)i;
    }
    size_t lo = 0, hi = f->roaming_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(items[f->by_print[mid]].fingerprint, print) < 0) lo = mid + 1;
        else hi = mid;
    }
    for (size_t k = lo; k < f->roaming_count; k++) {
        size_t i = f->by_print[k];
        if (strcmp(items[i].fingerprint, print) != 0) break;
        if (!f->matched[i]) return (long)i;
    }
    return -1;
}

/* ---- the filter ----------------------------------------------------------------------- */

CheckFilter *check_filter_new(const CheckFilterOptions *options) {
    CheckFilter *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    pthread_mutex_init(&f->lock, NULL);
    f->root = options->root ? strdup(options->root) : NULL;
    f->diff_ref = options->diff_ref ? strdup(options->diff_ref) : NULL;
    f->changes = options->changes;
    f->baseline = options->baseline;
    f->record = options->record;
    if ((options->root && !f->root) || (options->diff_ref && !f->diff_ref) || (f->baseline && !index_baseline(f))) {
        check_filter_free(f);
        return NULL;
    }
    return f;
}

void check_filter_free(CheckFilter *f) {
    if (!f) return;
    git_changes_free(f->changes);
    if (f->baseline) baseline_free(f->baseline);
    free(f->baseline);
    baseline_free(&f->recorded);
    free(f->matched);
    free(f->file_checked);
    free(f->roaming);
    free(f->by_key);
    free(f->by_print);
    free(f->root);
    free(f->diff_ref);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

FilterVerdict check_filter_file(CheckFilter *f, const char *path, char **error) {
    if (!f->changes) return FILTER_CHECK;
    const ChangedLines *lines;
    switch (git_changes_for(f->changes, path, &lines)) {
    case GIT_FILE_OUTSIDE:
        *error = format_string("outside the git repository %s, so --diff-base cannot tell its changed lines",
                               git_changes_top(f->changes));
        return FILTER_REFUSE;
    case GIT_FILE_UNCHANGED:
        pthread_mutex_lock(&f->lock);
        f->files_unchanged++;
        pthread_mutex_unlock(&f->lock);
        return FILTER_SKIP;
    default: return FILTER_CHECK; /* changed, or unknown: reading it says what is wrong */
    }
}

/* the path a baseline records: relative to the root, else absolute, else as given */
static char *baseline_path(const CheckFilter *f, const char *path) {
    char *rel = f->root ? project_relative_path(f->root, path) : NULL;
    if (rel) return rel;
    char *abs = realpath(path, NULL);
    if (abs) return abs;
    while (path[0] == '.' && path[1] == '/') path += 2;
    return strdup(path);
}

char (*check_filter_findings(CheckFilter *f, const char *path, const Document *doc, FindingList *findings,
                             bool parsed_cleanly))[SHA256_HEX_CHARS + 1] {
    size_t n = findings->count;
    Fingerprint *prints = calloc(n ? n : 1, sizeof *prints);
    bool *on_change = calloc(n ? n : 1, sizeof *on_change), *known = calloc(n ? n : 1, sizeof *known);
    char *rel = baseline_path(f, path);
    GitLineIndex lines_index = {0};
    const ChangedLines *changed = NULL;
    bool ok = prints && on_change && known && rel;
    if (ok && f->changes) {
        ok = git_line_index_init(&lines_index, doc);
        git_changes_for(f->changes, path, &changed);
    }
    if (!ok) {
        free(prints);
        free(on_change);
        free(known);
        free(rel);
        return NULL;
    }
    finding_fingerprints(doc, findings, prints);
    for (size_t i = 0; i < n; i++)
        on_change[i] = !f->changes || finding_on_change(&lines_index, &findings->items[i], changed);
    git_line_index_free(&lines_index);

    pthread_mutex_lock(&f->lock);
    if (f->baseline) {
        if (parsed_cleanly)
            for (size_t k = key_lower_bound(f, rel, NULL);
                 k < f->baseline->count && strcmp(f->baseline->items[f->by_key[k]].path, rel) == 0; k++)
                f->file_checked[f->by_key[k]] = true;
        for (size_t i = 0; i < n; i++) {
            long e = match_entry(f, rel, prints[i]);
            if (e >= 0) f->matched[e] = known[i] = true;
        }
    }
    if (f->record) {
        size_t bad;
        if (!utf8_validate(rel, strlen(rel), &bad)) f->skipped_unencodable += n; /* JSON cannot hold the path */
        else
            for (size_t i = 0; i < n; i++) {
                size_t line, col;
                display_position(doc, findings->items[i].range.start, &line, &col);
                if (!baseline_add(&f->recorded, rel, findings->items[i].code, prints[i], (long long)line,
                                  findings->items[i].message))
                    f->record_failed = true;
            }
    }
    for (size_t i = 0; i < n; i++) {
        if (!on_change[i]) f->outside_changes++;
        else if (known[i]) f->known++;
        else f->reported++;
    }
    pthread_mutex_unlock(&f->lock);

    size_t kept = 0; /* the list keeps what is reported, the fingerprints follow */
    for (size_t i = 0; i < n; i++) {
        if (!on_change[i] || known[i]) {
            finding_free(&findings->items[i]);
            continue;
        }
        if (kept != i) {
            findings->items[kept] = findings->items[i];
            memcpy(prints[kept], prints[i], sizeof prints[kept]);
        }
        kept++;
    }
    findings->count = kept;
    free(on_change);
    free(known);
    free(rel);
    return prints;
}

void check_filter_summarise(CheckFilter *f, CheckSummary *s) {
    pthread_mutex_lock(&f->lock);
    if (f->changes) {
        s->diff_base = f->diff_ref;
        s->diff_base_commit = git_changes_commit(f->changes);
        s->outside_changes = f->outside_changes;
        s->files_unchanged = f->files_unchanged;
    }
    if (f->baseline) {
        s->baseline = true;
        s->baseline_known = f->known;
        s->baseline_fixed = 0;
        for (size_t i = 0; i < f->baseline->count; i++)
            if (f->file_checked[i] && !f->matched[i] && !f->roaming[i]) s->baseline_fixed++;
    }
    pthread_mutex_unlock(&f->lock);
}

bool check_filter_write_baseline(CheckFilter *f, const char *file, size_t *count, char **error) {
    pthread_mutex_lock(&f->lock);
    bool ok = !f->record_failed;
    if (!ok) *error = strdup("out of memory recording the findings");
    if (ok && f->skipped_unencodable)
        fprintf(stderr, "advise: %zu finding%s left out of the baseline: %s path is not UTF-8\n",
                f->skipped_unencodable, f->skipped_unencodable == 1 ? "" : "s",
                f->skipped_unencodable == 1 ? "its" : "their");
    if (ok) ok = baseline_write(file, &f->recorded, error);
    *count = f->recorded.count;
    pthread_mutex_unlock(&f->lock);
    return ok;
}
