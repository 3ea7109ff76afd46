/* The innermost user-code Python frame around each host moment of a trace.
 *
 * Spans are python_function events ([start, end] on one pid/tid, with the
 * user frame they denote or -1); moments are the host API calls. For each
 * moment the answer is the frame of the innermost enclosing span that is
 * user code: latest start first; on equal starts, the shorter span is the
 * inner one. Both inclusive ends count as inside.
 *
 * O((spans + moments) log) time: both are sorted by (pid, tid, time), then
 * one sweep per thread keeps the open spans on a stack, each stack entry
 * knowing the nearest user span at or below it. Spans that do not nest (a
 * broken or hostile trace) cost a bounded number of extra checks and never
 * give an answer that does not enclose the moment. */
#ifndef ADVISE_TORCH_STACKS_H
#define ADVISE_TORCH_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t pid, tid;
    uint64_t start_ns, end_ns;
    int frame;          /* user frame id, or -1 */
} TorchSpan;

typedef struct {
    int64_t pid, tid;
    uint64_t ts_ns;
    int frame;          /* out: the innermost enclosing user frame, or -1 */
} TorchMoment;

/* Sorts spans in place and fills each moment's frame (moments keep their
 * order). False when out of memory (frames are then all -1). */
bool torch_stacks_resolve(TorchSpan *spans, size_t span_count, TorchMoment *moments, size_t moment_count);

#endif
