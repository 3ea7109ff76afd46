#include "server/render/report_steps.h"

#include <stdio.h>
#include <string.h>

#include "analysis/units.h"

const ProfProcess *report_steps_process(const Profile *p) {
    const ProfProcess *best = NULL;
    for (size_t i = 0; i < p->process_count; i++)
        if (p->processes[i].steps.count && (!best || p->processes[i].steps.count > best->steps.count))
            best = &p->processes[i];
    return best;
}

size_t report_steps_devices(const Profile *p, const ProfProcess *proc) {
    size_t devices = 0;
    for (size_t i = 0; i < p->timeline_count; i++)
        if (p->timelines[i].process == (int)(proc - p->processes)) devices++;
    return devices;
}

/* "N steps, T" or "1 step, T" */
static const char *steps_and_time(uint64_t steps, uint64_t ns, char *buf, size_t size) {
    char count[UNITS_BUF], time[UNITS_BUF];
    snprintf(buf, size, "%s %s, %s", units_count(steps, count, sizeof count), steps == 1 ? "step" : "steps",
             units_ns(ns, time, sizeof time));
    return buf;
}

void report_steps_words(const ProfSteps *s, size_t devices, char *head, size_t head_size, char *phases,
                        size_t phases_size) {
    char count[UNITS_BUF], median[UNITS_BUF], first[UNITS_BUF], after[UNITS_BUF], warm[96], steady[96], slow[96];
    snprintf(head, head_size, "%s optimizer %s, median %s", units_count(s->count, count, sizeof count),
             s->count == 1 ? "step" : "steps", units_ns(s->median_ns, median, sizeof median));
    snprintf(phases, phases_size,
             "start-up and the first step %s; warm-up %s; steady %s; slow %s (evaluation, checkpoints or logging "
             "between steps); after the last step %s",
             units_ns(s->first_ns, first, sizeof first), steps_and_time(s->warmup_steps, s->warmup_ns, warm, sizeof warm),
             steps_and_time(s->steady_steps, s->steady_ns, steady, sizeof steady),
             steps_and_time(s->slow_steps, s->slow_ns, slow, sizeof slow), units_ns(s->after_ns, after, sizeof after));
    if (!s->phase_idle_known) return;
    /* the GPU's idle time: what the steady steps leave (the gains' basis), and what the phases hold */
    uint64_t phases_idle = s->idle_ns[PROF_PHASE_FIRST] + s->idle_ns[PROF_PHASE_WARMUP] + s->idle_ns[PROF_PHASE_SLOW] +
                           s->idle_ns[PROF_PHASE_AFTER];
    char idle[UNITS_BUF], share[UNITS_BUF], rest[UNITS_BUF];
    size_t used = strlen(phases);
    if (used + 1 >= phases_size) return;
    if (s->steady_ns)
        snprintf(phases + used, phases_size - used,
                 "; GPU idle %s in the steady steps (%s of their time%s), %s in the other phases",
                 units_ns(s->idle_ns[PROF_PHASE_STEADY], idle, sizeof idle),
                 units_ratio((double)s->idle_ns[PROF_PHASE_STEADY] /
                                 ((double)s->steady_ns * (double)(devices ? devices : 1)),
                             share, sizeof share),
                 devices > 1 ? " across its GPUs" : "", units_ns(phases_idle, rest, sizeof rest));
    else
        snprintf(phases + used, phases_size - used, "; GPU idle %s, all of it outside steady steps",
                 units_ns(phases_idle, rest, sizeof rest));
}
