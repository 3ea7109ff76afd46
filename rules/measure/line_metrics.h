/* A profile's per-line SASS metrics (Profile.line_metrics, from `advise
 * profile --source-metrics`) as the merge (rules/measure/measure_lines.c) and the
 * profile rules PR010-PR012 read them: sums over a finding's lines, a
 * kernel's totals, the thresholds they share and the words for them.
 *
 * Three ratios come from them (profiler/FORMAT.md, "line_metrics"):
 *   global: sectors moved / sectors a perfectly coalesced access would move
 *   shared: wavefronts / wavefronts without bank conflicts
 *   local:  local-memory sectors (spills, local arrays), against the
 *           kernel's global and local sectors */
#ifndef ADVISE_LINE_METRICS_H
#define ADVISE_LINE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/finding.h"
#include "profiler/profile.h"
#include "profiler/profile_view.h"
#include "rules/measure/critical_gain.h"

typedef enum { LM_GLOBAL, LM_SHARED, LM_LOCAL } LmKind;

/* Below this many ideal sectors (wavefronts) a line's ratio says nothing:
 * 64 sectors are 2 KiB, two warp-wide float accesses. */
#define LM_MIN_IDEAL 64
/* At or below this ratio the accesses are as good as they get (a float
 * array read at a 4-byte offset from its 32-byte sectors moves 1.25x). */
#define LM_FINE_RATIO 1.25
/* From this ratio on the waste is worth a finding (PR010, PR011) and may
 * raise a static finding's severity to a warning; from LM_SEVERE_RATIO on
 * to an error. */
#define LM_WASTE_RATIO 2.0
#define LM_SEVERE_RATIO 4.0
/* A line matters when it makes this share of its kernel's sectors
 * (wavefronts) ... */
#define LM_MIN_LINE_SHARE 0.10
/* ... and its kernel this share of the GPU's kernel time. */
#define LM_MIN_KERNEL_SHARE 0.01

/* The entries of one file at some lines, summed for one kind. */
typedef struct {
    uint64_t actual;         /* sectors (wavefronts) */
    uint64_t ideal;          /* LM_LOCAL: 0 */
    uint64_t kernel_total;   /* the same kind over every line of the entries' kernels */
    const char *kernel;      /* the kernel with the largest `actual` (its demangled name), or NULL */
    uint64_t launches;       /* that kernel's measured launches */
    size_t kernels;          /* distinct kernels among the entries with counts */
    uint32_t lines[4];       /* the lines with counts, ascending, the first four */
    size_t line_count;       /* all of them */
} LmSum;

/* One entry's counts of a kind (ideal 0 for LM_LOCAL). */
void lm_counts(const ProfLineMetrics *e, LmKind kind, uint64_t *actual, uint64_t *ideal);
/* Sums the kind over the entries of file at lines first..last and at the
 * extra lines. Entries without counts of the kind are left out. */
void lm_sum(const Profile *p, int file, uint32_t first, uint32_t last, const uint32_t *extra, size_t extra_count,
            LmKind kind, LmSum *out);
/* The kind's counts over every line (in any file) of the kernel so named. */
uint64_t lm_kernel_total(const Profile *p, const char *kernel, LmKind kind);
/* The GPU time of the kernel so named: its configurations of the same
 * demangled name, else of the same base name; 0 when the profile has none. */
uint64_t lm_kernel_ns(const ProfileView *v, const char *kernel);

/* A line of the rule's file whose metrics show waste of one kind, for the
 * profile rules PR010-PR012. */
typedef struct {
    uint32_t line;
    const ProfLineMetrics *entry;  /* the qualifying entry (kernel) with the most waste */
    uint64_t actual, ideal;        /* its counts of the kind (ideal 0 for LM_LOCAL) */
    uint64_t kernel_total;         /* its kernel's counts of the kind over all lines;
                                      LM_LOCAL: global and local sectors */
    double line_share;             /* actual / kernel_total */
    uint64_t kernel_ns;            /* its kernel's GPU time */
    double kernel_share;           /* of all kernel time */
    size_t other_kernels;          /* further kernels that qualify at the line */
} LmWaste;

/* Calls visit, in line order, for each line of ctx's file where an entry
 * of some kernel qualifies:
 *   LM_GLOBAL, LM_SHARED: at least LM_MIN_IDEAL ideal sectors (wavefronts)
 *     and LM_WASTE_RATIO (2x) the ideal;
 *   LM_LOCAL: at least LM_MIN_IDEAL local sectors;
 * the line making LM_MIN_LINE_SHARE (10%) of its kernel's counts (LM_LOCAL:
 * of its global and local sectors), the kernel LM_MIN_KERNEL_SHARE (1%) of
 * all kernel time. Nothing when the file changed since it was profiled.
 * Stops when memory runs out (ctx remembers). */
