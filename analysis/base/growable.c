/* Growable arrays (growable.h). */
#include "analysis/base/growable.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool array_reserve_n(void *items_ptr, size_t count, size_t more, size_t *cap, size_t size, size_t first) {
    if (more > SIZE_MAX - count) return false;
    size_t wanted = count + more;
    if (wanted <= *cap) return true;
    size_t most = size ? SIZE_MAX / size : SIZE_MAX; /* elements whose bytes a size_t still counts */
    if (wanted > most) return false;
    size_t grown = *cap ? *cap : first ? first : 1;
    if (grown > most) grown = most;
    while (grown < wanted) grown = grown > most / 2 ? most : grown * 2;
    void *items;
    memcpy(&items, items_ptr, sizeof items);
    void *p = realloc(items, grown * size);
    if (!p) return false;
    memcpy(items_ptr, &p, sizeof p);
    *cap = grown;
    return true;
}

bool array_reserve(void *items_ptr, size_t count, size_t *cap, size_t size, size_t first) {
    return array_reserve_n(items_ptr, count, 1, cap, size, first);
}
