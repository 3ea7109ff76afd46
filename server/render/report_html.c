/* `advise report` as one self-contained HTML page (see report_html.h). The
 * picture of each GPU's time is SVG drawn here: a bar of busy against idle
 * share, and the device's active span with every recorded idle gap at its
 * place, the largest numbered and explained in a table beneath. */
#include "server/render/report_steps.h"
#include "server/render/report_html.h"

#include <stdlib.h>
#include <string.h>

#include "profiler/profile_diff.h"
#include "server/render/report_memory.h"

#include "advise_version.h" /* ADVISE_VERSION: project(VERSION) in CMakeLists.txt */

#define TOP_KERNELS 15
#define TOP_KERNELS_EACH 8 /* with several profiles */
#define LABELLED_GAPS 8
#define LABEL_GAP 20.0 /* between the centres of two gap numbers */
#define SVG_WIDTH 1000
#define LONG_KERNEL_NAME 260 /* bytes shown whole in the kernel table */

void report_html_escape(FILE *out, const char *s) {
    if (!s) return;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if (c < 0x20 && c != '\n' && c != '\t') fputs("&#xFFFD;", out); /* control characters are not allowed */
            else if (c == 0x7f) fputs("&#xFFFD;", out);
            else fputc(c, out);
        }
    }
}

static void esc(FILE *out, const char *s) { report_html_escape(out, s); }

static const char STYLE[] =
    ":root{--busy:#2e7d32;--idle:#cfd8dc;--gap:#d84315;--ink:#1f2328;--muted:#57606a;--line:#d0d7de;"
    "--head:#f6f8fa}\n"
    "*{box-sizing:border-box}\n"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;color:var(--ink);"
    "margin:0;background:#fff}\n"
    "main{max-width:1240px;margin:0 auto;padding:24px 28px 48px}\n"
    "h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 10px;padding-bottom:4px;"
    "border-bottom:1px solid var(--line)}h3{font-size:15px;margin:18px 0 6px}\n"
    ".sub{color:var(--muted);margin:0 0 16px}\n"
    ".cards{display:flex;flex-wrap:wrap;gap:10px}\n"
    ".card{border:1px solid var(--line);border-radius:6px;padding:6px 12px;background:var(--head)}\n"
    ".card b{display:block;font-size:17px;white-space:nowrap}.card span{color:var(--muted);font-size:12px}\n"
    "code,.mono{font-family:ui-monospace,SFMono-Regular,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12.5px}\n"
    "table{border-collapse:collapse;width:100%;margin:6px 0 10px}\n"
    "th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}\n"
    "th{background:var(--head);font-weight:600;font-size:13px}\n"
    "td.num,th.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}\n"
    "td.name{word-break:break-all}\n"
    "td.where{overflow-wrap:anywhere}.nowrap{white-space:nowrap}th{white-space:nowrap}\n"
    "table.fixed{table-layout:fixed}\n"
    ".share{display:flex;align-items:center;gap:6px}.share i{display:inline-block;height:9px;background:var(--busy);"
    "border-radius:2px;min-width:1px}\n"
    ".sev{display:inline-block;padding:1px 7px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}\n"
    ".sev-error{background:#cf222e}.sev-warning{background:#bc4c00}.sev-info{background:#0969da}"
    ".sev-hint{background:#6e7781}\n"
    ".msg{margin:0 0 4px}\n"
    "ul.evidence{margin:4px 0;padding-left:18px;color:#24292f}ul.evidence li{margin:1px 0}\n"
    ".gain{color:var(--busy);font-weight:600}.fix{color:var(--muted)}\n"
    ".stale{color:#9a6700;font-weight:600}\n"
    ".note{color:var(--muted)}\n"
    "svg{display:block;width:100%;height:auto}\n"
    "svg text{font:12px system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;fill:var(--ink)}\n"
    ".legend{color:var(--muted);font-size:12px;margin:2px 0 8px}.legend i{display:inline-block;width:12px;"
    "height:12px;vertical-align:-2px;margin:0 4px 0 12px;border:1px solid #b0bec5}\n"
    ".sw-busy{background:#2e7d32}.sw-idle{background:#cfd8dc}.sw-gap{background:#d84315}"
    ".sw-rest{background:repeating-linear-gradient(45deg,#a5d6a7 0 3px,#f1f8f1 3px 6px)}\n"
    ".toc{margin:12px 0 0;font-size:13px}.toc a{color:#0969da;text-decoration:none}\n"
    "footer{margin-top:36px;color:var(--muted);font-size:12px}\n";

