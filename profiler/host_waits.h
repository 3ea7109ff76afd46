/* The host's waits for the GPU (synchronizations, blocking copies), kept in
 * order so that the aggregator can ask, for the moment a run of back-to-back
 * GPU work ended, whether the host was waiting for it then (critical path:
 * FORMAT.md `critical_ns`). Times are on the device work's clock.
 *
 * Waits are added in about the order they end (the CUDA call's exit); a
 * query asks about times that only grow per cursor (one cursor per device),
 * so each query is amortised O(1). Bounded: HOST_WAITS_MAX waits are kept;
 * when full, those every cursor has passed are dropped, and if none has,
 * further waits are refused and counted (host_waits_lost). Not thread-safe:
 * the aggregator's lock guards it. */
#ifndef ADVISE_HOST_WAITS_H
#define ADVISE_HOST_WAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_WAITS_MAX (1u << 20)
#define HOST_WAITS_CURSORS 64

typedef struct {
    uint64_t enter, exit;
} HostWait;

typedef struct {
    HostWait *waits;        /* sorted by enter */
    size_t count, cap;
    size_t cursor[HOST_WAITS_CURSORS]; /* per device: waits before it ended before that device's last query */
    size_t cursors;         /* cursors in use */
    uint64_t lost;          /* waits refused for want of room */
} HostWaits;

void host_waits_init(HostWaits *w);
void host_waits_free(HostWaits *w);
/* One wait of the host, [enter, exit]. */
void host_waits_add(HostWaits *w, uint64_t enter, uint64_t exit);
/* Was the host waiting at time t (enter <= t <= exit)? cursor: the
 * querying device's, 0 to HOST_WAITS_CURSORS - 1; its queries must not go
 * back in time by more than the waits they skip (an earlier t may miss a
 * wait already passed, and reads as not waiting). */
bool host_waits_at(HostWaits *w, size_t cursor, uint64_t t);

#endif
