/* PR008 pageable-copy: copies between the GPU and pageable host memory at a
 * line, with their measured bandwidth and what pinned memory would give.
 * Needs a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_host_buffer.h"
#include "rules/measure/measure.h"
#include "rules/profile/support/pin_in_place_fix.h"
#include "rules/measure/profile_facts.h"

static const char documentation[] =
    "## What it does\n"
    "Needs a profile (`advise profile`). Reports a line whose host-to-device copies read, or\n"
    "device-to-host copies write, pageable host memory (as CUPTI saw it), when the line copies\n"
    "more than once, at least 1 MiB in all, and the copies cost at least 1% of the run, on the\n"
    "GPU or on the host (below):\n"
    "\n"
    "`16 host-to-device copies from pageable memory (16.8 MB, 1.05 MB each) at 48.5 GB/s`\n"
    "\n"
    "with the pinned estimate and, when pinned memory would be faster on the GPU's side too, the\n"
    "time it would save. Static rules (CU006, PY004, PY005) point at some of these copies in the\n"
    "code; this one sees every copy the run made, wherever the buffer came from. A rule cannot\n"
    "see other rules' findings, so at a line a static rule also reports both may appear.\n"
    "\n"
    "Not reported: copies from or into pinned memory, device-to-device copies, small transfers\n"
    "(under 1 MiB at the line: their cost is latency, which pinning does not remove), and a line\n"
    "that copies once (uploading the input, downloading the result): pinning a buffer costs about as\n"
    "much as one copy saves (on the H200 host, 16 MiB: `cudaHostRegister` 1.2 ms and\n"
    "`cudaHostUnregister` 0.44 ms, `cudaMallocHost` 9 ms; the pageable upload 2.4 ms, pinned 0.33 ms).\n"
    "\n"
    "## Why is this slow?\n"
    "The GPU's copy engines read and write only page-locked (pinned) host memory. For pageable\n"
    "memory the driver copies through a pinned staging buffer with the CPU, chunk by chunk: the\n"
    "transfer runs at a fraction of the bus bandwidth (on an H200 host, 4 MB device-to-host took\n"
    "2.06 ms into pageable memory and 78 µs into pinned), and the call does not return until the\n"
    "data is staged (host to device) or has arrived (device to host). `cudaMemcpyAsync` and\n"
    "`non_blocking=True` then do not overlap anything: the pipeline the code was written for runs\n"
    "serially, and the host stalls in the call. When the staging keeps up with the bus, the GPU\n"
    "side of the copy looks fast but the host still paid for staging and lost the overlap (the\n"
    "evidence shows the process's time in `cudaMemcpy*` calls).\n"
    "\n"
    "## Example\n"
    "```python\n"
    "batch = torch.from_numpy(array)       # pageable\n"
    "x = batch.to(\"cuda\", non_blocking=True)   # PR008: staged, not asynchronous\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Keep host buffers that travel to or from the GPU in pinned memory, allocated once and\n"
    "reused: in PyTorch `DataLoader(..., pin_memory=True)`, `tensor.pin_memory()` or\n"
    "`torch.empty(..., pin_memory=True)`, then `.to(device, non_blocking=True)`; in CUDA C++\n"
    "`cudaMallocHost`/`cudaHostAlloc` (or `cudaHostRegister` on an existing buffer) with\n"
    "`cudaMemcpyAsync` on a stream. Pinned memory is a limited resource: do not pin per copy.\n"
    "\n"
    "## Fix safety\n"
    "In CUDA C++, when every copy at the line reads or writes one `std::vector` and the copies gain\n"
    "more than pinning their bytes costs the host (below), an unsafe fix pins the vector in place:\n"
    "a small local guard declared right after the vector registers its storage\n"
    "(`cudaHostRegister(..., cudaHostRegisterPortable)`) and unregisters it in its destructor, which\n"
    "runs just before the vector's own on every way out of the scope (returns, macros that return,\n"
    "exceptions). A failed registration changes nothing but speed: its error is cleared and the\n"
    "copies stay pageable. It is offered only when the vector is declared at the top level of a\n"
    "host function, is not static, const or a reference, and every use reads through it\n"
    "(`data()`, `size()`, `[]`, `at`, `front`, `back`, iterators, a range-for, passing it by const\n"
    "reference or by value): nothing may resize, move or swap it, since memory freed while\n"
    "registered stays pinned and mapped. Not when an asynchronous call uses the vector: a pageable\n"
    "`cudaMemcpyAsync` completes (device to host) or stages (host to device) before it returns, and\n"
    "code that touches the vector before synchronizing relies on that; pinned, it would race. Not\n"
    "when the function pins or unpins host memory itself, or calls `longjmp`. Unsafe because pinned\n"
    "memory is taken from the system while the vector lives. Other buffers, and Python, get advice\n"
    "only: where they are allocated is elsewhere in the program.\n"
    "\n"
    "## The numbers\n"
    "Measured per line and direction: copies, bytes and GPU time of the copies; achieved\n"
    "bandwidth = bytes / GPU time. The host's time in them is estimated: the run's time in\n"
    "`cudaMemcpy*` calls (the profile's API table) shared out over its pageable copies by bytes,\n"
    "since pinned copies return at once and pageable ones stage their data first. The larger of\n"
    "the GPU time and that host estimate must reach 1% of the run.\n"
    "\n"
    "The pinned estimate and the gain are the profile merge's copy model (`MEASURE_COPY`,\n"
    "rules/measure/measure_models.c), the same figures a CU006, PY004 or PY005 finding at the line gets:\n"
    "pinned time = bytes / pinned bandwidth + 1.5 µs per copy, the pinned bandwidth being the\n"
    "profile's own pinned copies in the same direction (256 KiB or more per copy on average), else\n"
    "50 GB/s (PCIe Gen5 x16, as an H100/H200 host reaches it: 4 MB into pinned memory in 78 µs).\n"
    "Gain (whole program) = GPU time − pinned time, when positive. It leaves out the host's\n"
    "staging and the overlap that asynchronous copies allow, so it is a lower bound of what\n"
    "pinning buys. Severity is info, warning when the gain reaches 1% of the run.\n"
    "\n"
    "Pinning in place costs the host about 0.3 ms + bytes / 17 GB/s, once (`cudaHostRegister` and\n"
    "`cudaHostUnregister` on the H200 host, measured by bench/pinning/pin_cost.cu: within 25% from\n"
    "1 MiB to 256 MiB), counted over the bytes the copies moved (one copy's bytes when every copy\n"
    "starts at the vector's first element, `v.data()`): a lower bound when the vector is larger, an\n"
    "upper one when copies at offsets cover the same bytes again. The fix is offered when the\n"
    "gain is larger than that cost; otherwise the evidence says so.\n";

#define MIN_COPIES 2
#define MIN_BYTES (1u << 20)
#define MIN_SHARE 0.01

typedef struct {
    uint64_t count, bytes, ns;
} Copies;

static bool pageable(const ProfOp *op, ProfCopyKind dir) {
    if (op->kind != PROF_OP_MEMCPY || op->copy != dir) return false;
    return dir == PROF_COPY_HTOD ? op->src == PROF_MEM_PAGEABLE : op->dst == PROF_MEM_PAGEABLE;
}

/* The run's host time in copy calls (cudaMemcpy*, cuMemcpy*) and the bytes
 * of all its pageable copies, both directions: read once per profile. */