/* a share as units_ratio writes it; "-" when unknown (negative) */
static void format_percent(char *buf, size_t size, double share) {
    if (share < 0) snprintf(buf, size, "-");
    else units_ratio(share, buf, size);
}

/* ---- header --------------------------------------------------------------------- */

void report_html_card(FILE *out, const char *label, const char *value, const char *title) {
    fputs("<div class=\"card\"", out);
    if (title) {
        fputs(" title=\"", out);
        esc(out, title);
        fputc('"', out);
    }
    fputs("><span>", out);
    esc(out, label);
    fputs("</span><b>", out);
    esc(out, value);
    fputs("</b></div>\n", out);
}

/* "2026-11-30T15:19:33Z" as "2026-11-30 15:19:33" */
static void format_created(char *buf, size_t size, const char *created) {
    snprintf(buf, size, "%s", created);
    if (strlen(buf) == 20 && buf[10] == 'T' && buf[19] == 'Z') {
        buf[10] = ' ';
        buf[19] = '\0';
    }
}

static void write_profile_cards(FILE *out, const Profile *p) {
    char buf[96];
    char *gpu = profile_gpu_description(p);
    report_html_card(out, "GPU", gpu ? gpu : "?", NULL);
    free(gpu);
    format_created(buf, sizeof buf, p->created);
    report_html_card(out, "recorded (UTC)", buf, NULL);
    units_ns(report_run_ns(p), buf, sizeof buf);
    report_html_card(out, "run length", buf, "the longest process's wall time");
    ProfileTotals t;
    profile_totals(p, &t);
    format_percent(buf, sizeof buf, profile_totals_busy_share(&t));
    report_html_card(out, "GPU busy", buf, "kernels, copies and memsets over the GPUs' active span");
    units_ns(t.kernel_ns, buf, sizeof buf);
    char launches[64];
    snprintf(launches, sizeof launches, "kernel time (%llu launches)", (unsigned long long)t.launches);
    report_html_card(out, launches, buf, NULL);
    units_ns(t.sync_ns, buf, sizeof buf);
    report_html_card(out, "host waiting in syncs", buf, NULL);
    uint64_t gpu_ns = t.kernel_ns + t.copy_ns + t.memset_ns;
    if (t.critical_known && gpu_ns) {
        format_percent(buf, sizeof buf, (double)t.critical_ns / (double)gpu_ns);
        report_html_card(out, "GPU time on the critical path", buf,
                         "the part of the GPU's work the run waited for; after the rest the GPU waited for the host");
    }
    if (t.host_wait_known) {
        units_ns(t.host_wait_ns, buf, sizeof buf);
        report_html_card(out, "host waiting for the GPU", buf, "all that faster GPU work can give back");
    }
    const ProfProcess *stepped = report_steps_process(p);
    if (stepped) { /* the phases in the card's title */
        char head[160], phases[768];
        report_steps_words(&stepped->steps, report_steps_devices(p, stepped), head, sizeof head, phases, sizeof phases);
        report_html_card(out, "training steps", head, phases);
    }
}

/* Several profiles: one row each. */
static void write_profile_table(FILE *out, const ReportInput *in) {
    fputs("<table>\n<tr><th>run</th><th>profile</th><th>recorded (UTC)</th><th>GPU</th><th class=\"num\">run "
          "length</th><th class=\"num\">GPU busy</th><th class=\"num\">kernel time</th>"
          "<th class=\"num\">host waiting in syncs</th></tr>\n",
          out);
    for (size_t i = 0; i < in->profile_count; i++) {
        const Profile *p = in->profiles[i].profile;
        char created[32], run[32], busy[16], kernels[32], syncs[32];
        ProfileTotals t;
        profile_totals(p, &t);
        format_created(created, sizeof created, p->created);
        units_ns(report_run_ns(p), run, sizeof run);
        format_percent(busy, sizeof busy, profile_totals_busy_share(&t));
        units_ns(t.kernel_ns, kernels, sizeof kernels);
        units_ns(t.sync_ns, syncs, sizeof syncs);
        fputs("<tr><td>", out);
        esc(out, p->name);
        fputs("</td><td class=\"nowrap\"><code>", out);
        esc(out, in->profiles[i].path ? in->profiles[i].path : "");
        fputs("</code></td><td class=\"nowrap\">", out);
        esc(out, created);
        fputs("</td><td class=\"nowrap\">", out);
        char *gpu = profile_gpu_description(p);
        esc(out, gpu ? gpu : "?");
        free(gpu);
        fprintf(out, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                     "<td class=\"num\">%s</td></tr>\n",
                run, busy, kernels, syncs);
    }
    fputs("</table>\n", out);
}