typedef struct RuleContext RuleContext;
void lm_each_waste(RuleContext *ctx, LmKind kind, void (*visit)(RuleContext *ctx, const LmWaste *w));

/* "in one launch of KERNEL" / "in N launches of KERNEL" for w's entry. */
const char *lm_waste_launches_words(const LmWaste *w, char *buf, size_t size);
/* The evidence PR010-PR012 share: "the kernel: T of GPU time, S of all
 * kernel time", and, when other kernels qualify at the line too, "N other
 * kernel(s) running this line VERB(s) REST". False when memory runs out. */
bool lm_waste_evidence(Finding *f, const LmWaste *w, const char *verb, const char *rest);
/* A kernel with this share of all kernel time or more makes a severe ratio
 * (LM_SEVERE_RATIO) or heavy local traffic a warning (PR010-PR012). */
#define LM_WARNING_KERNEL_SHARE 0.10
/* Reports the ratio finding of PR010 and PR011 at w's line. fmt takes five
 * strings, in order: the ratio ("3.2x"), the actual and the ideal count,
 * the launches in words and the line's share of its kernel's count. A
 * warning from LM_SEVERE_RATIO in a kernel with LM_WARNING_KERNEL_SHARE.
 * NULL when memory runs out (ctx remembers). */
Finding *lm_report_ratio(RuleContext *ctx, const LmWaste *w, const char *fmt);

/* What removing a line's excess global sectors would save (issue 17's
 * device-line cost). The model: in a memory-bound kernel, time follows the
 * sectors moved, so a line moving `actual` sectors where `ideal` would do
 * saves its kernel's time T times (actual - ideal) / kernel_sectors, which
 * is T x the line's share of the sectors x (1 - 1/N) for a line at N times
 * the ideal. The kernel counts as memory-bound when its measured sectors
 * per launch, over its mean launch time, reach LM_MEMORY_BOUND_SHARE of the
 * device's peak bandwidth: sectors are L1 requests, so a kernel below that
 * is bound by something else and gets no estimate. On the H200, the naive
 * transpose sample (8x at its store, 89% of its sectors) was estimated at
 * 775 us over 21 launches and its tiled fix saved 902 us (-14%): the model
 * is conservative, as the fix also removes the rest of the waste. */
#define LM_MEMORY_BOUND_SHARE 0.30
typedef struct {
    bool known;              /* the kernel's time, launches and the device's bandwidth were found */
    bool memory_bound;
    double bandwidth_share;  /* sector bytes per second over the peak */
    double gain_ns;          /* 0 when not memory-bound */
    uint64_t kernel_ns;
    double sector_bytes_per_s; /* the kernel's sectors x 32 bytes over its mean launch time */
    uint64_t bytes_per_s;    /* the device's peak (an H200's when the profile names none) */
    /* The gain is GPU time: it counts the part of the kernel's time on the
     * run's critical path and at most the host's wait for the GPU
     * (critical_gain.h); what that did, for critical_gain_words */
    CriticalGain critical;
} LmGain;
void lm_global_gain(const ProfileView *v, const char *kernel, uint64_t kernel_sectors, uint64_t measured_launches,
                    uint64_t actual, uint64_t ideal, LmGain *out);

/* Bytes in so many 32-byte sectors (saturating). */
uint64_t lm_sector_bytes(uint64_t sectors);

/* One entry in words, for the editor's hover: "`transpose_naive`, one
 * launch: 18,874,368 global sectors, 4.5x the ideal 4,194,304; 8,192 local
 * sectors; 1,048,576 instructions" (the kinds it has counts of). */
const char *lm_entry_words(const ProfLineMetrics *e, char *buf, size_t size);

/* actual / ideal; 0 when ideal is 0 */
double lm_ratio(uint64_t actual, uint64_t ideal);
/* "in one launch of transpose_naive", "in 2 launches of transpose_naive",
 * "in the measured launches of transpose_naive and 1 other kernel": appended
 * to evidence (the count a figure; false when memory runs out), or in words. */
bool lm_launches_evidence(Evidence *e, const LmSum *s);
const char *lm_launches_words(const LmSum *s, char *buf, size_t size);

#endif