typedef struct {
    uint64_t api_ns, api_calls;
    uint64_t pageable_bytes;
} HostCopies;

static HostCopies host_copies_of(const Profile *p) {
    HostCopies h = {0};
    for (size_t i = 0; i < p->api_count; i++)
        if (strncmp(p->apis[i].name, "cudaMemcpy", 10) == 0 || strncmp(p->apis[i].name, "cuMemcpy", 8) == 0) {
            h.api_ns += p->apis[i].stats.total_ns;
            h.api_calls += p->apis[i].stats.count;
        }
    for (size_t i = 0; i < p->op_count; i++)
        if (pageable(&p->ops[i], PROF_COPY_HTOD) || pageable(&p->ops[i], PROF_COPY_DTOH))
            h.pageable_bytes += p->ops[i].bytes;
    return h;
}

/* The host's time in these copies, estimated: the process's time in copy
 * calls shared out over its pageable copies by bytes (pinned copies return
 * at once; pageable ones stage the data first). 0 without an API table. */
static uint64_t host_estimate(const HostCopies *h, uint64_t bytes) {
    if (!h->api_calls || !h->pageable_bytes) return 0;
    return (uint64_t)((double)h->api_ns * bytes / h->pageable_bytes);
}

/* "16 host-to-device copies from pageable memory (16.8 MB, 1.05 MB each) at 48.5 GB/s" */
static void describe(ProfCopyKind dir, const Copies *c, char *buf, size_t size) {
    bool one = c->count == 1;
    const char *what = dir == PROF_COPY_HTOD ? (one ? "host-to-device copy from" : "host-to-device copies from")
                                             : (one ? "device-to-host copy into" : "device-to-host copies into");
    char n[32], b[32], each[32], bw[32], amount[80];
    if (one)
        units_bytes(c->bytes, amount, sizeof amount);
    else
        snprintf(amount, sizeof amount, "%s, %s each", units_bytes(c->bytes, b, sizeof b),
                 units_bytes(c->bytes / c->count, each, sizeof each));
    double seconds = c->ns / 1e9;
    snprintf(buf, size, "%s %s pageable memory (%s) at %s", units_count(c->count, n, sizeof n), what, amount,
             units_rate(seconds > 0 ? c->bytes / seconds : 0, bw, sizeof bw));
}