static void write_header(FILE *out, const ReportInput *in) {
    size_t count = in->findings ? in->findings->count : 0, files = in->findings ? in->findings->files_checked : 0;
    fputs("<header>\n<h1>advise report</h1>\n<p class=\"sub\">", out);
    if (in->profile_count == 1) {
        const Profile *p = in->profiles[0].profile;
        fputs("Findings ranked by what they cost in the profile <code>", out);
        esc(out, in->profiles[0].path ? in->profiles[0].path : p->name);
        fputs("</code> (run <q>", out);
        esc(out, p->name);
        fputs("</q>", out);
        if (strcmp(p->source, "cupti") != 0) fputs(", imported from a torch.profiler trace", out);
        fputs(").", out);
    } else if (in->profile_count > 1) {
        fprintf(out, "Findings ranked by what they cost in %zu profiles; each file takes its figures from the newest "
                     "profile that mentions it.",
                in->profile_count);
    } else {
        fputs("No profile: findings are not ranked by measured cost. Record one with "
              "<code>advise profile -- CMD</code>.",
              out);
    }
    fputs("</p>\n<div class=\"cards\">\n", out);
    char buf[96];
    snprintf(buf, sizeof buf, "%zu in %zu file%s", count, files, files == 1 ? "" : "s");
    report_html_card(out, "findings", buf, NULL);
    if (in->profile_count == 1) write_profile_cards(out, in->profiles[0].profile);
    fputs("</div>\n", out);
    if (in->profile_count > 1) write_profile_table(out, in);
    if (in->profile_count)
        fprintf(out,
                "<nav class=\"toc\"><a href=\"#gpu-time\">GPU busy and idle time</a> &#183; <a href=\"#kernels\">Top "
                "kernels</a> &#183; %s<a href=\"#findings\">Findings (%zu)</a></nav>\n",
                report_has_memory(in) ? "<a href=\"#memory\">Device memory</a> &#183; " : "", count);
    for (size_t i = 0; i < in->profile_count; i++) {
        const Profile *p = in->profiles[i].profile;
        /* what a process could not record, or left out on purpose (--steps), each said once */
        for (size_t j = 0; j < p->process_count; j++) {
            const char *err = profile_process_error_first(p, j);
            if (!err) continue;
            fputs("<p class=\"note\">", out);
            esc(out, err);
            fputs("</p>\n", out);
        }
        if (!p->dropped_kernels && !p->dropped_ops && !p->dropped_sites) continue;
        fputs("<p class=\"note\">The profile <q>", out);
        esc(out, p->name);
        fprintf(out,
                "</q> reached its caps: %llu kernels, %llu operations and %llu sites were left out; its figures "
                "cover most, not all, of the run.</p>\n",
                (unsigned long long)p->dropped_kernels, (unsigned long long)p->dropped_ops,
                (unsigned long long)p->dropped_sites);
    }
    fputs("</header>\n", out);
}

/* ---- GPU time: busy and idle, and where the idle gaps were ------------------------ */

void report_html_site(FILE *out, const Profile *p, int site) {
    if (site < 0 || (size_t)site >= p->site_count || p->sites[site].file < 0 ||
        (size_t)p->sites[site].file >= p->file_count) {
        fputs("<span class=\"note\">no user frame</span>", out);
        return;
    }
    const ProfSite *s = &p->sites[site];
    fputs("<code>", out);
    esc(out, p->files[s->file].path);
    fprintf(out, ":%u</code>", s->line);
}

/* the same as plain text for SVG labels and tooltips */
static void write_site_plain(FILE *out, const Profile *p, int site) {
    if (site < 0 || (size_t)site >= p->site_count || p->sites[site].file < 0 ||
        (size_t)p->sites[site].file >= p->file_count) {
        fputs("no user frame", out);
        return;
    }
    const ProfSite *s = &p->sites[site];
    const char *path = p->files[s->file].path, *slash = strrchr(path, '/');
    esc(out, slash ? slash + 1 : path);
    fprintf(out, ":%u", s->line);
}

