/* Device memory by source line (line_memory.h). */
#include "server/render/line_memory.h"

#include <stdlib.h>
#include <string.h>

/* One memory line of the file, before summing. */
typedef struct {
    uint32_t line;
    size_t memory;
    ProfMemLineKind kind;
    uint64_t bytes, count;
    uint64_t freed_bytes;
    int freed_site;
} Entry;

static int by_line_memory_kind(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->memory != y->memory) return x->memory < y->memory ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

/* The site of a memory line, or NULL when it names none (or a bad index). */
static const ProfSite *site_of(const Profile *p, int site) {
    if (site < 0 || (size_t)site >= p->site_count) return NULL;
    const ProfSite *s = &p->sites[site];
    if (s->file < 0 || (size_t)s->file >= p->file_count) return NULL;
    return s;
}

/* A peak line's freed bytes when its freeing site names a line; 0 otherwise. */
static uint64_t freed_of(const Profile *p, const ProfMemLine *l) {
    return l->freed_bytes && site_of(p, l->freed_site) ? l->freed_bytes : 0;
}

/* The memory lines of file (of one line when only_line is not 0), sorted
 * so that each line's entries of one memory and kind are together. */
static Entry *entries_of(const Profile *p, int file, uint32_t only_line, size_t *count) {
    *count = 0;
    if (file < 0 || !p->memory_line_count) return NULL;
    Entry *out = NULL;
    size_t n = 0;
    for (size_t i = 0; i < p->memory_line_count; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        const ProfSite *s = site_of(p, l->site);
        if (!s || s->file != file || s->line == 0 || (only_line && s->line != only_line)) continue;
        if (l->memory < 0 || (size_t)l->memory >= p->memory_count || (unsigned)l->kind >= PROF_MEM_LINE_KIND_COUNT)
            continue;
        if (!out) { /* at most every memory line: one allocation */
            out = malloc(p->memory_line_count * sizeof *out);
            if (!out) return NULL;
        }
        out[n++] = (Entry){s->line, (size_t)l->memory, l->kind, l->bytes, l->count, freed_of(p, l), l->freed_site};
    }
    if (n) qsort(out, n, sizeof *out, by_line_memory_kind);
    *count = n;
    return out;
}

/* Folds one memory's sum of one kind into the line's figure. */
static void add_memory(const Profile *p, LineMemoryFigure *f, size_t memory, uint64_t bytes, uint64_t count,
                       const Entry *freed) {
    f->all_bytes = prof_add_u64(f->all_bytes, bytes);
    f->memories++;
    if (!f->memory || bytes > f->bytes) {
        f->memory = &p->memories[memory];
        f->bytes = bytes;
        f->count = count;
        f->freed_bytes = freed ? freed->freed_bytes : 0;
        f->freed_site = freed ? freed->freed_site : -1;
    }
}

/* The lines of file (only that one when only_line is not 0), summed. */
static LineMemory *summed(const Profile *p, int file, uint32_t only_line, size_t *count) {
    *count = 0;
    size_t n;
    Entry *e = entries_of(p, file, only_line, &n);
    if (!e) return NULL;
    LineMemory *out = calloc(n, sizeof *out); /* at most one line per entry */
    if (!out) {
        free(e);
        return NULL;
    }
    size_t lines = 0;
    for (size_t i = 0; i < n;) {
        if (!lines || out[lines - 1].line != e[i].line) {
            out[lines].file = file;
            out[lines++].line = e[i].line;
        }
        /* the entries of one memory and kind at this line: sites sharing the line */
        size_t j = i;
        uint64_t bytes = 0, count_sum = 0, count_max = 0;
        const Entry *freed = NULL; /* the site freeing the most of it */
        for (; j < n && e[j].line == e[i].line && e[j].memory == e[i].memory && e[j].kind == e[i].kind; j++) {
            bytes = prof_add_u64(bytes, e[j].bytes);
            count_sum = prof_add_u64(count_sum, e[j].count);
            if (e[j].count > count_max) count_max = e[j].count;
            if (e[j].freed_bytes && (!freed || e[j].freed_bytes > freed->freed_bytes)) freed = &e[j];
        }
        /* growth counts the steps measured, the same steps for every site: not summed */
        uint64_t c = e[i].kind == PROF_MEM_LINE_GROWTH ? count_max : count_sum;
        add_memory(p, &out[lines - 1].kind[e[i].kind], e[i].memory, bytes, c, freed);
        i = j;
    }
    free(e);
    *count = lines;
    return out;
}

