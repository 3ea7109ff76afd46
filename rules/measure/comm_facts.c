#include "rules/measure/comm_facts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "profiler/comm_kernels.h"
#include "profiler/profile_view.h"

/* NCCL launches of one process at one line */
typedef struct {
    int file;
    uint32_t line;
    int process;
    bool function_level;
    uint64_t ns, launches;
    uint64_t top_ns; /* the kernel with the most time here, for the collective's name */
    const char *collective;
} Entry;


static int by_place(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    return (x->process > y->process) - (x->process < y->process);
}

static int by_time(const void *a, const void *b) {
    const CommLine *x = a, *y = b;
    if (x->ns != y->ns) return x->ns > y->ns ? -1 : 1;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

bool comm_lines_build(const Profile *p, CommLines *out) {
    memset(out, 0, sizeof *out);
    Entry *entries = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind != PROF_OP_LAUNCH || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count) continue;
        const char *name = p->kernels[op->kernel].name;
        if (!comm_kernel_name(name)) continue;
        out->total_ns = prof_add_u64(out->total_ns, op->stats.total_ns);
        if (op->site < 0 || (size_t)op->site >= p->site_count) continue;
        const ProfSite *site = &p->sites[op->site];
        if (site->file < 0 || site->line == 0) continue;
        size_t k = 0;
        while (k < n && !(entries[k].file == site->file && entries[k].line == site->line &&
                          entries[k].process == op->process))
            k++;
        if (k == n) {
            if (!array_reserve(&entries, n, &cap, sizeof *entries, 16)) {
                free(entries);
                return false;
            }
            entries[n++] = (Entry){.file = site->file, .line = site->line, .process = op->process,
                                   .function_level = site->function_level};
        }
        Entry *e = &entries[k];
        e->ns = prof_add_u64(e->ns, op->stats.total_ns);
        e->launches = prof_add_u64(e->launches, op->stats.count);
        if (!e->collective || op->stats.total_ns > e->top_ns) {
            const char *c = comm_kernel_collective(name);
            if (c) {
                e->collective = c;
                e->top_ns = op->stats.total_ns;
            }
        }
    }
    if (n == 0) {
        free(entries);
        return true;
    }
    qsort(entries, n, sizeof *entries, by_place);
    out->lines = calloc(n, sizeof *out->lines);
    if (!out->lines) {
        free(entries);
        return false;
    }
    uint64_t top_ns = 0;
    for (size_t i = 0; i < n; i++) {
        const Entry *e = &entries[i];
        CommLine *l = out->count ? &out->lines[out->count - 1] : NULL;
        if (!l || l->file != e->file || l->line != e->line) {
            l = &out->lines[out->count++];
            *l = (CommLine){.file = e->file, .line = e->line, .function_level = e->function_level};
            top_ns = 0;
        }
        l->ns = prof_add_u64(l->ns, e->ns);
        l->launches = prof_add_u64(l->launches, e->launches);
        if (e->launches > l->most_launches) l->most_launches = e->launches;
        l->processes++;
        if (e->collective && (!l->collective || e->top_ns > top_ns)) {
            l->collective = e->collective;
            top_ns = e->top_ns;
        }
    }
    free(entries);
    qsort(out->lines, out->count, sizeof *out->lines, by_time);
    return true;
}

void comm_lines_free(CommLines *l) {
    free(l->lines);
    memset(l, 0, sizeof *l);
}

const CommLine *comm_lines_main(const CommLines *l) {
    for (size_t i = 0; i < l->count; i++)
        if (l->lines[i].most_launches >= 2) return &l->lines[i];
    return NULL;
}

const char *comm_line_place(const Profile *p, int here_file, const CommLine *l, char *buf, size_t size) {
    if (l->file == here_file || l->file < 0 || (size_t)l->file >= p->file_count)
        snprintf(buf, size, "line %u", l->line);
    else
        snprintf(buf, size, "`%.200s` line %u", p->files[l->file].path, l->line);
    return buf;
}

bool comm_row_communicates(const RankRow *r) { return r->devices > 0 && r->nccl_launches > 0; }

const char *comm_row_name(const RankRow *r, char *buf, size_t size) {
    if (r->rank >= 0) snprintf(buf, size, "rank %d", r->rank);
    else snprintf(buf, size, "pid %lld", (long long)r->pid);
    return buf;
}

uint64_t comm_row_span(const RankRow *r) { return prof_add_u64(r->busy_ns, r->idle_ns); }

const RankRow *comm_least_exposed(const RankTable *t) {
    const RankRow *least = NULL;
    for (size_t i = 0; i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        if (comm_row_communicates(r) && (!least || r->exposed_comm_ns < least->exposed_comm_ns)) least = r;
    }
    return least;
}

size_t comm_rows(const RankTable *t) {
    size_t n = 0;
    for (size_t i = 0; i < t->row_count; i++) n += comm_row_communicates(&t->rows[i]);
    return n;
}

void comm_judge_main_line(RuleContext *ctx, CommJudge judge) {
    const Profile *p = profile_view_profile(ctx->profile);
    CommLines lines;
    if (!comm_lines_build(p, &lines)) {
        ctx->out_of_memory = true;
        return;
    }
    const CommLine *top = comm_lines_main(&lines);
    if (top && top->file == ctx->profile_file) {
        RankTable t;
        if (rank_table_build(p, &t)) judge(ctx, &t, &lines, top);
        else ctx->out_of_memory = true;
        rank_table_free(&t);
    }
    comm_lines_free(&lines);
}
