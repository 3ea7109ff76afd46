/* Charging the SASS instructions that CUPTI maps into headers outside the
 * project (CUDA's cuda_bf16.hpp conversions, intrinsics: code inlined into
 * a kernel) to the project line that inlined them. CUPTI's SASS-to-source
 * correlation names only the innermost line, so `(float)x[i]` with x of
 * type __nv_bfloat16 has its loads in cuda_bf16.hpp; without this they
 * were dropped, and the kernel's hottest line showed no loads at all.
 *
 * The line that inlined them is taken as the project line of the nearest
 * instruction (by offset) of the same function: inlined code sits among the
 * instructions of the expression that called it. Pure C, no CUPTI: the
 * injection library (profiler/inject/source_metrics.c) uses it and the
 * tests check it. */
#ifndef ADVISE_SASS_LINES_H
#define ADVISE_SASS_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    SASS_UNMAPPED, /* no line table entry */
    SASS_PROJECT,  /* a line of a project file */
    SASS_HEADER,   /* a line of a file outside the project */
} SassMapping;

typedef struct {
    const char *function; /* the function the instruction belongs to */
    uint64_t cubin;       /* its module (CUPTI's cubin CRC) */
    uint32_t pc;          /* its offset in the function */
    SassMapping mapping;
} SassRecord;

#define SASS_KEEP (-1L)      /* stays where it was mapped (or nowhere) */
#define SASS_NO_PROJECT (-2L) /* a header instruction whose function has no project line */

/* charged_to[i] (n entries): for a SASS_HEADER record, the index of the
 * SASS_PROJECT record of the same function and cubin nearest to it by pc
 * (the preceding one on a tie), else SASS_NO_PROJECT; SASS_KEEP for every
 * other record. False when memory runs out (charged_to is then all SASS_KEEP). */
bool sass_charge_inlined(const SassRecord *records, size_t n, long *charged_to);

/* The path under which an instruction of a file outside the project is
 * counted when no project line takes it: "<cuda-headers>/NAME" for CUDA's
 * own headers (a path holding "/cuda" and "/include/"), else
 * "<outside-project>/NAME". Written into buf; returns buf. */
const char *sass_outside_path(const char *real_path, char *buf, size_t size);

#endif
