/* `advise diff BEFORE AFTER`: two profiles side by side, as a text table for
 * people or JSON for programs (shape in docs/json-output.md). The comparison itself
 * is profiler/profile_diff.c. */
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/profile_diff.h"
#include "server/cli/cli.h"
#include "server/cli/cli_profile_io.h"
#include "server/render/report_text.h"

#define DEFAULT_LIMIT 15

static void diff_usage(FILE *out) {
    fputs("usage: advise diff [options] BEFORE.json AFTER.json\n"
          "\n"
          "Compares two profiles: the run's totals, then each kernel (by name) and each call site\n"
          "(file, line and kind of operation) with its time before and after, by time saved.\n"
          "\n"
          "options:\n"
          "  --format text|json   output format (default text; json: docs/json-output.md)\n"
          "  --limit N            text: at most N rows per table section (default 15; 0: all)\n"
          "  --fail-if-slower PCT exit 1 when AFTER is more than PCT percent slower than BEFORE, by the\n"
          "                       --metric (for CI gates: docs/ci.md)\n"
          "  --metric gpu|wall    what --fail-if-slower compares: gpu (default), the GPU time of every\n"
          "                       kernel, copy and memset; or wall, the longest process's wall time\n"
          "\n"
          "exit status: 0 compared (and not slower past --fail-if-slower), 1 slower past it,\n"
          "2 usage error or a profile that cannot be read\n",
          out);
}

/* ---- text ------------------------------------------------------------------------ */

static void print_command(FILE *out, const Profile *p) {
    if (p->command_count == 0) {
        fputs("(no command)", out);
        return;
    }
    for (size_t i = 0; i < p->command_count; i++) {
        const char *arg = p->command[i];
        bool quote = !*arg || strpbrk(arg, " \t\n'\"\\$`*?;&|<>()") != NULL;
        if (i) fputc(' ', out);
        if (!quote) {
            fputs(arg, out);
            continue;
        }
        fputc('\'', out);
        for (const char *c = arg; *c; c++) {
            if (*c == '\'') fputs("'\\''", out);
            else fputc(*c, out);
        }
        fputc('\'', out);
    }
}

static void print_profile_line(FILE *out, const char *label, const char *path, const Profile *p, const char *gpu) {
    fprintf(out, "%-7s %s\n        %s, recorded %s on %s%s: ", label, path, p->name, p->created, gpu,
            strcmp(p->source, "cupti") == 0 ? "" : " (imported torch.profiler trace)");
    print_command(out, p);
    fputc('\n', out);
}

static void print_ago(FILE *out, int64_t s) {
    if (s < 120) fprintf(out, "%lld s", (long long)s);
    else if (s < 2 * 3600) fprintf(out, "%lld min", (long long)(s / 60));
    else if (s < 2 * 86400) fprintf(out, "%lld h", (long long)(s / 3600));
    else fprintf(out, "%lld days", (long long)(s / 86400));
}

static void print_speedup(FILE *out, DiffSide side, DiffFigures b, DiffFigures a) {
    double x = diff_speedup(b, a);
    if (side == DIFF_BEFORE_ONLY) fprintf(out, "%9s", "gone");
    else if (side == DIFF_AFTER_ONLY) fprintf(out, "%9s", "new");
    else if (x < 0) fprintf(out, "%9s", "-");
    else if (x >= 100) fprintf(out, "%8.0fx", x);
    else fprintf(out, "%8.2fx", x);
}

/* before, after, saved, speedup: the four columns every table starts with */
static void print_figures(FILE *out, DiffSide side, DiffFigures b, DiffFigures a) {
    char before[32] = "-", after[32] = "-", saved[32];
    if (side != DIFF_AFTER_ONLY) units_ns(b.total_ns, before, sizeof before);
    if (side != DIFF_BEFORE_ONLY) units_ns(a.total_ns, after, sizeof after);
    units_format(q_seconds((double)(diff_saved_ns(b, a)) / 1e9), saved, sizeof saved);
    fprintf(out, "  %*s  %*s  %*s", report_pad(before, 10), before, report_pad(after, 10), after,
            report_pad(saved, 10), saved);
    print_speedup(out, side, b, a);
}

