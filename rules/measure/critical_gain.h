/* A gain counted in GPU time shortens the run only by the part of that time
 * on its critical path, and by no more than the host waited for the GPU
 * (FORMAT.md critical_ns, host_wait_ns; docs/models.md). One place for that
 * arithmetic and its words, for the merge's models and the profile rules. */
#ifndef ADVISE_CRITICAL_GAIN_H
#define ADVISE_CRITICAL_GAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/evidence.h"
#include "profiler/profile_view.h"

typedef struct {
    double gain_ns;      /* the gain after both */
    double share;        /* the part on the critical path when it changed the gain (under 1), else -1 */
    uint64_t capped_ns;  /* the host's wait when it bounded the gain, else 0 */
} CriticalGain;

/* gain_ns scaled by share (0 to 1; negative: not measured, the gain stays
 * whole and unbounded) and capped at the profile's host wait. */
CriticalGain critical_gain(const ProfileView *v, double gain_ns, double share);

/* Appends to a gain's model what critical_gain did ("; x 25%, the part of
 * OF_WHAT on the run's critical path; at most the time the host waited for
 * the GPU (5.00 ms)"); nothing when it changed nothing. False when memory
 * runs out. */
bool critical_gain_words(const CriticalGain *c, const char *of_what, Evidence *model);

#endif
