/* PR003 gpu-idle-gap: the GPU sat idle for a long time before the work of
 * this line arrived. Needs a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). The profiler keeps every idle gap of 1 ms or more of each\n"
    "GPU (the largest 4,096 per device): stretches where the GPU had nothing at all to do, between\n"
    "the work launched at\n"
    "one line (`before`) and the work launched at another (`after`). This rule takes the gaps of\n"
    "1 ms or more whose `after` line is in this file, adds them up per line, and reports the\n"
    "line when they come to at least 1% of the run:\n"
    "\n"
    "`the GPU sat idle 3.22 ms before this line's work arrived, 7 times (22.5 ms, 9.0% of the run);\n"
    "the host was busy after line 108`\n"
    "\n"
    "The finding sits on the line whose work ended the wait, because that work is what arrived\n"
    "late; the host's time went into what runs between the two lines.\n"
    "\n"
    "## Why is this slow?\n"
    "While the GPU idles, nothing the program does on it progresses: the host was computing,\n"
    "reading data, printing, allocating, or waiting on something else (a file, a lock, a\n"
    "synchronisation) instead of keeping work queued. A gap that repeats every iteration is time\n"
    "lost on every step. A single gap is often start-up: creating cuBLAS/cuDNN handles, loading\n"
    "modules lazily, autotuning, building a dataset or spawning data loader workers; such a gap\n"
    "is reported as a hint.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "for (int b = 0; b < batches; ++b) {\n"
    "    cudaMemcpy(d_in, h_in + b * n, bytes, cudaMemcpyHostToDevice);  // PR003: idle 3.22 ms before this, 7 times\n"
    "    block_sum<<<blocks, threads>>>(d_in, d_partial, n);\n"
    "    cudaMemcpy(h_partial, d_partial, pbytes, cudaMemcpyDeviceToHost);\n"
    "    check_on_cpu(h_in + b * n, h_partial);   // the host is busy here; the GPU waits\n"
    "}\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Keep the GPU fed while the host works: queue the next iteration's copies and kernels before\n"
    "the host-side work (double buffering on two streams, pinned memory and `cudaMemcpyAsync`),\n"
    "move the host work to another thread or after the loop, let the GPU do it, or in PyTorch\n"
    "use `DataLoader(num_workers=..., pin_memory=True)` and avoid `.item()`/`.cpu()` mid-step.\n"
    "For a start-up gap, warm up before timing and keep it out of the steady state.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: what the host does in the gap is the program's logic.\n"
    "\n"
    "## The numbers\n"
    "From the profile's `gaps`: each gap's duration and its `before`/`after` sites. Beyond 4,096\n"
    "gaps of 1 ms or more on one device only the largest are kept, and counts and totals are then\n"
    "\"at least\" (profiles written before 2026-12-03 kept only 16 gaps per device). Shares are of the\n"
    "run's wall time. Gain (whole program), for repeated gaps = their total: an upper bound,\n"
    "reached if the host work between the two lines overlapped the GPU's work entirely. A single\n"
    "gap gets no estimate (start-up work is rarely removed by overlapping it) and is a hint, and so\n"
    "are gaps before a line that is in no loop and that came at most 4 times in any one process\n"
    "(start-up of several GPUs or ranks: on the H200 two-rank DDP run, the DDP constructor's\n"
    "line had 7 gaps, 3 or 4 per rank, 5.1 s of NCCL set-up);\n"
    "repeated gaps are info, warning when they reach 10% of the run.\n"
    "\n"
    "When the profile recorded the program's training steps (PyTorch's optimizer steps; FORMAT.md,\n"
    "`processes[].steps`), each gap has a phase: start-up and the first step, the warm-up steps,\n"
    "the steady steps, slow steps (a step with an evaluation, a checkpoint or logging beside it)\n"
    "or after the last step. The evidence splits the idle time by phase, and only the steady\n"
    "steps' idle time counts toward the gain and the severity: no change to this line recovers\n"
    "the time spent evaluating or saving between steps. A line whose gaps all fall outside the\n"
    "steady steps gets no estimate and is a hint.\n";

#define MIN_GAP_NS PROF_LONG_GAP_NS /* 1 ms: the profile keeps every gap this long */
#define MAX_BEFORE 8
#define MAX_PROCESSES 16
/* Gaps before a line that sits in no loop and came at most this many times
 * in each process are start-up (process group and NCCL set-up, loading, the
 * first allocations): reported as a hint with no gain. A function called
 * every step has no loop of its own but gaps in far greater numbers. */
#define STARTUP_GAPS_PER_PROCESS 4

typedef struct {
    int site;
    uint64_t ns;
} Before;

