/* The measurement models: what a finding's lines cost in a profile, as
 * evidence in plain words and, where a model is defensible, an estimated
 * gain. Each model is documented above its function and in
 * docs/models.md. Gains are never added across rules. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/measure/measure.h"
#include "profiler/kernel_name.h"
#include "rules/measure/profile_facts.h"
#include "rules/measure/critical_gain.h"
#include "rules/measure/tf32_model.h"

#define MAX_OPS 256

bool measure_add_evidence(Measurement *m, Evidence *e) {
    if (m->evidence_count >= MEASURE_MAX_EVIDENCE || !e->text) {
        evidence_free(e);
        return true;
    }
    m->evidence[m->evidence_count++] = *e;
    *e = evidence_new(e->kind);
    return true;
}

bool measure_evidence(Measurement *m, EvidenceKind kind, const Quantity *values, size_t count, const char *fmt, ...) {
    if (m->evidence_count >= MEASURE_MAX_EVIDENCE) return true;
    Evidence e = evidence_new(kind);
    va_list ap;
    va_start(ap, fmt);
    bool ok = evidence_vappend(&e, values, count, fmt, ap);
    va_end(ap);
    if (!ok) evidence_free(&e);
    return ok && measure_add_evidence(m, &e);
}

bool measure_gain(Measurement *m, double seconds, const char *scope, const Quantity *values, size_t count,
                  const char *fmt, ...) {
    Evidence model = evidence_new(EVIDENCE_MODEL);
    va_list ap;
    va_start(ap, fmt);
    bool ok = evidence_vappend(&model, values, count, fmt, ap);
    va_end(ap);
    if (!ok) {
        evidence_free(&model);
        return false;
    }
    evidence_free(&m->model);
    m->model = model;
    m->has_gain = true;
    m->gain_seconds = seconds;
    m->scope = scope;
    return true;
}

void measurement_free(Measurement *m) {
    for (size_t i = 0; i < m->evidence_count; i++) evidence_free(&m->evidence[i]);
    evidence_free(&m->model);
    memset(m, 0, sizeof *m);
}

/* The operations at the site's lines and its extra lines, each once. */
static size_t ops_at(const MeasureSite *s, const ProfOp **ops) {
    size_t n = profile_view_ops_in(s->view, s->file, s->first, s->last, ops, MAX_OPS);
    if (n > MAX_OPS) n = MAX_OPS;
    for (size_t i = 0; i < s->extra_count; i++) {
        uint32_t line = s->extra[i];
        bool done = line >= s->first && line <= s->last;
        for (size_t k = 0; k < i; k++) done |= s->extra[k] == line;
        if (done) continue;
        size_t got = profile_view_ops_in(s->view, s->file, line, line, ops + n, MAX_OPS - n);
        n += got < MAX_OPS - n ? got : MAX_OPS - n;
    }
    return n;
}

/* "this line" or "these lines" */
static const char *here(const MeasureSite *s) {
    return s->first == s->last && !s->extra_count ? "this line" : "these lines";
}

uint64_t measure_lines_cost(const ProfileView *v, int file, uint32_t first, uint32_t last) {
    const ProfileLineCost *lines;
    size_t n = profile_view_lines(v, file, &lines);
    uint64_t cost = 0;
    for (size_t i = 0; i < n; i++)
        if (lines[i].line >= first && lines[i].line <= last)
            cost += lines[i].kernel_ns + lines[i].copy_ns + lines[i].sync_ns;
    return cost;
}

/* The GPU time a gain is made of, and its part on the critical path. */
static void critical_add(Measurement *m, const CriticalTime *c, uint64_t total_ns) {
    m->critical.seen = true;
    if (!c->known) m->critical.unknown = true;
    m->critical.ns += c->ns < total_ns ? c->ns : total_ns;
    m->critical.total_ns += total_ns;
}

bool measure_gain_is_gpu_time(Measure kind) {
    return kind == MEASURE_FP32_GEMM || kind == MEASURE_OPTIMIZER || kind == MEASURE_LAUNCHES ||
           kind == MEASURE_COPY || kind == MEASURE_COPY_AVOIDED;
}

/* A GPU-time gain shortens the run by the part of it on the critical path
 * (FORMAT.md critical_ns): after the rest, the GPU waited for the host, and
 * finishing sooner only lengthens that wait. The gain is scaled by that
 * share (of the time its kernels or copies took, the saving assumed spread
 * evenly over them, or weighed by each kernel's saving), and it is at most
 * the time the host waited for the GPU: once the GPU keeps up, the host's
 * own pace sets the step (on the H200, an MLP whose TF32 products would
 * save 2.2 ms per step of critical GPU time saved 0.69 ms, its host's wait;
 * bench/critical). Profiles without the figures keep the gain as it was
 * (profile_merge.c then adds a caveat where the steps were host-paced). */
