/* The ProfileView: one profile with its lookups built once (operations by
 * file and line, per-line costs, kernels by their base name) and the run's
 * totals. Loading a folder's newest profile goes through profile_set.c. */
#include "profiler/profile_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "profiler/kernel_name.h"
#include "profiler/profile_set.h"
#include "profiler/sha256.h"
#include "analysis/base/text_format.h"

typedef struct {
    uint32_t line;
    size_t op;
} LineOp;

typedef struct {
    LineOp *ops; /* sorted by line, then profile order */
    size_t op_count;
    ProfileLineCost *lines; /* sorted by line */
    size_t line_count;
} FileIndex;

struct ProfileView {
    Profile *p;
    char *path;
    FileIndex *files; /* one per profile file */
    char **kernel_base; /* base name of each kernel */
    uint64_t run_ns, gpu_ns, kernel_ns, busy_ns;
    uint64_t idle_ns, profiler_ns; /* idle summed over timelines; the profiler's own launch cost */
    ProfileSteady steady;          /* the steady training steps' share of them */
    uint64_t recoverable_ns;       /* profile_view_recoverable_idle_ns */
    char **notes;
    size_t note_count, note_cap;
};

static int compare_line_op(const void *a, const void *b) {
    const LineOp *x = a, *y = b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    return x->op < y->op ? -1 : x->op > y->op;
}

static void add_to_line(ProfileLineCost *c, const Profile *p, const ProfOp *op) {
    switch (op->kind) {
    case PROF_OP_LAUNCH:
        c->launches += op->stats.count;
        c->kernel_ns += op->stats.total_ns;
        break;
    case PROF_OP_MEMCPY:
    case PROF_OP_MEMSET:
        c->copies += op->stats.count;
        c->copy_ns += op->stats.total_ns;
        c->copy_bytes += op->bytes;
        break;
    case PROF_OP_SYNC:
        c->syncs += op->stats.count;
        c->sync_ns += op->stats.total_ns;
        break;
    case PROF_OP_ALLOC:
        c->allocs += op->stats.count;
        c->alloc_ns += op->stats.total_ns;
        break;
    default: break;
    }
    (void)p;
}

/* Builds each file's sorted operations and per-line costs. */
static bool index_files(ProfileView *v) {
    const Profile *p = v->p;
    v->files = calloc(p->file_count ? p->file_count : 1, sizeof *v->files);
    if (!v->files) return false;
    for (size_t i = 0; i < p->op_count; i++) {
        int s = p->ops[i].site;
        if (s < 0 || (size_t)s >= p->site_count || p->sites[s].file < 0) continue;
        v->files[p->sites[s].file].op_count++;
    }
    for (size_t f = 0; f < p->file_count; f++) {
        if (!v->files[f].op_count) continue;
        v->files[f].ops = malloc(v->files[f].op_count * sizeof(LineOp));
        if (!v->files[f].ops) return false;
        v->files[f].op_count = 0;
    }
    for (size_t i = 0; i < p->op_count; i++) {
        int s = p->ops[i].site;
        if (s < 0 || (size_t)s >= p->site_count || p->sites[s].file < 0) continue;
        FileIndex *fi = &v->files[p->sites[s].file];
        fi->ops[fi->op_count++] = (LineOp){p->sites[s].line, i};
    }
    for (size_t f = 0; f < p->file_count; f++) {
        FileIndex *fi = &v->files[f];
        if (!fi->op_count) continue;
        qsort(fi->ops, fi->op_count, sizeof *fi->ops, compare_line_op);
        size_t distinct = 0;
        for (size_t k = 0; k < fi->op_count; k++)
            if (k == 0 || fi->ops[k].line != fi->ops[k - 1].line) distinct++;
        fi->lines = calloc(distinct, sizeof *fi->lines);
        if (!fi->lines) return false;
        for (size_t k = 0; k < fi->op_count; k++) {
            if (k == 0 || fi->ops[k].line != fi->ops[k - 1].line) fi->lines[fi->line_count++].line = fi->ops[k].line;
            add_to_line(&fi->lines[fi->line_count - 1], p, &p->ops[fi->ops[k].op]);
        }
    }
    return true;
}