typedef struct {
    uint32_t line;
    uint64_t total, largest, count;
    uint64_t first_start; /* when the earliest of them began, from the GPU's first activity */
    uint64_t phase_ns[PROF_PHASE_COUNT]; /* idle time by the step phase it fell in (unknown: no steps) */
    Before before[MAX_BEFORE];
    size_t before_count;
    struct {
        int process;
        uint64_t gaps;
    } per_process[MAX_PROCESSES];
    size_t process_count;
    bool process_overflow;
} LineGaps;

static uint64_t most_gaps_in_one_process(const LineGaps *g) {
    if (g->process_overflow) return g->count;
    uint64_t most = 0;
    for (size_t i = 0; i < g->process_count; i++)
        if (g->per_process[i].gaps > most) most = g->per_process[i].gaps;
    return most;
}

static void count_process(LineGaps *g, int process) {
    for (size_t i = 0; i < g->process_count; i++)
        if (g->per_process[i].process == process) {
            g->per_process[i].gaps++;
            return;
        }
    if (g->process_count == MAX_PROCESSES) {
        g->process_overflow = true;
        return;
    }
    g->per_process[g->process_count].process = process;
    g->per_process[g->process_count++].gaps = 1;
}

static int by_line(const void *a, const void *b) {
    const LineGaps *x = a, *y = b;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* "line 108", "this line's previous work", "`other.py` line 9", or NULL when unknown */
static const char *describe_before(const Profile *p, int file, uint32_t line, int site, char *buf, size_t size) {
    if (site < 0 || (size_t)site >= p->site_count) return NULL;
    const ProfSite *s = &p->sites[site];
    if (s->file == file && s->line == line)
        snprintf(buf, size, "this line's previous work");
    else if (s->file == file)
        snprintf(buf, size, "line %u", s->line);
    else if (s->file >= 0 && (size_t)s->file < p->file_count)
        snprintf(buf, size, "`%.200s` line %u", p->files[s->file].path, s->line);
    else
        return NULL;
    return buf;
}

static void report(RuleContext *ctx, const Profile *p, LineGaps *g, uint64_t run) {
    char total[24], mean[24], share[16], count[32], before[256];
    /* the before site that accounts for most of the idle time */
    size_t top = 0;
    for (size_t i = 1; i < g->before_count; i++)
        if (g->before[i].ns > g->before[top].ns) top = i;
    const char *who = g->before_count ? describe_before(p, ctx->profile_file, g->line, g->before[top].site, before,
                                                        sizeof before)
                                      : NULL;
    char host[300];
    if (who)
        snprintf(host, sizeof host, "the host was busy after %s", who);
    else
        snprintf(host, sizeof host, "the work before it has no known line");
    units_ratio((double)g->total / run, share, sizeof share);
    Finding *f;
    if (g->count == 1)
        f = pf_report_line(ctx, g->line, "the GPU sat idle %s before this line's work arrived (%s of the run); %s",
                           units_ns(g->total, total, sizeof total), share, host);
    else
        f = pf_report_line(ctx, g->line,
                           "the GPU sat idle %s before this line's work arrived, %s times (%s, %s of the run); %s",
                           units_ns(g->total / g->count, mean, sizeof mean), units_count(g->count, count, sizeof count),
                           units_ns(g->total, total, sizeof total), share, host);
    if (!f) return;
    f->advice = ctx->doc->language == LANGUAGE_PYTHON
                    ? "take the host work before this line off the GPU's path: build and load what you can before "
                      "the loop, feed input with loader workers and `pin_memory=True`, avoid `.item()` or `.cpu()` "
                      "mid-step"
                    : "queue the next work before the host work (streams, `cudaMemcpyAsync` from pinned memory), or "
                      "move the host work out of the loop";
    uint64_t per_process = most_gaps_in_one_process(g);
    bool startup = g->count > 1 && per_process <= STARTUP_GAPS_PER_PROCESS && !pf_line_in_loop(ctx, g->line);
    /* with the training steps known, idle time outside the steady steps is a phase, not a gain */
    uint64_t phases = g->phase_ns[PROF_PHASE_FIRST] + g->phase_ns[PROF_PHASE_WARMUP] + g->phase_ns[PROF_PHASE_SLOW] +
                      g->phase_ns[PROF_PHASE_AFTER];
    uint64_t steady = g->total > phases ? g->total - phases : 0;
    if (g->count == 1 || startup || !steady)
        f->severity = SEVERITY_HINT;
    else if (steady * 10 >= run)
        f->severity = SEVERITY_WARNING;
    bool ok = true;
    if (g->count > 1)
        ok = finding_measured(f, QV(q_count(g->count), q_ns(g->total / g->count), q_ns(g->largest), q_ns(g->total)),
                              "{} gaps of 1 ms or more before this line's work: mean {}, largest {}, {} in all");
    for (size_t i = 0; i < g->before_count && ok && g->before_count > 1; i++) {
        char b[256];
        const char *w = describe_before(p, ctx->profile_file, g->line, g->before[i].site, b, sizeof b);
        ok = finding_measured(f, QV(q_ns(g->before[i].ns)), "{} of it after %s", w ? w : "work with no known line");
    }
    if (ok && g->count == 1)
        ok = finding_measured(f, QV(q_ns(g->first_start)), "a single gap, {} into the GPU's activity");
    if (ok && phases)
        ok = finding_measured(f,
                              QV(q_ns(g->phase_ns[PROF_PHASE_FIRST]), q_ns(g->phase_ns[PROF_PHASE_WARMUP]),
                                 q_ns(g->phase_ns[PROF_PHASE_SLOW]), q_ns(g->phase_ns[PROF_PHASE_AFTER]),
                                 q_ns(steady)),
                              "by training phase: {} before the first optimizer step ended (start-up and the first "
                              "step), {} in the warm-up steps, {} in slow steps (evaluation, checkpoints or logging "
                              "between steps), {} after the last step; {} in the steady steps");
    if (ok && startup)
        ok = finding_model(f, QV(q_count(per_process)),
                           "this line is in no loop and its gaps came at most {} times in one process: "
                           "start-up work, which overlapping rarely removes (no estimate)");
    else if (ok && g->count > 1 && !steady)
        ok = finding_model(f, NO_VALUES,
                           "all of it fell outside the steady training steps: phases a change to this line does "
                           "not recover (no estimate)");
    /* a one-off gap is mostly start-up, which overlapping rarely removes: no estimate */
    if (g->count > 1 && !startup && steady)
        ok = ok && finding_set_gain(f, steady / 1e9, "program", NO_VALUES,
                                    phases ? "the GPU's idle time in the recorded gaps before this line's work in the "
                                             "steady training steps (not start-up, warm-up, slow steps or after the "
                                             "last step); an upper bound, reached if the host work in between "
                                             "overlapped the GPU's"
                                           : "the GPU's idle time in the recorded gaps before this line's work; an "
                                             "upper bound, reached if the host work in between overlapped the GPU's");
    if (ok && phases) finding_gain_over_steady_steps(f);
    if (!ok) ctx->out_of_memory = true;
}

static void check_profile(RuleContext *ctx) {
    const Profile *p = profile_view_profile(ctx->profile);
    uint64_t run = profile_view_run_ns(ctx->profile);
    if (run == 0 || p->gap_count == 0) return;
    LineGaps *lines = calloc(p->gap_count, sizeof *lines);
    if (!lines) {
        ctx->out_of_memory = true;
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->gap_count; i++) {
        const ProfGap *gap = &p->gaps[i];
        if (gap->duration_ns < MIN_GAP_NS || gap->after_site < 0 || (size_t)gap->after_site >= p->site_count)
            continue;
        const ProfSite *after = &p->sites[gap->after_site];
        if (after->file != ctx->profile_file) continue;
        size_t j = 0;
        while (j < n && lines[j].line != after->line) j++;
        if (j == n) lines[n++] = (LineGaps){.line = after->line, .first_start = gap->start_ns};
        LineGaps *g = &lines[j];
        if (gap->start_ns < g->first_start) g->first_start = gap->start_ns;
        /* a gap of a sampled trace window stands for `weight` gaps (trace_sampling.c) */
        uint64_t weight = prof_gap_weight(gap);
        g->total += gap->duration_ns * weight;
        g->count += weight;
        if ((unsigned)gap->phase < PROF_PHASE_COUNT) g->phase_ns[gap->phase] += gap->duration_ns * weight;
        count_process(g, gap->process);
        if (gap->duration_ns > g->largest) g->largest = gap->duration_ns;
        int before = gap->before_site;
        size_t k = 0;
        while (k < g->before_count && g->before[k].site != before) k++;
        if (k == g->before_count && k < MAX_BEFORE) g->before[g->before_count++] = (Before){before, 0};
        if (k < g->before_count) g->before[k].ns += gap->duration_ns * weight;
    }
    qsort(lines, n, sizeof *lines, by_line);
    for (size_t i = 0; i < n && !ctx->out_of_memory; i++)
        if (lines[i].total * 100 >= run) report(ctx, p, &lines[i], run);
    free(lines);
}

const Rule rule_pr003_gpu_idle_gap = {
    .code = "PR003", .name = "gpu-idle-gap", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile, .gain_from_idle = true,
    .subsumed_by = MEASURE_LOADER_WAIT, /* PY014 measures the waits before a loader's batch copies */
    .summary = "The GPU sat idle 1 ms or more before this line's work arrived (profile)",
    .documentation = documentation};