static void print_total(FILE *out, const char *what, uint64_t b, uint64_t a, uint64_t count_b, uint64_t count_a) {
    DiffFigures fb = {count_b, b}, fa = {count_a, a};
    fprintf(out, "%-22s", what);
    print_figures(out, DIFF_BOTH, fb, fa);
    if (count_b || count_a) fprintf(out, "  %10llu -> %llu", (unsigned long long)count_b, (unsigned long long)count_a);
    fputc('\n', out);
}

static void print_busy(FILE *out, const ProfileTotals *b, const ProfileTotals *a) {
    double sb = profile_totals_busy_share(b), sa = profile_totals_busy_share(a);
    char pb[32] = "-", pa[32] = "-", span_b[32], span_a[32];
    if (sb >= 0) units_ratio(sb, pb, sizeof pb);
    if (sa >= 0) units_ratio(sa, pa, sizeof pa);
    units_ns(b->span_ns, span_b, sizeof span_b);
    units_ns(a->span_ns, span_a, sizeof span_a);
    fprintf(out, "%-22s  %10s  %10s  of the GPUs' active span (%s before, %s after)\n", "GPU busy", pb, pa, span_b,
            span_a);
}

static void print_site_key(FILE *out, const DiffSite *s) {
    if (s->path) fprintf(out, "%s:%u %s", s->path, s->line, prof_op_kind_name(s->kind));
    else fprintf(out, "(no user frame) %s", prof_op_kind_name(s->kind));
}

typedef struct {
    DiffSide side;
    const char *heading;
} Section;

static const Section sections[] = {
    {DIFF_BOTH, "in both"},
    {DIFF_BEFORE_ONLY, "only in BEFORE"},
    {DIFF_AFTER_ONLY, "only in AFTER"},
};

/* One table (kernels or sites) in its three sections. */
static void print_table(FILE *out, const char *title, const char *count_label, const char *key_label, bool sites,
                        const ProfileDiff *d, size_t limit) {
    size_t n = sites ? d->site_count : d->kernel_count;
    size_t per_side[3] = {0};
    for (size_t i = 0; i < n; i++) per_side[sites ? d->sites[i].side : d->kernels[i].side]++;
    fprintf(out, "\n%s, by time saved (%zu in both, %zu only in BEFORE, %zu only in AFTER)\n", title, per_side[0],
            per_side[1], per_side[2]);
    if (n == 0) {
        fputs("  none in either profile\n", out);
        return;
    }
    fprintf(out, "  %10s  %10s  %10s%9s  %16s  %s\n", "before", "after", "saved", "speedup", count_label, key_label);
    for (size_t s = 0; s < sizeof sections / sizeof *sections; s++) {
        if (per_side[sections[s].side] == 0) continue;
        fprintf(out, " %s:\n", sections[s].heading);
        size_t shown = 0;
        for (size_t i = 0; i < n; i++) {
            DiffSide side = sites ? d->sites[i].side : d->kernels[i].side;
            if (side != sections[s].side) continue;
            if (limit && shown == limit) {
                fprintf(out, "  ... and %zu more (--limit 0 shows all)\n", per_side[side] - shown);
                break;
            }
            shown++;
            DiffFigures b = sites ? d->sites[i].before : d->kernels[i].before;
            DiffFigures a = sites ? d->sites[i].after : d->kernels[i].after;
            print_figures(out, side, b, a);
            char counts[48];
            snprintf(counts, sizeof counts, "%llu -> %llu", (unsigned long long)b.count, (unsigned long long)a.count);
            fprintf(out, "  %16s  ", counts);
            if (sites) print_site_key(out, &d->sites[i]);
            else fputs(d->kernels[i].name, out);
            fputc('\n', out);
        }
    }
}

static void print_warnings_text(FILE *out, const Profile *b, const Profile *a, const ProfileDiff *d) {
    if (d->older < 0) {
        fputs("BEFORE is the older profile (recorded ", out);
        print_ago(out, d->created_gap_s);
        fputs(" earlier).\n", out);
    } else if (d->older > 0) {
        fputs("warning: AFTER is the older profile (recorded ", out);
        print_ago(out, d->created_gap_s);
        fputs(" earlier): are the two the wrong way round?\n", out);
    } else {
        fputs("Both profiles were recorded in the same second.\n", out);
    }
    if (d->different_gpu)
        fprintf(out, "warning: recorded on different GPUs (%s before, %s after): times do not compare directly\n",
                d->before_gpu, d->after_gpu);
    if (d->different_command) fputs("warning: recorded from different commands (above)\n", out);
    if (d->different_source)
        fprintf(out, "warning: one profile was measured by %s, the other by %s: their figures are not taken alike\n",
                b->source, a->source);
}

