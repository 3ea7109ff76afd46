/* `advise report` as text, and the column padding shared with the HTML
 * report and `advise diff` (see report_text.h). Figures are written by
 * analysis/units.h, as everywhere. */
#include "server/render/report_steps.h"
#include "server/render/report_text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/profile_diff.h"
#include "profiler/rank_table.h"
#include "analysis/units.h"
#include "server/render/rank_text.h"
#include "server/render/report_memory.h"

int report_pad(const char *s, int width) {
    int extra = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) == 0x80) extra++; /* continuation bytes take no column */
    return width + extra;
}

uint64_t report_run_ns(const Profile *p) {
    uint64_t run = 0;
    for (size_t i = 0; i < p->process_count; i++)
        if (p->processes[i].wall_ns > run) run = p->processes[i].wall_ns;
    if (run) return run;
    for (size_t i = 0; i < p->timeline_count; i++)
        if (p->timelines[i].span_ns > run) run = p->timelines[i].span_ns;
    return run;
}

/* ---- top kernels -------------------------------------------------------------- */

static int compare_report_kernel(const void *a, const void *b) {
    const ReportKernel *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns < y->total_ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

ReportKernel *report_top_kernels(const Profile *p, size_t *count) {
    ReportKernel *out = profile_kernels_by_name(p, count);
    if (out) qsort(out, *count, sizeof *out, compare_report_kernel);
    return out;
}

/* ---- the text report --------------------------------------------------------------- */

static const char *scope_words(const char *scope) {
    if (!scope) return "";
    if (strcmp(scope, "program") == 0) return "for the whole program";
    if (strcmp(scope, "kernel") == 0) return "local to the kernel";
    return scope;
}

static void write_profile(FILE *out, const ReportProfile *rp) {
    const Profile *p = rp->profile;
    fprintf(out, "profile  %s (\"%s\", recorded %s%s)\n", rp->path ? rp->path : "(given)", p->name, p->created,
            strcmp(p->source, "cupti") == 0 ? "" : ", imported torch.profiler trace");
    char *gpu = profile_gpu_description(p);
    fprintf(out, "GPU      %s", gpu ? gpu : "?");
    free(gpu);
    if (p->device_count) {
        char mem[32];
        units_bytes(p->devices[0].memory_bytes, mem, sizeof mem);
        fprintf(out, " (%u SMs, compute capability %u.%u, %s)", p->devices[0].sm_count, p->devices[0].cc_major,
                p->devices[0].cc_minor, mem);
    }
    fputc('\n', out);
    ProfileTotals t;
    profile_totals(p, &t);
    char run[32], span[32], kernels[32], copies[32], syncs[32];
    units_ns(report_run_ns(p), run, sizeof run);
    units_ns(t.span_ns, span, sizeof span);
    units_ns(t.kernel_ns, kernels, sizeof kernels);
    units_ns(t.copy_ns + t.memset_ns, copies, sizeof copies);
    units_ns(t.sync_ns, syncs, sizeof syncs);
    fprintf(out, "run      %s", run);
    double share = profile_totals_busy_share(&t);
    char busy[UNITS_BUF];
    if (share >= 0) fprintf(out, "; GPU busy %s of its %s active span", units_ratio(share, busy, sizeof busy), span);
    fprintf(out, "\n         kernels %s (%llu launches), copies and memsets %s, host waiting in syncs %s\n", kernels,
            (unsigned long long)t.launches, copies, syncs);
    if (t.critical_known && t.host_wait_known) {
        char critical[32], gpu_time[32], part[UNITS_BUF], waited[32];
        uint64_t gpu_ns = t.kernel_ns + t.copy_ns + t.memset_ns;
        units_ns(t.critical_ns, critical, sizeof critical);
        units_ns(gpu_ns, gpu_time, sizeof gpu_time);
        units_ns(t.host_wait_ns, waited, sizeof waited);
        fprintf(out, "         on the critical path %s of the GPU's %s (%s): the rest was followed by the GPU waiting "
                     "for the host; the host waited for the GPU %s\n",
                critical, gpu_time, gpu_ns ? units_ratio((double)t.critical_ns / (double)gpu_ns, part, sizeof part) : "-",
                waited);
    }
    const ProfProcess *stepped = report_steps_process(p);
    if (stepped) {
        char head[160], phases[768];
        report_steps_words(&stepped->steps, report_steps_devices(p, stepped), head, sizeof head, phases, sizeof phases);
        fprintf(out, "steps    %s\n         %s\n", head, phases);
    }
    /* what a process could not record, or left out on purpose (--steps), each said once */
    for (size_t i = 0; i < p->process_count; i++) {
        const char *err = profile_process_error_first(p, i);
        if (err) fprintf(out, "note     %s\n", err);
    }
    if (p->dropped_kernels || p->dropped_ops || p->dropped_sites)
        fprintf(out, "note     the profile reached its caps: %llu kernels, %llu operations, %llu sites left out\n",
                (unsigned long long)p->dropped_kernels, (unsigned long long)p->dropped_ops,
                (unsigned long long)p->dropped_sites);
    RankTable ranks;
    if (rank_table_ranked_processes(p) > 1 && rank_table_build(p, &ranks)) {
        fputs("ranks    per process (as `advise ranks` shows it):\n", out);
        rank_text_write(out, &ranks);
        rank_table_free(&ranks);
    }
}

static void write_header(FILE *out, const ReportInput *in) {
    if (in->profile_count == 0) {
        fputs("profile  none: findings are not ranked by measured cost (record one with `advise profile -- CMD`)\n",
              out);
        return;
    }
    if (in->profile_count == 1) {
        write_profile(out, &in->profiles[0]);
        return;
    }
    /* several: one line each */
    size_t n = in->profile_count;
    char **gpus = calloc(n, sizeof *gpus);
    int name_w = 3, gpu_w = 3;
    for (size_t i = 0; i < n; i++) {
        const Profile *p = in->profiles[i].profile;
        int w = (int)strlen(p->name);
        if (w > name_w) name_w = w > 32 ? 32 : w;
        if (gpus) gpus[i] = profile_gpu_description(p);
        w = gpus && gpus[i] ? (int)strlen(gpus[i]) : 1;
        if (w > gpu_w) gpu_w = w > 32 ? 32 : w;
    }
    fprintf(out, "%zu profiles; each file takes its figures from the newest that mentions it:\n", n);
    fprintf(out, "  %-*s  %-20s  %-*s  %10s  %8s  %s\n", name_w, "run", "recorded", gpu_w, "GPU", "run length",
            "GPU busy", "profile");
    for (size_t i = 0; i < n; i++) {
        const Profile *p = in->profiles[i].profile;
        ProfileTotals t;
        profile_totals(p, &t);
        char run[32], busy[16] = "-";
        units_ns(report_run_ns(p), run, sizeof run);
        double share = profile_totals_busy_share(&t);
        if (share >= 0) units_ratio(share, busy, sizeof busy);
        fprintf(out, "  %-*.*s  %-20s  %-*.*s  %*s  %8s  %s\n", name_w, name_w, p->name, p->created, gpu_w, gpu_w,
                gpus && gpus[i] ? gpus[i] : "?", report_pad(run, 10), run, busy,
                in->profiles[i].path ? in->profiles[i].path : "");
        if (p->dropped_kernels || p->dropped_ops || p->dropped_sites)
            fprintf(out, "  %-*s  note: the profile reached its caps (%llu kernels, %llu operations, %llu sites left "
                         "out)\n",
                    name_w, "", (unsigned long long)p->dropped_kernels, (unsigned long long)p->dropped_ops,
                    (unsigned long long)p->dropped_sites);
    }
    for (size_t i = 0; gpus && i < n; i++) free(gpus[i]);
    free(gpus);
}

static void write_finding(FILE *out, size_t rank, const RankedFinding *r) {
    const Finding *f = &r->finding;
    char cost[32] = "-";
    if (r->cost_seconds > 0) units_seconds(r->cost_seconds, cost, sizeof cost);
    fprintf(out, "\n#%-3zu %*s  %-7s  %s:%u:%u  %s %s\n", rank, report_pad(cost, 9), cost, severity_name(f->severity), r->path, r->line,
            r->column, f->code ? f->code : "", f->name ? f->name : "");
    fprintf(out, "     %s\n", f->message ? f->message : "");
    for (size_t i = 0; i < f->evidence_count; i++) { /* measured figures as they are, other kinds named */
        const Evidence *e = &f->evidence[i];
        char *text = evidence_render(e);
        fprintf(out, "     - %s%s%s\n", e->kind == EVIDENCE_MEASURED ? "" : evidence_kind_name(e->kind),
                e->kind == EVIDENCE_MEASURED ? "" : ": ", text ? text : "");
        free(text);
    }
    if (f->gain.present) {
        char gain[UNITS_BUF];
        char *model = f->gain.model.text ? evidence_render(&f->gain.model) : NULL;
        fprintf(out, "     gain: about %s %s%s%s\n", units_seconds(f->gain.seconds, gain, sizeof gain),
                scope_words(f->gain.scope), model ? "; " : "", model ? model : "");
        free(model);
    }
    if (f->fix_count) fprintf(out, "     fix (%s): %s\n", f->fixes[0].safe ? "safe" : "unsafe", f->fixes[0].title);
    if (r->stale) fputs("     stale: the file changed since it was profiled; the figures describe the old code\n", out);
}

/* The first sentence of a message, cut at width code points' worth of bytes. */
static void write_short(FILE *out, const char *text, int width) {
    if (!text) return;
    size_t n = strcspn(text, "\n");
    const char *stop = strstr(text, "; ");
    if (stop && (size_t)(stop - text) < n) n = (size_t)(stop - text);
    if (n > (size_t)width) {
        n = (size_t)width;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--; /* not inside a UTF-8 sequence */
        fprintf(out, "%.*s...", (int)n, text);
    } else {
        fprintf(out, "%.*s", (int)n, text);
    }
}

/* Before the ranked list: what makes results wrong, then what to do first. */
static void write_first(FILE *out, const RankedFindings *r) {
    RankedFirst first;
    ranked_findings_first(r, &first);
    if (first.correctness_total) {
        fprintf(out, "\nCorrectness first: %zu finding%s can make results wrong (listed apart, not ranked by cost):\n",
                first.correctness_total, first.correctness_total == 1 ? "" : "s");
        for (size_t i = 0; i < first.correctness_count; i++) {
            const RankedFinding *item = &r->items[first.correctness[i]];
            fprintf(out, "  %s:%u  %s %s: ", item->path, item->line, item->finding.code, item->finding.name);
            write_short(out, item->finding.message, 110);
            fputc('\n', out);
        }
        if (first.correctness_total > first.correctness_count)
            fprintf(out, "  ... and %zu more in the list below\n", first.correctness_total - first.correctness_count);
    }
    if (!first.first_count) return;
    fputs("\nWhat to do first (the largest estimated gains; each is an upper bound, and two gains do not add up):\n",
          out);
    for (size_t i = 0; i < first.first_count; i++) {
        const RankedFinding *item = &r->items[first.first[i]];
        const Finding *f = &item->finding;
        char gain[UNITS_BUF];
        units_seconds(f->gain.seconds, gain, sizeof gain);
        char per_step[UNITS_BUF + 48] = "";
        double step_gain = ranked_finding_gain_per_step(item);
        if (step_gain > 0) {
            char each[UNITS_BUF], steps[UNITS_BUF];
            snprintf(per_step, sizeof per_step, " (%s per step over %s %ssteps)",
                     units_seconds(step_gain, each, sizeof each),
                     units_count(ranked_finding_gain_steps(item), steps, sizeof steps),
                     item->finding.gain.steady_steps ? "steady " : "");
        }
        fprintf(out, "  %zu. about %s %s%s  %s:%u  %s %s\n     ", i + 1, gain, scope_words(f->gain.scope), per_step,
                item->path, item->line, f->code, f->name);
        if (f->fix_count) fprintf(out, "fix: %s\n", f->fixes[0].title);
        else {
            write_short(out, f->message, 150);
            fputc('\n', out);
            if (f->advice) fprintf(out, "     do: %s\n", f->advice);
        }
    }
}

bool report_text_write(FILE *out, const ReportInput *in) {
    write_header(out, in);
    report_memory_text(out, in); /* nothing without `advise profile --memory` */
    const RankedFindings *r = in->findings;
    if (r) write_first(out, r);
    size_t count = r ? r->count : 0, files = r ? r->files_checked : 0;
    size_t by_severity[5] = {0}, measured = 0;
    for (size_t i = 0; i < count; i++) {
        Severity s = r->items[i].finding.severity;
        if (s >= SEVERITY_ERROR && s <= SEVERITY_HINT) by_severity[s]++;
        if (r->items[i].cost_seconds > 0) measured++;
    }
    if (count) fprintf(out, "\n%-4s %9s  %-7s  %s\n", "rank", "cost", "level", "where and what");
    for (size_t i = 0; i < count; i++) write_finding(out, i + 1, &r->items[i]);
    if (count == 0) fprintf(out, "\nNo findings in %zu file%s.\n", files, files == 1 ? "" : "s");
    else
        fprintf(out, "\n%zu finding%s in %zu file%s checked (%zu error, %zu warning, %zu info, %zu hint); %zu with a "
                     "measured cost.\n",
                count, count == 1 ? "" : "s", files, files == 1 ? "" : "s", by_severity[SEVERITY_ERROR],
                by_severity[SEVERITY_WARNING], by_severity[SEVERITY_INFO], by_severity[SEVERITY_HINT], measured);
    return !ferror(out);
}
