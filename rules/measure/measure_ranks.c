/* The measurement models of multi-rank profiles: NCCL communication behind
 * a DDP finding (MEASURE_COMM), and the per-rank figures of sync findings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/comm_kernels.h"
#include "rules/measure/comm_facts.h"
#include "rules/measure/measure.h"

#define MAX_LISTED 6 /* ranks written out in one line of evidence */

typedef struct {
    uint64_t count, ns;
} Tally;

static bool is_nccl_launch(const Profile *p, const ProfOp *op) {
    return op->kind == PROF_OP_LAUNCH && op->kernel >= 0 && (size_t)op->kernel < p->kernel_count &&
           comm_kernel_name(p->kernels[op->kernel].name);
}

/* Appends one rank's words to e: sep, then "rank N: ..." */
typedef bool (*RankWords)(Evidence *e, const char *sep, const char *who, const Tally *c);

/* "rank 0: ...; rank 1: ...; and N more" over the rows that have a tally,
 * MAX_LISTED of them at most; *listed says how many were written out */
static bool per_rank(const RankTable *t, const Tally *by_process, Evidence *e, RankWords words, size_t *listed) {
    size_t more = 0;
    bool ok = true;
    *listed = 0;
    for (size_t i = 0; ok && i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        const Tally *c = &by_process[r->process];
        if (!c->count) continue;
        if (*listed == MAX_LISTED) {
            more++;
            continue;
        }
        char who[32];
        ok = words(e, (*listed)++ ? "; " : "", comm_row_name(r, who, sizeof who), c);
    }
    if (ok && more) ok = evidence_append(e, QV(q_count(more)), "; and {} more");
    return ok;
}

static bool launch_words(Evidence *e, const char *sep, const char *who, const Tally *c) {
    return evidence_append(e, QV(q_count(c->count), q_ns(c->ns)), "%s%s: {} launch%s, {}", sep, who,
                           c->count == 1 ? "" : "es");
}

static bool wait_words(Evidence *e, const char *sep, const char *who, const Tally *c) {
    return evidence_append(e, QV(q_count(c->count), q_ns(c->ns / c->count), q_ns(c->ns)),
                           "%s%s waited {} time%s, {} each on average ({})", sep, who, c->count == 1 ? "" : "s");
}

/* MEASURE_COMM: the NCCL communication behind a DDP finding, per rank: the
 * NCCL kernels launched at the finding's lines (PY013 sits on the
 * backward() that runs DDP's all-reduce), else those of the program's main
 * NCCL line (comm_lines_main: PY012 sits where DDP is built, its all-reduce
 * runs in backward()); then each rank's communication that no compute
 * overlapped (per GPU, whole run: the profile does not measure it per line).
 * cost = the least exposed rank's exposed communication.
 * Gain (program), only when the launches are at the finding's own lines:
 * that least exposure, an upper bound reached if no communication were left
 * exposed. A finding away from the launches gets none: what it costs where
 * it is (DDP's graph traversal on the host) is not communication. */
