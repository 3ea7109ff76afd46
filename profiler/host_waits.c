#include "profiler/host_waits.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"

void host_waits_init(HostWaits *w) {
    memset(w, 0, sizeof *w);
}

void host_waits_free(HostWaits *w) {
    free(w->waits);
    memset(w, 0, sizeof *w);
}

/* Drops the waits that every cursor in use has passed. */
static void drop_passed(HostWaits *w) {
    size_t passed = w->count;
    for (size_t c = 0; c < w->cursors; c++)
        if (w->cursor[c] < passed) passed = w->cursor[c];
    if (!w->cursors) passed = 0; /* nobody has asked yet: nothing is known to be passed */
    if (!passed) return;
    memmove(w->waits, w->waits + passed, (w->count - passed) * sizeof *w->waits);
    w->count -= passed;
    for (size_t c = 0; c < w->cursors; c++) w->cursor[c] -= passed;
}

static bool make_room(HostWaits *w) {
    if (w->count < HOST_WAITS_MAX && array_reserve(&w->waits, w->count, &w->cap, sizeof *w->waits, 256)) return true;
    drop_passed(w);
    return w->count < w->cap;
}

void host_waits_add(HostWaits *w, uint64_t enter, uint64_t exit) {
    if (exit < enter) return;
    if (!make_room(w)) {
        w->lost++;
        return;
    }
    /* insertion from the end: waits arrive nearly in order */
    size_t i = w->count;
    while (i > 0 && w->waits[i - 1].enter > enter) i--;
    memmove(w->waits + i + 1, w->waits + i, (w->count - i) * sizeof *w->waits);
    w->waits[i] = (HostWait){enter, exit};
    w->count++;
    /* a wait inserted before a cursor would never be seen by that device */
    for (size_t c = 0; c < w->cursors; c++)
        if (w->cursor[c] > i) w->cursor[c] = i;
}

bool host_waits_at(HostWaits *w, size_t cursor, uint64_t t) {
    if (cursor >= HOST_WAITS_CURSORS) return false;
    while (w->cursors <= cursor) w->cursor[w->cursors++] = 0;
    size_t i = w->cursor[cursor];
    /* skip the waits that ended before t and that no wait before them outlasts */
    while (i < w->count && w->waits[i].exit < t) i++;
    w->cursor[cursor] = i;
    for (size_t j = i; j < w->count && w->waits[j].enter <= t; j++)
        if (w->waits[j].exit >= t) return true;
    return false;
}