static void write_text(FILE *out, const char *path_b, const char *path_a, const Profile *b, const Profile *a,
                       const ProfileDiff *d, size_t limit) {
    print_profile_line(out, "BEFORE", path_b, b, d->before_gpu);
    print_profile_line(out, "AFTER", path_a, a, d->after_gpu);
    print_warnings_text(out, b, a, d);

    const ProfileTotals *tb = &d->before, *ta = &d->after;
    fprintf(out, "\nTotals                  %10s  %10s  %10s%9s  %16s\n", "before", "after", "saved", "speedup", "count");
    print_total(out, "GPU kernel time", tb->kernel_ns, ta->kernel_ns, tb->launches, ta->launches);
    print_total(out, "copies (GPU)", tb->copy_ns, ta->copy_ns, tb->copies, ta->copies);
    print_total(out, "memsets (GPU)", tb->memset_ns, ta->memset_ns, tb->memsets, ta->memsets);
    print_total(out, "sync wait (host)", tb->sync_ns, ta->sync_ns, tb->syncs, ta->syncs);
    print_total(out, "allocations (host)", tb->alloc_ns, ta->alloc_ns, tb->allocs, ta->allocs);
    print_total(out, "wall time", tb->wall_ns, ta->wall_ns, 0, 0);
    print_busy(out, tb, ta);

    print_table(out, "Kernels", "launches", "kernel", false, d, limit);
    print_table(out, "Call sites", "calls", "site", true, d, limit);
    bool any_both = false;
    for (size_t i = 0; i < d->site_count && !any_both; i++) any_both = d->sites[i].side == DIFF_BOTH;
    if (!any_both && d->site_count)
        fputs("note: no call site is in both profiles (sites match by file path, line and kind; "
              "code that moved or was renamed shows as gone and new)\n",
              out);
}

/* ---- JSON ------------------------------------------------------------------------ */

static json_t *json_totals(const ProfileTotals *t) {
    double share = profile_totals_busy_share(t);
    json_t *o = json_object();
    json_object_set_new(o, "kernel_ns", cli_json_u64(t->kernel_ns));
    json_object_set_new(o, "launches", cli_json_u64(t->launches));
    json_object_set_new(o, "copy_ns", cli_json_u64(t->copy_ns));
    json_object_set_new(o, "copies", cli_json_u64(t->copies));
    json_object_set_new(o, "copy_bytes", cli_json_u64(t->copy_bytes));
    json_object_set_new(o, "memset_ns", cli_json_u64(t->memset_ns));
    json_object_set_new(o, "memsets", cli_json_u64(t->memsets));
    json_object_set_new(o, "sync_ns", cli_json_u64(t->sync_ns));
    json_object_set_new(o, "syncs", cli_json_u64(t->syncs));
    json_object_set_new(o, "alloc_ns", cli_json_u64(t->alloc_ns));
    json_object_set_new(o, "allocs", cli_json_u64(t->allocs));
    json_object_set_new(o, "wall_ns", cli_json_u64(t->wall_ns));
    json_object_set_new(o, "span_ns", cli_json_u64(t->span_ns));
    json_object_set_new(o, "busy_ns", cli_json_u64(t->busy_ns));
    json_object_set_new(o, "gpu_busy_share", share < 0 ? json_null() : json_real(share));
    return o;
}

static json_t *json_profile(const char *path, const Profile *p, const char *gpu, const ProfileTotals *t) {
    json_t *command = json_array();
    for (size_t i = 0; i < p->command_count; i++) json_array_append_new(command, json_string(p->command[i]));
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "path", path, "name", p->name, "created", p->created, "source",
                     p->source, "gpu", gpu, "command", command, "totals", json_totals(t));
}

static const char *side_name(DiffSide s) {
    return s == DIFF_BOTH ? "both" : s == DIFF_BEFORE_ONLY ? "before" : "after";
}

