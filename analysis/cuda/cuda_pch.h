/* The CUDA runtime headers parsed once per set of flags. In CUDA mode clang
 * reads __clang_cuda_runtime_wrapper.h (cuda_runtime.h and the rest) and the
 * -include files (advise's nvcc compatibility header, a database's own)
 * before a file's first line; every .cu file parsed with the same flags
 * reads the same text there. A precompiled header of exactly that prefix,
 * an empty file parsed with the same flags (function bodies skipped, as the
 * preamble skips them), is handed to the parse of each file with
 * -include-pch: clang then skips what the header holds and reads the file
 * from its first line, so a file that #defines something before its own
 * #include <cuda_fp16.h> still sees what it saw without it.
 *
 * The headers live in a private temporary folder removed when the process
 * exits. A flag list gets its header the second time a file asks for it (a
 * run with one .cu file pays nothing); a header that fails to build, or that
 * clang rejects, is never offered again, and the file is parsed as before.
 * ADVISE_CUDA_PCH=0 turns it off, ADVISE_CUDA_PCH=eager builds it for the
 * first file already (both for benchmarks and debugging).
 * Thread-safe: a thread that asks while another builds the same header
 * waits for it (a minute at most, then parses without it). */
#ifndef ADVISE_CUDA_PCH_H
#define ADVISE_CUDA_PCH_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/cuda/cuda_flags.h"

/* The precompiled prefix for flags, or NULL: parse without one. The path
 * stays valid until the process exits. */
const char *cuda_pch_for(const CudaFlags *flags);

/* A header of the CUDA prefix and a file's include preamble (its first
 * `preamble` bytes, cuda_preamble.h), for a file at path parsed with flags:
 * files of one folder that open with the same #include lines read their
 * headers from it, parsed once, and are parsed with those lines blanked.
 * Built when a second file (not path again) asks with the same folder,
 * flags and lines (at most MAX_PREAMBLES per process); NULL: parse
 * without it. Function bodies
 * are kept, as a file's first parse keeps them. */
const char *cuda_pch_for_preamble(const CudaFlags *flags, const char *path, const char *text, size_t preamble);

/* clang rejected the header at path (it changed under us, or reads
 * differently): it is not offered again. */
void cuda_pch_reject(const char *path);

/* What this process did, for tests and `advise debug-ast`. */
typedef struct {
    size_t built;    /* headers built */
    size_t failed;   /* builds that failed (and headers rejected) */
    size_t used;     /* parses handed a header */
} CudaPchStats;
void cuda_pch_stats(CudaPchStats *out);

/* False when ADVISE_CUDA_PCH=0 (read once). */
bool cuda_pch_enabled(void);

#endif
