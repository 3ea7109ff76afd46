/* Growable arrays (growable.h). */
#include "analysis/base/growable.h"

#include <stdlib.h>
#include <string.h>

bool array_reserve(void *items_ptr, size_t count, size_t *cap, size_t size, size_t first) {
    if (count < *cap) return true;
    size_t grown = *cap ? *cap * 2 : first;
    void *items;
    memcpy(&items, items_ptr, sizeof items);
    void *p = realloc(items, grown * size);
    if (!p) return false;
    memcpy(items_ptr, &p, sizeof p);
    *cap = grown;
    return true;
}
