/* PR014 rank-imbalance: in a multi-rank run the other ranks wait for one
 * rank at the collectives (a straggler), or one rank computes markedly more
 * than the others. Reported at the line that launched most of the run's
 * NCCL time, where the fast ranks wait. Needs a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/comm_facts.h"
#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`) of a run of two ranks or more that all launch NCCL\n"
    "collectives (DDP under `torchrun`). It reads the per-rank table of `advise ranks` and its\n"
    "straggler model: every rank runs the same collectives, and a rank that arrives early waits\n"
    "inside the NCCL kernel until the last one joins, so the rank with the least NCCL kernel time\n"
    "is the one the others wait for, and each other rank's NCCL time beyond it is waiting. The\n"
    "rule reports, at the line that launched the most NCCL time (where the fast ranks wait):\n"
    "\n"
    "- waiting: the other ranks waited 100 µs or more per collective on average, and the rank\n"
    "  that waited most spent 5% or more of its GPU busy time waiting; or\n"
    "- load imbalance: the rank that computed most did so 10% or more above the mean of the\n"
    "  ranks (max compute / mean compute − 1), and at least 1 ms above it.\n"
    "\n"
    "`the other ranks waited for rank 1 at this line's collectives: 2.00 ms per call on average,\n"
    "rank 0 40.0 ms in all (16% of its GPU busy time); rank 1 computed 40.0 ms more than the others'\n"
    "mean (25% more): balance the data per rank (...)`\n"
    "\n"
    "The evidence gives each rank's compute, NCCL time and wait. Nothing is reported for a\n"
    "single process, for ranks without collectives, or when the ranks are balanced.\n"
    "\n"
    "## Why is this slow?\n"
    "A collective finishes only when every rank has joined it. Each step, every rank waits for\n"
    "the slowest: the run goes at the speed of its straggler, and the others' GPUs sit in NCCL\n"
    "kernels doing nothing useful. Usual causes: uneven work per rank (batches of different\n"
    "sizes or sequence lengths, a dataset split unevenly), and work only one rank does inside the\n"
    "step (rank 0 logging, checkpointing, evaluating or reading data on the host). When the\n"
    "straggler's GPU computed no more than the others, its lateness comes from the host.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "for step, batch in enumerate(loader):         # sequences of uneven length per rank\n"
    "    loss = model(batch).mean()\n"
    "    loss.backward()                           # PR014: the others wait 1.55 ms per collective for rank 1\n"
    "    optimizer.step()\n"
    "    if rank == 0:\n"
    "        torch.save(model.state_dict(), \"ckpt.pt\")   # rank 0 alone, every step\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Give every rank the same amount of work: `DistributedSampler(dataset, drop_last=True)` (or\n"
    "`drop_last=True` in the `DataLoader`), bucket or pack sequences so that batches have similar\n"
    "lengths on every rank, and split data by tokens rather than samples. Move rank-0-only work\n"
    "(logging, checkpoints, evaluation) out of the step, make it periodic, or run it on every rank\n"
    "or in a background thread. With pipeline or tensor parallelism, balance the stages.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: how data is split across ranks is the program's design.\n"
    "\n"
    "## The numbers\n"
    "From `advise ranks` (profiler/rank_table.h): per rank, compute (union of non-NCCL kernels,\n"
    "copies, memsets) and the total duration of its NCCL kernels; the wait of a rank is its NCCL\n"
    "time beyond the straggler's, per call its mean over the rank's NCCL launches. The model\n"
    "assumes symmetric collectives of the same sizes on every rank (data parallelism): with\n"
    "pipeline or tensor parallelism, or links of different speeds, part of the difference is real\n"
    "transfer time. Gain (whole program) = the least wait among the ranks that waited: an upper\n"
    "bound on what the run saves if the straggler arrived with the others (then they would wait\n"
    "for the next slowest). Severity is info, warning when a rank waited 10% of its GPU busy time.\n";

#define MIN_WAIT_PER_CALL_NS 100000u  /* 100 µs per collective on average */
#define MIN_WAIT_SHARE 0.05           /* of the most-waiting rank's GPU busy time */
#define MIN_IMBALANCE 0.10            /* max compute / mean compute - 1 */
#define MIN_EXTRA_COMPUTE_NS 1000000u /* 1 ms: the most computing rank above the mean */
#define WARNING_WAIT_SHARE 0.10
#define MAX_ROWS 16                   /* ranks listed one by one */
#define EXTRA_COMPUTE 0.05            /* the straggler's compute above the others' mean that explains it */