LineMemory *line_memory_of_file(const Profile *p, int file, size_t *count) { return summed(p, file, 0, count); }

bool line_memory_at(const Profile *p, int file, uint32_t line, LineMemory *out) {
    memset(out, 0, sizeof *out);
    size_t n;
    LineMemory *one = line ? summed(p, file, line, &n) : NULL;
    if (!one) return false;
    *out = one[0];
    free(one);
    return true;
}

double line_memory_peak_share(const LineMemory *l) {
    const LineMemoryFigure *f = &l->kind[PROF_MEM_LINE_PEAK];
    if (!f->memory || !f->memory->peak_allocated) return 0;
    return (double)f->bytes / (double)f->memory->peak_allocated;
}

bool line_memory_worth_lens(const LineMemory *l) {
    const LineMemoryFigure *f = &l->kind[PROF_MEM_LINE_PEAK];
    return f->memory && f->bytes && f->memory->peak_allocated &&
           (double)f->bytes >= 0.01 * (double)f->memory->peak_allocated;
}

/* ---- the holders of one memory, for the report -------------------------------- */

static int by_place(const void *a, const void *b) {
    const MemoryHolder *x = a, *y = b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

static int by_bytes_then_place(const void *a, const void *b) {
    const MemoryHolder *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return by_place(a, b);
}

MemoryHolder *memory_holders(const Profile *p, size_t memory, ProfMemLineKind kind, size_t *count,
                             uint64_t *elsewhere) {
    *count = 0;
    *elsewhere = 0;
    if (memory >= p->memory_count || !p->memory_line_count) return NULL;
    MemoryHolder *out = NULL;
    size_t n = 0;
    for (size_t i = 0; i < p->memory_line_count; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        if (l->memory < 0 || (size_t)l->memory != memory || l->kind != kind) continue;
        const ProfSite *s = site_of(p, l->site);
        if (!s || s->line == 0) {
            *elsewhere = prof_add_u64(*elsewhere, l->bytes);
            continue;
        }
        if (!out) { /* at most every memory line: one allocation */
            out = malloc(p->memory_line_count * sizeof *out);
            if (!out) return NULL;
        }
        out[n++] = (MemoryHolder){l->site, s->file, s->line, l->bytes, l->count, freed_of(p, l), l->freed_site};
    }
    if (!n) {
        free(out);
        return NULL;
    }
    /* sites at the same file and line: one holder */
    qsort(out, n, sizeof *out, by_place);
    size_t merged = 0;
    for (size_t i = 0; i < n; i++) {
        MemoryHolder *last = merged ? &out[merged - 1] : NULL;
        if (last && last->file == out[i].file && last->line == out[i].line) {
            last->bytes = prof_add_u64(last->bytes, out[i].bytes);
            if (out[i].freed_bytes > last->freed_bytes) {
                last->freed_bytes = out[i].freed_bytes;
                last->freed_site = out[i].freed_site;
            }
            /* growth counts the steps measured, the same for every site: not summed */
            last->count = kind == PROF_MEM_LINE_GROWTH ? (out[i].count > last->count ? out[i].count : last->count)
                                                       : prof_add_u64(last->count, out[i].count);
        } else {
            out[merged++] = out[i];
        }
    }
    qsort(out, merged, sizeof *out, by_bytes_then_place);
    *count = merged;
    return out;
}