static bool apply_critical(const MeasureSite *s, Measurement *m) {
    if (!m->has_gain || !m->critical.seen || m->critical.unknown || !m->critical.total_ns) return true;
    m->critical.applied = true;
    bool weighed = m->critical.saved_total_ns > 0;
    double gpu_share = (double)m->critical.ns / (double)m->critical.total_ns;
    CriticalGain c = critical_gain(s->view, m->gain_seconds * 1e9,
                                   weighed ? m->critical.saved_ns / m->critical.saved_total_ns : gpu_share);
    m->gain_seconds = c.gain_ns / 1e9;
    if (c.share >= 0 &&
        !measure_evidence(m, EVIDENCE_MEASURED, QV(q_ratio(gpu_share), q_ns(m->critical.ns), q_ns(m->critical.total_ns)),
                          "{} of this GPU time was on the run's critical path ({} of {}): after the rest the GPU "
                          "went idle until the host asked for more work, so shortening it would only lengthen "
                          "those waits"))
        return false;
    return critical_gain_words(&c, weighed ? "that saving" : "that GPU time", &m->model);
}

/* how many operations of one kind ran at the lines, and their time in *total_ns */
static uint64_t count_of_kind(const ProfOp **ops, size_t n, ProfOpKind kind, uint64_t *total_ns) {
    uint64_t count = 0;
    *total_ns = 0;
    for (size_t i = 0; i < n; i++)
        if (ops[i]->kind == kind) {
            count += ops[i]->stats.count;
            *total_ns += ops[i]->stats.total_ns;
        }
    return count;
}

/* MEASURE_SYNC: the host's waits at the lines, as evidence only.
 * No gain estimate: during the wait the GPU is doing work it must do anyway;
 * removing the sync gains only the GPU idle time it causes afterwards (the
 * host refilling an empty queue), which the profile does not yet separate per
 * sync. The model this replaced (wait x (1 - busy share)) promised 218 ms
 * for ResNet-50's per-step loss.item(); following the advice on the H200
 * measured no speedup (bench/workloads/compare.sh, 2026-11-30).
 * With two ranks or more, the waits per rank too (measure_sync_per_rank). */
static bool measure_sync_ops(const MeasureSite *s, Measurement *m, const ProfOp **ops, size_t n) {
    uint64_t total;
    uint64_t count = count_of_kind(ops, n, PROF_OP_SYNC, &total);
    if (!count) return true;
    uint64_t run = profile_view_run_ns(s->view);
    m->measured = true;
    m->cost_ns = total;
    if (!measure_evidence(m, EVIDENCE_MEASURED,
                          QV(q_count(count), q_ns(total / count), q_ns(total), q_share(total, run)),
                          "this `%s` ran {} time%s and waited {} %s({}, {} of the run)", s->code,
                          count == 1 ? "" : "s", count == 1 ? "" : "each on average "))
        return false;
    return measure_sync_per_rank(s, m, ops, n);
}

/* The bandwidth of the profile's own pinned copies in one direction (bytes
 * per second), from copies of at least MEASURE_PINNED_SAMPLE_MIN_BYTES on
 * average; 0 when it has none. */
static double pinned_bandwidth(const ProfileView *v, ProfCopyKind dir) {
    const Profile *p = profile_view_profile(v);
    uint64_t bytes = 0, ns = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind != PROF_OP_MEMCPY || op->copy != dir || !op->stats.count) continue;
        ProfMemKind host = dir == PROF_COPY_HTOD ? op->src : op->dst;
        if (host != PROF_MEM_PINNED || op->bytes / op->stats.count < MEASURE_PINNED_SAMPLE_MIN_BYTES) continue;
        bytes += op->bytes;
        ns += op->stats.total_ns;
    }
    return ns ? (double)bytes / ((double)ns / 1e9) : 0;
}

/* "this copy moved 4.00 MB[ in 16 copies] from pageable memory at 2.00 GB/s (2.00 ms)" */
static bool copy_moved(Evidence *e, uint64_t bytes, uint64_t count, const char *from, double bytes_per_s,
                       uint64_t ns) {
    return evidence_append(e, QV(q_bytes(bytes)), "this copy moved {}") &&
           (count <= 1 || evidence_append(e, QV(q_count(count)), " in {} copies")) &&
           evidence_append(e, QV(q_rate(bytes_per_s), q_ns(ns)), " %s at {} ({})", from);
}

/* MEASURE_COPY: the copies at the lines, per direction, with their
 * bandwidth. For a copy from or into pageable memory, the time pinned memory
 * would take: bytes / pinned bandwidth, the bandwidth of the profile's own
 * pinned copies of the same direction when it has some, else
 * MEASURE_PINNED_DEFAULT_BYTES_PER_S, plus MEASURE_COPY_LATENCY_NS per copy.
 * Gain (program): measured time - estimated pinned time, summed over the
 * pageable copies (nothing when pinned would be no faster, or when the
 * copies average under MEASURE_STAGED_COPY_MAX_BYTES: those already ran at
 * the pinned speed on the GPU). */
