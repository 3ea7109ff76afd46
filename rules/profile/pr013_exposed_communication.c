/* PR013 exposed-communication: NCCL communication that no compute overlapped
 * took a meaningful share of every rank's GPU busy time. Reported once, at the
 * line that launched most of the run's NCCL time. Needs a profile. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/comm_facts.h"
#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`) of a run that communicates with NCCL (DDP under\n"
    "`torchrun`, `torch.distributed` collectives). For each rank the profile knows how long its\n"
    "GPU ran NCCL kernels with no compute kernel, copy or memset beside it: *exposed*\n"
    "communication. When that is at least 5% of every rank's GPU busy time and at least 1 ms on the\n"
    "least exposed rank, the rule reports it at the line that launched the most NCCL kernel time\n"
    "(repeatedly: a one-off broadcast at start-up does not count). For DDP that is the\n"
    "`loss.backward()` whose autograd pass runs the reducer's all-reduce; for an explicit\n"
    "collective it is the `dist.all_reduce(t)` call:\n"
    "\n"
    "`the gradient all-reduce launched from this backward() ran with no compute beside it: 38.2 ms\n"
    "to 41.0 ms per rank, 8.4% to 9.0% of each rank's GPU busy time; ...`\n"
    "\n"
    "The evidence gives each rank's figures and the share of the run's NCCL time the line\n"
    "launched. The profile measures exposure per GPU, not per line: when several lines launch\n"
    "collectives, the finding sits at the one with the most NCCL time and names the others.\n"
    "\n"
    "## Why is this slow?\n"
    "While only communication runs, the GPU's compute units wait for the network or NVLink. DDP\n"
    "overlaps the gradient all-reduce with the backward pass bucket by bucket (25 MB each by\n"
    "default): a bucket is all-reduced as soon as all its gradients are ready. The last buckets,\n"
    "buckets that fill late, a reducer that must first find unused parameters\n"
    "(`find_unused_parameters=True`), or an all-reduce on every gradient-accumulation micro-step\n"
    "leave communication with nothing to hide behind. A blocking `dist.all_reduce(t)` waits for\n"
    "its result right where it is called.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)\n"
    "for i, (x, y) in enumerate(loader):\n"
    "    loss = criterion(model(x), y) / accum_steps\n"
    "    loss.backward()              # PR013: the all-reduce ran exposed, 9% of each rank's GPU busy time\n"
    "    if (i + 1) % accum_steps == 0:\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "For DDP: tune `bucket_cap_mb` (smaller buckets start communicating earlier, larger ones\n"
    "send fewer messages), set `gradient_as_bucket_view=True` (no copy into the buckets), drop\n"
    "`find_unused_parameters=True` where every parameter gets a gradient (or use\n"
    "`static_graph=True`), and wrap the micro-steps of gradient accumulation that do not step the\n"
    "optimizer in `model.no_sync()` (PY013). For an explicit collective, launch it asynchronously\n"
    "and wait as late as possible:\n"
    "```python\n"
    "work = dist.all_reduce(t, async_op=True)\n"
    "... independent work ...\n"
    "work.wait()\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: bucket sizes are tuned by measuring, and where a result is first needed\n"
    "is the program's logic.\n"
    "\n"
    "## The numbers\n"
    "From the profile's timelines: per GPU, the union of NCCL kernels, and the part of it that\n"
    "no compute (other kernels, copies, memsets) overlapped, summed over a process's GPUs;\n"
    "shares are of the GPU's busy time (kernels, copies and memsets), not of its span: a span also\n"
    "holds start-up (process group and NCCL set-up, data loading) that would hide the exposure. On\n"
    "the H200 two-rank DDP run of bench/ddp/ddp_train.py, rank 0 had 188 ms exposed: 37% of its\n"
    "busy time but 3.1% of its 6-second span. Per line, the duration of the NCCL\n"
    "kernels launched there. Gain (whole program) = the exposed communication of the least\n"
    "exposed rank: an upper bound, reached if all of it overlapped compute. The other ranks'\n"
    "exposed time can also hold waiting for a slower rank (PR014), which overlap does not\n"
    "remove. Severity is info, warning when every rank is at 10% or more. A finding on a line\n"
    "where a static finding (PY013) already carries these figures is dropped.\n";

#define MIN_SHARE 0.05               /* of every communicating rank's GPU busy time */
#define MIN_EXPOSED_NS 1000000u      /* 1 ms on the least exposed rank */
#define WARNING_SHARE 0.10
#define MAX_ROWS 16                  /* ranks listed one by one */
#define MAX_OTHER_LINES 3