/* --- pinning in place (CUDA) ---------------------------------------------- */

typedef struct {
    const Document *doc;
    size_t line_start, line_end; /* the line's bytes */
    CuNode *vector;              /* the one std::vector every copy on the line uses */
    bool mixed;                  /* a copy whose host side is something else */
    bool offset;                 /* a copy at an offset into the vector (a slice) */
    size_t copies;
} LineCopies;

/* `v.data()` or `&v.front()`: a copy from the vector's first element */
static bool at_vector_start(CuNode *host) {
    CuNode *e = cu_strip(host);
    const char *method;
    if (e && e->kind == CXCursor_CallExpr) return cu_member_call_object(e, &method) && strcmp(method, "data") == 0;
    CuNode *x = e && e->kind == CXCursor_UnaryOperator && e->child_count == 1 ? cu_strip(e->children[0]) : NULL;
    return x && cu_member_call_object(x, &method) && strcmp(method, "front") == 0;
}

static bool visit_line_copies(CuNode *n, void *data) {
    LineCopies *l = data;
    /* only what overlaps the line (the translation unit itself has no extent) */
    if (n->parent && (n->end < l->line_start || n->start >= l->line_end)) return false;
    if (n->kind != CXCursor_CallExpr || n->start < l->line_start) return true;
    CuNode *host;
    if (cu_copy_host_argument(n, &host) == CU_COPY_OTHER) return true;
    CuNode *v = cu_vector_of_pointer(host);
    l->copies++;
    l->offset |= !at_vector_start(host);
    if (!v || (l->vector && l->vector != v)) l->mixed = true;
    else l->vector = v;
    return true;
}

/* The std::vector the line's copies read or write, when they all use one;
 * *from_start when each copy starts at its first element. */
static CuNode *copied_vector(const RuleContext *ctx, uint32_t line, bool *from_start) {
    const Document *doc = ctx->doc;
    if (!ctx->cuda || !ctx->cuda->root || line == 0 || line > doc->line_count) return NULL;
    LineCopies l = {doc, doc->line_starts[line - 1], document_line_end(doc, line - 1), NULL, false, false, 0};
    cu_walk(ctx->cuda->root, visit_line_copies, &l);
    *from_start = !l.offset;
    return l.copies && !l.mixed ? l.vector : NULL;
}

/* What pinning the copied bytes in place costs the host, against what the
 * copies would gain; the fix when the gain is larger. The bytes pinned are
 * those the copies moved, or one copy's when every copy starts at the
 * vector's first element (the same bytes again). False when memory runs
 * out. */
static bool offer_pinning(RuleContext *ctx, Finding *f, uint32_t line, uint64_t bytes, uint64_t copies,
                          double gain_seconds) {
    bool from_start;
    CuNode *vector = copied_vector(ctx, line, &from_start);
    if (!vector || !copies) return true;
    uint64_t pinned = from_start ? bytes / copies : bytes;
    double cost = MEASURE_PIN_FIXED_NS / 1e9 + (double)pinned / MEASURE_PIN_BYTES_PER_S;
    const char *which = from_start && copies > 1 ? "each copy" : "these copies";
    if (gain_seconds <= cost)
        return finding_model(f, QV(q_seconds(cost), q_bytes(pinned)),
                             "pinning `%s` in place would cost the host at least {} once (cudaHostRegister and "
                             "cudaHostUnregister of the {} %s moved), more than the copies gain: pin it only if the "
                             "program copies it more than this run did",
                             vector->name, which);
    return finding_model(f, QV(q_seconds(cost), q_bytes(pinned)),
                         "pinning `%s` in place costs the host about {} once (cudaHostRegister and "
                         "cudaHostUnregister of the {} %s moved), less than they gain",
                         vector->name, which) &&
           pin_in_place_fix(ctx, f, vector);
}

