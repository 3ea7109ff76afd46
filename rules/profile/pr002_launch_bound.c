/* PR002 launch-bound: a line, or consecutive lines of one function, that
 * launches many tiny kernels while the GPU idles between them. Needs a
 * profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/profile_facts.h"
#include "analysis/base/growable.h"
#include "profiler/profile_diff.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). Reports a line, or a run of consecutive lines of one\n"
    "function, that launches many tiny kernels (each runs for less than 10 µs on the GPU, the\n"
    "median of its launches) while the GPU spends most of its time idle between its work. The\n"
    "finding sits on the first line of the run; the other lines are listed as related places.\n"
    "\n"
    "It needs, all of them:\n"
    "- at least 100 tiny launches from the lines, and tiny ones are at least half of each line's\n"
    "  launches (a line whose launches are mostly long kernels is not launch-bound), unless the\n"
    "  profile measured the GPU waiting right before the line's launches in the steady steps for\n"
    "  longer, in all, than a CUDA graph would leave between them (2 µs each): a backward pass\n"
    "  mixes long cuDNN or GEMM kernels with tiny ones, and the GPU can wait for all of them;\n"
    "- the host, not the GPU, sets the pace: the GPU idle at least half of the time outside its\n"
    "  long gaps (gaps of 1 ms or more, which PR003 reports), or, where the profile measured the\n"
    "  critical path (`critical_ns`), less than half of the GPU's work on it (after the rest the\n"
    "  GPU waited for the host to ask for more); or, where the profile has the GPU's idle time\n"
    "  right before each of the lines' launches in the steady steps, that measured time alone\n"
    "  (the gain below): a run busy as a whole can still wait on one stretch of small launches;\n"
    "- an estimated gain (below) of at least 1% of the run, or of its steady training steps\n"
    "  where they are known (a long start-up must not hide a gain every step repeats).\n"
    "\n"
    "## Why is this slow?\n"
    "Every kernel launch costs the host several microseconds (Python and the framework's\n"
    "dispatcher, then the CUDA driver), and a tiny kernel finishes sooner than the host can queue\n"
    "the next one. The GPU then runs a microsecond of work and waits for the next launch: the\n"
    "program is bound by launch overhead, and a faster GPU would not help.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "def gelu_tanh(x):   # 5,340 launches, 0.9 µs each on the GPU, ~31 µs idle between them\n"
    "    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "In PyTorch, capture the steady-state work in a CUDA graph, which replays all of its launches\n"
    "with one call: `torch.compile(model, mode=\"reduce-overhead\")` (it also fuses elementwise\n"
    "chains into single kernels), or `torch.cuda.graphs` / `torch.cuda.make_graphed_callables` by\n"
    "hand (static shapes, static input buffers). `torch.compile` alone fuses the elementwise\n"
    "operations and cuts the launches. Larger batches give each launch more work.\n"
    "\n"
    "In CUDA C++, capture the sequence of launches once with `cudaStreamBeginCapture` /\n"
    "`cudaStreamEndCapture` (or build a `cudaGraph_t`), instantiate it and `cudaGraphLaunch` it\n"
    "every iteration; or fuse the small kernels into one.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: graphs need static shapes and addresses, and fusion changes the code.\n"
    "\n"
    "## The numbers\n"
    "Measured: the launches of the lines, their GPU time and median duration. The GPU's idle time\n"
    "between its activities is the timeline's idle time less the recorded gaps of 1 ms or more;\n"
    "divided by the number of GPU activities (kernels, copies, memsets) it gives the typical idle\n"
    "time per launch, `g`.\n"
    "\n"
    "Where the profile has the run's training steps and the GPU's idle time by phase\n"
    "(`processes[].steps`), only the steady steps count: their idle time, less the profiler's\n"
    "share of its cost, over the activities that started in them gives `g`, and only the line's\n"
    "tiny launches that ran in them count (`ops[].steady_count`; in older profiles, a line's\n"
    "launches are taken to fall in them as the run's activities did). Start-up, warm-up,\n"
    "evaluation, checkpoints and what runs after the last step (a sampling loop) are phases, not\n"
    "launch overhead a CUDA graph removes from the training step.\n"
    "\n"
    "Where the profile also has the GPU's idle time right before each launch's work\n"
    "(`ops[].steady_idle_ns`: gaps under 1 ms in the steady steps, the GPU waiting for that launch),\n"
    "the gain is measured, not averaged: a CUDA graph of the lines removes the wait before every\n"
    "one of their launches, tiny or not. Gain (whole program) = that idle time − the profiler's\n"
    "share of its cost (by the lines' share of the steady activities) − launches × 2 µs. Otherwise:\n"
    "\n"
    "Gain (whole program) = tiny launches counted × (g − 2 µs), where 2 µs is the gap a CUDA graph leaves\n"
    "between consecutive kernels. It is an upper bound: host work between the launches that is not\n"
    "launching (Python logic, data loading) is not removed by a graph. Severity is info, warning\n"
    "when the gain reaches 10% of the run.\n";

#define TINY_NS 10000u          /* a kernel shorter than this is tiny */
#define GRAPH_GAP_NS 2000.0     /* kernel-to-kernel gap inside a CUDA graph */
#define LONG_GAP_NS PROF_LONG_GAP_NS /* gaps this long are PR003's (every one is in the profile) */
#define MIN_TINY 100u
#define MIN_IDLE_SHARE 0.5
#define MAX_LINE_DISTANCE 3u    /* lines of one run are at most this far apart */