typedef enum { AT_BACKWARD, AT_COLLECTIVE, AT_ASYNC_COLLECTIVE, AT_OTHER } Where;

static bool line_has(const Document *doc, uint32_t line, const char *needle) {
    if (line == 0 || line > doc->line_count) return false;
    size_t start = doc->line_starts[line - 1], end = document_line_end(doc, line - 1);
    return memmem(doc->text + start, end - start, needle, strlen(needle)) != NULL;
}

/* What the line does, from its text: the advice depends on it. */
static Where where_of(const Document *doc, uint32_t line) {
    if (line_has(doc, line, "backward(")) return AT_BACKWARD;
    static const char *const collectives[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                              "all_to_all", "dist.reduce(", NULL};
    for (size_t i = 0; collectives[i]; i++)
        if (line_has(doc, line, collectives[i]))
            return line_has(doc, line, "async_op=True") ? AT_ASYNC_COLLECTIVE : AT_COLLECTIVE;
    return AT_OTHER;
}

/* "38.2 ms" or "38.2 ms to 41.0 ms" */
static const char *range(uint64_t lo, uint64_t hi, char *buf, size_t size) {
    char a[24], b[24];
    if (lo == hi) snprintf(buf, size, "%s", units_ns(lo, a, sizeof a));
    else snprintf(buf, size, "%s to %s", units_ns(lo, a, sizeof a), units_ns(hi, b, sizeof b));
    return buf;
}

static const char *share_range(double lo, double hi, char *buf, size_t size) {
    char a[16], b[16];
    units_ratio(lo, a, sizeof a);
    units_ratio(hi, b, sizeof b);
    if (strcmp(a, b) == 0) snprintf(buf, size, "%s", a);
    else snprintf(buf, size, "%s to %s", a, b);
    return buf;
}

/* The finding with its advice (also the message's last clause). */
static Finding *report_with(RuleContext *ctx, uint32_t line, const char *subject, const char *figures,
                            const char *advice) {
    Finding *f = pf_report_line(ctx, line, "%s ran with no compute beside it: %s; %s", subject, figures, advice);
    if (f) f->advice = advice;
    return f;
}

static Finding *report(RuleContext *ctx, const CommLine *top, size_t rows, const char *amount, const char *share) {
    const char *what = top->collective ? top->collective : "communication";
    char figures[160], subject[96];
    if (rows == 1) snprintf(figures, sizeof figures, "%s, %s of its GPU busy time", amount, share);
    else snprintf(figures, sizeof figures, "%s per rank, %s of each rank's GPU busy time", amount, share);
    snprintf(subject, sizeof subject, "the NCCL %s launched here", what);
    if (ctx->doc->language == LANGUAGE_CUDA)
        return report_with(ctx, top->line, subject, figures, "run it on its own stream beside independent kernels");
    switch (where_of(ctx->doc, top->line)) {
    case AT_BACKWARD:
        snprintf(subject, sizeof subject, "the gradient %s launched from this backward()", what);
        return report_with(ctx, top->line, subject, figures,
                           "for DDP tune `bucket_cap_mb`, set `gradient_as_bucket_view=True`, avoid "
                           "`find_unused_parameters=True`, and use `no_sync()` on accumulation micro-steps");
    case AT_COLLECTIVE:
        snprintf(subject, sizeof subject, "this %s", what);
        return report_with(ctx, top->line, subject, figures,
                           "launch it with `async_op=True` and wait on its handle only where the result is needed");
    case AT_ASYNC_COLLECTIVE:
        snprintf(subject, sizeof subject, "this asynchronous %s still", what);
        return report_with(ctx, top->line, subject, figures, "queue independent work before its `wait()`");
    case AT_OTHER: break;
    }
    return report_with(ctx, top->line, subject, figures, "overlap it with independent work");
}