static bool measure_copy_ops(const MeasureSite *s, Measurement *m, const ProfOp **ops, size_t n) {
    static const ProfCopyKind dirs[] = {PROF_COPY_HTOD, PROF_COPY_DTOH, PROF_COPY_DTOD, PROF_COPY_HTOH,
                                        PROF_COPY_PTOP, PROF_COPY_UNKNOWN};
    double total_gain = 0;
    Evidence model = evidence_new(EVIDENCE_MODEL);
    bool ok = true;
    for (size_t d = 0; ok && d < sizeof dirs / sizeof *dirs; d++) {
        uint64_t bytes = 0, ns = 0, count = 0;
        bool pageable = false, pinned = false;
        for (size_t i = 0; i < n; i++) {
            const ProfOp *op = ops[i];
            if (op->kind != PROF_OP_MEMCPY || op->copy != dirs[d]) continue;
            bytes += op->bytes;
            ns += op->stats.total_ns;
            count += op->stats.count;
            critical_add(m, &op->critical, op->stats.total_ns);
            ProfMemKind host = dirs[d] == PROF_COPY_DTOH ? op->dst : op->src;
            pageable |= host == PROF_MEM_PAGEABLE;
            pinned |= host == PROF_MEM_PINNED;
        }
        if (!count) continue;
        m->measured = true;
        m->cost_ns += ns;
        double seconds = (double)ns / 1e9;
        double bw = seconds > 0 ? (double)bytes / seconds : 0;
        const char *from = dirs[d] == PROF_COPY_HTOD ? (pageable ? "from pageable memory" : pinned ? "from pinned memory" : "to the GPU")
                           : dirs[d] == PROF_COPY_DTOH ? (pageable ? "into pageable memory" : pinned ? "into pinned memory" : "from the GPU")
                                                       : "between buffers";
        Evidence e = evidence_new(EVIDENCE_MEASURED);
        ok = copy_moved(&e, bytes, count, from, bw, ns);
        if (!pageable || (dirs[d] != PROF_COPY_HTOD && dirs[d] != PROF_COPY_DTOH)) {
            ok = ok && measure_add_evidence(m, &e);
            evidence_free(&e);
            continue;
        }
        if (bytes / count < MEASURE_STAGED_COPY_MAX_BYTES) {
            ok = ok &&
                 evidence_append(&e, NO_VALUES, "; copies under 1 MiB are staged whole before they start, so pinned "
                                                "memory would copy them no faster on the GPU: what it gains is the "
                                                "host's staging time and overlap") &&
                 measure_add_evidence(m, &e);
            evidence_free(&e);
            continue;
        }
        double pinned_bw = pinned_bandwidth(s->view, dirs[d]);
        bool measured_bw = pinned_bw > 0;
        if (!measured_bw) pinned_bw = MEASURE_PINNED_DEFAULT_BYTES_PER_S;
        double estimate = (double)bytes / pinned_bw + (double)count * MEASURE_COPY_LATENCY_NS / 1e9;
        ok = ok &&
             evidence_append(&e, QV(q_seconds(estimate), q_rate(pinned_bw)),
                             "; pinned memory would take about {} ({}, %s)",
                             measured_bw ? "as this run's pinned copies" : "the device's usual pinned bandwidth") &&
             measure_add_evidence(m, &e);
        evidence_free(&e);
        if (ok && seconds > estimate) {
            total_gain += seconds - estimate;
            evidence_free(&model);
            ok = evidence_append(&model, QV(q_rate(pinned_bw)),
                                 "measured copy time less the pinned estimate: bytes / pinned bandwidth ({}%s) "
                                 "+ 1.5 \xC2\xB5s per copy",
                                 measured_bw ? ", this run's pinned copies" : ", PCIe 5 default");
        } else if (ok) {
            ok = measure_evidence(m, EVIDENCE_MODEL, NO_VALUES,
                                  "pinned memory would copy no faster here: what it gains is overlap of the copy "
                                  "with other work, which the profile does not measure");
        }
    }
    if (ok && total_gain > 0) {
        evidence_free(&m->model);
        m->model = model;
        m->has_gain = true;
        m->gain_seconds = total_gain;
        m->scope = "program";
        return true;
    }
    evidence_free(&model);
    return ok;
}

/* MEASURE_COPY_AVOIDED: the host-to-device copies at the lines, which the
 * fix removes by making the data on the GPU (a factory with device=).
 * Gain (program): their GPU time less the time a kernel takes to write the
 * same bytes at the GPU's memory bandwidth (the profile's device, else
 * MEASURE_DEVICE_DEFAULT_BYTES_PER_S). */
