/* Which GPU kernels are communication: NCCL's collective and point-to-point
 * kernels, told apart from compute by their demangled names. The aggregator
 * keeps their time apart (compute_ns, comm_ns and exposed_comm_ns of
 * ProfTimeline) and profiler/rank_table.c compares it across ranks. */
#ifndef ADVISE_COMM_KERNELS_H
#define ADVISE_COMM_KERNELS_H

#include <stdbool.h>

/* True for an NCCL kernel:
 *   "ncclKernel_AllReduce_RING_LL_Sum_float(...)"         (NCCL 2.x before 2.19)
 *   "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgs...)" (NCCL 2.19 and later)
 *   any other name whose function part (before the first '(') contains
 *   "nccl" (any case) and one of AllReduce, AllGather, ReduceScatter,
 *   Broadcast, Reduce, SendRecv, Send or Recv.
 * A leading "void " is skipped. A kernel that merely takes an NCCL type as a
 * parameter is not communication. NULL is not. */
bool comm_kernel_name(const char *demangled);

/* The collective an NCCL kernel runs, in words: "all-reduce", "all-gather",
 * "reduce-scatter", "broadcast", "reduce" or "send/receive"; NULL for a
 * kernel that is not communication or whose name does not say (NCCL 2.19's
 * "ncclDevKernel_Generic"). */
const char *comm_kernel_collective(const char *demangled);

#endif