static void json_set_figures(json_t *o, DiffSide side, DiffFigures b, DiffFigures a) {
    double x = diff_speedup(b, a);
    json_object_set_new(o, "in", json_string(side_name(side)));
    json_object_set_new(o, "before", json_pack("{s:o,s:o}", "count", cli_json_u64(b.count), "total_ns", cli_json_u64(b.total_ns)));
    json_object_set_new(o, "after", json_pack("{s:o,s:o}", "count", cli_json_u64(a.count), "total_ns", cli_json_u64(a.total_ns)));
    json_object_set_new(o, "saved_ns", json_integer(diff_saved_ns(b, a)));
    json_object_set_new(o, "speedup", x < 0 ? json_null() : json_real(x));
}

static bool write_json(FILE *out, const char *path_b, const char *path_a, const Profile *b, const Profile *a,
                       const ProfileDiff *d, json_t *gate) {
    json_t *warnings = json_array();
    if (d->older > 0) json_array_append_new(warnings, json_string("AFTER is the older profile"));
    if (d->different_gpu) json_array_append_new(warnings, json_string("recorded on different GPUs"));
    if (d->different_command) json_array_append_new(warnings, json_string("recorded from different commands"));
    if (d->different_source) json_array_append_new(warnings, json_string("measured by different sources"));
    json_t *kernels = json_array(), *sites = json_array();
    for (size_t i = 0; i < d->kernel_count; i++) {
        const DiffKernel *k = &d->kernels[i];
        json_t *o = json_pack("{s:s}", "name", k->name);
        json_set_figures(o, k->side, k->before, k->after);
        json_array_append_new(kernels, o);
    }
    for (size_t i = 0; i < d->site_count; i++) {
        const DiffSite *s = &d->sites[i];
        json_t *o = json_pack("{s:s?,s:o,s:s,s:s?}", "path", s->path, "line", s->path ? json_integer(s->line) : json_null(),
                              "kind", prof_op_kind_name(s->kind), "function", s->function);
        json_set_figures(o, s->side, s->before, s->after);
        json_array_append_new(sites, o);
    }
    json_t *doc = json_pack("{s:i,s:o,s:o,s:s,s:I,s:o,s:o,s:o}", "version", 1, "before",
                            json_profile(path_b, b, d->before_gpu, &d->before), "after",
                            json_profile(path_a, a, d->after_gpu, &d->after), "older",
                            d->older < 0 ? "before" : d->older > 0 ? "after" : "same", "created_gap_s",
                            (json_int_t)d->created_gap_s, "warnings", warnings, "kernels", kernels, "sites", sites);
    if (gate) json_object_set_new(doc, "gate", gate);
    return cli_write_json(out, doc);
}

/* ---- the gate: --fail-if-slower ---------------------------------------------------- */

typedef struct {
    bool wanted;
    double threshold_pct;
    bool wall;               /* --metric wall; else GPU time */
    uint64_t before_ns, after_ns;
    double change_pct;       /* (after / before - 1) * 100; 0 when before is 0 */
    bool slower;             /* past the threshold */
} SlowdownGate;

static uint64_t gate_metric(const ProfileTotals *t, bool wall) {
    return wall ? t->wall_ns : t->kernel_ns + t->copy_ns + t->memset_ns;
}

static void gate_judge(SlowdownGate *g, const ProfileDiff *d) {
    g->before_ns = gate_metric(&d->before, g->wall);
    g->after_ns = gate_metric(&d->after, g->wall);
    g->change_pct = g->before_ns ? 100.0 * ((double)g->after_ns / (double)g->before_ns - 1.0) : 0.0;
    /* nothing measured before: any GPU time after is not a slowdown of anything */
    g->slower = g->before_ns > 0 && g->change_pct > g->threshold_pct;
}

/* One line on stderr: the verdict CI logs show. */
static void gate_report(const SlowdownGate *g, const ProfileDiff *d) {
    char b[32], a[32];
    units_ns(g->before_ns, b, sizeof b);
    units_ns(g->after_ns, a, sizeof a);
    const char *what = g->wall ? "wall time" : "GPU time";
    if (g->before_ns == 0)
        fprintf(stderr, "advise diff: BEFORE measured no %s; nothing to compare against (not failing)\n", what);
    else
        fprintf(stderr, "advise diff: %s %s -> %s (%+.1f%%): %s the %.1f%% threshold\n", what, b, a, g->change_pct,
                g->slower ? "slower past" : "within", g->threshold_pct);
    if (d->different_gpu || d->different_command)
        fprintf(stderr, "advise diff: warning: the profiles were recorded %s; the comparison may not be fair\n",
                d->different_gpu ? "on different GPUs" : "from different commands");
}