static bool measure_copy_avoided_ops(const MeasureSite *s, Measurement *m, const ProfOp **ops, size_t n) {
    uint64_t bytes = 0, ns = 0, count = 0;
    bool pageable = false;
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->kind != PROF_OP_MEMCPY || ops[i]->copy != PROF_COPY_HTOD) continue;
        bytes += ops[i]->bytes;
        ns += ops[i]->stats.total_ns;
        critical_add(m, &ops[i]->critical, ops[i]->stats.total_ns);
        count += ops[i]->stats.count;
        pageable |= ops[i]->src == PROF_MEM_PAGEABLE;
    }
    if (!count) return true;
    m->measured = true;
    m->cost_ns = ns;
    const ProfDevice *d = profile_view_device(s->view);
    double device_bw = d && d->bandwidth_bytes_per_s ? (double)d->bandwidth_bytes_per_s
                                                     : MEASURE_DEVICE_DEFAULT_BYTES_PER_S;
    double seconds = (double)ns / 1e9, fill = (double)bytes / device_bw;
    Evidence e = evidence_new(EVIDENCE_MEASURED);
    bool ok = copy_moved(&e, bytes, count, pageable ? "from pageable memory" : "to the GPU",
                         seconds > 0 ? (double)bytes / seconds : 0.0, ns) &&
              evidence_append(&e, QV(q_seconds(fill)),
                              "; made on the GPU, the data needs no copy, and writing it there takes about {}") &&
              measure_add_evidence(m, &e);
    evidence_free(&e);
    if (!ok) return false;
    if (seconds <= fill) return true;
    return measure_gain(m, seconds - fill, "program", QV(q_ns(ns), q_rate(device_bw)),
                        "the copies' GPU time ({}) less writing their bytes on the GPU at its memory bandwidth "
                        "({}%s)",
                        d && d->bandwidth_bytes_per_s ? "" : ", H200 default");
}

/* The share of the line's runs that autograd differentiated, 0 to 1: for
 * each elementwise operator the line's kernels name (kernel_elementwise_op),
 * the launches of its backward kernel (`<op>_backward`) anywhere in the
 * profile against its forward launches here, at most 1; the largest over
 * the operators, with that operator in *which. 0 when no operator has a
 * backward kernel to go by (inference, or only generic functors). */
/* `word` in the kernel name as a whole identifier: `sigmoid_backward` in
 * `sigmoid_backward_kernel_cuda`, not in `hardsigmoid_backward_kernel_cuda` */
static bool names_operator(const char *name, const char *word) {
    size_t len = strlen(word);
    for (const char *hit = strstr(name, word); hit; hit = strstr(hit + 1, word)) {
        char before = hit > name ? hit[-1] : ' ';
        if (!(isalnum((unsigned char)before) || before == '_') &&
            (hit[len] == '_' || !(isalnum((unsigned char)hit[len]))))
            return true;
    }
    return false;
}

static double trained_share(const MeasureSite *s, const ProfOp **ops, size_t n, char *which, size_t size) {
    const Profile *p = profile_view_profile(s->view);
    /* the operators launched here and their forward launches */
    enum { MAX_OPERATORS = 16 };
    struct { char name[64]; uint64_t forward; } found[MAX_OPERATORS];
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        char op[64];
        if (ops[i]->kind != PROF_OP_LAUNCH || ops[i]->kernel < 0 || (size_t)ops[i]->kernel >= p->kernel_count ||
            !kernel_elementwise_op(p->kernels[ops[i]->kernel].name, op, sizeof op))
            continue;
        size_t k = 0;
        while (k < count && strcmp(found[k].name, op) != 0) k++;
        if (k == count) {
            if (count == MAX_OPERATORS) continue;
            snprintf(found[count].name, sizeof found[count].name, "%s", op);
            found[count++].forward = 0;
        }
        found[k].forward += ops[i]->stats.count;
    }
    double best = 0;
    for (size_t k = 0; k < count; k++) {
        char backward[80];
        snprintf(backward, sizeof backward, "%.63s_backward", found[k].name);
        uint64_t backwards = 0; /* every launch of every kernel named after the backward, anywhere */
        for (size_t i = 0; i < p->kernel_count; i++)
            if (names_operator(p->kernels[i].name, backward)) backwards += p->kernels[i].stats.count;
        double share = found[k].forward ? (double)backwards / (double)found[k].forward : 0;
        if (share > 1) share = 1;
        if (share > best) {
            best = share;
            snprintf(which, size, "%.63s", found[k].name);
        }
    }
    return best;
}

/* MEASURE_LAUNCHES: the kernels launched at the lines.
 * Gain (program), when N >= 2 different kernels run there: fusing N
 * memory-bound elementwise kernels into one reads and writes the data once
 * instead of N times, so it saves (N - 1) / N of their GPU time. Where
 * autograd differentiated the line (a share t of its runs, trained_share),
 * the backward kernels of the unfused expression run on autograd's thread,
 * charged to the line that called backward(), and fusing saves there too:
 * a backward pass reads and writes about twice what the forward one does,
 * so the gain is (N - 1) / N x time x (1 + 2t). */