/* What the profiler added to the launching threads' time: its callbacks,
 * and on each traced launch what tracing added over an untraced one. Tracing
 * every launch leaves nothing to compare with, so then only the callbacks
 * count (the figure is a lower bound). */
static uint64_t profiler_cost_ns(const ProfCalibration *c) {
    if (!c->trace_every) return 0;
    uint64_t cost = c->callback_ns;
    if (c->traced_launches && c->untraced_launches) {
        double traced = (double)c->traced_launch_api_ns / (double)c->traced_launches;
        double untraced = (double)c->untraced_launch_api_ns / (double)c->untraced_launches;
        if (traced > untraced) cost += (uint64_t)((traced - untraced) * (double)c->traced_launches);
    }
    return cost;
}

/* The steady steps' idle time, span and activities, and the profiler's cost
 * on them (its cost lands on launches: the steady steps' share of the
 * activities); then what the run could give back: the steady idle time less
 * that cost where the steps are known, a process's whole idle time less its
 * cost where they are not. */
static void compute_steady(ProfileView *v) {
    const Profile *p = v->p;
    uint64_t recoverable = 0;
    for (size_t i = 0; i < p->process_count; i++) {
        const ProfProcess *proc = &p->processes[i];
        uint64_t idle = 0, devices = 0, cost = profiler_cost_ns(&proc->calibration);
        for (size_t t = 0; t < p->timeline_count; t++)
            if (p->timelines[t].process == (int)i) {
                idle += p->timelines[t].idle_ns;
                devices++;
            }
        const ProfSteps *s = &proc->steps;
        if (!s->count || !s->phase_idle_known || !s->steady_steps) { /* no steady steps to judge by */
            recoverable += idle > cost ? idle - cost : 0;
            continue;
        }
        uint64_t all = 0;
        for (int ph = 0; ph < PROF_PHASE_COUNT; ph++) all += s->activities[ph];
        uint64_t share = all ? (uint64_t)((double)cost * (double)s->activities[PROF_PHASE_STEADY] / (double)all) : 0;
        v->steady.known = true;
        v->steady.idle_ns += s->idle_ns[PROF_PHASE_STEADY];
        v->steady.span_ns += s->steady_ns * devices;
        v->steady.activities += s->activities[PROF_PHASE_STEADY];
        v->steady.profiler_ns += share;
        v->steady.steps += s->steady_steps;
        recoverable += s->idle_ns[PROF_PHASE_STEADY] > share ? s->idle_ns[PROF_PHASE_STEADY] - share : 0;
    }
    v->recoverable_ns = recoverable;
}

static void compute_totals(ProfileView *v) {
    const Profile *p = v->p;
    for (size_t i = 0; i < p->process_count; i++)
        if (p->processes[i].wall_ns > v->run_ns) v->run_ns = p->processes[i].wall_ns;
    uint64_t span = 0;
    for (size_t i = 0; i < p->timeline_count; i++) {
        if (p->timelines[i].span_ns > span) span = p->timelines[i].span_ns;
        v->busy_ns += p->timelines[i].busy_ns;
        v->idle_ns += p->timelines[i].idle_ns;
    }
    for (size_t i = 0; i < p->process_count; i++) v->profiler_ns += profiler_cost_ns(&p->processes[i].calibration);
    compute_steady(v);
    if (!v->run_ns) v->run_ns = span;
    for (size_t i = 0; i < p->kernel_count; i++) v->kernel_ns += p->kernels[i].stats.total_ns;
    v->gpu_ns = v->kernel_ns;
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == PROF_OP_MEMCPY || p->ops[i].kind == PROF_OP_MEMSET) v->gpu_ns += p->ops[i].stats.total_ns;
}