static json_t *gate_json(const SlowdownGate *g) {
    return json_pack("{s:s,s:f,s:o,s:o,s:o,s:b}", "metric", g->wall ? "wall" : "gpu", "threshold_pct",
                     g->threshold_pct, "before_ns", cli_json_u64(g->before_ns), "after_ns",
                     cli_json_u64(g->after_ns), "change_pct", g->before_ns ? json_real(g->change_pct) : json_null(),
                     "slower", g->slower);
}

/* ---- the command ------------------------------------------------------------------ */

enum { OPT_FORMAT = 256, OPT_LIMIT, OPT_HELP, OPT_FAIL_IF_SLOWER, OPT_METRIC };

static const struct option long_options[] = {
    {"format", required_argument, 0, OPT_FORMAT},
    {"limit", required_argument, 0, OPT_LIMIT},
    {"fail-if-slower", required_argument, 0, OPT_FAIL_IF_SLOWER},
    {"metric", required_argument, 0, OPT_METRIC},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

int cli_diff(int argc, char **argv) {
    bool json = false;
    size_t limit = DEFAULT_LIMIT;
    SlowdownGate gate = {0};
    bool metric_given = false;
    optind = 1;
    opterr = 0;
    int c;
    for (int token = optind; (c = getopt_long(argc, argv, "h", long_options, NULL)) != -1; token = optind) {
        switch (c) {
        case OPT_FORMAT:
            if (cli_format_option("diff", optarg, &json) != EXIT_CLEAN) return EXIT_TROUBLE;
            break;
        case OPT_LIMIT: {
            char *end;
            long long n = strtoll(optarg, &end, 10);
            if (!*optarg || *end || n < 0) return cli_usage_error("diff", "--limit wants a number (0: all), not '%s'", optarg);
            limit = (size_t)n;
            break;
        }
        case OPT_FAIL_IF_SLOWER: {
            char *end;
            double pct = strtod(optarg, &end);
            if (end != optarg && *end == '%') end++;
            if (!*optarg || *end || !(pct >= 0 && pct <= 1e6))
                return cli_usage_error("diff", "--fail-if-slower wants a percentage such as 5, not '%s'", optarg);
            gate.wanted = true;
            gate.threshold_pct = pct;
            break;
        }
        case OPT_METRIC:
            if (strcmp(optarg, "gpu") != 0 && strcmp(optarg, "wall") != 0)
                return cli_usage_error("diff", "--metric wants gpu or wall, not '%s'", optarg);
            gate.wall = strcmp(optarg, "wall") == 0;
            metric_given = true;
            break;
        case OPT_HELP:
        case 'h': diff_usage(stdout); return EXIT_CLEAN;
        default: return cli_option_error("diff", argv, token);
        }
    }
    if (metric_given && !gate.wanted)
        return cli_usage_error("diff", "%s", "--metric goes with --fail-if-slower");
    if (argc - optind != 2)
        return cli_usage_error("diff", "wants two profiles, BEFORE and AFTER (%d given)", argc - optind);
    const char *path_b = argv[optind], *path_a = argv[optind + 1];
    Profile *b = cli_read_profile("diff", path_b);
    if (!b) return EXIT_TROUBLE;
    Profile *a = cli_read_profile("diff", path_a);
    if (!a) {
        profile_free(b);
        return EXIT_TROUBLE;
    }
    ProfileDiff d;
    int status = EXIT_CLEAN;
    if (!profile_diff(b, a, &d)) {
        fputs("advise diff: out of memory\n", stderr);
        status = EXIT_TROUBLE;
    } else {
        bool ok = true;
        if (gate.wanted) gate_judge(&gate, &d);
        if (json) ok = write_json(stdout, path_b, path_a, b, a, &d, gate.wanted ? gate_json(&gate) : NULL);
        else write_text(stdout, path_b, path_a, b, a, &d, limit);
        if (fflush(stdout) != 0 || ferror(stdout)) ok = false;
        if (!ok) {
            fputs("advise diff: could not write the output\n", stderr);
            status = EXIT_TROUBLE;
        }
        if (gate.wanted) {
            gate_report(&gate, &d);
            if (status == EXIT_CLEAN && gate.slower) status = EXIT_FINDINGS;
        }
        profile_diff_free(&d);
    }
    profile_free(a);
    profile_free(b);
    return status;
}