static bool measure_launch_ops(const MeasureSite *s, Measurement *m, const ProfOp **ops, size_t n) {
    uint64_t launches = 0, ns = 0;
    size_t kernels = 0;
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->kind != PROF_OP_LAUNCH) continue;
        /* distinct kernels by their full name: launch shapes of one kernel count once */
        const Profile *p = profile_view_profile(s->view);
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = ops[k]->kind == PROF_OP_LAUNCH &&
                   strcmp(p->kernels[ops[k]->kernel].name, p->kernels[ops[i]->kernel].name) == 0;
        kernels += !seen;
        launches += ops[i]->stats.count;
        ns += ops[i]->stats.total_ns;
        critical_add(m, &ops[i]->critical, ops[i]->stats.total_ns);
    }
    if (!launches) return true;
    m->measured = true;
    m->cost_ns = ns;
    if (!measure_evidence(m, EVIDENCE_MEASURED,
                          QV(q_count(kernels), q_count(launches), q_ns(ns), q_ns(ns / launches),
                             q_share(ns, profile_view_gpu_ns(s->view))),
                          "%s launched {} kernel%s {} times: {} on the GPU ({} each on average, {} of GPU time)",
                          here(s), kernels == 1 ? "" : "s"))
        return false;
    if (kernels < 2) return true;
    double g = (double)ns / 1e9 * (double)(kernels - 1) / (double)kernels;
    char op[64] = "";
    double trained = trained_share(s, ops, n, op, sizeof op);
    if (trained > 0) {
        if (!measure_evidence(m, EVIDENCE_MEASURED, QV(q_ratio(trained)),
                              "autograd differentiated {} of these runs (`%s_backward` kernels against `%s` "
                              "here): their backward kernels, charged to the line that called backward(), fuse too",
                              op, op))
            return false;
        return measure_gain(m, g * (1 + 2 * trained), "program",
                            QV(q_count(kernels), q_count(kernels), q_ns(ns), q_number(trained), q_ratio(trained)),
                            "fusing the {} kernels into one reads and writes memory once instead of {} times: "
                            "(N - 1) / N of their GPU time ({}), x (1 + 2 x {}) for the backward pass of the "
                            "{} of runs that trained (about twice the forward's memory traffic)");
    }
    return measure_gain(m, g, "program", QV(q_count(kernels), q_count(kernels), q_ns(ns)),
                        "fusing the {} kernels into one reads and writes memory once instead of {} times: "
                        "(N - 1) / N of their GPU time ({})");
}

/* MEASURE_KERNEL: the GPU time of the __global__ function the finding sits
 * in, all its launch configurations together. Evidence only: a gain for
 * coalescing, bank conflicts or occupancy would need to know how much of the
 * kernel's time the accesses cost, which even the per-line sector counts
 * (MEASURE_GLOBAL_ACCESS, MEASURE_SHARED_ACCESS: measure_lines.c) do not say. */
static bool measure_kernel(const MeasureSite *s, Measurement *m) {
    ProfStats sum;
    const ProfKernel *example;
    if (!s->kernel || !profile_view_kernel(s->view, s->kernel, &sum, &example) || !sum.count) return true;
    m->measured = true;
    m->cost_ns = sum.total_ns;
    return measure_evidence(m, EVIDENCE_MEASURED,
                            QV(q_count(sum.count), q_ns(sum.median_ns), q_ns(sum.total_ns),
                               q_share(sum.total_ns, profile_view_gpu_ns(s->view))),
                            "%s ran {} time%s, {} median, {} in all ({} of GPU time)", s->kernel,
                            sum.count == 1 ? "" : "s");
}

/* MEASURE_ALLOC: allocations at the lines (host time in the API call).
 * Gain (program), for N >= 2 allocations: allocating once, before the loop,
 * saves all but one: time x (N - 1) / N. */
static bool measure_alloc_ops(const MeasureSite *s, Measurement *m, const ProfOp **ops, size_t n) {
    uint64_t total;
    uint64_t count = count_of_kind(ops, n, PROF_OP_ALLOC, &total);
    if (!count) return true;
    m->measured = true;
    m->cost_ns = total;
    if (!measure_evidence(m, EVIDENCE_MEASURED,
                          QV(q_count(count), q_ns(total), q_ns(total / count),
                             q_share(total, profile_view_run_ns(s->view))),
                          "%s allocated {} time%s: {} of host time ({} each on average, {} of the run)", here(s),
                          count == 1 ? "" : "s"))
        return false;
    if (count < 2) return true;
    return measure_gain(m, (double)total / 1e9 * (double)(count - 1) / (double)count, "program", QV(q_count(count)),
                        "allocating once instead of {} times saves all but one allocation's host time: time x "
                        "(N - 1) / N");
}