/* what to do, in the message and as the finding's advice */
static const char python_advice[] = "capture them in a CUDA graph (`torch.compile(mode=\"reduce-overhead\")`, "
                                    "`torch.cuda.graph`) or fuse them (`torch.compile`)";
static const char cuda_advice[] = "capture them in a CUDA graph (stream capture, `cudaGraphLaunch`) or fuse the kernels";

typedef struct {
    uint64_t median, count;
} Sample;

typedef struct {
    size_t first, last; /* into the file's lines */
    uint64_t tiny, launches, tiny_ns;
    /* the tiny launches in the steady steps, where every one of their
     * operations knows its count there (ProfOp.steady) */
    uint64_t tiny_steady;
    bool steady_known;
    /* every launch of the lines in the steady steps, and the GPU's idle time
     * right before them, where every operation has it (ProfOp.steady) */
    uint64_t launches_steady, idle_steady_ns;
    bool idle_known;
    Sample *samples;
    size_t sample_count, sample_cap;
} Run;

static int by_median(const void *a, const void *b) {
    const Sample *x = a, *y = b;
    return x->median < y->median ? -1 : x->median > y->median;
}

/* the launch-weighted median of the tiny kernels' medians */
static uint64_t run_median(Run *r) {
    if (r->sample_count == 0) return 0;
    qsort(r->samples, r->sample_count, sizeof *r->samples, by_median);
    uint64_t half = (r->tiny + 1) / 2, seen = 0;
    for (size_t i = 0; i < r->sample_count; i++) {
        seen += r->samples[i].count;
        if (seen >= half) return r->samples[i].median;
    }
    return r->samples[r->sample_count - 1].median;
}

/* What the gain is measured against: the typical idle time per GPU
 * activity outside the long gaps, the GPU's idle share there, and which part
 * of the run that was. */
typedef struct {
    double gap_ns, idle_share;
    bool steady;          /* over the steady training steps only (ProfSteps known) */
    double launch_share;  /* of a line's launches, the part taken to fall there */
    uint64_t profiler_ns; /* the profiler's cost taken out of that idle time */
    uint64_t activities;  /* the GPU activities it was measured over */
    uint64_t steady_ns;   /* the steady steps' span, where they are known */
} IdleBasis;

/* With the training steps known, only the steady steps count: start-up,
 * warm-up, evaluation and checkpoints are phases, not launch overhead a CUDA
 * graph removes; a line's launches are taken to fall in them as the run's
 * activities did. Otherwise the whole run. Either way the profiler's own
 * cost on the launching threads (profile_view_profiler_ns) comes out of the
 * idle time: in a launch-bound run an unprofiled run does not have it.
 * False when the profile has no timeline. */
