/* A profile's training steps and their phases (processes[].steps,
 * profiler/step_phases.c) in words, for `advise report` (text and HTML). */
#ifndef ADVISE_REPORT_STEPS_H
#define ADVISE_REPORT_STEPS_H

#include <stddef.h>

#include "profiler/profile.h"

/* The process with the most optimizer steps, or NULL when none recorded any. */
const ProfProcess *report_steps_process(const Profile *p);

/* "300 optimizer steps, median 1.23 ms" into head, and the phases into
 * phases: "start-up and the first step 2.10 s; warm-up 3 steps, 45.0 ms;
 * steady 290 steps, 357 ms; slow 3 steps, 210 ms (evaluation, checkpoints
 * or logging between steps); after the last step 95.0 ms", and where the
 * idle time by phase is known "; GPU idle 41.0 ms in the steady steps (11%
 * of their time), 2.05 s in the other phases". */
/* The devices the process's timelines cover (its idle figures are summed over them). */
size_t report_steps_devices(const Profile *p, const ProfProcess *proc);

void report_steps_words(const ProfSteps *s, size_t devices, char *head, size_t head_size, char *phases,
                        size_t phases_size);

#endif
