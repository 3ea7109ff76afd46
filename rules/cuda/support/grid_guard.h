/* How a kernel keeps each thread to its own element, the shape CU009 and
 * CU010 both look for: declarations first (the global index
 * `blockIdx.x * blockDim.x + threadIdx.x`, maybe a grid stride
 * `blockDim.x * gridDim.x`), then one of
 *   if (i < E) { ... }                      the rest of the kernel under a bound
 *   if (i >= E) return; ...                 threads past the end leave
 *   for (int i = index; i < E; i += stride) a grid-stride loop
 * where E does not depend on the thread or the block. A rule-side helper
 * (rules/cuda/support/): the two rules ask it with different strictness. */
#ifndef ADVISE_RULES_CUDA_GRID_GUARD_H
#define ADVISE_RULES_CUDA_GRID_GUARD_H

#include "analysis/cuda/cuda_query.h"

typedef enum { GRID_GUARD_IF, GRID_GUARD_RETURN, GRID_GUARD_STRIDE } GridGuardKind;

typedef struct {
    GridGuardKind kind;
    CuNode *body;      /* the kernel's body */
    CuNode *guard;     /* the if or for statement */
    uint32_t guard_at; /* its position in body */
    CuNode *index;     /* the index variable */
    CuNode *stride;    /* a variable holding blockDim.x * gridDim.x, or NULL */
    CuNode *bound;     /* E, as written */
} GridGuard;

enum {
    /* Other declarations may come before the guard, when they read no memory
     * and call nothing (CU009 only asks where threads stop; CU010 rewrites
     * the kernel and keeps nothing but the index and the stride). */
    GRID_GUARD_OTHER_DECLS = 1 << 0,
    /* The condition of an early return may be `i >= E || ...` (CU009: every
     * thread past the end leaves; CU010 merges the condition into another
     * kernel's and takes only `i >= E`). */
    GRID_GUARD_EXIT_OR = 1 << 1,
};

/* The kernel's guard, when its body has this shape; options: the flags above. */
bool grid_guard_of(const CudaSource *src, const CuNode *kernel, unsigned options, GridGuard *out);

#endif