static int compare_gap_size(const void *a, const void *b) {
    const ProfGap *x = a, *y = b;
    if (x->duration_ns != y->duration_ns) return x->duration_ns < y->duration_ns ? 1 : -1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int compare_gap_start(const void *a, const void *b) {
    const ProfGap *x = a, *y = b;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static double x_of(uint64_t t, uint64_t span, double left, double width) {
    if (span == 0) return left;
    if (t > span) t = span;
    return left + width * ((double)t / (double)span);
}

static void write_timeline(FILE *out, const Profile *p, const char *run, const ProfTimeline *tl, size_t index) {
    const ProfDevice *dev = tl->device >= 0 && (size_t)tl->device < p->device_count ? &p->devices[tl->device] : NULL;
    const ProfProcess *proc =
        tl->process >= 0 && (size_t)tl->process < p->process_count ? &p->processes[tl->process] : NULL;
    fputs("<h3>", out);
    if (run) {
        esc(out, run);
        fputs(" &#183; ", out);
    }
    if (dev) {
        fprintf(out, "GPU %u: ", dev->id);
        esc(out, dev->name);
    } else {
        fputs("GPU", out);
    }
    if (proc) {
        fprintf(out, " <span class=\"note\">(process %lld", (long long)proc->pid);
        if (proc->rank >= 0) fprintf(out, ", rank %d", proc->rank);
        fputs(")</span>", out);
    }
    fputs("</h3>\n", out);

    char busy[32], idle[32], span[32], pct_busy[16], pct_idle[16];
    units_ns(tl->busy_ns, busy, sizeof busy);
    units_ns(tl->idle_ns, idle, sizeof idle);
    units_ns(tl->span_ns, span, sizeof span);
    double share = tl->span_ns ? (double)tl->busy_ns / (double)tl->span_ns : 0;
    format_percent(pct_busy, sizeof pct_busy, tl->span_ns ? share : -1);
    format_percent(pct_idle, sizeof pct_idle, tl->span_ns ? 1 - share : -1);

    /* the gaps of this device (copies): all drawn, the largest numbered in order of time */
    size_t n = 0;
    for (size_t i = 0; i < p->gap_count; i++) n += p->gaps[i].process == tl->process && p->gaps[i].device == tl->device;
    ProfGap *gaps = n ? malloc(n * sizeof *gaps) : NULL;
    if (!gaps) n = 0;
    size_t k = 0;
    for (size_t i = 0; i < p->gap_count && k < n; i++)
        if (p->gaps[i].process == tl->process && p->gaps[i].device == tl->device) gaps[k++] = p->gaps[i];
    size_t labelled = n < LABELLED_GAPS ? n : LABELLED_GAPS;
    if (n) qsort(gaps, n, sizeof *gaps, compare_gap_size);
    ProfGap largest[LABELLED_GAPS];
    if (labelled) {
        memcpy(largest, gaps, labelled * sizeof *largest);
        qsort(largest, labelled, sizeof *largest, compare_gap_start);
    }

    const double left = 10, width = SVG_WIDTH - 20;
    const double share_y = 8, share_h = 26, line_y = 74, line_h = 34;
    const double height = line_y + line_h + 22 + (labelled ? 36 : 0);
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %.0f\" width=\"%d\" height=\"%.0f\" "
            "role=\"img\" aria-label=\"GPU busy %s, idle %s of %s\">\n",
            SVG_WIDTH, height, SVG_WIDTH, height, pct_busy, pct_idle, span);
    /* the part of the span outside the recorded gaps: busy, or idle in smaller gaps */
    fprintf(out,
            "<defs><pattern id=\"advise-rest-%zu\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
            "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f1f8f1\"/>"
            "<rect width=\"3\" height=\"6\" fill=\"#a5d6a7\"/></pattern></defs>\n",
            index);
    /* 1: the share, busy then idle */
    double busy_w = width * share;
    fprintf(out, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"#cfd8dc\"/>\n", left, share_y,
            width, share_h);
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"#2e7d32\"><title>busy %s (%s)"
            "</title></rect>\n",
            left, share_y, busy_w, share_h, busy, pct_busy);
    double text_y = share_y + share_h / 2 + 4;
    if (busy_w > 190)
        fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" style=\"fill:#fff\">busy %s &#183; %s</text>\n", left + 8, text_y,
                pct_busy, busy);
    else
        fprintf(out, "<text x=\"%.1f\" y=\"%.0f\">busy %s &#183; %s</text>\n", left + busy_w + 8, text_y, pct_busy,
                busy);
    fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"end\">idle %s &#183; %s</text>\n", left + width - 8,
            text_y, pct_idle, idle);

    /* 2: the active span; the idle gaps recorded, at their places */
    fprintf(out,
            "<text x=\"%.1f\" y=\"%.0f\">active span %s (first to last GPU activity) with the largest idle gaps, "
            "where they happened</text>\n",
            left, line_y - 8, span);
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"url(#advise-rest-%zu)\" "
            "stroke=\"#b0bec5\"><title>GPU active span %s (busy, or idle in gaps too small to be kept)</title>"
            "</rect>\n",
            left, line_y, width, line_h, index, span);
    for (size_t i = 0; i < n; i++) {
        const ProfGap *g = &gaps[i];
        double x0 = x_of(g->start_ns, tl->span_ns, left, width);
        double x1 = x_of(g->start_ns + g->duration_ns, tl->span_ns, left, width);
        double w = x1 - x0 < 1 ? 1 : x1 - x0;
        char dur[32], at[32];
        units_ns(g->duration_ns, dur, sizeof dur);
        units_ns(g->start_ns, at, sizeof at);
        fprintf(out, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" fill=\"#d84315\"><title>idle %s at %s: after ",
                x0, line_y, w, line_h, dur, at);
        write_site_plain(out, p, g->before_site);
        fputs(", before ", out);
        write_site_plain(out, p, g->after_site);
        fputs("</title></rect>\n", out);
    }
    /* numbers under the largest gaps, in one row: a number sits under its gap,
     * moved sideways just enough to keep LABEL_GAP from its neighbours, with a
     * leader line from the gap */
    double at[LABELLED_GAPS], pos[LABELLED_GAPS];
    const double lo = left + 9, hi = left + width - 9;
    for (size_t i = 0; i < labelled; i++) {
        const ProfGap *g = &largest[i];
        double x0 = x_of(g->start_ns, tl->span_ns, left, width);
        double x1 = x_of(g->start_ns + g->duration_ns, tl->span_ns, left, width);
        at[i] = (x0 + x1) / 2;
        pos[i] = at[i] < lo ? lo : at[i] > hi ? hi : at[i];
    }
    for (size_t i = 1; i < labelled; i++)
        if (pos[i] < pos[i - 1] + LABEL_GAP) pos[i] = pos[i - 1] + LABEL_GAP;
    for (size_t i = labelled; i-- > 0;) {
        double limit = i + 1 < labelled ? pos[i + 1] - LABEL_GAP : hi;
        if (pos[i] > limit) pos[i] = limit;
    }
    double cy = line_y + line_h + 24;
    for (size_t i = 0; i < labelled; i++)
        fprintf(out,
                "<polyline points=\"%.1f,%.0f %.1f,%.0f %.1f,%.0f\" fill=\"none\" stroke=\"#d84315\" "
                "stroke-width=\"1\"/>\n<circle cx=\"%.1f\" cy=\"%.0f\" r=\"8\" fill=\"#fff\" stroke=\"#d84315\"/>"
                "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" style=\"font-size:11px;font-weight:600\">%zu"
                "</text>\n",
                at[i], line_y + line_h, at[i], line_y + line_h + 5, pos[i], cy - 8, pos[i], cy, pos[i], cy + 4, i + 1);
    /* the time axis, under the numbers */
    double axis_y = height - 4;
    for (int t = 0; t <= 4; t++) {
        char tick[32];
        units_ns((uint64_t)((double)tl->span_ns * t / 4), tick, sizeof tick);
        const char *anchor = t == 0 ? "start" : t == 4 ? "end" : "middle";
        fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"%s\" style=\"fill:#57606a;font-size:11px\">%s</text>\n",
                left + width * t / 4, axis_y, anchor, t == 0 ? "0" : tick);
    }
    fputs("</svg>\n<p class=\"legend\"><i class=\"sw-busy\"></i>busy<i class=\"sw-idle\"></i>idle"
          "<i class=\"sw-gap\"></i>a recorded idle gap<i class=\"sw-rest\"></i>the rest of the span: busy, or idle in "
          "gaps too small to be kept</p>\n",
          out);

    if (labelled) {
        uint64_t in_gaps = 0;
        for (size_t i = 0; i < n; i++) in_gaps += gaps[i].duration_ns;
        char total[32];
        units_ns(in_gaps, total, sizeof total);
        fputs("<table class=\"gaps\">\n<tr><th class=\"num\">#</th><th class=\"num\">idle</th>"
              "<th class=\"num\">at (into the span)</th><th>after the work from</th><th>until the work from</th></tr>\n",
              out);
        for (size_t i = 0; i < labelled; i++) {
            const ProfGap *g = &largest[i];
            char dur[32], at[32];
            units_ns(g->duration_ns, dur, sizeof dur);
            units_ns(g->start_ns, at, sizeof at);
            fprintf(out, "<tr><td class=\"num\">%zu</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>", i + 1,
                    dur, at);
            report_html_site(out, p, g->before_site);
            fputs("</td><td>", out);
            report_html_site(out, p, g->after_site);
            fputs("</td></tr>\n", out);
        }
        fprintf(out, "</table>\n<p class=\"note\">%zu idle gap%s recorded on this GPU, %s in all (the profile keeps "
                     "the largest only); the %zu largest are numbered.</p>\n",
                n, n == 1 ? "" : "s", total, labelled);
    }
    free(gaps);
}