/* What a rank's wait is a share of: its GPU busy time. Not its wall time,
 * whose start-up (process group, NCCL set-up, data loading) would hide the
 * wait: on the H200 two-rank run of bench/ddp/ddp_train_advised.py rank 0
 * waited 274 ms for rank 1, 48% of its busy time but 4.3% of its 6.35 s. */
static uint64_t busy_of(const RankRow *r) { return r->busy_ns ? r->busy_ns : comm_row_span(r); }

typedef struct {
    const RankRow *straggler;    /* the one the others wait for */
    const RankRow *heaviest;     /* the one that computed most */
    double mean_compute;         /* over the ranks */
    double others_compute;       /* mean over the ranks but the straggler */
    const RankRow *most_waiting; /* the one whose wait is the largest share of its GPU busy time */
    double max_wait_share;       /* that share */
    uint64_t least_wait;         /* among the ranks that waited; 0 when none did */
    size_t ranks;
} Figures;

static bool compared(const RankRow *r) { return r->rank >= 0 && r->devices > 0; }

static bool figures_of(const RankTable *t, Figures *x) {
    memset(x, 0, sizeof *x);
    double sum = 0, others = 0;
    for (size_t i = 0; i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        if (!compared(r)) continue;
        x->ranks++;
        sum += (double)r->compute_ns;
        if (!x->heaviest || r->compute_ns > x->heaviest->compute_ns) x->heaviest = r;
        if (r->rank == t->waits_for_rank && r->pid == t->waits_for_pid) {
            x->straggler = r;
            continue;
        }
        others += (double)r->compute_ns;
        double share = busy_of(r) ? (double)r->wait_ns / (double)busy_of(r) : 0;
        if (!x->most_waiting || share > x->max_wait_share) {
            x->most_waiting = r;
            x->max_wait_share = share;
        }
        if (r->wait_ns && (!x->least_wait || r->wait_ns < x->least_wait)) x->least_wait = r->wait_ns;
    }
    if (!x->straggler || !x->most_waiting) return false;
    x->mean_compute = sum / (double)x->ranks;
    x->others_compute = others / (double)(x->ranks - 1);
    return true;
}

static bool add_rows(Finding *f, const RankTable *t, const Figures *x) {
    size_t listed = 0;
    char straggler[32];
    comm_row_name(x->straggler, straggler, sizeof straggler);
    for (size_t i = 0; i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        if (!compared(r)) continue;
        if (listed++ == MAX_ROWS) return finding_measured(f, QV(q_count(x->ranks - MAX_ROWS)), "... and {} more ranks");
        char who[32];
        comm_row_name(r, who, sizeof who);
        bool ok;
        if (r == x->straggler)
            ok = finding_measured(f, QV(q_ns(r->compute_ns), q_ns(r->nccl_kernel_ns), q_count(r->nccl_launches)),
                                  "%s: computed {}; NCCL kernels {} in {} calls, the least of the ranks: the others "
                                  "wait for it",
                                  who);
        else
            ok = finding_measured(f,
                                  QV(q_ns(r->compute_ns), q_ns(r->nccl_kernel_ns), q_count(r->nccl_launches),
                                     q_ns(r->wait_ns), q_ns(r->nccl_launches ? r->wait_ns / r->nccl_launches : 0),
                                     q_share(r->wait_ns, busy_of(r))),
                                  "%s: computed {}; NCCL kernels {} in {} calls, of which {} waiting for %s ({} per "
                                  "call, {} of its GPU busy time)",
                                  who, straggler);
        if (!ok) return false;
    }
    return true;
}

