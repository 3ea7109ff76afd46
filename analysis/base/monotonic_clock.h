/* Seconds on the monotonic clock, for intervals (timeouts, timing logs). */
#ifndef ADVISE_MONOTONIC_CLOCK_H
#define ADVISE_MONOTONIC_CLOCK_H

double monotonic_seconds(void);

#endif