static void write_gpu_time(FILE *out, const ReportInput *in) {
    fputs("<section id=\"gpu-time\">\n<h2>GPU busy and idle time</h2>\n", out);
    size_t pictures = 0;
    for (size_t k = 0; k < in->profile_count; k++) {
        const Profile *p = in->profiles[k].profile;
        const char *run = in->profile_count > 1 ? p->name : NULL;
        if (p->timeline_count == 0) {
            fputs("<p class=\"note\">", out);
            if (run) {
                esc(out, run);
                fputs(": t", out);
            } else {
                fputs("T", out);
            }
            fputs("he profile holds no GPU timeline.</p>\n", out);
        }
        for (size_t i = 0; i < p->timeline_count; i++) write_timeline(out, p, run, &p->timelines[i], pictures++);
    }
    fputs("</section>\n", out);
}

/* ---- top kernels ----------------------------------------------------------------- */

/* A kernel's name in a table cell; a very long one (templates) is cut, whole
 * in the cell's tooltip. */
static void write_kernel_name(FILE *out, const char *name) {
    size_t n = strlen(name);
    if (n <= LONG_KERNEL_NAME) {
        fputs("<td class=\"name mono\">", out);
        esc(out, name);
        fputs("</td>", out);
        return;
    }
    size_t cut = LONG_KERNEL_NAME - 20;
    while (cut > 0 && ((unsigned char)name[cut] & 0xC0) == 0x80) cut--; /* not inside a UTF-8 sequence */
    fputs("<td class=\"name mono\" title=\"", out);
    esc(out, name);
    fputs("\">", out);
    char *head = strndup(name, cut);
    esc(out, head ? head : "");
    free(head);
    fputs("&#8230;</td>", out);
}