static void report(RuleContext *ctx, const RankTable *t, const Figures *x, const CommLine *top, bool waits,
                   bool imbalanced) {
    char straggler[32], waiting[32], per_call[24], most[24], share[16], cause[320];
    comm_row_name(x->straggler, straggler, sizeof straggler);
    double extra = (double)x->straggler->compute_ns - x->others_compute;
    if (extra > 0 && extra >= EXTRA_COMPUTE * x->others_compute) {
        char e[24], pct[16];
        snprintf(cause, sizeof cause,
                 "%s computed %s more than the others' mean (%s more): balance the data per rank (uneven batch "
                 "or sequence lengths, `DistributedSampler(..., drop_last=True)`)",
                 straggler, units_ns((uint64_t)extra, e, sizeof e), units_ratio(extra / x->others_compute, pct,
                                                                                  sizeof pct));
    } else {
        snprintf(cause, sizeof cause,
                 "its GPU computed at most 5%% more than theirs, so the delay is not GPU compute but host-side "
                 "work: move work only %s does (logging, checkpointing, evaluation, data loading) out of the step",
                 straggler);
    }
    Finding *f;
    if (waits) {
        f = pf_report_line(ctx, top->line,
                           "the other ranks waited for %s at this line's collectives: %s per call on average, %s "
                           "%s in all (%s of its GPU busy time); %s",
                           straggler, units_ns(t->mean_wait_per_call_ns, per_call, sizeof per_call),
                           comm_row_name(x->most_waiting, waiting, sizeof waiting),
                           units_ns(x->most_waiting->wait_ns, most, sizeof most),
                           units_ratio(x->max_wait_share, share, sizeof share), cause);
    } else {
        char heaviest[32], e[24], pct[16];
        f = pf_report_line(ctx, top->line,
                           "load imbalance across the ranks: %s computed %s more than the mean (%s more), time the "
                           "others spend waiting for it at a collective or at the end of the run; balance the data "
                           "per rank (uneven batch or sequence lengths, `DistributedSampler(..., drop_last=True)`)",
                           comm_row_name(x->heaviest, heaviest, sizeof heaviest),
                           units_ns((uint64_t)((double)x->heaviest->compute_ns - x->mean_compute), e, sizeof e),
                           units_ratio(t->load_imbalance, pct, sizeof pct));
    }
    if (!f) return;
    if (x->max_wait_share >= WARNING_WAIT_SHARE) f->severity = SEVERITY_WARNING;
    bool ok = add_rows(f, t, x);
    if (ok && imbalanced && x->heaviest != x->straggler) {
        char heaviest[32];
        ok = finding_measured(f, NO_VALUES,
                              "%s computed most, but %s arrived last at the collectives: host-side work on %s, or "
                              "collectives of different sizes, is the likelier cause",
                              comm_row_name(x->heaviest, heaviest, sizeof heaviest), straggler, straggler);
    }
    if (ok)
        ok = finding_evidence(f, EVIDENCE_MODEL, NO_VALUES,
                              "the straggler model: every rank runs the same collectives, and a rank that arrives "
                              "early waits inside the NCCL kernel, so NCCL time beyond the least (%s's) is waiting; "
                              "it assumes data parallelism (same collectives, same sizes)",
                              straggler);
    if (ok && top->function_level)
        ok = finding_caveat(f, "the imported trace names functions, not lines: the collectives are the whole "
                               "function's");
    if (ok && x->least_wait)
        ok = finding_set_gain(f, (double)x->least_wait / 1e9, "program", QV(q_ns(x->least_wait)),
                              "the least wait of a rank for %s ({}): an upper bound on what the run saves if %s "
                              "arrived with the others, who would then wait for the next slowest",
                              straggler, straggler);
    if (!ok) ctx->out_of_memory = true;
}

static void judge(RuleContext *ctx, const RankTable *t, const CommLines *lines, const CommLine *top) {
    (void)lines;
    Figures x;
    if (t->ranked < 2 || !t->has_straggler || !figures_of(t, &x)) return;
    bool waits = t->mean_wait_per_call_ns >= MIN_WAIT_PER_CALL_NS && x.max_wait_share >= MIN_WAIT_SHARE;
    bool imbalanced = t->load_imbalance >= MIN_IMBALANCE &&
                      (double)x.heaviest->compute_ns - x.mean_compute >= (double)MIN_EXTRA_COMPUTE_NS;
    if (waits || imbalanced) report(ctx, t, &x, top, waits, imbalanced);
}

static void check_profile(RuleContext *ctx) {
    if (rank_table_ranked_processes(profile_view_profile(ctx->profile)) < 2) return;
    comm_judge_main_line(ctx, judge);
}

const Rule rule_pr014_rank_imbalance = {
    .code = "PR014", .name = "rank-imbalance", .severity = SEVERITY_INFO,
    .check_profile = check_profile,
    .languages = LANGUAGE_PYTHON, /* the advice is PyTorch's (DistributedSampler, rank-0 work) */
    .summary = "The other ranks wait for one rank at the collectives, or one rank computes 10% more (profile)",
    .advice = "balance the work per rank (`DistributedSampler(..., drop_last=True)`, batches of similar lengths) and move rank-0-only work out of the step",
    .documentation = documentation};
