/* What the profile rules (rules/profile/) share: the operations of one file
 * grouped by line, where a line's text is, which kernels come from vendor
 * libraries, what kind of kernel a name is, and a theoretical occupancy
 * calculator.
 *
 * Pure C over profile.h, profile_view.h and rule.h; the occupancy and name
 * helpers are pure functions with unit tests (tests/test_profile_rules.c). */
#ifndef ADVISE_PROFILE_FACTS_H
#define ADVISE_PROFILE_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"
#include "profiler/profile_view.h"
#include "rules/rule.h"

/* ---- the operations of one file, by line ------------------------------- */

typedef struct {
    uint32_t line;           /* 1-based */
    const ProfSite *site;    /* the first site at the line (function, function_level) */
    const ProfOp **ops;      /* in profile order */
    size_t op_count;
} PfLine;

typedef struct {
    PfLine *lines;           /* sorted by line; only lines with operations */
    size_t count;
    const ProfOp **storage;  /* owns the ops arrays */
} PfLines;

/* Every operation whose site lies in file (an index into the profile's
 * files), grouped by line, from the view's index. False when memory runs out. */
bool pf_lines_of_file(const ProfileView *v, int file, PfLines *out);
void pf_lines_free(PfLines *lines);
/* The same for the document being checked (ctx->profile_file); false when
 * memory runs out (the context remembers). */
bool pf_file_lines(RuleContext *ctx, PfLines *out);
/* Calls visit for each line of the document that has operations, in line
 * order, until memory runs out (the context remembers); data is the rule's. */
typedef void (*PfLineVisit)(RuleContext *ctx, const PfLine *line, const void *data);
void pf_each_line(RuleContext *ctx, PfLineVisit visit, const void *data);

/* ---- reporting on a line ----------------------------------------------- */

/* The text of 1-based line `line` of doc, from its first non-blank byte to
 * the end of its content. False when the line does not exist or is blank
 * (the file changed since it was profiled). */
bool pf_line_range(const Document *doc, uint32_t line, size_t *start, size_t *end);

/* Is the code that starts on line (1-based) inside a loop (for, while, do;
 * in Python a loop or comprehension of its own function, py_enclosing_loop)?
 * True when the document has no
 * parse tree to tell (the cautious answer for rules that demote one-off code). */
bool pf_line_in_loop(const RuleContext *ctx, uint32_t line);
/* rule_report over that range; NULL when the line is not there or memory ran out. */
Finding *pf_report_line(RuleContext *ctx, uint32_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* ---- writing figures ---------------------------------------------------- */

/* Figures are written by analysis/units.h (units_ns, units_ratio, ...) in
 * messages, and go into evidence as numbers (finding_measured). */

/* ---- kernel names -------------------------------------------------------- */

/* The name without its return type and parameter list, shortened to fit
 * size with "..." ("void at::native::foo<4>(int, float*)" -> "at::native::foo<4>").
 * The function's own name is kernel_base_name (profiler/kernel_name.h). */
const char *pf_kernel_display_name(const char *name, char *buf, size_t size);
/* A kernel of a vendor library or framework (cuBLAS, cuDNN, CUTLASS,
 * PyTorch's ATen, Triton, NCCL, ...), whose launch configuration and
 * resource use the user does not choose. Conservative: unknown names are
 * the user's. */
bool pf_kernel_is_library(const char *name);
/* Kinds of kernels, by name (case-insensitive substrings). */
bool pf_kernel_is_gemm(const char *name);
bool pf_kernel_is_softmax(const char *name);
/* flash, memory-efficient or cuDNN fused attention */
bool pf_kernel_is_fused_attention(const char *name);

/* ---- CUDA sources --------------------------------------------------------- */

/* The definition (with a body) of the __global__ function called base_name
 * (kernel_base_name) in src, in any namespace; NULL when there is none.
 * *line gets the 1-based line of its name. */
const CuNode *pf_cuda_kernel_definition(const CudaSource *src, const char *base_name, uint32_t *line);

/* The user's kernel: this CUDA document defines a __global__ function of its
 * name, or its name is not a library's (pf_kernel_is_library). False when
 * memory runs out (ctx remembers). */
bool pf_kernel_is_users(RuleContext *ctx, const ProfKernel *k);

/* Calls visit once per (line, kernel configuration) of this file's launches
 * of the user's own kernels that take at least min_share of GPU time
 * (share: the kernel's fraction of it). Stops when memory runs out (the
 * context remembers). */
typedef void (*PfLaunchVisit)(RuleContext *ctx, uint32_t line, const ProfOp *op, const ProfKernel *k,
                              double share);
void pf_each_user_launch(RuleContext *ctx, double min_share, PfLaunchVisit visit);

/* ---- devices and occupancy ---------------------------------------------- */

/* The device a kernel ran on, else the profile's first device, else NULL. */
const ProfDevice *pf_kernel_device(const ProfileView *v, const ProfKernel *k);

typedef enum {
    PF_LIMIT_NONE,       /* the block cannot run at all (see Occupancy.reason) */
    PF_LIMIT_WARPS,      /* the SM's warp slots */
    PF_LIMIT_BLOCKS,     /* the SM's block slots */
    PF_LIMIT_REGISTERS,
    PF_LIMIT_SHARED,
} PfLimit;

typedef struct {
    uint32_t warps_per_block;
    uint32_t blocks_by_warps, blocks_by_blocks, blocks_by_registers, blocks_by_shared;
    uint32_t blocks_per_sm;  /* resident blocks: the least of the four; 0 when it cannot launch */
    uint32_t active_warps;   /* blocks_per_sm * warps_per_block */
    double occupancy;        /* active_warps / max_warps_per_sm */
    PfLimit limit;           /* the resource that sets blocks_per_sm (the first of equals in the order above) */
    uint32_t registers_per_warp;   /* allocated: rounded up to the allocation unit */
    uint32_t shared_per_block;     /* allocated: with the system reserve, rounded up */
} Occupancy;

/* Theoretical occupancy of a block of `threads` threads using `registers`
 * registers per thread and `shared` bytes of shared memory (static +
 * dynamic) on dev, as CUDA's occupancy calculator (cuda_occupancy.h)
 * computes it: registers are allocated per warp in units of 256, in the
 * SM's 4 sub-partitions (2 on sm_60); shared memory in units of 128 bytes
 * (256 before sm_80) plus 1 KiB reserved per block from sm_80 on, against
 * the shared memory per SM the device reports. False when the device lacks
 * the limits (a placeholder device) or threads is 0. */
bool pf_occupancy(const ProfDevice *dev, uint64_t threads, uint32_t registers, uint64_t shared, Occupancy *out);
/* The same for a kernel configuration of the profile. */
bool pf_kernel_occupancy(const ProfDevice *dev, const ProfKernel *k, Occupancy *out);
/* Threads per block and blocks per grid of a kernel configuration. */
uint64_t pf_threads_per_block(const ProfKernel *k);
uint64_t pf_grid_blocks(const ProfKernel *k);
const char *pf_limit_name(PfLimit limit);

#endif