static bool idle_between_launches(const ProfileView *v, IdleBasis *b) {
    const Profile *p = profile_view_profile(v);
    const ProfileSteady *steady = profile_view_steady(v);
    uint64_t span = 0, idle, profiler, long_gaps = 0, activities = 0;
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == PROF_OP_LAUNCH || p->ops[i].kind == PROF_OP_MEMCPY || p->ops[i].kind == PROF_OP_MEMSET)
            activities += p->ops[i].stats.count;
    if (steady) {
        profiler = steady->profiler_ns;
        idle = steady->idle_ns > profiler ? steady->idle_ns - profiler : 0;
        span = steady->span_ns;
        b->steady_ns = steady->span_ns;
        b->launch_share = activities ? (double)steady->activities / (double)activities : 0;
        if (b->launch_share > 1) b->launch_share = 1;
        activities = steady->activities;
    } else {
        for (size_t i = 0; i < p->timeline_count; i++) span += p->timelines[i].span_ns;
        profiler = profile_view_profiler_ns(v);
        idle = profile_view_idle_ns(v) > profiler ? profile_view_idle_ns(v) - profiler : 0;
        b->launch_share = 1;
    }
    span = span > profiler ? span - profiler : 0;
    for (size_t i = 0; i < p->gap_count; i++)
        if (p->gaps[i].duration_ns >= LONG_GAP_NS && (!steady || p->gaps[i].phase == PROF_PHASE_STEADY))
            long_gaps += p->gaps[i].duration_ns * prof_gap_weight(&p->gaps[i]);
    if (long_gaps > idle) long_gaps = idle;
    if (span <= long_gaps || activities == 0) return false;
    b->gap_ns = (double)(idle - long_gaps) / activities;
    b->idle_share = (double)(idle - long_gaps) / (span - long_gaps);
    b->steady = steady != NULL;
    b->profiler_ns = profiler;
    b->activities = activities;
    return true;
}

/* The GPU's work on the run's critical path, as a share of it; -1 when the
 * profile did not measure it. */
static double critical_share(const ProfileView *v) {
    ProfileTotals t;
    profile_totals(profile_view_profile(v), &t);
    uint64_t gpu = t.kernel_ns + t.copy_ns + t.memset_ns;
    return t.critical_known && gpu ? (double)t.critical_ns / (double)gpu : -1;
}

/* Whether the host set the pace. The GPU's idle share says so where it is
 * half or more; below that, a GPU that mostly ran dry before the host asked
 * for more work says so too (the critical path measures it directly: the
 * same loop measured 61% and 48% idle on two machines, and a CUDA graph
 * saved 40% of its step). */
static bool host_paced(const IdleBasis *b, double critical) {
    return b->idle_share >= MIN_IDLE_SHARE || (critical >= 0 && critical < MIN_IDLE_SHARE);
}

static bool same_function(const ProfSite *a, const ProfSite *b) {
    if (!a->function || !b->function) return a->function == b->function;
    return strcmp(a->function, b->function) == 0;
}

