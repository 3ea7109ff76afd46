/* `advise profile --source-metrics`: after the profiled run, re-run the
 * command once per hot kernel with the injection library in its
 * source-metrics mode (profiler/inject/source_metrics.c), and add the
 * per-line SASS metrics each run measured to the profile.
 *
 * Which kernels: the hottest by GPU time among those launched from the
 * project's own C/C++/CUDA code (the ones that can carry -lineinfo and that
 * the user can change); when there are none, the hottest of all (Triton
 * kernels, for one, carry line information of their Python source). NCCL
 * kernels are never chosen: their time is communication, not code. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler/comm_kernels.h"
#include "profiler/native_resolve.h"
#include "profiler/driver/profile_run_internal.h"

typedef struct {
    const char *name;     /* mangled, as CUPTI reports launches */
    char *shown;          /* demangled, for messages */
    uint64_t total_ns;
    bool from_native;     /* launched from a C/C++/CUDA line of the project */
} Candidate;

/* The suffixes language_for_path() (analysis/document.c) counts as CUDA/C++:
 * advise-profile does not link the analysis engine, so they are listed here
 * too. */
static bool native_source(const char *path) {
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot) return false;
    static const char *const exts[] = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", NULL};
    for (size_t i = 0; exts[i]; i++)
        if (strcmp(dot, exts[i]) == 0) return true;
    return false;
}

static int by_time(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->from_native != y->from_native) return x->from_native ? -1 : 1;
    return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : strcmp(x->name, y->name);
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const Candidate *)a)->name, ((const Candidate *)b)->name);
}

/* Kernels by name (the profile keeps one entry per launch configuration),
 * NCCL kernels and those the filter leaves out dropped, hottest first with
 * those launched from the project's C/C++/CUDA lines ahead. */
static Candidate *candidates(const Profile *p, const char *filter, size_t *count, uint64_t *gpu_ns) {
    size_t n;
    ProfKernelTotal *totals = profile_kernels_by_name(p, &n);
    Candidate *c = calloc(n ? n : 1, sizeof *c);
    *count = 0;
    *gpu_ns = 0;
    if (!c || (!totals && n)) {
        free(totals);
        free(c);
        return NULL;
    }
    for (size_t k = 0; k < n; k++) {
        *gpu_ns += totals[k].total_ns;
        char *shown = native_demangle(totals[k].name);
        if (!shown) shown = strdup(totals[k].name);
        if (!shown) continue;
        if (comm_kernel_name(shown) || (filter && !strstr(shown, filter) && !strstr(totals[k].name, filter))) {
            free(shown);
            continue;
        }
        c[(*count)++] = (Candidate){.name = totals[k].name, .shown = shown, .total_ns = totals[k].total_ns};
    }
    free(totals);
    /* still in name order: find each native launch's kernel by bisection */
    for (size_t o = 0; o < p->op_count; o++) {
        const ProfOp *op = &p->ops[o];
        if (op->kind != PROF_OP_LAUNCH || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count) continue;
        if (op->site < 0 || (size_t)op->site >= p->site_count) continue;
        int file = p->sites[op->site].file;
        if (file < 0 || (size_t)file >= p->file_count || !native_source(p->files[file].path)) continue;
        Candidate key = {.name = p->kernels[op->kernel].name};
        Candidate *hit = bsearch(&key, c, *count, sizeof *c, by_name);
        if (hit) hit->from_native = true;
    }
    qsort(c, *count, sizeof *c, by_time);
    return c;
}

/* The line metrics of one re-run, re-indexed into p's files. */
static size_t take_lines(Profile *p, const Profile *q) {
    size_t added = 0;
    for (size_t i = 0; i < q->line_metric_count; i++) {
        ProfLineMetrics m = q->line_metrics[i];
        if (m.file < 0 || (size_t)m.file >= q->file_count) continue;
        m.file = profile_add_file(p, q->files[m.file].path);
        if (m.file >= 0 && profile_add_line_metrics(p, &m) >= 0) added++;
    }
    return added;
}

static void say_process_notes(const Profile *q, int run, int runs) {
    for (size_t i = 0; i < q->process_count; i++) {
        const char *err = profile_process_error_first(q, i);
        if (err) fprintf(stderr, "advise: source metrics %d/%d: %s\n", run, runs, err);
    }
}

void source_metrics_collect(Profile *p, const ProfileRun *run, const char *inject, double first_run_s) {
    size_t count = 0;
    uint64_t gpu_ns = 0;
    Candidate *c = candidates(p, run->source_metrics_kernel, &count, &gpu_ns);
    if (!c || count == 0) {
        if (run->source_metrics_kernel)
            fprintf(stderr, "advise: source metrics: no kernel of this run has '%s' in its name\n",
                    run->source_metrics_kernel);
        else
            fprintf(stderr, "advise: source metrics: this run launched no kernel to measure\n");
        free(c);
        return;
    }
    int runs = count < (size_t)run->source_metrics_runs ? (int)count : run->source_metrics_runs;
    if (!c[0].from_native)
        fprintf(stderr, "advise: source metrics: no kernel was launched from the project's C/C++/CUDA code; "
                        "measuring the hottest kernels, which need line information (-lineinfo) to map to lines\n");
    fprintf(stderr,
            "advise: source metrics: CUPTI measures one kernel per run, so the command runs %d more time%s "
            "(the first run took %.1f s; each re-run adds SASS instrumentation to one launch)\n",
            runs, runs == 1 ? "" : "s", first_run_s);
    for (int r = 0; r < runs; r++) {
        const Candidate *k = &c[r];
        fprintf(stderr, "advise: source metrics %d/%d: %s (%.1f%% of GPU time)\n", r + 1, runs, k->shown,
                gpu_ns ? 100.0 * (double)k->total_ns / (double)gpu_ns : 0.0);
        char parts[PATH_MAX];
        if (!parts_dir_create("advise-metrics", parts, sizeof parts)) {
            fprintf(stderr, "advise: source metrics: cannot create a folder in %s: %s\n", profile_tmp_dir(),
                    strerror(errno));
            break;
        }
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int status = run_child(run->command, inject, parts, run->root, k->name);
        double took = seconds_since(&t0);
        Profile *q = merge_parts(parts);
        size_t lines = 0;
        if (q) {
            say_process_notes(q, r + 1, runs);
            lines = take_lines(p, q);
            profile_free(q);
        }
        fprintf(stderr, "advise: source metrics %d/%d: %zu source line%s measured in %.1f s\n", r + 1, runs, lines,
                lines == 1 ? "" : "s", took);
        if (status >= 128) { /* interrupted or killed: do not start another run */
            fprintf(stderr, "advise: source metrics: the command was stopped; no more runs\n");
            break;
        }
    }
    for (size_t i = 0; i < count; i++) free(c[i].shown);
    free(c);
}
