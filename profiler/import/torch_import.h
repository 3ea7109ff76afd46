/* `advise import`: turns a torch.profiler Chrome trace (kineto's JSON,
 * recorded with `with_stack=True`) into an advise profile.
 *
 * What is read (everything else is ignored: flows `ph: s/f` such as `ac2g`,
 * `cpu_op`, `user_annotation`, `gpu_user_annotation`, `cuda_sync`,
 * metadata `ph: M`, `Trace` spans, instant events):
 *   - `kernel` events: name, ts/dur (µs, floats), args `device`, `stream`,
 *     `correlation`, `grid`, `block`, `registers per thread`, `shared memory`.
 *     kineto writes `shared memory` as static + dynamic bytes together; it
 *     goes into ProfKernel.static_shared (dynamic_shared stays 0).
 *   - `gpu_memcpy` / `gpu_memset`: direction and memory kinds from the name
 *     (`Memcpy DtoH (Device -> Pageable)`, `Memset (Device)`), args `bytes`.
 *   - `cuda_runtime` / `cuda_driver`: host time per API function; the
 *     synchronisations (cudaDeviceSynchronize, cudaStreamSynchronize,
 *     cudaEventSynchronize, cudaStreamWaitEvent and cuCtx/cuStream/cuEvent
 *     equivalents) and allocations (cudaMalloc*, cudaHostAlloc, cuMemAlloc*,
 *     cuMemHostAlloc) as operations. A driver call made inside a runtime call
 *     on the same thread is not counted a second time as an operation.
 *   - `overhead` events, and the top-level `deviceProperties` array.
 *
 * Call sites. A GPU event's args.correlation names the runtime (or driver)
 * call that launched it; that call ran on a host thread (pid, tid) at ts.
 * The Python stack at that moment is the set of `python_function` events of
 * the same pid and tid whose [ts, ts + dur] holds it. The site is the
 * innermost of them (latest start; on equal starts, the shorter) whose file
 * is user code (see torch_user_code.h: under the project root, not in
 * site-packages/dist-packages, not in a `torch/` package, not `<built-in>`
 * or `<frozen ...>`). Syncs and allocations use their own runtime call.
 *
 * LIMIT: torch.profiler names a python_function event after the called
 * function's code object and the line its frame was at when entered, which
 * is the function's first line (its `def`, or its first decorator), not the
 * line that made the call. Imported sites are therefore function-level
 * (agg_function_site, ProfSite.function_level): "GPU work launched from
 * inside train_step()", never "from line 42".
 *
 * LIMIT: work launched from threads without Python frames (the backward
 * pass runs on autograd's per-device threads) gets no site.
 *
 * Cost: the whole trace is parsed in memory by jansson, which dominates:
 * a 200 MB trace of 1.35 M events took about 12 s and 2.5 GB here. */
#ifndef ADVISE_TORCH_IMPORT_H
#define ADVISE_TORCH_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"

/* Traces are parsed in memory; larger files are refused. */
#define TORCH_IMPORT_MAX_BYTES ((size_t)2 << 30)

/* What an import found, for the command line to report. */
typedef struct {
    uint64_t kernels;          /* kernel events imported */
    uint64_t copies;           /* memcpy events imported */
    uint64_t memsets;
    uint64_t syncs;
    uint64_t allocations;
    uint64_t api_calls;        /* cuda_runtime + cuda_driver events */
    uint64_t python_events;    /* python_function events: 0 means no with_stack */
    uint64_t attributed;       /* GPU events, syncs and allocations given a user site */
    uint64_t skipped;          /* events of a used category with a missing or ill-typed field */
} TorchImportReport;

/* Parses text (length bytes of a Chrome trace) and builds the profile.
 * project_root: the folder user code lives under (absolute or relative to
 * the current directory). trace_path_for_messages names the trace in error
 * messages and in the profile's name and command. report may be NULL.
 * Returns NULL with *error (a message for a person, to free) when the text
 * is not JSON, has no traceEvents array, or memory runs out. Ill-typed
 * events are skipped and counted, never fatal. */
Profile *torch_import_report(const char *text, size_t length, const char *project_root,
                             const char *trace_path_for_messages, TorchImportReport *report, char **error);

Profile *torch_import(const char *text, size_t length, const char *project_root,
                      const char *trace_path_for_messages, char **error);

#endif