/* the per-rank figures, then where the NCCL time came from */
static bool add_evidence(RuleContext *ctx, Finding *f, const RankTable *t, const CommLines *lines,
                         const CommLine *top) {
    size_t listed = 0, rows = comm_rows(t);
    for (size_t i = 0; i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        if (!comm_row_communicates(r)) continue;
        if (listed++ == MAX_ROWS) {
            if (!finding_measured(f, QV(q_count(rows - MAX_ROWS)), "... and {} more ranks")) return false;
            break;
        }
        char who[32];
        if (!finding_measured(f,
                              QV(q_ns(r->exposed_comm_ns), q_ns(r->comm_ns), q_share(r->exposed_comm_ns, r->busy_ns),
                                 q_ns(r->busy_ns)),
                              "%s: {} of its {} of NCCL communication overlapped no compute ({} of its GPU busy "
                              "time of {})",
                              comm_row_name(r, who, sizeof who)))
            return false;
    }
    const Profile *p = profile_view_profile(ctx->profile);
    Evidence e = evidence_new(EVIDENCE_MEASURED);
    bool ok = evidence_append(&e, QV(q_share(top->ns, lines->total_ns), q_count(top->launches)),
                              "this line launched {} of the run's NCCL kernel time ({} launch%s from %zu "
                              "process%s); the profile measures exposure per GPU, not per line",
                              top->launches == 1 ? "" : "es", top->processes, top->processes == 1 ? "" : "es");
    size_t shown = 0;
    for (size_t i = 0; ok && i < lines->count && shown < MAX_OTHER_LINES; i++) {
        const CommLine *l = &lines->lines[i];
        if (l == top) continue;
        char place[256];
        ok = evidence_append(&e, QV(q_share(l->ns, lines->total_ns)), "%s%s ({})",
                             shown ? ", " : ": the rest came from ",
                             comm_line_place(p, ctx->profile_file, l, place, sizeof place));
        shown++;
    }
    ok = ok && finding_take_evidence(f, &e);
    evidence_free(&e);
    if (ok && top->function_level)
        ok = finding_caveat(f, "the imported trace names functions, not lines: the launches are the whole "
                               "function's");
    return ok;
}

/* Reports top when every communicating rank shows the exposure (so that it
 * is not one rank waiting for another) and the least exposed is above 1 ms. */
static void judge(RuleContext *ctx, const RankTable *t, const CommLines *lines, const CommLine *top) {
    uint64_t lo = UINT64_MAX, hi = 0;
    double lo_share = 1, hi_share = 0;
    size_t rows = 0;
    for (size_t i = 0; i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        if (!comm_row_communicates(r)) continue;
        double share = r->busy_ns ? (double)r->exposed_comm_ns / (double)r->busy_ns : 0;
        if (share < MIN_SHARE) return;
        rows++;
        if (r->exposed_comm_ns < lo) lo = r->exposed_comm_ns;
        if (r->exposed_comm_ns > hi) hi = r->exposed_comm_ns;
        if (share < lo_share) lo_share = share;
        if (share > hi_share) hi_share = share;
    }
    if (rows == 0 || lo < MIN_EXPOSED_NS) return;
    char amount[64], share[48];
    Finding *f = report(ctx, top, rows, range(lo, hi, amount, sizeof amount),
                        share_range(lo_share, hi_share, share, sizeof share));
    if (!f) return;
    if (lo_share >= WARNING_SHARE) f->severity = SEVERITY_WARNING;
    const RankRow *least = comm_least_exposed(t);
    char who[32];
    if (!add_evidence(ctx, f, t, lines, top) ||
        !finding_set_gain(f, (double)lo / 1e9, "program", QV(q_ns(least->exposed_comm_ns)),
                          "the communication no compute overlapped on the least exposed %s (%s, {}): an upper bound, "
                          "reached if all of it overlapped compute%s",
                          least->rank >= 0 ? "rank" : "process", comm_row_name(least, who, sizeof who),
                          rows > 1 ? "; on the other ranks part of the exposed time can be waiting for a slower rank"
                                   : ""))
        ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) { comm_judge_main_line(ctx, judge); }

const Rule rule_pr013_exposed_communication = {
    .code = "PR013", .name = "exposed-communication", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile, .subsumed_by = MEASURE_COMM,
    .summary = "NCCL communication that no compute overlapped took 5% or more of every rank's GPU busy time (profile)",
    .documentation = documentation};
