#include "rules/measure/critical_gain.h"

/* A share this close to 1 changes nothing worth saying. */
#define WHOLE_SHARE 0.995

CriticalGain critical_gain(const ProfileView *v, double gain_ns, double share) {
    CriticalGain c = {.gain_ns = gain_ns, .share = -1};
    if (share < 0) return c;
    if (share < WHOLE_SHARE) {
        c.share = share;
        c.gain_ns *= share;
    }
    uint64_t waited;
    if (profile_view_host_wait_ns(v, &waited) && c.gain_ns > (double)waited) {
        c.gain_ns = (double)waited;
        c.capped_ns = waited;
    }
    return c;
}

bool critical_gain_words(const CriticalGain *c, const char *of_what, Evidence *model) {
    if (c->share >= 0 &&
        !evidence_append(model, QV(q_ratio(c->share)), "; x {}, the part of %s on the run's critical path", of_what))
        return false;
    return !c->capped_ns ||
           evidence_append(model, QV(q_ns(c->capped_ns)),
                           "; at most the time the host waited for the GPU ({}): once the GPU keeps up, the host's "
                           "own pace sets the run's");
}
