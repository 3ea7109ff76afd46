/* The HTML report's device-memory section (report_memory.h): per process
 * and GPU, figures as cards, memory over time as inline SVG (allocated as a
 * filled line, reserved as a line above it, the peak a labelled dot, an
 * out-of-memory error a dashed mark), and tables of the lines holding the
 * most at the peak, growing per step, and live at an out-of-memory error,
 * named as the rest of the page names lines. Every string from the profile
 * is escaped; colours are inline so that pages without memory keep their
 * style sheet. */
#include "server/render/report_memory.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/units.h"
#include "server/render/line_memory.h"
#include "server/render/report_html.h"

#define SVG_WIDTH 1000
#define SVG_HEIGHT 232
#define PLOT_LEFT 78.0
#define PLOT_RIGHT (SVG_WIDTH - 14.0)
#define PLOT_TOP 28.0
#define PLOT_BOTTOM 192.0
#define ALLOCATED_COLOUR "#0969da"
#define RESERVED_COLOUR "#a371f7"
#define PEAK_COLOUR "#cf222e"

static void esc(FILE *out, const char *s) { report_html_escape(out, s); }


static double x_at(uint64_t t, uint64_t span) {
    if (!span) return PLOT_LEFT;
    if (t > span) t = span;
    return PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * ((double)t / (double)span);
}

static double y_at(uint64_t bytes, uint64_t top) {
    if (!top) return PLOT_BOTTOM;
    if (bytes > top) bytes = top;
    return PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * ((double)bytes / (double)top);
}

static void write_points(FILE *out, const ProfMemory *m, bool reserved, uint64_t span, uint64_t top) {
    for (size_t i = 0; i < m->sample_count; i++)
        fprintf(out, "%s%.1f,%.1f", i ? " " : "", x_at(m->samples[i].time_ns, span),
                y_at(reserved ? m->samples[i].reserved : m->samples[i].allocated, top));
}

static void write_picture(FILE *out, const ProfMemory *m) {
    uint64_t span = report_memory_span_ns(m), top = report_memory_top_bytes(m);
    if (!m->sample_count || !top) {
        fputs("<p class=\"note\">No memory over time was recorded.</p>\n", out);
        return;
    }
    char peak[UNITS_BUF], when[UNITS_BUF], label[UNITS_BUF];
    units_bytes(m->peak_allocated, peak, sizeof peak);
    units_ns(m->peak_time_ns, when, sizeof when);
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
            "aria-label=\"device memory over time: the peak, %s allocated, %s into the recorded window\">\n",
            SVG_WIDTH, SVG_HEIGHT, SVG_WIDTH, SVG_HEIGHT, peak, when);
    /* the bytes axis: 0, half and the top, with guide lines */
    for (int k = 0; k <= 2; k++) {
        uint64_t v = (uint64_t)((double)top * k / 2);
        double y = y_at(v, top);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d0d7de\" stroke-width=\"1\"/>\n",
                PLOT_LEFT, y, PLOT_RIGHT, y);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" style=\"fill:#57606a;font-size:11px\">%s</text>\n",
                PLOT_LEFT - 6, y + 4, k == 0 ? "0" : units_bytes(v, label, sizeof label));
    }
    /* reserved, then allocated filled beneath its line */
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", RESERVED_COLOUR);
    write_points(out, m, true, span, top);
    fputs("\"/>\n", out);
    fprintf(out, "<polygon fill=\"%s\" fill-opacity=\"0.12\" stroke=\"none\" points=\"%.1f,%.1f ", ALLOCATED_COLOUR,
            x_at(m->samples[0].time_ns, span), PLOT_BOTTOM);
    write_points(out, m, false, span, top);
    fprintf(out, " %.1f,%.1f\"/>\n", x_at(m->samples[m->sample_count - 1].time_ns, span), PLOT_BOTTOM);
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"", ALLOCATED_COLOUR);
    write_points(out, m, false, span, top);
    fputs("\"/>\n", out);
    if (m->oom) {
        double x = x_at(m->oom_time_ns, span);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
                "stroke-dasharray=\"4 3\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" "
                "style=\"fill:%s;font-weight:600\">out of memory</text>\n",
                x, PLOT_TOP, x, PLOT_BOTTOM, PEAK_COLOUR, x > (PLOT_LEFT + PLOT_RIGHT) / 2 ? x - 5 : x + 5,
                PLOT_TOP - 14, x > (PLOT_LEFT + PLOT_RIGHT) / 2 ? "end" : "start", PEAK_COLOUR);
    }
    /* the peak: a dot with its figure, the label on the side with room */
    double px = x_at(m->peak_time_ns, span), py = y_at(m->peak_allocated, top);
    bool right_half = px > PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * 0.6;
    fprintf(out,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"1.5\"/>\n"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" style=\"font-weight:600\">peak %s at %s</text>\n",
            px, py, PEAK_COLOUR, right_half ? px - 8 : px + 8, py - 8 < 12 ? 12 : py - 8, right_half ? "end" : "start",
            peak, when);
    /* the time axis */
    for (int t = 0; t <= 4; t++) {
        const char *anchor = t == 0 ? "start" : t == 4 ? "end" : "middle";
        fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" style=\"fill:#57606a;font-size:11px\">%s</text>\n",
                PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * t / 4, SVG_HEIGHT - 8, anchor,
                t == 0 ? "0" : units_ns((uint64_t)((double)span * t / 4), label, sizeof label));
    }
    fprintf(out,
            "</svg>\n<p class=\"legend\"><i style=\"background:%s\"></i>%s<i "
            "style=\"background:%s\"></i>%s<i style=\"background:%s;"
            "border-radius:50%%\"></i>the peak of allocated memory &#183; time since the recorded window's first "
            "event</p>\n",
            ALLOCATED_COLOUR,
            m->source == PROF_MEM_SOURCE_CUPTI ? "allocated (live cudaMalloc buffers)" : "allocated (live tensors)",
            RESERVED_COLOUR,
            m->source == PROF_MEM_SOURCE_CUPTI ? "reserved (the same: no caching allocator)"
                                               : "reserved by PyTorch's caching allocator",
            PEAK_COLOUR);
}

