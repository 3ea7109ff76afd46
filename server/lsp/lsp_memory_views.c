/* Device memory in the editor: the words of one line (lsp_memory_views.h). */
#include "server/lsp/lsp_memory_views.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/units.h"

#define HOVER_MAX 2048 /* four short items */

typedef struct {
    char text[HOVER_MAX];
    size_t len;
} Words;

static void add(Words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(Words *w, const char *fmt, ...) {
    if (w->len >= sizeof w->text - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->text + w->len, sizeof w->text - w->len, fmt, ap);
    va_end(ap);
    if (n > 0) w->len += (size_t)n < sizeof w->text - w->len ? (size_t)n : sizeof w->text - w->len - 1;
}

/* " on GPU 1 of process 4242, where the line holds most; 2.55 GB on 2 GPUs
 * in all" when the line has this kind in more than one memory */
static void where_most(Words *w, const Profile *p, const LineMemoryFigure *f, const char *unit_words) {
    if (f->memories < 2) return;
    const ProfMemory *m = f->memory;
    char all[UNITS_BUF];
    add(w, " on GPU %u", m->device);
    if (m->process >= 0 && (size_t)m->process < p->process_count)
        add(w, " of process %lld", (long long)p->processes[m->process].pid);
    add(w, ", where the line has the most; %s%s on %u GPUs in all", units_bytes(f->all_bytes, all, sizeof all),
        unit_words, f->memories);
}

/* A site that names a file of the profile, or NULL. */
static const ProfSite *site_at(const Profile *p, int site) {
    if (site < 0 || (size_t)site >= p->site_count) return NULL;
    const ProfSite *s = &p->sites[site];
    return s->file >= 0 && (size_t)s->file < p->file_count ? s : NULL;
}

char *lsp_memory_hover(const Profile *p, const LineMemory *l) {
    Words w = {.len = 0};
    w.text[0] = '\0';
    char a[UNITS_BUF], b[UNITS_BUF], c[UNITS_BUF];
    const LineMemoryFigure *peak = &l->kind[PROF_MEM_LINE_PEAK], *growth = &l->kind[PROF_MEM_LINE_GROWTH],
                           *allocs = &l->kind[PROF_MEM_LINE_ALLOCS], *oom = &l->kind[PROF_MEM_LINE_OOM],
                           *kept = &l->kind[PROF_MEM_LINE_KEPT];
    if (peak->memory && peak->bytes) {
        const ProfMemory *m = peak->memory;
        add(&w, "- live at the memory peak: %s (%s of the peak %s)", units_bytes(peak->bytes, a, sizeof a),
            units_ratio(line_memory_peak_share(l), b, sizeof b), units_bytes(m->peak_allocated, c, sizeof c));
        where_most(&w, p, peak, "");
        if (!m->window_complete) /* the peak is the recorded window's; the run's may have been higher */
            add(&w, "; the recorded window began after the run did, whose own peak was %s",
                units_bytes(m->max_allocated, a, sizeof a));
        const ProfSite *freed = site_at(p, peak->freed_site);
        if (peak->freed_bytes && freed && freed->line == l->line && freed->file == l->file)
            add(&w, "; %s of it was freed by this same line after the peak (temporaries of its statement)",
                units_bytes(peak->freed_bytes, a, sizeof a));
        else if (peak->freed_bytes && freed)
            add(&w, "; %s of it was freed later at %s:%u, which kept it alive until then",
                units_bytes(peak->freed_bytes, a, sizeof a), p->files[freed->file].path, freed->line);
        add(&w, "\n");
    }
    if (kept->memory && kept->bytes) {
        add(&w, "- freed here, after the peak: %s that an earlier step allocated, alive at the peak (%s %s)",
            units_bytes(kept->bytes, a, sizeof a), units_count(kept->count, b, sizeof b),
            kept->count == 1 ? "tensor" : "tensors");
        where_most(&w, p, kept, "");
        add(&w, "\n");
    }
    if (growth->memory && growth->bytes) {
        add(&w, "- grows by %s per optimizer step", units_bytes(growth->bytes, a, sizeof a));
        if (growth->count)
            add(&w, " (over the last %s %s)", units_count(growth->count, b, sizeof b),
                growth->count == 1 ? "step" : "steps");
        where_most(&w, p, growth, " per step");
        add(&w, "\n");
    }
    if (allocs->memory && allocs->count) {
        if (allocs->count == 1) snprintf(a, sizeof a, "once");
        else snprintf(a, sizeof a, "%s times", units_count(allocs->count, c, sizeof c));
        add(&w, "- allocated here %s in the recorded window, %s in all", a, units_bytes(allocs->bytes, b, sizeof b));
        /* allocations in a hot loop: how many each optimizer step makes (the window's steps) */
        uint64_t steps = allocs->memory->steps_in_window;
        if (steps && allocs->count >= steps) {
            double per = (double)allocs->count / (double)steps;
            if (per < 1.05) add(&w, ", about once per optimizer step");
            else if (per < 10) add(&w, ", about %.1f per optimizer step", per);
            else add(&w, ", about %s per optimizer step", units_count((uint64_t)(per + 0.5), c, sizeof c));
        }
        where_most(&w, p, allocs, "");
        add(&w, "\n");
    }
    if (oom->memory && oom->bytes) {
        add(&w, "- live when an allocation failed for lack of memory: %s", units_bytes(oom->bytes, a, sizeof a));
        if (oom->memory->oom && oom->memory->oom_allocated)
            add(&w, " (of %s allocated then)", units_bytes(oom->memory->oom_allocated, b, sizeof b));
        where_most(&w, p, oom, "");
        add(&w, "\n");
    }
    if (!w.len) return NULL;
    size_t head = strlen("Device memory:\n\n");
    char *out = malloc(head + w.len + 1);
    if (!out) return NULL;
    memcpy(out, "Device memory:\n\n", head);
    memcpy(out + head, w.text, w.len + 1);
    return out;
}

bool lsp_memory_lens_title(const LineMemory *l, char *buf, size_t size) {
    if (size) buf[0] = '\0';
    if (!size || !line_memory_worth_lens(l)) return false;
    char bytes[UNITS_BUF], share[UNITS_BUF];
    snprintf(buf, size, "%s live at peak (%s)", units_bytes(l->kind[PROF_MEM_LINE_PEAK].bytes, bytes, sizeof bytes),
             units_ratio(line_memory_peak_share(l), share, sizeof share));
    return true;
}

/* sums of figures may pass JSON's largest integer: kept at it */
static json_int_t json_figure(uint64_t v) { return v > (uint64_t)INT64_MAX ? (json_int_t)INT64_MAX : (json_int_t)v; }

json_t *lsp_memory_line_json(const LineMemory *l) {
    const LineMemoryFigure *growth = &l->kind[PROF_MEM_LINE_GROWTH], *allocs = &l->kind[PROF_MEM_LINE_ALLOCS];
    return json_pack("{s:i,s:f,s:I,s:I,s:I,s:I}", "line", (int)l->line - 1, "share", line_memory_peak_share(l),
                     "peak_bytes", json_figure(l->kind[PROF_MEM_LINE_PEAK].bytes), "growth_bytes_per_step",
                     json_figure(growth->bytes), "allocations", json_figure(allocs->count), "allocated_bytes",
                     json_figure(allocs->bytes));
}