static void report(RuleContext *ctx, uint32_t line, const Copies *c, const bool *reported, const uint64_t *host,
                   const HostCopies *all, uint64_t run) {
    static const ProfCopyKind dirs[] = {PROF_COPY_HTOD, PROF_COPY_DTOH};
    char what[2][200];
    size_t n = 0;
    uint64_t copies = 0;
    for (size_t d = 0; d < 2; d++)
        if (reported[d]) {
            describe(dirs[d], &c[d], what[n++], sizeof what[0]);
            copies += c[d].count;
        }
    bool python = ctx->doc->language == LANGUAGE_PYTHON;
    Finding *f = pf_report_line(ctx, line, "%s%s%s; pinned memory makes %s asynchronous (%s)", what[0],
                                n > 1 ? ", and " : "", n > 1 ? what[1] : "", copies == 1 ? "it" : "them",
                                python ? "`pin_memory=True`, `.pin_memory()`, then `non_blocking=True`"
                                       : "`cudaMallocHost`/`cudaHostRegister`, then `cudaMemcpyAsync`");
    if (!f) return;
    /* the merge's copy model: the same evidence and gain a static finding here gets */
    MeasureSite site = {.view = ctx->profile, .file = ctx->profile_file, .first = line, .last = line, .code = ""};
    Measurement m;
    bool ok = measure_apply(MEASURE_COPY, &site, &m);
    for (size_t i = 0; ok && i < m.evidence_count; i++) ok = finding_take_evidence(f, &m.evidence[i]);
    if (ok && all->api_calls)
        for (size_t d = 0; d < 2 && ok; d++) {
            if (!reported[d]) continue;
            ok = finding_measured(f, QV(q_ns(host[d]), q_share(host[d], run), q_ns(all->api_ns), q_count(all->api_calls)),
                                  "%s on the host: about {} ({} of the run), the run's {} in {} cudaMemcpy* calls "
                                  "shared out over its pageable copies by bytes",
                                  dirs[d] == PROF_COPY_HTOD ? "uploads" : "downloads");
        }
    if (ok && m.has_gain) {
        ok = finding_take_gain(f, m.gain_seconds, m.scope, &m.model);
        if (m.gain_seconds * 1e9 * 100 >= run) f->severity = SEVERITY_WARNING;
        uint64_t bytes = 0, count = 0;
        for (size_t d = 0; d < 2; d++) {
            bytes += reported[d] ? c[d].bytes : 0;
            count += reported[d] ? c[d].count : 0;
        }
        if (ok) ok = offer_pinning(ctx, f, line, bytes, count, m.gain_seconds);
    }
    measurement_free(&m);
    if (!ok) ctx->out_of_memory = true;
}

typedef struct {
    HostCopies all; /* the run's copies, for the host's side of the estimate */
    uint64_t run;
} Totals;

static void check_line(RuleContext *ctx, const PfLine *line, const void *data) {
    const Totals *t = data;
    static const ProfCopyKind dirs[] = {PROF_COPY_HTOD, PROF_COPY_DTOH};
    Copies c[2] = {{0}};
    bool reported[2] = {false, false};
    uint64_t host[2] = {0, 0};
    for (size_t d = 0; d < 2; d++) {
        for (size_t o = 0; o < line->op_count; o++) {
            const ProfOp *op = line->ops[o];
            if (!pageable(op, dirs[d])) continue;
            c[d].count += op->stats.count;
            c[d].bytes += op->bytes;
            c[d].ns += op->stats.total_ns;
        }
        if (c[d].count < MIN_COPIES || c[d].bytes < MIN_BYTES) continue;
        /* what they cost, on the GPU or on the host, must be a measurable part of the run */
        host[d] = host_estimate(&t->all, c[d].bytes);
        reported[d] = (c[d].ns > host[d] ? c[d].ns : host[d]) >= MIN_SHARE * t->run;
    }
    if (reported[0] || reported[1]) report(ctx, line->line, c, reported, host, &t->all, t->run);
}

static void check_profile(RuleContext *ctx) {
    uint64_t run = profile_view_run_ns(ctx->profile);
    if (run == 0) return;
    Totals t = {host_copies_of(profile_view_profile(ctx->profile)), run};
    pf_each_line(ctx, check_line, &t);
}

const Rule rule_pr008_pageable_copy = {
    .code = "PR008", .name = "pageable-copy", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON | LANGUAGE_CUDA, .check_profile = check_profile, .subsumed_by = MEASURE_COPY,
    .summary = "Copies between the GPU and pageable host memory at this line, with a pinned estimate (profile)",
    .advice = "copy from pinned memory (`pin_memory=True` in the DataLoader, `.pin_memory()`, `cudaMallocHost`), asynchronously",
    .documentation = documentation};
