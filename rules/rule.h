/* What a rule is: a descriptor (stable code, kebab-case name, default
 * severity, languages, summary, documentation) and a check that reads one
 * document and reports findings. A rule never knows about LSP or output formats (text, JSON).
 *
 * To add a rule: one file rules/<language>/<name>.c that defines
 * `const Rule rule_<name>` (the file name with '-' as '_'), and one fixture
 * tests/fixtures/<language>/<CODE>.py. The build registers every file in
 * rules/<language>/ by itself. Helpers that several rules of a language
 * share, and that are not general facts about the language (those belong
 * to the front ends in analysis/), go in rules/<language>/support/: compiled
 * in, never registered. Then record the fixture's snapshot (message, column
 * and fix safety of each finding: ADVISE_UPDATE_SNAPSHOTS=1
 * build/test_rule_fixtures), add the rule's line to FIX_SAFETY in
 * tests/test_rule_fixtures.c when it makes fixes, and regenerate the pages
 * (build/advise rules --format markdown --output-dir docs). */
#ifndef ADVISE_RULE_H
#define ADVISE_RULE_H

#include <stdarg.h>

#include "analysis/cuda/cuda_source.h"
#include "analysis/document.h"
#include "analysis/finding.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_source.h"

typedef struct RuleContext RuleContext;
typedef struct ProfileView ProfileView;

/* How a profile's measurements attach to a static finding of this rule
 * (rules/engine/profile_merge.c computes evidence, estimated gain and
 * severity through the models in rules/measure/, each documented there and
 * in docs/models.md):
 *   MEASURE_SYNC      host waits at the finding's lines (syncs, .item())
 *   MEASURE_COPY      copies at the lines: bytes, bandwidth, pinned estimate
 *   MEASURE_COPY_AVOIDED  the copies at the lines, which the fix removes (the
 *                     data is made on the GPU instead): their whole time,
 *                     less writing the bytes on the GPU
 *   MEASURE_LAUNCHES  many small launches at the lines (unfused work)
 *   MEASURE_KERNEL    the GPU time of the kernel the finding sits in (CUDA)
 *   MEASURE_GLOBAL_ACCESS  MEASURE_KERNEL, and the global-memory sectors
 *                     against the ideal that the profile's per-line
 *                     metrics measured at the finding's lines and related
 *                     lines (rules/measure/measure_lines.c)
 *   MEASURE_SHARED_ACCESS  the same with shared-memory wavefronts (bank
 *                     conflicts)
 *   MEASURE_ALLOC     allocations at the lines (allocation in a loop)
 *   MEASURE_GPU_TIME  any GPU time made at the lines (no gain estimate)
 *   MEASURE_FP32_GEMM the whole program's float32 matmuls on CUDA cores
 *                     (the finding is about the program, not its lines)
 *   MEASURE_OPTIMIZER the program's multi-tensor optimizer kernels (the
 *                     finding is at the optimizer's construction, the
 *                     kernels run at step())
 *   MEASURE_COMM      NCCL communication per rank: the NCCL kernels launched
 *                     at the lines (else at the program's main NCCL line) and
 *                     each rank's communication that no compute overlapped
 *   MEASURE_LOADER_WAIT  the GPU's idle gaps before a DataLoader's batches
 *                     are copied to it (the finding's related lines: the
 *                     copies), in the steady training steps: the host was
 *                     loading the next batch */
typedef enum {
    MEASURE_NONE,
    MEASURE_SYNC,
    MEASURE_COPY,
    MEASURE_COPY_AVOIDED,
    MEASURE_LAUNCHES,
    MEASURE_KERNEL,
    MEASURE_ALLOC,
    MEASURE_GPU_TIME,
    MEASURE_FP32_GEMM,
    MEASURE_OPTIMIZER,
    MEASURE_COMM,
    MEASURE_ATTENTION,
    MEASURE_GLOBAL_ACCESS,
    MEASURE_SHARED_ACCESS,
    MEASURE_LOADER_WAIT,
} Measure;

