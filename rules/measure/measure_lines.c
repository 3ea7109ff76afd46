/* MEASURE_GLOBAL_ACCESS and MEASURE_SHARED_ACCESS, after the kernel's time
 * (MEASURE_KERNEL, measure_models.c): what the profile's per-line SASS
 * metrics (`advise profile --source-metrics`, rules/measure/line_metrics.h)
 * measured at the finding's lines and its related lines (CU003 marks the
 * array and relates the conflicting accesses): the global-memory sectors
 * (CU004, CU005) or shared-memory wavefronts (CU003) against the ideal.
 *
 * The ratio judges the finding (Measurement.judged, .ceiling, .cleared):
 * - at most LM_FINE_RATIO (1.25x): the accesses were as good as they get in
 *   the measured launch, so the pattern the static rule saw did not cost
 *   anything there: the finding becomes a hint, and its evidence says why;
 * - from LM_WASTE_RATIO (2x), the lines making at least LM_MIN_LINE_SHARE
 *   (10%) of their kernel's sectors (wavefronts): severity rises with the
 *   kernel's share of the run as MEASURE_KERNEL's does (1%: warning, 10%:
 *   error), but to an error only from LM_SEVERE_RATIO (4x);
 * - in between, or a small share: the figures are shown, the severity stays.
 * With fewer than LM_MIN_IDEAL ideal sectors (wavefronts) at the lines, or
 * a file changed since it was profiled (lines may have moved), nothing is
 * added and the kernel's time alone counts, as without line metrics.
 *
 * Global accesses at 2x the ideal or more, in a memory-bound kernel, get an
 * estimated gain (lm_global_gain: the kernel's time x the lines' excess
 * sectors over the kernel's); shared-memory wavefronts get none (what the
 * extra passes cost depends on what bounds the kernel). Sectors are
 * requests to L1, not DRAM traffic: repeats of a sector often hit in L1 or
 * L2, which is why the kernel must be shown memory-bound first. */
#include <stdio.h>
#include <string.h>

#include "rules/measure/line_metrics.h"
#include "rules/measure/measure.h"
#include "rules/measure/profile_facts.h"

/* "this line", "line 99", "lines 99 and 112"; *plural set for the last */
static void lines_phrase(const MeasureSite *s, const LmSum *sum, char *buf, size_t size, bool *plural) {
    *plural = sum->line_count > 1;
    if (sum->line_count == 1 && s->first == s->last && sum->lines[0] == s->first) {
        snprintf(buf, size, "this line");
        return;
    }
    if (sum->line_count == 1) {
        snprintf(buf, size, "line %u", sum->lines[0]);
        return;
    }
    size_t shown = sum->line_count < 4 ? sum->line_count : 4, n = 0;
    for (size_t i = 0; i < shown && n < size; i++) {
        const char *sep = i == 0 ? "lines " : i + 1 == shown && sum->line_count == shown ? " and " : ", ";
        n += (size_t)snprintf(buf + n, size - n, "%s%u", sep, sum->lines[i]);
    }
    if (n < size && sum->line_count > shown) snprintf(buf + n, size - n, " and %zu more", sum->line_count - shown);
}

static void judge(Measurement *m, double ratio, double line_share) {
    m->judged = true;
    if (ratio <= LM_FINE_RATIO) {
        m->cleared = true;
        m->ceiling = SEVERITY_HINT;
    } else if (ratio >= LM_WASTE_RATIO && line_share >= LM_MIN_LINE_SHARE) {
        m->ceiling = ratio >= LM_SEVERE_RATIO ? SEVERITY_ERROR : SEVERITY_WARNING;
    } else {
        m->ceiling = SEVERITY_HINT; /* figures only: nothing raised */
    }
}

bool measure_line_access(Measure kind, const MeasureSite *s, Measurement *m) {
    if (s->stale) return true;
    const Profile *p = profile_view_profile(s->view);
    LmKind lk = kind == MEASURE_SHARED_ACCESS ? LM_SHARED : LM_GLOBAL;
    LmSum sum;
    lm_sum(p, s->file, s->first, s->last, s->extra, s->extra_count, lk, &sum);
    if (sum.ideal < LM_MIN_IDEAL) return true;
    double ratio = lm_ratio(sum.actual, sum.ideal);
    judge(m, ratio, sum.kernel_total ? (double)sum.actual / (double)sum.kernel_total : 0);
    if (!m->measured) { /* code outside a kernel's own body (a __device__ function): its kernels' time */
        m->measured = true;
        m->cost_ns = lm_kernel_ns(s->view, sum.kernel);
    }

    char where[96];
    bool plural;
    lines_phrase(s, &sum, where, sizeof where, &plural);
    const char *whose = sum.kernels > 1 ? "their kernels'" : "the kernel's";
    Evidence e = evidence_new(EVIDENCE_MEASURED);
    bool ok;
    if (lk == LM_GLOBAL)
        ok = evidence_append(&e, QV(q_factor(ratio), q_count(sum.actual), q_count(sum.ideal)),
                             "%s move%s {} the ideal global sectors ({} vs {} ", where, plural ? "" : "s") &&
             lm_launches_evidence(&e, &sum) &&
             evidence_append(&e, QV(q_share(sum.actual, sum.kernel_total)), "), {} of %s global sectors%s", whose,
                             m->cleared ? ": coalesced in the measured launch, a false alarm there" : "");
    else
        ok = evidence_append(&e, QV(q_factor(ratio), q_count(sum.actual), q_count(sum.ideal)),
                             "shared-memory accesses on %s take {} the ideal wavefronts%s: {} vs {} ", where,
                             ratio > LM_FINE_RATIO ? " (bank conflicts)" : "") &&
             lm_launches_evidence(&e, &sum) &&
             evidence_append(&e, QV(q_share(sum.actual, sum.kernel_total)), ", {} of %s shared wavefronts%s", whose,
                             m->cleared ? "; no bank conflicts in the measured launch, a false alarm there" : "");
    ok = ok && measure_add_evidence(m, &e);
    evidence_free(&e);
    if (ok && lk == LM_GLOBAL && !m->has_gain && ratio >= LM_WASTE_RATIO && sum.kernels == 1) {
        LmGain g;
        lm_global_gain(s->view, sum.kernel, sum.kernel_total, sum.launches, sum.actual, sum.ideal, &g);
        if (g.known && g.memory_bound)
            ok = measure_gain(m, g.gain_ns / 1e9, "program",
                              QV(q_ns(g.kernel_ns), q_share(sum.actual - sum.ideal, sum.kernel_total),
                                 q_ratio(g.bandwidth_share)),
                              "the kernel's {} \xc3\x97 the excess sectors, {} of the kernel's: in a memory-bound "
                              "kernel ({} of peak bandwidth) time follows the sectors moved") &&
                 critical_gain_words(&g.critical, "the kernel's time", &m->model);
    }
    return ok;
}