/* MEASURE_GPU_TIME: the GPU work made at the lines. Evidence only. */
static bool measure_gpu_time(const MeasureSite *s, Measurement *m, const ProfOp **ops, size_t n) {
    uint64_t ns = 0, launches = 0, copies = 0;
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->kind == PROF_OP_LAUNCH) launches += ops[i]->stats.count;
        else if (ops[i]->kind == PROF_OP_MEMCPY || ops[i]->kind == PROF_OP_MEMSET) copies += ops[i]->stats.count;
        else continue;
        ns += ops[i]->stats.total_ns;
    }
    if (!launches && !copies) return true;
    m->measured = true;
    m->cost_ns = ns;
    return measure_evidence(m, EVIDENCE_MEASURED,
                            QV(q_ns(ns), q_count(launches), q_count(copies), q_share(ns, profile_view_gpu_ns(s->view))),
                            "%s ran {} of GPU work ({} kernel launch%s, {} cop%s; {} of GPU time)", here(s),
                            launches == 1 ? "" : "es", copies == 1 ? "y" : "ies");
}

/* Attention written out (PY006) whose products ran as float32
 * matrix-vector kernels: one query row at a time, as in token-by-token
 * decoding with a KV cache. There is no score matrix to keep, and
 * F.scaled_dot_product_attention has no float32 flash kernel: on the H200
 * it made the generate_text sample's decode attention 2.3x slower (6.4 ms
 * of kernels at those lines became 14.5 ms, mostly the memory-efficient
 * fmha kernel). The finding becomes a hint and its fix is withheld. */
static bool measure_attention(const MeasureSite *s, Measurement *m, const ProfOp **ops, size_t n) {
    const Profile *p = profile_view_profile(s->view);
    uint64_t products_ns = 0, gemv_ns = 0, gemv_launches = 0;
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->kind != PROF_OP_LAUNCH || ops[i]->kernel < 0 || (size_t)ops[i]->kernel >= p->kernel_count) continue;
        const char *name = p->kernels[ops[i]->kernel].name;
        if (!pf_kernel_is_gemm(name)) continue; /* as PR009 tells matrix products */
        products_ns += ops[i]->stats.total_ns;
        if (kernel_is_fp32_gemv(name)) {
            gemv_ns += ops[i]->stats.total_ns;
            gemv_launches += ops[i]->stats.count;
        }
    }
    if (!gemv_launches || gemv_ns * 10 < products_ns * 9) return true; /* 90% of the products */
    m->cleared = true;
    m->withhold_fixes = true;
    return measure_evidence(m, EVIDENCE_MEASURED, QV(q_count(gemv_launches), q_ns(gemv_ns), q_ns(products_ns)),
                            "the matrix products here ran as float32 matrix-vector kernels (gemv: {} launches, {} "
                            "of their {}): one query row at a time, as in token-by-token decoding, with no score "
                            "matrix to keep; F.scaled_dot_product_attention has no float32 flash kernel and made such "
                            "attention 2.3x slower on an H200, so its fix is withheld (bf16 attention or a static KV "
                            "cache with CUDA graphs is the way to speed this up)");
}

/* The speedup of a compute-bound float32 matrix product moved from CUDA
 * cores (FFMA) to TF32 tensor cores: the ratio of the two dense peak rates
 * on the vendor's datasheets, by compute capability (A100: 156 / 19.5;
 * H100/H200: 494.7 / 66.9; B200: 1100 / 80). 0 where it is unknown or
 * where TF32 runs no faster than FP32 (consumer Ampere and Ada). */
/* MEASURE_FP32_GEMM: the program's float32 matrix products that ran on CUDA
 * cores (the finding is about the whole program: TF32 is switched on once).
 * Gain (program): for each such kernel, its GPU time x (1 - 1/S), S the TF32
 * speed-up for its duration per call (rules/measure/tf32_model.c: measured
 * on an H200, 1.3x for a 4 us kernel up to 6.6x from 8 ms). The peak rates'
 * ratio (7.4x) held only for large products: a language model's TF32 cut
 * its GPU time by 31% where 7.4x predicted 48% more (issue 17). */
