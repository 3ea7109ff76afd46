/* Internals of merging a profile into findings (rules/engine/profile_merge.c): the
 * models that turn what a finding's lines cost into evidence and an
 * estimated gain (rules/measure/measure_models.c, each documented there and in the
 * docs/models.md). Their figures go into the evidence as numbers
 * (analysis/evidence.h), written in words where findings are shown. */
#ifndef ADVISE_MEASURE_H
#define ADVISE_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/finding.h"
#include "profiler/profile_view.h"
#include "rules/rule.h"

/* Where a finding sits, as the models need it. */
typedef struct {
    const ProfileView *view;
    int file;                 /* the document's file in the profile */
    uint32_t first, last;     /* the finding's lines, 1-based, inclusive */
    const char *code;         /* its code text, shortened ("loss.item()") */
    const char *kernel;       /* the enclosing __global__ function's name, or NULL */
    const uint32_t *extra;    /* further lines measured with them (related places), or NULL */
    size_t extra_count;
    bool stale;               /* the file changed since it was profiled: no per-line metrics */
} MeasureSite;

/* The models of these measures read the finding's related lines too
 * (MeasureSite.extra): the launches it would fuse with, the accesses that
 * conflict. */
bool measure_reads_related(Measure kind);

#define MEASURE_MAX_RELATED 8

#define MEASURE_MAX_EVIDENCE 4

/* What a model made of the profile for one finding. */
typedef struct {
    bool measured;            /* the profile has figures for it */
    uint64_t cost_ns;         /* what it cost (severity share, ranking) */
    Evidence evidence[MEASURE_MAX_EVIDENCE];
    size_t evidence_count;
    bool has_gain;
    double gain_seconds;
    const char *scope;        /* "program" or "kernel" */
    bool steady_steps;        /* the gain counts the steady training steps only (Gain.steady_steps) */
    Evidence model;           /* how the gain was estimated */
    /* Models that judge the finding from per-line metrics
     * (MEASURE_GLOBAL_ACCESS, MEASURE_SHARED_ACCESS): */
    bool judged;              /* the metrics decide: severity rises by the
                                 cost share, but never past `ceiling` */
    Severity ceiling;         /* the most severe the metrics allow */
    bool cleared;             /* the metrics show the concern did not happen in
                                 the measured launches: make it a hint */
    bool withhold_fixes;      /* the profile shows the fix would slow this code down */
    /* GPU-time models (measure_gain_is_gpu_time): how much of the GPU time
     * their gain is made of lay on the run's critical path (FORMAT.md
     * critical_ns), summed over the kernels or operations the gain counts */
    struct {
        bool seen, unknown;   /* some were counted; one of them had no figure */
        uint64_t ns, total_ns;
        /* the same weighed by what each kernel saves (MEASURE_FP32_GEMM);
         * 0: the gain is spread evenly over the time */
        double saved_ns, saved_total_ns;
        bool applied;         /* the gain was scaled by it */
    } critical;
} Measurement;

/* Gains counted in GPU time saved (not in idle time or host time): they
 * shorten the run only where that GPU time was on its critical path. */
bool measure_gain_is_gpu_time(Measure kind);

/* Runs the model of kind; false only when memory runs out. */
bool measure_apply(Measure kind, const MeasureSite *site, Measurement *m);
/* The per-line metrics part of MEASURE_GLOBAL_ACCESS and
 * MEASURE_SHARED_ACCESS (rules/measure/measure_lines.c), after the kernel's time. */
bool measure_line_access(Measure kind, const MeasureSite *site, Measurement *m);
void measurement_free(Measurement *m);

/* For the models: adds an item of evidence, fmt and values as
 * evidence_append's (beyond MEASURE_MAX_EVIDENCE it is left out); adds one
 * already built (moved in, *e left empty); sets the gain and its model.
 * False when memory runs out. */
bool measure_evidence(Measurement *m, EvidenceKind kind, const Quantity *values, size_t count, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
bool measure_add_evidence(Measurement *m, Evidence *e);
bool measure_gain(Measurement *m, double seconds, const char *scope, const Quantity *values, size_t count,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Multi-rank profiles (rules/measure/measure_ranks.c). MEASURE_COMM's model, over
 * the operations at the finding's lines. */
bool measure_comm(const MeasureSite *s, Measurement *m, const ProfOp *const *ops, size_t n);
/* For a sync finding in a profile of two ranks or more: the waits at the
 * lines per rank (ops as for measure_comm), and what they mean for the
 * collectives when the ranks communicate. */
bool measure_sync_per_rank(const MeasureSite *s, Measurement *m, const ProfOp *const *ops, size_t n);

/* The default host<->device bandwidth of pinned copies when the profile has
 * none of its own to go by: PCIe 5.0 x16 as an H100/H200 reaches it (a 4 MB
 * device-to-host copy into pinned memory took 78 us on the H200: 51 GB/s). */
#define MEASURE_PINNED_DEFAULT_BYTES_PER_S 50e9
/* The GPU's memory bandwidth when the profile does not name it: an H200's
 * HBM3e (4.8 TB/s). */
#define MEASURE_DEVICE_DEFAULT_BYTES_PER_S 4.8e12
/* What each copy costs beyond its bytes, whatever the memory (a 4-byte
 * device-to-host copy into pinned memory took 1.7 us on the H200): the
 * pinned estimate of N copies adds N times this. */
#define MEASURE_COPY_LATENCY_NS 1500
/* Pinning host memory in place and unpinning it (cudaHostRegister, then
 * cudaHostUnregister), on the host of an H200 (bench/pinning/pin_cost.cu,
 * 2026-11-30; register + unregister: 4 MiB 0.45 + 0.17 ms, 16 MiB 1.2 +
 * 0.44 ms, 64 MiB 2.9 + 1.3 ms, 256 MiB 10.5 + 4.7 ms): about this much per
 * buffer plus its bytes at this rate, within 25% from 1 MiB to 256 MiB.
 * (cudaMallocHost is far dearer: 27 ms for 64 MiB.) */
#define MEASURE_PIN_FIXED_NS 300000
#define MEASURE_PIN_BYTES_PER_S 17e9

/* Pageable copies smaller than this (per copy) are staged whole into a
 * pinned buffer before their DMA starts, so their GPU-side time is already
 * the pinned one: on the H200, 64 KiB uploads took 5.6 us from pageable and
 * 5.95 us from pinned memory (train_classifier's batches), and 1 MiB chunks
 * ran at 48 GB/s from pageable memory (pipeline.cu); 4 MiB ones ran at
 * 8 GB/s (reduction.cu). Pinning them gains host time and overlap only. */
#define MEASURE_STAGED_COPY_MAX_BYTES (1u << 20)

/* Pinned copies of the profile count as a bandwidth sample from this many
 * bytes per copy on (smaller ones measure latency, not bandwidth). */
#define MEASURE_PINNED_SAMPLE_MIN_BYTES (256u * 1024u)

/* The cost used to rank a finding without a gain: GPU time and host waits
 * measured at lines [first, last] of file. */
uint64_t measure_lines_cost(const ProfileView *v, int file, uint32_t first, uint32_t last);

#endif
