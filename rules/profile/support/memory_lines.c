#include "rules/profile/support/memory_lines.h"

#include <stdlib.h>

#include "profiler/profile_view.h"

static int by_bytes(const void *a, const void *b) {
    const MemLine *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static MemLine *lines_of(RuleContext *ctx, ProfMemLineKind kind, int source, size_t *count) {
    *count = 0;
    if (!ctx->profile || ctx->profile_file < 0) return NULL;
    const Profile *p = profile_view_profile(ctx->profile);
    if (!p->memory_line_count) return NULL;
    MemLine *out = calloc(p->memory_line_count, sizeof *out);
    if (!out) {
        ctx->out_of_memory = true;
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->memory_line_count; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        if (l->kind != kind || l->site < 0 || (size_t)l->site >= p->site_count) continue;
        if (source >= 0 && (l->memory < 0 || (size_t)l->memory >= p->memory_count ||
                            (int)p->memories[l->memory].source != source))
            continue;
        const ProfSite *s = &p->sites[l->site];
        if (s->file != ctx->profile_file || s->line == 0) continue;
        size_t k = 0;
        while (k < n && out[k].line != s->line) k++;
        if (k == n) out[n++] = (MemLine){.line = s->line, .site = s};
        MemLine *m = &out[k];
        m->bytes = prof_add_u64(m->bytes, l->bytes);
        m->count = prof_add_u64(m->count, l->count);
        /* lines of one memory never repeat a site, so this is the line's bytes in that memory */
        if (l->freed_bytes > m->freed_bytes && l->freed_site >= 0 && (size_t)l->freed_site < p->site_count &&
            p->sites[l->freed_site].file >= 0 && (size_t)p->sites[l->freed_site].file < p->file_count) {
            m->freed = &p->sites[l->freed_site];
            m->freed_bytes = l->freed_bytes;
        }
        if (l->bytes > m->memory_bytes) {
            m->memory_bytes = l->bytes;
            m->memory = &p->memories[l->memory];
        }
    }
    if (!n) {
        free(out);
        return NULL;
    }
    qsort(out, n, sizeof *out, by_bytes);
    *count = n;
    return out;
}

MemLine *mem_lines_of_document(RuleContext *ctx, ProfMemLineKind kind, size_t *count) {
    return lines_of(ctx, kind, -1, count);
}

MemLine *mem_lines_of_document_from(RuleContext *ctx, ProfMemLineKind kind, ProfMemSource source, size_t *count) {
    return lines_of(ctx, kind, (int)source, count);
}

const ProfSite *mem_top_site(const Profile *p, const ProfMemory *m, ProfMemLineKind kind, uint64_t *bytes) {
    const ProfSite *top = NULL;
    *bytes = 0;
    for (size_t i = 0; i < p->memory_line_count; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        if (l->kind != kind || &p->memories[l->memory] != m || l->site < 0 || (size_t)l->site >= p->site_count) continue;
        if (l->bytes > *bytes) {
            *bytes = l->bytes;
            top = &p->sites[l->site];
        }
    }
    return top;
}