ProfileView *profile_view_new(Profile *p, const char *source_path) {
    if (!p) return NULL;
    ProfileView *v = calloc(1, sizeof *v);
    if (!v) {
        profile_free(p);
        return NULL;
    }
    v->p = p;
    v->path = strdup(source_path ? source_path : "");
    v->kernel_base = calloc(p->kernel_count ? p->kernel_count : 1, sizeof *v->kernel_base);
    bool ok = v->path && v->kernel_base && index_files(v);
    for (size_t i = 0; ok && i < p->kernel_count; i++) ok = (v->kernel_base[i] = kernel_base_name(p->kernels[i].name)) != NULL;
    if (!ok) {
        profile_view_free(v);
        return NULL;
    }
    compute_totals(v);
    return v;
}

void profile_view_free(ProfileView *v) {
    if (!v) return;
    if (v->files)
        for (size_t f = 0; f < v->p->file_count; f++) {
            free(v->files[f].ops);
            free(v->files[f].lines);
        }
    free(v->files);
    if (v->kernel_base)
        for (size_t i = 0; i < v->p->kernel_count; i++) free(v->kernel_base[i]);
    free(v->kernel_base);
    for (size_t i = 0; i < v->note_count; i++) free(v->notes[i]);
    free(v->notes);
    profile_free(v->p);
    free(v->path);
    free(v);
}

ProfileView *profile_view_load(const char *path, char **error) {
    ProfileSet *set = profile_set_load(path, error);
    if (!set) return NULL;
    ProfileView *v = profile_set_take_newest(set);
    profile_set_free(set);
    if (!v) *error = format_string("%s: no profile there", path);
    return v;
}

bool profile_view_add_note(ProfileView *v, const char *note) {
    if (!array_reserve(&v->notes, v->note_count, &v->note_cap, sizeof *v->notes, 4)) return false;
    if (!(v->notes[v->note_count] = strdup(note))) return false;
    v->note_count++;
    return true;
}

size_t profile_view_notes(const ProfileView *v, const char *const **notes) {
    *notes = (const char *const *)v->notes;
    return v->note_count;
}

const Profile *profile_view_profile(const ProfileView *v) { return v->p; }
const char *profile_view_path(const ProfileView *v) { return v->path; }
uint64_t profile_view_run_ns(const ProfileView *v) { return v->run_ns; }
uint64_t profile_view_gpu_ns(const ProfileView *v) { return v->gpu_ns; }

bool profile_view_host_wait_ns(const ProfileView *v, uint64_t *ns) {
    *ns = 0;
    bool any = false;
    for (size_t i = 0; i < v->p->process_count; i++) {
        const ProfProcess *proc = &v->p->processes[i];
        if (!proc->host_wait_known) {
            if (!proc->error) return false; /* a process that ran: unknown */
            continue;
        }
        any = true;
        if (proc->host_wait_ns > *ns) *ns = proc->host_wait_ns;
    }
    return any;
}
uint64_t profile_view_kernel_ns(const ProfileView *v) { return v->kernel_ns; }
uint64_t profile_view_busy_ns(const ProfileView *v) { return v->busy_ns; }
uint64_t profile_view_idle_ns(const ProfileView *v) { return v->idle_ns; }
uint64_t profile_view_profiler_ns(const ProfileView *v) { return v->profiler_ns; }
uint64_t profile_view_recoverable_idle_ns(const ProfileView *v) { return v->recoverable_ns; }
const ProfileSteady *profile_view_steady(const ProfileView *v) { return v->steady.known ? &v->steady : NULL; }

const ProfDevice *profile_view_device(const ProfileView *v) {
    return v->p->device_count ? &v->p->devices[0] : NULL;
}

int profile_view_file(const ProfileView *v, const char *path) {
    if (!path) return -1;
    for (size_t i = 0; i < v->p->file_count; i++)
        if (strcmp(v->p->files[i].path, path) == 0) return (int)i;
    return -1;
}

