#include "profiler/rank_table.h"

#include <stdlib.h>
#include <string.h>

#include "profiler/comm_kernels.h"


static int compare_rows(const void *a, const void *b) {
    const RankRow *x = a, *y = b;
    bool xr = x->rank >= 0, yr = y->rank >= 0;
    if (xr != yr) return xr ? -1 : 1;
    if (xr && x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return (x->process > y->process) - (x->process < y->process);
}

size_t rank_table_ranked_processes(const Profile *p) {
    size_t n = 0;
    for (size_t i = 0; i < p->process_count; i++)
        if (p->processes[i].rank >= 0) n++;
    return n;
}

/* A row takes part in the comparison: it has a rank and used a GPU. */
static bool compared(const RankRow *r) { return r->rank >= 0 && r->devices > 0; }

static void find_straggler(RankTable *t) {
    const RankRow *straggler = NULL;
    for (size_t i = 0; i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        if (!compared(r)) continue;
        if (r->nccl_launches == 0) return; /* a rank without collectives: the model does not apply */
        if (!straggler || r->nccl_kernel_ns < straggler->nccl_kernel_ns) straggler = r;
    }
    if (!straggler || t->ranked < 2) return;
    uint64_t wait = 0, calls = 0;
    for (size_t i = 0; i < t->row_count; i++) {
        RankRow *r = &t->rows[i];
        if (!compared(r) || r == straggler) continue;
        r->wait_ns = r->nccl_kernel_ns - straggler->nccl_kernel_ns;
        wait = prof_add_u64(wait, r->wait_ns);
        calls = prof_add_u64(calls, r->nccl_launches);
    }
    t->has_straggler = true;
    t->waits_for_rank = straggler->rank;
    t->waits_for_pid = straggler->pid;
    t->mean_wait_per_call_ns = calls ? wait / calls : 0;
}

static void find_imbalance(RankTable *t) {
    t->load_imbalance = -1;
    if (t->ranked < 2) return;
    double sum = 0, max = 0;
    for (size_t i = 0; i < t->row_count; i++) {
        if (!compared(&t->rows[i])) continue;
        double c = (double)t->rows[i].compute_ns;
        sum += c;
        if (c > max) max = c;
    }
    if (sum <= 0) return;
    t->load_imbalance = max / (sum / (double)t->ranked) - 1;
}

bool rank_table_build(const Profile *p, RankTable *t) {
    memset(t, 0, sizeof *t);
    t->waits_for_rank = -1;
    t->load_imbalance = -1;
    if (p->process_count == 0) return true;
    t->rows = calloc(p->process_count, sizeof *t->rows);
    if (!t->rows) return false;
    t->row_count = p->process_count;
    for (size_t i = 0; i < p->process_count; i++) {
        const ProfProcess *proc = &p->processes[i];
        t->rows[i] = (RankRow){.process = (int)i, .pid = proc->pid, .rank = proc->rank < 0 ? -1 : proc->rank,
                               .wall_ns = proc->wall_ns};
    }
    /* rows are still in process order here */
    for (size_t i = 0; i < p->timeline_count; i++) {
        const ProfTimeline *tl = &p->timelines[i];
        if (tl->process < 0 || (size_t)tl->process >= t->row_count) continue;
        RankRow *r = &t->rows[tl->process];
        r->devices++;
        r->compute_ns = prof_add_u64(r->compute_ns, tl->compute_ns);
        r->comm_ns = prof_add_u64(r->comm_ns, tl->comm_ns);
        r->exposed_comm_ns = prof_add_u64(r->exposed_comm_ns, tl->exposed_comm_ns);
        r->busy_ns = prof_add_u64(r->busy_ns, tl->busy_ns);
        r->idle_ns = prof_add_u64(r->idle_ns, tl->idle_ns);
    }
    for (size_t i = 0; i < p->kernel_count; i++) {
        const ProfKernel *k = &p->kernels[i];
        if (k->process < 0 || (size_t)k->process >= t->row_count || !comm_kernel_name(k->name)) continue;
        RankRow *r = &t->rows[k->process];
        r->nccl_kernel_ns = prof_add_u64(r->nccl_kernel_ns, k->stats.total_ns);
        r->nccl_launches = prof_add_u64(r->nccl_launches, k->stats.count);
    }
    qsort(t->rows, t->row_count, sizeof *t->rows, compare_rows);
    for (size_t i = 0; i < t->row_count; i++)
        if (compared(&t->rows[i])) t->ranked++;
    find_straggler(t);
    find_imbalance(t);
    return true;
}

void rank_table_free(RankTable *t) {
    free(t->rows);
    memset(t, 0, sizeof *t);
    t->waits_for_rank = -1;
    t->load_imbalance = -1;
}