static void write_kernels(FILE *out, const Profile *p, const char *run, size_t top) {
    if (run) {
        fputs("<h3>", out);
        esc(out, run);
        fputs("</h3>\n", out);
    }
    size_t count = 0;
    ReportKernel *k = report_top_kernels(p, &count);
    if (!k || count == 0) {
        fputs("<p class=\"note\">No kernel ran.</p>\n", out);
        free(k);
        return;
    }
    ProfileTotals t;
    profile_totals(p, &t);
    uint64_t gpu = t.kernel_ns + t.copy_ns + t.memset_ns;
    fputs("<table class=\"fixed\">\n<colgroup><col style=\"width:2.6em\"><col><col style=\"width:10em\">"
          "<col style=\"width:6.5em\"><col style=\"width:6.5em\"><col style=\"width:6.5em\"></colgroup>\n"
          "<tr><th class=\"num\">#</th><th>kernel</th><th>share of GPU time</th><th class=\"num\">total</th>"
          "<th class=\"num\">launches</th><th class=\"num\">median</th></tr>\n",
          out);
    size_t shown = count < top ? count : top;
    for (size_t i = 0; i < shown; i++) {
        double share = gpu ? (double)k[i].total_ns / (double)gpu : 0;
        char pct[16], total[32], median[32];
        format_percent(pct, sizeof pct, share);
        units_ns(k[i].total_ns, total, sizeof total);
        units_ns(k[i].median_ns, median, sizeof median);
        fprintf(out, "<tr><td class=\"num\">%zu</td>", i + 1);
        write_kernel_name(out, k[i].name);
        fprintf(out,
                "<td><div class=\"share\"><i style=\"width:%.1fpx\"></i>%s</div></td><td class=\"num\">%s</td>"
                "<td class=\"num\">%llu</td><td class=\"num\">%s</td></tr>\n",
                share * 120, pct, total, (unsigned long long)k[i].count, median);
    }
    fputs("</table>\n", out);
    if (count > shown) {
        uint64_t rest = 0;
        for (size_t i = shown; i < count; i++) rest += k[i].total_ns;
        char r[32];
        units_ns(rest, r, sizeof r);
        fprintf(out, "<p class=\"note\">%zu more kernels, %s together.</p>\n", count - shown, r);
    }
    char gpu_s[32], copies[32];
    units_ns(gpu, gpu_s, sizeof gpu_s);
    units_ns(t.copy_ns + t.memset_ns, copies, sizeof copies);
    fprintf(out, "<p class=\"note\">GPU time %s in all: kernels and %s of copies and memsets. The median is the "
                 "most-launched configuration's.</p>\n",
            gpu_s, copies);
    free(k);
}