static void report(RuleContext *ctx, const PfLines *lines, Run *r, const IdleBasis *b, double critical,
                   bool paced, uint64_t run_ns) {
    double gap_ns = b->gap_ns;
    /* the tiny launches in the part of the run measured: counted per
     * operation where the profile has it, else as the run's activities fell */
    bool per_op = b->steady && r->steady_known;
    double counted = per_op ? (double)r->tiny_steady : (double)r->tiny * b->launch_share;
    double gain_ns = counted * (gap_ns - GRAPH_GAP_NS);
    /* Where the profile measured the idle time before each launch, a graph of
     * the lines removes what the GPU waited before every one of their
     * launches, tiny or not, less the ~2 us it leaves between kernels and
     * the profiler's share of that time (its cost lands on launches). */
    bool measured_idle = b->steady && r->idle_known && r->launches_steady > 0;
    double profiler_share = 0;
    if (measured_idle) {
        counted = (double)r->launches_steady;
        profiler_share = b->activities ? (double)b->profiler_ns * counted / (double)b->activities : 0;
        gain_ns = (double)r->idle_steady_ns - profiler_share - counted * GRAPH_GAP_NS;
    }
    /* a run the host did not pace as a whole is reported only on the idle
     * time measured before these lines' own launches, never on an average */
    if (!paced && !measured_idle) return;
    /* worth reporting: 1% of the part of the run the gain was measured over
     * (a long start-up must not hide a per-step gain a longer run repeats) */
    double measured_over = b->steady && b->steady_ns ? (double)b->steady_ns : (double)run_ns;
    if (r->tiny < MIN_TINY || gain_ns < measured_over / 100.0) return;
    const PfLine *first = &lines->lines[r->first], *last = &lines->lines[r->last];
    char count[32], median[24], gap[24], where[96] = "this line", fn[72] = "";
    if (first->site->function) snprintf(fn, sizeof fn, " of `%.60s`", first->site->function);
    if (r->first != r->last) snprintf(where, sizeof where, "lines %u-%u%s", first->line, last->line, fn);
    bool python = ctx->doc->language == LANGUAGE_PYTHON;
    Finding *f = pf_report_line(
        ctx, first->line,
        "launch-bound: %s tiny kernel launches from %s (median %s on the GPU) while the GPU idles ~%s %s; %s",
        units_count(r->tiny, count, sizeof count), where, units_ns(run_median(r), median, sizeof median),
        units_ns(measured_idle ? (uint64_t)((double)r->idle_steady_ns / counted) : (uint64_t)gap_ns, gap, sizeof gap),
        measured_idle ? "before each" : "between its work", python ? python_advice : cuda_advice);
    if (!f) return;
    f->advice = python ? python_advice : cuda_advice;
    if (gain_ns >= run_ns / 10.0) f->severity = SEVERITY_WARNING;
    bool ok = finding_measured(f, QV(q_count(r->launches), q_count(r->tiny), q_ns(r->tiny_ns)),
                               "{} launches from %s in all, {} of them under 10 \xc2\xb5s; the tiny ones ran {} "
                               "on the GPU",
                               where);
    if (measured_idle)
        ok = ok && finding_measured(f, QV(q_ns(r->idle_steady_ns), q_count(r->launches_steady)),
                                    "in the steady training steps the GPU sat idle {} right before the work of "
                                    "these lines' {} launches (gaps under 1 ms: it waited for them to be launched)");
    if (per_op)
        ok = ok && finding_measured(f, QV(q_ratio(b->idle_share), q_seconds(gap_ns / 1e9), q_count(r->tiny_steady),
                                          q_count(r->tiny)),
                                    "in the steady training steps, outside their gaps of 1 ms or more, the GPU was "
                                    "idle {} of the time: ~{} per activity (kernel, copy or memset); {} of the {} "
                                    "tiny launches ran in those steps (start-up, warm-up, evaluation, checkpoints "
                                    "and what runs after the last step are left out)");
    else if (b->steady)
        ok = ok && finding_measured(f, QV(q_ratio(b->idle_share), q_seconds(gap_ns / 1e9), q_ratio(b->launch_share)),
                                    "in the steady training steps, outside their gaps of 1 ms or more, the GPU was "
                                    "idle {} of the time: ~{} per activity (kernel, copy or memset); {} of the run's "
                                    "activities fell in those steps (start-up, warm-up, evaluation and checkpoints "
                                    "are left out)");
    else
        ok = ok && finding_measured(f, QV(q_ratio(b->idle_share), q_seconds(gap_ns / 1e9)),
                                    "outside its gaps of 1 ms or more the GPU was idle {} of the time: ~{} per "
                                    "activity (kernel, copy or memset)");
    if (critical >= 0)
        ok = ok && finding_measured(f, QV(q_ratio(critical)),
                                    "{} of the GPU's work was on the run's critical path: after the rest the GPU "
                                    "went idle until the host asked for more");
    if (b->profiler_ns)
        ok = ok && finding_measured(f, QV(q_ns(b->profiler_ns)),
                                    "the profiler's own cost on the launching threads, {} as measured in this run, "
                                    "is taken out of that idle time");
    ok = ok && finding_model(f, QV(q_seconds(gain_ns / 1e9), q_ratio(gain_ns / run_ns)),
                             "estimated gain: {} ({} of the run) if each launch left only the ~2 \xc2\xb5s "
                             "gap of a CUDA graph");
    for (size_t i = r->first + 1; i <= r->last && ok; i++) {
        size_t start, end;
        if (!pf_line_range(ctx->doc, lines->lines[i].line, &start, &end)) continue;
        ok = finding_add_related(f, (ByteRange){start, end}, "launches tiny kernels too (same launch-bound run)");
    }
    if (measured_idle)
        ok = ok && finding_set_gain(f, gain_ns / 1e9, "program",
                                    QV(q_ns(r->idle_steady_ns), q_ns((uint64_t)(profiler_share + 0.5)),
                                       q_count(r->launches_steady)),
                                    "{} the GPU waited before these lines' launches in the steady steps \xe2\x88\x92 "
                                    "{}, the profiler's share of it \xe2\x88\x92 {} launches \xc3\x97 2 \xc2\xb5s "
                                    "in a CUDA graph; an upper bound: host work between launches stays");
    else
        ok = ok && finding_set_gain(f, gain_ns / 1e9, "program",
                                    QV(q_count((uint64_t)(counted + 0.5)), q_seconds(gap_ns / 1e9)),
                                    b->steady ? "{} tiny launches in the steady steps \xc3\x97 ({} measured idle per GPU "
                                                "activity there \xe2\x88\x92 2 \xc2\xb5s in a CUDA graph); an upper "
                                                "bound: host work between launches stays"
                                              : "{} tiny launches \xc3\x97 ({} measured idle per GPU activity \xe2\x88\x92 2 "
                                                "\xc2\xb5s in a CUDA graph); an upper bound: host work between launches "
                                                "stays");
    if (ok && b->steady) finding_gain_over_steady_steps(f);
    if (!ok) ctx->out_of_memory = true;
}