int profile_view_file_matching(const ProfileView *v, const char *relative, const char *absolute) {
    int f = profile_view_file(v, relative);
    if (f >= 0 || !absolute) return f;
    size_t a = strlen(absolute), best = 0;
    for (size_t i = 0; i < v->p->file_count; i++) {
        const char *path = v->p->files[i].path;
        size_t k = strlen(path);
        if (a > k && absolute[a - k - 1] == '/' && strcmp(absolute + a - k, path) == 0 && k > best) {
            best = k;
            f = (int)i;
        }
    }
    return f;
}

ProfileFreshness profile_view_freshness(const ProfileView *v, int file, const char *text, size_t length) {
    if (file < 0 || (size_t)file >= v->p->file_count || !v->p->files[file].sha256) return PROFILE_NO_HASH;
    char hex[SHA256_HEX_CHARS + 1];
    sha256_hex_of(text, length, hex);
    return strcmp(hex, v->p->files[file].sha256) == 0 ? PROFILE_FRESH : PROFILE_STALE;
}

/* first index in ops whose line is >= line */
static size_t lower_bound(const LineOp *ops, size_t n, uint32_t line) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ops[mid].line < line) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

size_t profile_view_ops_in(const ProfileView *v, int file, uint32_t first, uint32_t last, const ProfOp **out,
                           size_t max) {
    if (file < 0 || (size_t)file >= v->p->file_count || first > last) return 0;
    const FileIndex *fi = &v->files[file];
    size_t n = 0;
    for (size_t k = lower_bound(fi->ops, fi->op_count, first); k < fi->op_count && fi->ops[k].line <= last; k++) {
        if (n < max) out[n] = &v->p->ops[fi->ops[k].op];
        n++;
    }
    return n;
}

size_t profile_view_lines(const ProfileView *v, int file, const ProfileLineCost **out) {
    *out = NULL;
    if (file < 0 || (size_t)file >= v->p->file_count) return 0;
    *out = v->files[file].lines;
    return v->files[file].line_count;
}

const ProfileLineCost *profile_view_line(const ProfileView *v, int file, uint32_t line) {
    const ProfileLineCost *lines;
    size_t n = profile_view_lines(v, file, &lines), lo = 0, hi = n;
    while (lo < hi) { /* sorted by line */
        size_t mid = lo + (hi - lo) / 2;
        if (lines[mid].line < line) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && lines[lo].line == line ? &lines[lo] : NULL;
}

uint64_t profile_line_gpu_ns(const ProfileLineCost *c) { return prof_add_u64(c->kernel_ns, c->copy_ns); }

double profile_view_line_share(const ProfileView *v, const ProfileLineCost *c) {
    uint64_t total = profile_view_gpu_ns(v);
    return total && c ? (double)profile_line_gpu_ns(c) / (double)total : 0;
}

bool profile_view_kernel(const ProfileView *v, const char *function, ProfStats *sum, const ProfKernel **example) {
    ProfStats total = {0};
    const ProfKernel *first = NULL;
    uint64_t best_count = 0;
    for (size_t i = 0; function && i < v->p->kernel_count; i++) {
        if (strcmp(v->kernel_base[i], function) != 0) continue;
        const ProfStats *s = &v->p->kernels[i].stats;
        if (!first || s->count > best_count) { /* the median of the most-launched configuration */
            first = &v->p->kernels[i];
            best_count = s->count;
            total.median_ns = s->median_ns;
        }
        if (total.count == 0 || s->min_ns < total.min_ns) total.min_ns = s->min_ns;
        if (s->max_ns > total.max_ns) total.max_ns = s->max_ns;
        total.count += s->count;
        total.total_ns += s->total_ns;
    }
    if (sum) *sum = total;
    if (example) *example = first;
    return first != NULL;
}

size_t profile_view_kernel_sites(const ProfileView *v, int kernel, int *sites, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < v->p->op_count; i++) {
        const ProfOp *op = &v->p->ops[i];
        if (op->kind != PROF_OP_LAUNCH || op->kernel != kernel || op->site < 0) continue;
        bool seen = false;
        for (size_t k = 0; k < n && k < max; k++) seen |= sites[k] == op->site;
        if (seen) continue;
        if (n < max) sites[n] = op->site;
        n++;
    }
    return n;
}