static bool measure_fp32_gemm(const MeasureSite *s, Measurement *m) {
    const Profile *p = profile_view_profile(s->view);
    uint64_t count = 0, total = 0;
    for (size_t i = 0; i < p->kernel_count; i++)
        if (kernel_is_fp32_simt_gemm(p->kernels[i].name)) {
            count += p->kernels[i].stats.count;
            total += p->kernels[i].stats.total_ns;
        }
    if (!count) return true;
    m->measured = true;
    m->cost_ns = total;
    if (!measure_evidence(m, EVIDENCE_MEASURED,
                          QV(q_count(count), q_ns(total), q_share(total, profile_view_gpu_ns(s->view))),
                          "float32 matrix products ran on CUDA cores, not tensor cores: {} FFMA GEMM kernel%s, {} "
                          "({} of GPU time)",
                          count == 1 ? "" : "s"))
        return false;
    const ProfDevice *d = profile_view_device(s->view);
    if (tf32_peak_ratio(d) <= 1) return true;
    double saved = 0;
    for (size_t i = 0; i < p->kernel_count; i++)
        if (kernel_is_fp32_simt_gemm(p->kernels[i].name)) {
            double kernel_saved = tf32_saved_ns(d, p->kernels[i].stats.total_ns, p->kernels[i].stats.count);
            saved += kernel_saved;
            uint64_t total = p->kernels[i].stats.total_ns;
            critical_add(m, &p->kernels[i].critical, total);
            /* the share weighed by what each kernel saves: small products save little whatever their share */
            if (total && kernel_saved > 0) {
                m->critical.saved_ns += (double)p->kernels[i].critical.ns / (double)total * kernel_saved;
                m->critical.saved_total_ns += kernel_saved;
            }
        }
    return measure_gain(m, saved / 1e9, "program", NO_VALUES, "%s", TF32_MODEL_WORDS);
}

/* MEASURE_OPTIMIZER: the multi-tensor kernels (`multi_tensor_apply_kernel`,
 * PyTorch's foreach implementation) launched from the lines of this
 * optimizer's steps (the finding's related places), and nothing else: the
 * foreach kernels of zero_grad or clip_grad_norm_ run at their own lines. No
 * step call in the file, or none measured: no figures (the optimizer may not
 * have run at all). Gain (program): time x (1 - R), R the fused step's time
 * over the foreach step's. One pass over memory against several gives R =
 * 7/24 in theory for Adam (7 tensor-sized passes fused, about 24 foreach);
 * measured on the H200, the foreach kernels do better: train_classifier's
 * Adam took 8.04 ms foreach and 2.79 ms fused (R = 0.35, samples/RESULTS.md)
 * and a small GPT's AdamW 0.41 (2026-12-01), so R = 0.38 for Adam and AdamW.
 * SGD with momentum: about 5 passes fused against 8, R = 5/8. */
static bool measure_optimizer(const MeasureSite *s, Measurement *m) {
    if (!s->extra_count) return true;
    const Profile *p = profile_view_profile(s->view);
    const ProfOp *ops[MAX_OPS];
    size_t n = ops_at(s, ops);
    uint64_t count = 0, total = 0;
    size_t kinds = 0;
    int seen[8];
    for (size_t i = 0; i < n; i++) {
        const ProfOp *op = ops[i];
        if (op->kind != PROF_OP_LAUNCH || op->kernel < 0 || (size_t)op->kernel >= p->kernel_count ||
            !strstr(p->kernels[op->kernel].name, "multi_tensor_apply_kernel"))
            continue;
        count += op->stats.count;
        total += op->stats.total_ns;
        critical_add(m, &op->critical, op->stats.total_ns);
        bool known = false;
        for (size_t k = 0; k < kinds && k < 8; k++) known |= seen[k] == op->kernel;
        if (!known) {
            if (kinds < 8) seen[kinds] = op->kernel;
            kinds++;
        }
    }
    if (!count) return true;
    m->measured = true;
    m->cost_ns = total;
    if (!measure_evidence(m, EVIDENCE_MEASURED,
                          QV(q_count(count), q_count(kinds), q_ns(total), q_share(total, profile_view_gpu_ns(s->view))),
                          "this optimizer's steps launched multi-tensor (foreach) kernels {} times, {} kind%s: {} ({} "
                          "of GPU time)",
                          kinds == 1 ? "" : "s"))
        return false;
    bool sgd = s->code && strstr(s->code, "SGD");
    return measure_gain(m, (double)total / 1e9 * (1 - (sgd ? 5.0 / 8.0 : 0.38)), "program", NO_VALUES,
                        sgd ? "their GPU time x (1 - 5/8): a fused SGD step reads and writes each parameter's arrays "
                              "once, about 5 tensor-sized passes against 8 for the foreach kernels"
                            : "their GPU time x (1 - 0.38): a fused Adam step makes one pass over each parameter's "
                              "arrays; measured on an H200, fused steps took 0.35 to 0.41 of the foreach steps' time");
}

/* MEASURE_LOADER_WAIT: the GPU's idle gaps of 1 ms or more (the profile
 * keeps every one, PROF_LONG_GAP_NS) that ended with a batch's copy at one
 * of the related lines, the copies of this loader's batches: between the
 * previous step's last work and the batch's copy the host was fetching the
 * batch (reading, decoding, augmenting, collating), and the GPU had nothing
 * to do. Only the steady training steps count where the steps are known
 * (start-up and evaluation are phases); a gap of a sampled window counts
 * with its weight. Gain (program): that idle time, an upper bound reached
 * when worker processes keep the next batch ready before the GPU asks. */