/* A table of the lines of one kind, the largest first, with the rest and
 * what no line holds in a note; nothing when the memory has none. */
static void write_holders(FILE *out, const Profile *p, size_t memory, ProfMemLineKind kind, uint64_t whole,
                          const char *heading) {
    size_t n;
    uint64_t elsewhere;
    MemoryHolder *h = memory_holders(p, memory, kind, &n, &elsewhere);
    bool growth = kind == PROF_MEM_LINE_GROWTH;
    if (!n && (!elsewhere || growth)) return;
    fprintf(out, "<h4>%s</h4>\n", heading);
    if (n) {
        if (growth)
            fputs("<table class=\"fixed\">\n<colgroup><col style=\"width:2.6em\"><col><col style=\"width:9em\">"
                  "<col style=\"width:9em\"></colgroup>\n<tr><th class=\"num\">#</th><th>line</th>"
                  "<th class=\"num\">per step</th><th class=\"num\">steps measured</th></tr>\n",
                  out);
        else
            fputs("<table class=\"fixed\">\n<colgroup><col style=\"width:2.6em\"><col><col style=\"width:9em\">"
                  "<col style=\"width:11em\"></colgroup>\n<tr><th class=\"num\">#</th><th>line</th>"
                  "<th class=\"num\">live</th><th>share</th></tr>\n",
                  out);
    }
    size_t shown = n < REPORT_MEMORY_TOP ? n : REPORT_MEMORY_TOP;
    for (size_t i = 0; i < shown; i++) {
        char bytes[UNITS_BUF], share[UNITS_BUF];
        units_bytes(h[i].bytes, bytes, sizeof bytes);
        fprintf(out, "<tr><td class=\"num\">%zu</td><td class=\"where\">", i + 1);
        report_html_site(out, p, h[i].site);
        if (h[i].freed_bytes) { /* what kept it alive: the line that freed it later */
            fputs("<br><span class=\"note\">freed at ", out);
            report_html_site(out, p, h[i].freed_site);
            fputs("</span>", out);
        }
        if (growth) {
            fprintf(out, "</td><td class=\"num\">%s</td><td class=\"num\">%llu</td></tr>\n", bytes,
                    (unsigned long long)h[i].count);
        } else {
            double ratio = whole ? (double)h[i].bytes / (double)whole : 0;
            units_share(h[i].bytes, whole, share, sizeof share);
            fprintf(out,
                    "</td><td class=\"num\">%s</td><td><div class=\"share\"><i style=\"width:%.1fpx;background:%s\">"
                    "</i>%s</div></td></tr>\n",
                    bytes, (ratio > 1 ? 1 : ratio) * 120, ALLOCATED_COLOUR, share);
        }
    }
    if (n) fputs("</table>\n", out);
    if (n > shown || (elsewhere && !growth)) {
        fputs("<p class=\"note\">", out);
        if (n > shown) {
            uint64_t rest = 0;
            for (size_t i = shown; i < n; i++) rest = prof_add_u64(rest, h[i].bytes);
            char bytes[UNITS_BUF];
            fprintf(out, "%zu more line%s, %s%s together.", n - shown, n - shown == 1 ? "" : "s",
                    units_bytes(rest, bytes, sizeof bytes), growth ? " per step" : "");
        }
        if (elsewhere && !growth) {
            char bytes[UNITS_BUF], share[UNITS_BUF];
            fprintf(out, "%s%s (%s) belongs to no line of the project: allocated outside it, or before recording "
                         "began.",
                    n > shown ? " " : "", units_bytes(elsewhere, bytes, sizeof bytes),
                    units_share(elsewhere, whole, share, sizeof share));
        }
        fputs("</p>\n", out);
    }
    free(h);
}

