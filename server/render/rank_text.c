#include "server/render/rank_text.h"

#include "server/render/report_text.h"

static void cell(FILE *out, uint64_t ns) {
    char buf[UNITS_BUF];
    units_ns(ns, buf, sizeof buf);
    fprintf(out, "  %*s", report_pad(buf, 10), buf);
}

void rank_text_write(FILE *out, const RankTable *t) {
    fprintf(out, "  %4s  %8s  %10s  %10s  %10s  %10s  %10s  %10s\n", "rank", "pid", "compute", "comm", "exposed",
            "idle GPU", "wall", "NCCL calls");
    for (size_t i = 0; i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        if (r->rank >= 0) fprintf(out, "  %4d", r->rank);
        else fprintf(out, "  %4s", "-");
        fprintf(out, "  %8lld", (long long)r->pid);
        cell(out, r->compute_ns);
        cell(out, r->comm_ns);
        cell(out, r->exposed_comm_ns);
        cell(out, r->idle_ns);
        cell(out, r->wall_ns);
        fprintf(out, "  %10llu%s\n", (unsigned long long)r->nccl_launches, r->devices ? "" : "  (no GPU activity)");
    }
    fputs("  compute: kernels other than NCCL's, copies, memsets; comm: NCCL kernels; exposed: comm that no compute "
          "overlapped\n",
          out);
    char imbalance[UNITS_BUF];
    if (t->load_imbalance >= 0)
        fprintf(out, "load imbalance %s (the rank that computed longest over the mean of %zu ranks)\n",
                units_ratio(t->load_imbalance, imbalance, sizeof imbalance), t->ranked);
    if (!t->has_straggler) {
        if (t->ranked >= 2) fputs("straggler      none found (not every rank launched NCCL kernels)\n", out);
        return;
    }
    if (t->mean_wait_per_call_ns == 0) {
        fprintf(out, "straggler      none: every rank spent as long in NCCL kernels as rank %d\n", t->waits_for_rank);
        return;
    }
    char wait[32];
    units_ns(t->mean_wait_per_call_ns, wait, sizeof wait);
    fprintf(out,
            "straggler      the other ranks wait for rank %d: %s more per NCCL call on average (a rank that arrives "
            "early at a collective waits inside it, so the rank with the least NCCL time is the one waited for)\n",
            t->waits_for_rank, wait);
}