static bool measure_loader_wait(const MeasureSite *s, Measurement *m) {
    if (!s->extra_count) return true;
    const Profile *p = profile_view_profile(s->view);
    uint64_t count = 0, total = 0;
    bool phases = false;
    for (size_t i = 0; i < p->gap_count; i++) {
        const ProfGap *g = &p->gaps[i];
        if (g->duration_ns < PROF_LONG_GAP_NS || g->after_site < 0 || (size_t)g->after_site >= p->site_count) continue;
        const ProfSite *after = &p->sites[g->after_site];
        if (after->file != s->file) continue;
        bool at_copy = false;
        for (size_t k = 0; k < s->extra_count && !at_copy; k++) at_copy = after->line == s->extra[k];
        if (!at_copy) continue;
        if (g->phase != PROF_PHASE_UNKNOWN) {
            phases = true;
            if (g->phase != PROF_PHASE_STEADY) continue;
        }
        count += prof_gap_weight(g);
        total += g->duration_ns * prof_gap_weight(g);
    }
    if (count < 2) return true; /* one wait is start-up, not a loader that falls behind */
    m->measured = true;
    m->cost_ns = total;
    uint64_t run = profile_view_run_ns(s->view);
    if (!measure_evidence(m, EVIDENCE_MEASURED, QV(q_count(count), q_ns(total / count), q_ns(total), q_share(total, run)),
                          "the GPU sat idle %s{} times before a batch was copied to it, {} each on average ({}, {} "
                          "of the run): the host was loading the next batch",
                          phases ? "in the steady training steps " : ""))
        return false;
    m->steady_steps = phases;
    return measure_gain(m, (double)total / 1e9, "program", NO_VALUES,
                        "the GPU's idle time in those waits (gaps of 1 ms or more ending with the batch's copy%s); an "
                        "upper bound, reached when worker processes keep the next batch ready",
                        phases ? ", steady steps only" : "");
}

bool measure_reads_related(Measure kind) {
    return kind == MEASURE_LOADER_WAIT || kind == MEASURE_LAUNCHES || kind == MEASURE_OPTIMIZER || kind == MEASURE_GLOBAL_ACCESS || kind == MEASURE_SHARED_ACCESS ||
           kind == MEASURE_ATTENTION;
}

bool measure_apply(Measure kind, const MeasureSite *s, Measurement *m) {
    memset(m, 0, sizeof *m);
    const ProfOp *ops[MAX_OPS];
    size_t n = kind == MEASURE_KERNEL || kind == MEASURE_NONE || kind == MEASURE_FP32_GEMM || kind == MEASURE_LOADER_WAIT ||
                       kind == MEASURE_OPTIMIZER || kind == MEASURE_GLOBAL_ACCESS || kind == MEASURE_SHARED_ACCESS
                   ? 0
                   : ops_at(s, ops);
    switch (kind) {
    /* a cudaMalloc or cudaFree in a loop synchronizes too: SYNC and ALLOC
     * findings take whichever of the two their lines show */
    case MEASURE_SYNC:
        if (!measure_sync_ops(s, m, ops, n)) return false;
        return m->measured || measure_alloc_ops(s, m, ops, n);
    case MEASURE_ALLOC:
        if (!measure_alloc_ops(s, m, ops, n)) return false;
        return m->measured || measure_sync_ops(s, m, ops, n);
    case MEASURE_COPY: return measure_copy_ops(s, m, ops, n) && apply_critical(s, m);
    case MEASURE_COPY_AVOIDED: return measure_copy_avoided_ops(s, m, ops, n) && apply_critical(s, m);
    case MEASURE_LAUNCHES: return measure_launch_ops(s, m, ops, n) && apply_critical(s, m);
    case MEASURE_KERNEL: return measure_kernel(s, m);
    case MEASURE_GPU_TIME: return measure_gpu_time(s, m, ops, n);
    case MEASURE_FP32_GEMM: return measure_fp32_gemm(s, m) && apply_critical(s, m);
    case MEASURE_OPTIMIZER: return measure_optimizer(s, m) && apply_critical(s, m);
    case MEASURE_COMM: return measure_comm(s, m, ops, n);
    case MEASURE_ATTENTION: return measure_gpu_time(s, m, ops, n) && measure_attention(s, m, ops, n);
    case MEASURE_GLOBAL_ACCESS:
    case MEASURE_SHARED_ACCESS:
        return measure_kernel(s, m) && measure_line_access(kind, s, m);
    case MEASURE_LOADER_WAIT: return measure_loader_wait(s, m);
    case MEASURE_NONE: break;
    }
    return true;
}
