/* The text report's device-memory section (report_memory.h): figures on
 * labelled lines as in the report's header, memory over time as two
 * sparklines (allocated and reserved, one column per slice of time, the
 * highest point of each slice) with a caret under the peak, and the lines
 * holding or growing the most, named path:line as the report names them. */
#include "server/render/report_memory.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/units.h"
#include "server/render/line_memory.h"

#define SPARK_WIDTH 60

/* eight heights, lowest first (UTF-8) */
static const char *const BLOCKS[] = {"\xE2\x96\x81", "\xE2\x96\x82", "\xE2\x96\x83", "\xE2\x96\x84",
                                     "\xE2\x96\x85", "\xE2\x96\x86", "\xE2\x96\x87", "\xE2\x96\x88"};

/* the column of time t on a SPARK_WIDTH-wide axis of span */
static size_t column_of(uint64_t t, uint64_t span) {
    if (!span) return 0;
    double c = (double)t / (double)span * SPARK_WIDTH;
    return c >= SPARK_WIDTH - 1 ? SPARK_WIDTH - 1 : (size_t)c;
}

/* One sparkline: each column the highest sample in its slice of time, or
 * the last value before it when no sample fell there. */
static void write_sparkline(FILE *out, const ProfMemory *m, bool reserved, uint64_t span, uint64_t top) {
    uint64_t cols[SPARK_WIDTH] = {0};
    bool seen[SPARK_WIDTH] = {false};
    for (size_t i = 0; i < m->sample_count; i++) {
        size_t c = column_of(m->samples[i].time_ns, span);
        uint64_t v = reserved ? m->samples[i].reserved : m->samples[i].allocated;
        if (!seen[c] || v > cols[c]) cols[c] = v;
        seen[c] = true;
    }
    if (!reserved) { /* the peak is the highest point, whether a sample kept it or not */
        size_t c = column_of(m->peak_time_ns, span);
        if (!seen[c] || m->peak_allocated > cols[c]) cols[c] = m->peak_allocated;
        seen[c] = true;
    }
    uint64_t last = 0;
    for (size_t c = 0; c < SPARK_WIDTH; c++) {
        if (seen[c]) last = cols[c];
        if (!last || !top) {
            fputc(' ', out);
            continue;
        }
        double level = (double)last / (double)top * 8.0;
        int k = level >= 8 ? 7 : (int)level; /* a little memory still shows as the lowest block */
        fputs(BLOCKS[k < 0 ? 0 : k], out);
    }
}

static void write_place(FILE *out, const Profile *p, int file, uint32_t line) {
    if (file >= 0 && (size_t)file < p->file_count) fprintf(out, "%s:%u", p->files[file].path, line);
    else fputs("?", out);
}

/* heading, then the lines of one kind, the largest first, and what no line
 * holds; nothing when the memory has no line of that kind */
static void write_holders(FILE *out, const Profile *p, size_t memory, ProfMemLineKind kind, uint64_t whole,
                          const char *heading) {
    size_t n;
    uint64_t elsewhere;
    MemoryHolder *h = memory_holders(p, memory, kind, &n, &elsewhere);
    if (!n && (!elsewhere || kind == PROF_MEM_LINE_GROWTH)) return;
    fprintf(out, "  %s:\n", heading);
    for (size_t i = 0; i < n && i < REPORT_MEMORY_TOP; i++) {
        char bytes[UNITS_BUF], share[UNITS_BUF] = "";
        units_bytes(h[i].bytes, bytes, sizeof bytes);
        if (kind != PROF_MEM_LINE_GROWTH && whole) units_share(h[i].bytes, whole, share, sizeof share);
        if (kind == PROF_MEM_LINE_GROWTH) fprintf(out, "    %*s per step  ", report_pad(bytes, 9), bytes);
        else fprintf(out, "    %*s  %*s  ", report_pad(bytes, 9), bytes, report_pad(share, 5), share);
        write_place(out, p, h[i].file, h[i].line);
        if (kind == PROF_MEM_LINE_GROWTH && h[i].count)
            fprintf(out, " (over %llu steps)", (unsigned long long)h[i].count);
        if (h[i].freed_bytes) {
            fputs(", freed at ", out);
            write_place(out, p, p->sites[h[i].freed_site].file, p->sites[h[i].freed_site].line);
        }
        fputc('\n', out);
    }
    if (n > REPORT_MEMORY_TOP) {
        uint64_t rest = 0;
        for (size_t i = REPORT_MEMORY_TOP; i < n; i++) rest = prof_add_u64(rest, h[i].bytes);
        char bytes[UNITS_BUF];
        fprintf(out, "    ... and %zu more lines, %s%s together\n", n - REPORT_MEMORY_TOP,
                units_bytes(rest, bytes, sizeof bytes), kind == PROF_MEM_LINE_GROWTH ? " per step" : "");
    }
    if (elsewhere && kind != PROF_MEM_LINE_GROWTH) {
        char bytes[UNITS_BUF], share[UNITS_BUF] = "";
        units_bytes(elsewhere, bytes, sizeof bytes);
        if (whole) units_share(elsewhere, whole, share, sizeof share);
        fprintf(out, "    %*s  %*s  no line of the project (allocated outside it, or before recording began)\n",
                report_pad(bytes, 9), bytes, report_pad(share, 5), share);
    }
    free(h);
}

