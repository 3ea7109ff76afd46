/* The CUDA index analysis the rules share: how a value varies across the
 * threads of a block (the same for all, the same within each warp, or per
 * thread), which thread and block indices it depends on, and how an index
 * expression moves with the lane: its threadIdx.x coefficient, followed
 * through local variables, `%` and `/` splits of the thread index, shifts
 * and masks, per-thread base pointers (`float *row = out + t * C;`) and
 * cooperative-groups ranks (`block.thread_rank()`, `warp.thread_rank()`).
 *
 * One CuIndex per function; answers about local variables are cached in it.
 * Variables are followed flow-insensitively: a local's value is any of its
 * initializer and the assignments to it anywhere in the function. Parameters,
 * globals and `__shared__` scalars hold one value for the whole block. */
#ifndef ADVISE_CUDA_INDEX_H
#define ADVISE_CUDA_INDEX_H

#include "analysis/cuda/cuda_source.h"

typedef struct CuIndex CuIndex;

/* fn: the function whose locals are followed (a kernel, a __device__
 * function, a lambda); NULL analyses nothing through variables. */
CuIndex *cu_index_new(const CudaSource *src, const CuNode *fn);
void cu_index_free(CuIndex *ix);
const CuNode *cu_index_function(const CuIndex *ix);
/* The block's x dimension is known (every launch of the kernel in this
 * file uses it): when it is a multiple of 32, a warp never spans two values
 * of threadIdx.y or threadIdx.z, so those are warp-uniform. */
void cu_index_assume_block_x(CuIndex *ix, long long block_x);

/* ---- variation across the threads of a block ---------------------------- */

typedef enum {
    CU_UNIFORM = 0,      /* the same in every thread of the block */
    CU_WARP_UNIFORM = 1, /* the same within each warp (`tid / 32`, `warp.meta_group_rank()`, `__ballot_sync`) */
    CU_PER_THREAD = 2,   /* can differ between the lanes of one warp */
} CuVariance;

CuVariance cu_index_variance(CuIndex *ix, const CuNode *expr);
/* expr (an expression, or a variable's declaration) depends on
 * threadIdx.<axis> (axis 0: any axis, or a thread rank), warp-uniformly or
 * not, directly or through local variables */
bool cu_index_uses_thread(CuIndex *ix, const CuNode *expr, char axis);
/* ...on blockIdx (any axis) */
bool cu_index_uses_block(CuIndex *ix, const CuNode *expr);

/* One-shot forms for callers without a CuIndex (each builds and frees one
 * for the function holding expr). */
bool cu_depends_on_thread(const CudaSource *src, const CuNode *expr, char axis);
bool cu_depends_on_thread_or_block(const CudaSource *src, const CuNode *expr);

/* The initializer of a local variable that is never assigned, stepped or
 * handed out by address in the function (its uses can be read as the
 * initializer); NULL otherwise. */
const CuNode *cu_index_single_value(CuIndex *ix, const CuNode *decl);

/* The values a local variable takes: its initializer and the right-hand
 * sides of the plain assignments to it, at most max in out. Returns how
 * many, or -1 when it is also changed another way (`+=`, `++`, its address
 * handed out) or has more than max. */
int cu_index_values(CuIndex *ix, const CuNode *decl, const CuNode **out, int max);

/* ---- divergence: code that only some threads run --------------------------- */

typedef struct {
    const CuNode *cond;      /* the condition */
    const CuNode *construct; /* the if, switch, loop, ?:, && or || it belongs to */
    bool polarity;           /* false where the code runs when the condition is false */
} CuGuard;

/* The conditions that vary at least as much as `least` (CU_WARP_UNIFORM: any
 * thread dependence) and decide whether n runs, from n up to (not including)
 * stop or the enclosing function, innermost first. Returns how many there
 * are (more than max may exist; out gets the first max). A `for` loop whose
 * start and bound move with the thread by the same amount (`for (t = base +
 * tid; t < end + tid; t += C)`, a uniform trip count) is not divergent. */
int cu_index_divergent_guards(CuIndex *ix, const CuNode *n, const CuNode *stop, CuVariance least, CuGuard *out,
                              int max);

typedef struct {
    const CuNode *exit; /* a return, break or continue */
    CuGuard guard;      /* the thread-dependent condition it is taken under */
} CuExit;

/* The return/break/continue statements of the function that only some
 * threads take and that keep those threads from reaching `at`: a return
 * before it (or before its next run in a loop around both), a break out of a
 * loop around it, a continue before it in such a loop. Returns count only
 * under a condition that varies at least as much as `least_return`; breaks
 * and continues under any thread dependence. Returns how many were found
 * (out gets the first max). */
int cu_index_divergent_exits(CuIndex *ix, const CuNode *at, CuVariance least_return, CuExit *out, int max);

/* ---- the lane coefficient ------------------------------------------------- */

typedef enum {
    CU_LANE_ZERO,    /* the same for every lane of a warp (up to a change every 32 lanes or more) */
    CU_LANE_CONST,   /* moves by `c` when threadIdx.x moves by one */
    CU_LANE_RUNTIME, /* moves by c * factors (runtime values the same for every thread) */
    CU_LANE_UNKNOWN, /* not understood */
} CuLaneKind;

enum { CU_LANE_MAX_FACTORS = 4 };

typedef struct {
    CuLaneKind kind;
    long long c; /* CONST: the coefficient; RUNTIME: its constant part */
    const CuNode *factors[CU_LANE_MAX_FACTORS]; /* RUNTIME: the runtime multipliers */
    int factor_count;
    const CuNode *carrier; /* where the lane enters: threadIdx.x, a rank call, or a variable derived from them */
} CuLane;

/* The threadIdx.x coefficient of an integer expression. threadIdx.y/z,
 * blockIdx, blockDim, parameters and anything that does not depend on
 * threadIdx.x count as zero. `x % m` keeps x's coefficient when m is at least
 * 32 times it (or a runtime value not named as a small count); `x / m` is zero
 * when m is at least 32 times it, exact when it divides it, and zero for a
 * runtime m only where the function also takes `x % m` (a row/column split;
 * otherwise m may be tiny and it is not understood); `>>` and `&` masks
 * likewise. A runtime multiplier that is a template argument or a vector's
 * width (`16 / sizeof(T)`) is not understood either. */
CuLane cu_index_lane(CuIndex *ix, const CuNode *expr);
/* The same for a pointer expression, in elements of `unit` bytes (0: any
 * unit, only a zero coefficient is wanted); *global is set when the pointer
 * is rooted in a pointer parameter of the function (a kernel's global
 * memory). */
CuLane cu_index_pointer_lane(CuIndex *ix, const CuNode *expr, long long unit, bool *global);

/* A runtime value named as a (small) channel or component count: `channels`,
 * `num_comp`, `bpp`. */
bool cu_index_names_small_count(const CudaSource *src, const CuNode *n);

#endif
