/* PR004 sync-stall: the host waited a measurable share of the run for the
 * GPU at this line, again and again. Needs a profile. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). Reports a line where the host waited for the GPU (stream,\n"
    "device or event synchronisation, including the implicit ones of `.item()`, `.cpu()`,\n"
    "`cudaMemcpy` and friends) at least twice, for at least 1% of the run in total:\n"
    "\n"
    "`the host waited 281 ms here for the GPU, 30 times (stream synchronize), 8.5% of the run`\n"
    "\n"
    "Static rules (PY001, PY003, CU007, CU008, ...) find many such waits in the code, and when a\n"
    "profile is merged their findings get these figures as evidence. This rule covers the waits\n"
    "the code alone does not show (a synchronisation hidden in a library or a helper, a blocking\n"
    "copy); a rule cannot see other rules' findings, so at a line a static rule also reports both\n"
    "may appear (the engine may drop the duplicate).\n"
    "\n"
    "Not reported: a single wait (finishing the work at the end of a program or before reading a\n"
    "result once), and a wait on the line of a clock read (`time.perf_counter()`, `time.time()`,\n"
    "`cudaEventElapsedTime`, `std::chrono`, ...) or right before or after one (the nearest\n"
    "non-blank line): synchronising before reading a clock is how GPU work is timed correctly.\n"
    "\n"
    "## Why is this slow?\n"
    "Kernels run asynchronously: the host queues work and moves on. A synchronisation stops the\n"
    "host until everything queued has finished; then the GPU runs dry while the host prepares\n"
    "and launches the next work. Repeated every iteration, the host can never run ahead, and\n"
    "launch latency and host work add to the GPU's time instead of overlapping it.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "for step in range(steps):\n"
    "    loss = train_step(batch)\n"
    "    print(f\"step {step} loss {loss.item():.3f}\")   # PR004: the host waited 281 ms here, 30 times\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Read results less often (every N steps), accumulate them on the GPU and read once, copy them\n"
    "with `non_blocking=True` into pinned memory and read them a step later, or record an event\n"
    "and query it instead of waiting. In CUDA C++, replace `cudaDeviceSynchronize()` by waiting\n"
    "on the one stream or event that matters (`cudaStreamWaitEvent` between streams costs the\n"
    "host nothing), and keep synchronisations out of loops.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: where a value is needed on the host is the program's logic.\n"
    "\n"
    "## The numbers\n"
    "The host's time inside synchronisation calls at the line (the profile's `sync` operations),\n"
    "summed; the share is of the run's wall time (per process when several ran). No gain is\n"
    "estimated: the wait is the GPU finishing queued work, which still has to run; what a\n"
    "program gains by not waiting is the host work it can overlap, which the profile does not\n"
    "measure. Severity is info, warning from 10% of the run.\n";

#define MIN_SHARE 0.01
#define WARNING_SHARE 0.10
#define CLOCK_LINES 1 /* non-blank lines looked at on each side */

/* a clock read: the wait is part of timing the GPU's work */
static bool line_reads_clock(const Document *doc, size_t line0) {
    static const char *const clocks[] = {"perf_counter", "time.time(", "monotonic", "default_timer",
                                         "elapsed_time", "ElapsedTime", "chrono::", "clock_gettime", "gettimeofday",
                                         "process_time", NULL};
    size_t start = doc->line_starts[line0], end = document_line_end(doc, line0);
    for (size_t i = 0; clocks[i]; i++)
        if (memmem(doc->text + start, end - start, clocks[i], strlen(clocks[i]))) return true;
    return false;
}

static bool blank(const Document *doc, size_t line0) {
    size_t start = doc->line_starts[line0], end = document_line_end(doc, line0);
    for (size_t i = start; i < end; i++)
        if (doc->text[i] != ' ' && doc->text[i] != '\t' && doc->text[i] != '\r') return false;
    return true;
}

static bool near_clock_read(const Document *doc, uint32_t line) {
    if (line == 0 || line > doc->line_count) return false;
    size_t at = line - 1;
    if (line_reads_clock(doc, at)) return true;
    int seen = 0;
    for (size_t l = at; l > 0 && seen < CLOCK_LINES; l--) {
        if (blank(doc, l - 1)) continue;
        seen++;
        if (line_reads_clock(doc, l - 1)) return true;
    }
    seen = 0;
    for (size_t l = at + 1; l < doc->line_count && seen < CLOCK_LINES; l++) {
        if (blank(doc, l)) continue;
        seen++;
        if (line_reads_clock(doc, l)) return true;
    }
    return false;
}

static const char *sync_words(ProfSyncKind k) {
    switch (k) {
    case PROF_SYNC_EVENT: return "event synchronize";
    case PROF_SYNC_STREAM_WAIT_EVENT: return "stream wait on an event";
    case PROF_SYNC_STREAM: return "stream synchronize";
    case PROF_SYNC_CONTEXT: return "device synchronize";
    default: return "synchronization";
    }
}

static void check_line(RuleContext *ctx, const PfLine *line, const void *data) {
    double run = *(const double *)data;
    uint64_t total = 0, count = 0, max = 0;
    uint64_t by_kind[PROF_SYNC_KIND_COUNT] = {0};
    for (size_t i = 0; i < line->op_count; i++) {
        const ProfOp *op = line->ops[i];
        if (op->kind != PROF_OP_SYNC) continue;
        total += op->stats.total_ns;
        count += op->stats.count;
        if (op->stats.max_ns > max) max = op->stats.max_ns;
        if (op->sync < PROF_SYNC_KIND_COUNT) by_kind[op->sync] += op->stats.total_ns;
    }
    double share = total / run;
    if (count < 2 || share < MIN_SHARE || near_clock_read(ctx->doc, line->line)) return;
    int top = 0;
    for (int k = 1; k < PROF_SYNC_KIND_COUNT; k++)
        if (by_kind[k] > by_kind[top]) top = k;
    char t[24], c[32], s[16];
    Finding *f = pf_report_line(ctx, line->line, "the host waited %s here for the GPU, %s times (%s), %s of the run",
                                units_ns(total, t, sizeof t), units_count(count, c, sizeof c),
                                sync_words((ProfSyncKind)top), units_ratio(share, s, sizeof s));
    if (!f) return;
    if (share >= WARNING_SHARE) f->severity = SEVERITY_WARNING;
    if (!finding_measured(f, QV(q_ns(total / count), q_ns(max)), "each wait: mean {}, longest {}"))
        ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    const Profile *p = profile_view_profile(ctx->profile);
    double run = (double)profile_view_run_ns(ctx->profile) * (p->process_count > 1 ? p->process_count : 1);
    if (run <= 0) return;
    pf_each_line(ctx, check_line, &run);
}

const Rule rule_pr004_sync_stall = {
    .code = "PR004", .name = "sync-stall", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile, .subsumed_by = MEASURE_SYNC,
    .summary = "The host waited for the GPU here again and again, for 1% of the run or more (profile)",
    .advice = "read the GPU's results less often (every N steps, or once after the loop) so the host can queue work ahead",
    .documentation = documentation};