static void write_memory(FILE *out, const Profile *p, size_t index, const char *run) {
    const ProfMemory *m = &p->memories[index];
    fprintf(out, "\nDevice memory of GPU %u", m->device);
    if (m->process >= 0 && (size_t)m->process < p->process_count)
        fprintf(out, " (process %lld)", (long long)p->processes[m->process].pid);
    if (run) fprintf(out, " in the run \"%s\"", run);
    bool cupti = m->source == PROF_MEM_SOURCE_CUPTI; /* cudaMalloc and friends: allocated = reserved */
    fputs(cupti ? ", from cudaMalloc and friends (CUPTI):\n" : ", from PyTorch's allocator:\n", out);

    char a[UNITS_BUF], b[UNITS_BUF], c[UNITS_BUF];
    fprintf(out, "  %-10s %s allocated, %s reserved then, %s into the recorded window\n", "peak",
            units_bytes(m->peak_allocated, a, sizeof a), units_bytes(m->peak_reserved, b, sizeof b),
            units_ns(m->peak_time_ns, c, sizeof c));
    fprintf(out, "  %-10s most allocated %s, most reserved %s (%s over the run)\n", "the run",
            units_bytes(m->max_allocated, a, sizeof a), units_bytes(m->max_reserved, b, sizeof b),
            cupti ? "live device allocations" : "PyTorch's own counters");
    units_count(m->events, a, sizeof a);
    if (m->window_complete)
        fprintf(out, "  %-10s the whole run (%s allocator events)\n", "window", a);
    else
        fprintf(out, "  %-10s the last %s allocator events: it began after the run did, so an earlier peak shows "
                     "only in the run's most allocated\n",
                "window", a);
    if (m->steps) {
        fprintf(out, "  %-10s %llu optimizer steps (%llu in the window)", "steps", (unsigned long long)m->steps,
                (unsigned long long)m->steps_in_window);
        char per_step[UNITS_BUF + 1];
        if (m->bytes_per_step)
            fprintf(out, "; live memory %s per step", report_memory_per_step(m, per_step, sizeof per_step));
        fputc('\n', out);
    }
    uint64_t span = report_memory_span_ns(m), top = report_memory_top_bytes(m);
    if (m->sample_count && span && top) {
        fprintf(out, "  %-10s ", "allocated");
        write_sparkline(out, m, false, span, top);
        fprintf(out, "  0 to %s, full height %s\n", units_ns(span, a, sizeof a), units_bytes(top, b, sizeof b));
        fprintf(out, "  %-10s ", "reserved");
        write_sparkline(out, m, true, span, top);
        fprintf(out, "\n  %-10s %*s^ the peak, %s\n", "", (int)column_of(m->peak_time_ns, span), "",
                units_ns(m->peak_time_ns, a, sizeof a));
    }
    write_holders(out, p, index, PROF_MEM_LINE_PEAK, m->peak_allocated, "held at the peak, the lines holding the most");
    write_holders(out, p, index, PROF_MEM_LINE_GROWTH, 0, "growing step after step");
    if (m->oom) {
        fprintf(out, "  out of memory at %s: %s asked for", units_ns(m->oom_time_ns, a, sizeof a),
                units_bytes(m->oom_bytes, b, sizeof b));
        if (m->oom_site >= 0 && (size_t)m->oom_site < p->site_count) {
            fputs(" at ", out);
            write_place(out, p, p->sites[m->oom_site].file, p->sites[m->oom_site].line);
        }
        if (m->source == PROF_MEM_SOURCE_CUPTI) /* a failed cudaMalloc: the device's free memory is not known */
            fprintf(out, ", with %s allocated\n", units_bytes(m->oom_allocated, b, sizeof b));
        else
            fprintf(out, ", with %s free on the device and %s allocated\n",
                    units_bytes(m->oom_device_free, a, sizeof a), units_bytes(m->oom_allocated, b, sizeof b));
        write_holders(out, p, index, PROF_MEM_LINE_OOM, m->oom_allocated, "live when it failed");
    }
}

void report_memory_text(FILE *out, const ReportInput *in) {
    for (size_t i = 0; i < in->profile_count; i++) {
        const Profile *p = in->profiles[i].profile;
        const char *run = in->profile_count > 1 ? (p && p->name ? p->name : "?") : NULL;
        for (size_t k = 0; p && k < p->memory_count; k++) write_memory(out, p, k, run);
    }
}
