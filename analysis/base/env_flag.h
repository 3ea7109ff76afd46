/* A diagnostic switch read from the environment once, from any thread. */
#ifndef ADVISE_ENV_FLAG_H
#define ADVISE_ENV_FLAG_H

#include <stdbool.h>

/* True when the variable is set to something other than "" or "0". *cache
 * starts at -1 and keeps the answer: threads may race to fill it, each
 * with the same value. */
bool env_flag(const char *name, int *cache);

#endif
