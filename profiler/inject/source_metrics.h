/* Per-line SASS metrics of one kernel per run (advise profile
 * --source-metrics); see source_metrics.c. Internal to profiler/inject/. */
#ifndef ADVISE_INJECT_SOURCE_METRICS_H
#define ADVISE_INJECT_SOURCE_METRICS_H

#include <cupti.h>
#include <stdbool.h>

#include "profiler/profile.h"

/* The kernel to measure (ADVISE_SOURCE_METRICS_KERNEL, mangled), or NULL
 * for a normal profiling run. */
const char *source_metrics_target(void);
/* Subscribes to module loads and kernel launches; false (with *error set)
 * when CUPTI refuses. */
bool source_metrics_start(CUpti_SubscriberHandle *subscriber, char **error);
/* Adds the measured lines to this process's part. */
void source_metrics_finish(Profile *part);
/* Why nothing (or not everything) was measured, or NULL. */
const char *source_metrics_message(void);

#endif
