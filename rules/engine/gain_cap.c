/* Gains that cannot exceed what is there (issue 17): after a document's
 * profile rules ran, its program-scope gains are scaled down where together
 * they claim more than the run could give back.
 *
 * - Gains taken from GPU idle time (rules with Rule.gain_from_idle: PR002's
 *   launch gaps, PR003's idle gaps) add up to at most the run's recoverable
 *   idle time: idle less the profiler's own measured cost, only the steady
 *   training steps' where those are known (profile_view_recoverable_idle_ns).
 *   Two rules can see the same idle time, and the profiler's cost looks like
 *   idle time in a launch-bound run.
 * - All program-scope gains together add up to at most the run's length.
 * A scaled gain says so in its model: what it claimed and why it was cut. */
#include <string.h>

#include "rules/engine/engine_internal.h"
#include "rules/rule.h"

static bool from_idle(const Finding *f) {
    const Rule *rule = f->code ? rule_find(f->code) : NULL;
    return rule && rule->gain_from_idle;
}

static bool program_gain(const Finding *f) {
    return f->gain.present && f->gain.seconds > 0 && f->gain.scope && strcmp(f->gain.scope, "program") == 0;
}

/* Scales every selected gain by limit / total when total exceeds limit;
 * limit_words names the limit ("the {} the run lasted"). */
static bool scale(FindingList *out, size_t first, bool idle_only, double limit_s, const char *what,
                  const char *limit_words) {
    double total = 0;
    for (size_t i = first; i < out->count; i++)
        if (program_gain(&out->items[i]) && (!idle_only || from_idle(&out->items[i])))
            total += out->items[i].gain.seconds;
    if (total <= limit_s || total <= 0) return true;
    double factor = limit_s / total;
    for (size_t i = first; i < out->count; i++) {
        Finding *f = &out->items[i];
        if (!program_gain(f) || (idle_only && !from_idle(f))) continue;
        double claimed = f->gain.seconds;
        f->gain.seconds = claimed * factor;
        if (!evidence_append(&f->gain.model, QV(q_seconds(claimed), q_seconds(total), q_seconds(limit_s)),
                             "; scaled down from {}: this file's %s gains add up to {}, more than the {} %s", what,
                             limit_words))
            return false;
    }
    return true;
}

bool engine_cap_gains(const ProfileView *view, FindingList *out, size_t first) {
    double idle_s = (double)profile_view_recoverable_idle_ns(view) / 1e9;
    double run_s = (double)profile_view_run_ns(view) / 1e9;
    const char *idle_words = profile_view_steady(view)
                                 ? "of GPU idle time the steady training steps had, less the profiler's share of "
                                   "its own cost (start-up, warm-up, evaluation and checkpoints are phases, not gains)"
                                 : "of GPU idle time the run had, less the profiler's own cost";
    return scale(out, first, true, idle_s, "idle-time", idle_words) &&
           (run_s <= 0 || scale(out, first, false, run_s, "program", "the run lasted"));
}