static void write_top_kernels(FILE *out, const ReportInput *in) {
    fputs("<section id=\"kernels\">\n<h2>Top kernels</h2>\n", out);
    bool several = in->profile_count > 1;
    for (size_t i = 0; i < in->profile_count; i++)
        write_kernels(out, in->profiles[i].profile, several ? in->profiles[i].profile->name : NULL,
                      several ? TOP_KERNELS_EACH : TOP_KERNELS);
    fputs("</section>\n", out);
}

/* ---- findings -------------------------------------------------------------------- */

static const char *scope_words(const char *scope) {
    if (!scope) return "";
    if (strcmp(scope, "program") == 0) return "for the whole program";
    if (strcmp(scope, "kernel") == 0) return "local to the kernel";
    return scope;
}

static void write_finding(FILE *out, size_t rank, const RankedFinding *r) {
    const Finding *f = &r->finding;
    const char *sev = severity_name(f->severity);
    char cost[32] = "-";
    if (r->cost_seconds > 0) units_seconds(r->cost_seconds, cost, sizeof cost);
    fprintf(out, "<tr><td class=\"num\">%zu</td><td class=\"num\">%s</td><td><span class=\"sev sev-", rank, cost);
    esc(out, sev);
    fputs("\">", out);
    esc(out, sev);
    fputs("</span></td><td class=\"where\"><code>", out);
    esc(out, r->path);
    fprintf(out, "<span class=\"nowrap\">:%u:%u</span></code><br><code>", r->line, r->column);
    esc(out, f->code);
    fputs("</code> <span class=\"note\">", out);
    esc(out, f->name);
    fputs("</span></td><td><p class=\"msg\">", out);
    esc(out, f->message);
    fputs("</p>\n", out);
    if (f->evidence_count) {
        fputs("<ul class=\"evidence\">", out);
        for (size_t i = 0; i < f->evidence_count; i++) { /* measured figures as they are, other kinds named */
            const Evidence *e = &f->evidence[i];
            char *text = evidence_render(e);
            fputs("<li>", out);
            if (e->kind != EVIDENCE_MEASURED) fprintf(out, "<span class=\"note\">%s:</span> ", evidence_kind_name(e->kind));
            esc(out, text ? text : "");
            fputs("</li>", out);
            free(text);
        }
        fputs("</ul>\n", out);
    }
    if (f->gain.present) {
        char gain[UNITS_BUF];
        units_seconds(f->gain.seconds, gain, sizeof gain);
        fprintf(out, "<div><span class=\"gain\">gain: about %s</span> ", gain);
        esc(out, scope_words(f->gain.scope));
        char *model = f->gain.model.text ? evidence_render(&f->gain.model) : NULL;
        if (model) {
            fputs(" <span class=\"note\">(", out);
            esc(out, model);
            fputs(")</span>", out);
        }
        free(model);
        fputs("</div>\n", out);
    }
    if (f->fix_count) {
        fprintf(out, "<div class=\"fix\">fix (%s): ", f->fixes[0].safe ? "safe" : "unsafe");
        esc(out, f->fixes[0].title);
        fputs("</div>\n", out);
    }
    if (r->stale)
        fputs("<div class=\"stale\">stale: the file changed since it was profiled; the figures describe the old "
              "code</div>\n",
              out);
    fputs("</td></tr>\n", out);
}