bool measure_comm(const MeasureSite *s, Measurement *m, const ProfOp *const *ops, size_t n) {
    const Profile *p = profile_view_profile(s->view);
    if (p->process_count == 0) return true;
    Tally *by_process = calloc(p->process_count, sizeof *by_process);
    if (!by_process) return false;
    bool here = false;
    for (size_t i = 0; i < n; i++)
        if (is_nccl_launch(p, ops[i]) && ops[i]->process >= 0 && (size_t)ops[i]->process < p->process_count) {
            by_process[ops[i]->process].count += ops[i]->stats.count;
            by_process[ops[i]->process].ns += ops[i]->stats.total_ns;
            here = true;
        }
    CommLines lines = {0};
    RankTable t = {0};
    bool ok = comm_lines_build(p, &lines) && rank_table_build(p, &t);
    const CommLine *top = ok && !here ? comm_lines_main(&lines) : NULL;
    if (top) /* the main line's launches, wherever it is */
        for (size_t i = 0; i < p->op_count; i++) {
            const ProfOp *op = &p->ops[i];
            if (!is_nccl_launch(p, op) || op->site < 0 || (size_t)op->site >= p->site_count) continue;
            const ProfSite *site = &p->sites[op->site];
            if (site->file != top->file || site->line != top->line || op->process < 0 ||
                (size_t)op->process >= p->process_count)
                continue;
            by_process[op->process].count += op->stats.count;
            by_process[op->process].ns += op->stats.total_ns;
        }
    if (ok && (here || top)) {
        m->measured = true;
        char place[256];
        Evidence e = evidence_new(EVIDENCE_MEASURED);
        size_t listed_launches;
        if (here)
            ok = evidence_append(&e, NO_VALUES, "NCCL kernels launched at %s: ",
                                 s->first == s->last ? "this line" : "these lines");
        else
            ok = evidence_append(&e, QV(q_share(top->ns, lines.total_ns)),
                                 "the run's NCCL kernels came mostly from %s ({} of their time): ",
                                 comm_line_place(p, s->file, top, place, sizeof place));
        ok = ok && per_rank(&t, by_process, &e, launch_words, &listed_launches) && measure_add_evidence(m, &e);
        evidence_free(&e);
        const RankRow *least = comm_least_exposed(&t);
        bool timed = false; /* profiles before comm_ns existed hold 0 */
        for (size_t i = 0; i < t.row_count; i++) timed |= comm_row_communicates(&t.rows[i]) && t.rows[i].comm_ns;
        if (ok && least && timed) {
            Evidence exposed = evidence_new(EVIDENCE_MEASURED);
            ok = evidence_append(&exposed, NO_VALUES, "communication no compute overlapped (per GPU, whole run): ");
            size_t listed = 0, more = 0;
            for (size_t i = 0; ok && i < t.row_count; i++) {
                const RankRow *r = &t.rows[i];
                if (!comm_row_communicates(r)) continue;
                if (listed == MAX_LISTED) {
                    more++;
                    continue;
                }
                char who[32];
                ok = evidence_append(&exposed, QV(q_ns(r->exposed_comm_ns), q_share(r->exposed_comm_ns, r->busy_ns)),
                                     "%s%s: {} ({} of its GPU busy time)", listed++ ? "; " : "",
                                     comm_row_name(r, who, sizeof who));
            }
            if (ok && more) ok = evidence_append(&exposed, QV(q_count(more)), "; and {} more");
            ok = ok && measure_add_evidence(m, &exposed);
            evidence_free(&exposed);
            m->cost_ns = least->exposed_comm_ns;
            char who[32];
            if (ok && here && least->exposed_comm_ns > 0)
                ok = measure_gain(m, (double)least->exposed_comm_ns / 1e9, "program", QV(q_ns(least->exposed_comm_ns)),
                                  "the communication no compute overlapped on the least exposed rank (%s, {}): an "
                                  "upper bound, reached if none were left exposed",
                                  comm_row_name(least, who, sizeof who));
        }
    }
    rank_table_free(&t);
    comm_lines_free(&lines);
    free(by_process);
    return ok;
}

bool measure_sync_per_rank(const MeasureSite *s, Measurement *m, const ProfOp *const *ops, size_t n) {
    const Profile *p = profile_view_profile(s->view);
    if (rank_table_ranked_processes(p) < 2) return true;
    Tally *by_process = calloc(p->process_count, sizeof *by_process);
    if (!by_process) return false;
    for (size_t i = 0; i < n; i++)
        if (ops[i]->kind == PROF_OP_SYNC && ops[i]->process >= 0 && (size_t)ops[i]->process < p->process_count) {
            by_process[ops[i]->process].count += ops[i]->stats.count;
            by_process[ops[i]->process].ns += ops[i]->stats.total_ns;
        }
    RankTable t;
    bool ok = rank_table_build(p, &t);
    Evidence line = evidence_new(EVIDENCE_MEASURED);
    ok = ok && evidence_append(&line, NO_VALUES, "per rank: ");
    size_t listed = 0;
    ok = ok && per_rank(&t, by_process, &line, wait_words, &listed);
    if (ok && listed) ok = measure_add_evidence(m, &line);
    evidence_free(&line);
    /* only where the profile shows the ranks meeting in collectives */
    size_t communicating = ok ? comm_rows(&t) : 0;
    if (ok && listed && communicating >= 2)
        ok = measure_evidence(m, EVIDENCE_MODEL, NO_VALUES,
                              "with %zu ranks in NCCL collectives, a wait on every step holds each rank's host "
                              "until its own GPU is done, and every rank then waits for the slowest in the next "
                              "collective",
                              communicating);
    rank_table_free(&t);
    free(by_process);
    return ok;
}