typedef struct Rule {
    const char *code;     /* stable: "PY001" */
    const char *name;     /* kebab-case: "host-sync-in-loop" */
    Severity severity;    /* default */
    unsigned languages;   /* Language bits */
    const char *summary;  /* one line */
    const char *documentation; /* markdown: what it does, why it is slow, example, use instead, fix safety */
    /* What to do, one line, given to each finding (Finding.advice); a rule
     * whose advice depends on the finding sets that instead. NULL: none. */
    const char *advice;
    void (*check)(RuleContext *ctx);
    /* Findings depend on the whole file (not just the top-level statement
     * they sit in): the editor's quick re-analysis of one edited function
     * skips the rule, and the full pass that follows runs it. */
    bool whole_file;
    /* Python rules are skipped in files that neither import torch nor
     * mention CUDA; set this for a rule that applies to them anyway. */
    bool runs_without_torch;
    /* The finding is about results being wrong (a race, a read before the
     * copy lands, a lost error, a timing that measures the wrong thing), not
     * about speed: reports list these apart, before the ranking by cost. */
    bool correctness;
    /* Its gains are GPU idle time (PR002, PR003): together with the other
     * such findings of a file they are capped at the run's idle time less
     * the profiler's own cost (rules/engine/gain_cap.c). */
    bool gain_from_idle;
    /* With a profile recorded with --memory, its findings get the device
     * memory allocated at their lines: live at the peak, allocated, growing
     * per step (rules/engine/memory_evidence.c). For rules about memory
     * that static analysis sees (PY010, PY015, PY016). */
    bool memory_evidence;
    /* How measurements attach to this rule's findings (see Measure). */
    Measure measure;
    /* Profile rules (rules/profile/): findings only a profile can give. Set
     * instead of check; runs when a profile is merged, with ctx->profile. */
    void (*check_profile)(RuleContext *ctx);
    /* Profile rules: a finding of this rule is dropped where a static
     * finding whose rule measures this way sits on the same line: that
     * finding already carries the same figures (PR004 beside PY001, PR008
     * beside CU006, PR010 beside CU004; for the measures whose models read
     * related lines too, measure_reads_related, on those lines as well).
     * MEASURE_NONE: never dropped. */
    Measure subsumed_by;
    /* Profile rules: the code of a rule whose finding anywhere in the same
     * file makes this rule's findings there repeat it (PR019 beside PY009,
     * whose measured gain counts the same kernels); NULL: never.
     * engine_drop_subsumed applies it. */
    const char *subsumed_in_file_by;
} Rule;

struct RuleContext {
    const Rule *rule;
    const Document *doc;
    const PySource *py; /* set for Python documents */
    const CudaSource *cuda; /* set for CUDA/C++ documents */
    FindingList *out;
    bool out_of_memory;
    /* when set, only the top-level statements overlapping [region_start,
     * region_end) are analysed (see rule_walk) */
    bool has_region;
    size_t region_start, region_end;
    /* profile rules: the merged profile, this document's file in it (never
     * -1 when check_profile runs) and its path relative to the project root */
    const ProfileView *profile;
    int profile_file;
    const char *relative_path;
};

/* Walks the parse tree in preorder: the whole module, or only the top-level
 * statements that overlap the context's region. Rules walk with this. */
void rule_walk(RuleContext *ctx, PyVisitor visit, void *data);
/* The same for CUDA rules: a preorder walk of the document's whole tree
 * (they take no region); nothing when the document has no tree. */
void rule_walk_cuda(RuleContext *ctx, CuVisitor visit, void *data);

Finding *rule_report_cu(RuleContext *ctx, const CuNode *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reports a finding over [start, end) with the rule's default severity.
 * Returns it so that the rule can add evidence and fixes; NULL when memory
 * runs out (the context remembers). */
Finding *rule_report(RuleContext *ctx, size_t start, size_t end, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
Finding *rule_report_node(RuleContext *ctx, TSNode node, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* rule_report with a va_list (for helpers that report on a rule's behalf). */
Finding *rule_report_v(RuleContext *ctx, size_t start, size_t end, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* The registry: every rule, sorted by code. */
const Rule *const *rules_all(size_t *count);
/* By code or name (exact), NULL when unknown. */
const Rule *rule_find(const char *code_or_name);

#endif