/* Before the ranked table: what makes results wrong, then what to do first. */
static void write_first(FILE *out, const RankedFindings *r) {
    RankedFirst first;
    ranked_findings_first(r, &first);
    if (first.correctness_total) {
        fprintf(out, "<section id=\"correctness\">\n<h2>Correctness first</h2>\n<p>%zu finding%s can make results "
                     "wrong; they are listed apart, not ranked by cost.</p>\n<ul>\n",
                first.correctness_total, first.correctness_total == 1 ? "" : "s");
        for (size_t i = 0; i < first.correctness_count; i++) {
            const RankedFinding *item = &r->items[first.correctness[i]];
            fputs("<li><code>", out);
            esc(out, item->path);
            fprintf(out, ":%u</code> %s ", item->line, item->finding.code);
            esc(out, item->finding.name);
            fputs(": ", out);
            esc(out, item->finding.message ? item->finding.message : "");
            fputs("</li>\n", out);
        }
        if (first.correctness_total > first.correctness_count)
            fprintf(out, "<li class=\"note\">and %zu more in the findings below</li>\n",
                    first.correctness_total - first.correctness_count);
        fputs("</ul>\n</section>\n", out);
    }
    if (!first.first_count) return;
    fputs("<section id=\"first\">\n<h2>What to do first</h2>\n<p class=\"note\">The largest estimated gains; each is "
          "an upper bound, and two gains do not add up.</p>\n<ol>\n",
          out);
    for (size_t i = 0; i < first.first_count; i++) {
        const RankedFinding *item = &r->items[first.first[i]];
        const Finding *f = &item->finding;
        char gain[UNITS_BUF];
        units_seconds(f->gain.seconds, gain, sizeof gain);
        fprintf(out, "<li><span class=\"gain\">about %s</span> ", gain);
        esc(out, scope_words(f->gain.scope));
        double step_gain = ranked_finding_gain_per_step(item);
        if (step_gain > 0) {
            char each[UNITS_BUF], steps[UNITS_BUF];
            fprintf(out, " (<span class=\"gain\">%s per step</span> over %s %ssteps)",
                    units_seconds(step_gain, each, sizeof each),
                    units_count(ranked_finding_gain_steps(item), steps, sizeof steps),
                    item->finding.gain.steady_steps ? "steady " : "");
        }
        fputs(" <code>", out);
        esc(out, item->path);
        fprintf(out, ":%u</code> %s ", item->line, f->code);
        esc(out, f->name);
        fputs("<br>", out);
        if (f->fix_count) {
            fputs("<span class=\"fix\">fix: ", out);
            esc(out, f->fixes[0].title);
            fputs("</span>", out);
        } else {
            esc(out, f->message ? f->message : "");
            if (f->advice) {
                fputs("<br><span class=\"fix\">do: ", out);
                esc(out, f->advice);
                fputs("</span>", out);
            }
        }
        fputs("</li>\n", out);
    }
    fputs("</ol>\n</section>\n", out);
}

static void write_findings(FILE *out, const ReportInput *in) {
    const RankedFindings *r = in->findings;
    size_t count = r ? r->count : 0;
    fprintf(out, "<section id=\"findings\">\n<h2>Findings%s</h2>\n", in->profile_count ? ", ranked by measured cost" : "");
    if (count == 0) {
        fprintf(out, "<p class=\"note\">No findings in %zu file%s.</p>\n</section>\n", r ? r->files_checked : 0,
                r && r->files_checked == 1 ? "" : "s");
        return;
    }
    fputs("<table class=\"fixed\">\n<colgroup><col style=\"width:2.6em\"><col style=\"width:5.6em\">"
          "<col style=\"width:6.2em\"><col style=\"width:25em\"><col></colgroup>\n"
          "<tr><th class=\"num\">#</th><th class=\"num\">cost</th><th>severity</th><th>where and rule</th>"
          "<th>what, with the evidence</th></tr>\n",
          out);
    for (size_t i = 0; i < count; i++) write_finding(out, i + 1, &r->items[i]);
    fputs("</table>\n<p class=\"note\">Cost: the estimated gain when there is one, else the GPU and host-wait time "
          "measured at the finding's lines. Gains of different findings are never added together.</p>\n</section>\n",
          out);
}

bool report_html_write(FILE *out, const ReportInput *in) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>advise report",
          out);
    if (in->profile_count == 1) {
        fputs(": ", out);
        esc(out, in->profiles[0].profile->name);
    }
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", STYLE);
    write_header(out, in);
    if (in->findings) write_first(out, in->findings);
    if (in->profile_count) {
        write_gpu_time(out, in);
        write_top_kernels(out, in);
        report_memory_html(out, in); /* nothing without `advise profile --memory` */
    }
    write_findings(out, in);
    fputs("<footer>Written by advise " ADVISE_VERSION ".</footer>\n</main>\n</body>\n</html>\n", out);
    return !ferror(out);
}
