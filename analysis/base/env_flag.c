#include "analysis/base/env_flag.h"

#include <stdlib.h>
#include <string.h>

bool env_flag(const char *name, int *cache) {
    int w = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (w < 0) {
        const char *v = getenv(name);
        w = v && *v && strcmp(v, "0") != 0;
        __atomic_store_n(cache, w, __ATOMIC_RELAXED);
    }
    return w;
}