static bool add_sample(Run *r, uint64_t median, uint64_t count) {
    if (!array_reserve(&r->samples, r->sample_count, &r->sample_cap, sizeof *r->samples, 16)) return false;
    r->samples[r->sample_count++] = (Sample){median, count};
    return true;
}

/* Whether the profile measured the GPU waiting before this line's launches
 * in the steady steps, less the profiler's share of that wait (its cost
 * lands on launches, as report() takes it out), for longer than a CUDA
 * graph would leave between them.
 * A line whose launches are mostly long kernels (a backward pass: cuDNN's
 * kernels between its small elementwise ones) is then launch-bound by that
 * measurement, whatever its share of tiny kernels; the share only stands in
 * for it where the wait was not measured. */
static bool gpu_waited_for_launches(const PfLine *l, const IdleBasis *b) {
    if (!b->steady) return false;
    uint64_t launches = 0, idle_ns = 0;
    for (size_t k = 0; k < l->op_count; k++) {
        const ProfOp *op = l->ops[k];
        if (op->kind != PROF_OP_LAUNCH) continue;
        if (!op->steady.known || !op->steady.idle_known) return false;
        launches += op->steady.count;
        idle_ns += op->steady.idle_ns;
    }
    double profiler_per_launch = b->activities ? (double)b->profiler_ns / (double)b->activities : 0;
    return launches > 0 && (double)idle_ns - (double)launches * profiler_per_launch > (double)launches * GRAPH_GAP_NS;
}

static void check_profile(RuleContext *ctx) {
    uint64_t run_ns = profile_view_run_ns(ctx->profile);
    IdleBasis basis = {0};
    if (run_ns == 0 || !idle_between_launches(ctx->profile, &basis)) return;
    double critical = critical_share(ctx->profile);
    bool paced = host_paced(&basis, critical) && basis.gap_ns > GRAPH_GAP_NS;
    PfLines lines;
    if (!pf_file_lines(ctx, &lines)) return;
    Run r = {0};
    bool open = false;
    for (size_t i = 0; i < lines.count && !ctx->out_of_memory; i++) {
        const PfLine *l = &lines.lines[i];
        uint64_t tiny = 0, launches = 0, tiny_ns = 0;
        for (size_t k = 0; k < l->op_count; k++) {
            const ProfOp *op = l->ops[k];
            if (op->kind != PROF_OP_LAUNCH) continue;
            launches += op->stats.count;
            if (op->stats.median_ns < TINY_NS) {
                tiny += op->stats.count;
                tiny_ns += op->stats.total_ns;
            }
        }
        if (launches == 0) continue; /* copies or syncs only: neither join nor break a run */
        bool candidate = tiny > 0 && (tiny * 2 >= launches || gpu_waited_for_launches(l, &basis));
        bool joins = open && candidate && same_function(lines.lines[r.last].site, l->site) &&
                     l->line - lines.lines[r.last].line <= MAX_LINE_DISTANCE;
        if (open && !joins) {
            report(ctx, &lines, &r, &basis, critical, paced, run_ns);
            open = false;
        }
        if (!candidate) continue;
        if (!open) {
            r.first = i;
            r.tiny = r.launches = r.tiny_ns = r.tiny_steady = r.launches_steady = r.idle_steady_ns = 0;
            r.steady_known = r.idle_known = true;
            r.sample_count = 0;
            open = true;
        }
        r.last = i;
        r.tiny += tiny;
        r.launches += launches;
        r.tiny_ns += tiny_ns;
        for (size_t k = 0; k < l->op_count; k++) {
            const ProfOp *op = l->ops[k];
            if (op->kind != PROF_OP_LAUNCH) continue;
            r.launches_steady += op->steady.count;
            r.idle_steady_ns += op->steady.idle_ns;
            r.idle_known &= op->steady.known && op->steady.idle_known;
            if (op->stats.median_ns >= TINY_NS) continue;
            r.tiny_steady += op->steady.count;
            r.steady_known &= op->steady.known;
            if (!add_sample(&r, op->stats.median_ns, op->stats.count)) ctx->out_of_memory = true;
        }
    }
    if (open && !ctx->out_of_memory) report(ctx, &lines, &r, &basis, critical, paced, run_ns);
    free(r.samples);
    pf_lines_free(&lines);
}

const Rule rule_pr002_launch_bound = {
    .code = "PR002", .name = "launch-bound", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile, .gain_from_idle = true,
    .summary = "Many tiny kernels launched from a line while the GPU idles between them (profile)",
    .documentation = documentation};