static void write_memory(FILE *out, const Profile *p, size_t index, const char *run) {
    const ProfMemory *m = &p->memories[index];
    fputs("<h3>", out);
    if (run) {
        esc(out, run);
        fputs(" &#183; ", out);
    }
    fprintf(out, "GPU %u", m->device);
    if (m->process >= 0 && (size_t)m->process < p->process_count)
        fprintf(out, " <span class=\"note\">(process %lld)</span>", (long long)p->processes[m->process].pid);
    fputs("</h3>\n<div class=\"cards\">\n", out);
    char value[UNITS_BUF], when[UNITS_BUF], title[128];
    units_ns(m->peak_time_ns, when, sizeof when);
    snprintf(title, sizeof title, "the highest point of allocated memory in the recorded window, %s into it", when);
    report_html_card(out, "peak allocated", units_bytes(m->peak_allocated, value, sizeof value), title);
    report_html_card(out, "reserved at the peak", units_bytes(m->peak_reserved, value, sizeof value), NULL);
    bool cupti = m->source == PROF_MEM_SOURCE_CUPTI;
    report_html_card(out, "most allocated over the run", units_bytes(m->max_allocated, value, sizeof value),
         cupti ? "the most live device memory from cudaMalloc and friends (CUPTI)"
               : "PyTorch's own counter (torch.cuda.max_memory_allocated)");
    report_html_card(out, "most reserved over the run", units_bytes(m->max_reserved, value, sizeof value),
         cupti ? "the same as allocated: no caching allocator" : "PyTorch's own counter (torch.cuda.max_memory_reserved)");
    char events[UNITS_BUF + 16];
    units_count(m->events, value, sizeof value);
    if (m->window_complete) snprintf(events, sizeof events, "the whole run");
    else snprintf(events, sizeof events, "the last %s events", value);
    report_html_card(out, "recorded window", events, NULL);
    if (m->steps) {
        units_count(m->steps, value, sizeof value);
        report_html_card(out, "optimizer steps", value, NULL);
    }
    if (m->bytes_per_step) {
        char per_step[UNITS_BUF + 1];
        report_html_card(out, "live memory per step", report_memory_per_step(m, per_step, sizeof per_step),
             "over the recorded window's last steps");
    }
    fputs("</div>\n", out);
    write_picture(out, m);
    if (!m->window_complete) {
        units_count(m->events, value, sizeof value);
        char most[UNITS_BUF];
        fprintf(out, "<p class=\"note\">The allocator history kept the last %s events: the recorded window began "
                     "after the run did, so the picture, the peak and the lines cover the window; the run's own "
                     "peak was %s allocated.</p>\n",
                value, units_bytes(m->max_allocated, most, sizeof most));
    }
    write_holders(out, p, index, PROF_MEM_LINE_PEAK, m->peak_allocated, "Held at the peak");
    write_holders(out, p, index, PROF_MEM_LINE_GROWTH, 0, "Growing step after step");
    if (m->oom) {
        char asked[UNITS_BUF], free_bytes[UNITS_BUF], allocated[UNITS_BUF];
        units_ns(m->oom_time_ns, when, sizeof when);
        if (m->source == PROF_MEM_SOURCE_CUPTI) /* a failed cudaMalloc: the device's free memory is not known */
            fprintf(out, "<h4>Out of memory</h4>\n<p>An allocation of %s failed %s into the recorded window, with %s "
                         "allocated",
                    units_bytes(m->oom_bytes, asked, sizeof asked), when,
                    units_bytes(m->oom_allocated, allocated, sizeof allocated));
        else
            fprintf(out, "<h4>Out of memory</h4>\n<p>An allocation of %s failed %s into the recorded window, with %s "
                         "free on the device and %s allocated",
                    units_bytes(m->oom_bytes, asked, sizeof asked), when,
                    units_bytes(m->oom_device_free, free_bytes, sizeof free_bytes),
                    units_bytes(m->oom_allocated, allocated, sizeof allocated));
        if (m->oom_site >= 0 && (size_t)m->oom_site < p->site_count) {
            fputs("; it was asked for at ", out);
            report_html_site(out, p, m->oom_site);
        }
        fputs(".</p>\n", out);
        write_holders(out, p, index, PROF_MEM_LINE_OOM, m->oom_allocated, "Live when it failed");
    }
}

void report_memory_html(FILE *out, const ReportInput *in) {
    if (!report_has_memory(in)) return;
    fputs("<section id=\"memory\">\n<h2>Device memory</h2>\n<p class=\"note\">Recorded with <code>advise profile "
          "--memory</code> from PyTorch's allocator: allocated is memory in live tensors, reserved what the caching "
          "allocator holds from the driver. A tensor counts for the line of the project that allocated it. Processes "
          "without PyTorch's history are recorded from CUPTI's record of cudaMalloc and friends: allocated and "
          "reserved are both the live device buffers, each charged to the line that allocated it.</p>\n",
          out);
    for (size_t i = 0; i < in->profile_count; i++) {
        const Profile *p = in->profiles[i].profile;
        const char *run = in->profile_count > 1 ? (p && p->name ? p->name : "?") : NULL;
        for (size_t k = 0; p && k < p->memory_count; k++) write_memory(out, p, k, run);
    }
    fputs("</section>\n", out);
}
