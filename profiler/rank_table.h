/* The per-rank view of a merged multi-process profile: per process its
 * compute, communication (NCCL kernels), communication that no compute
 * overlapped, idle GPU time and wall time, and which rank the others wait
 * for in collectives.
 *
 * The straggler model (data-parallel training): every rank launches the same
 * collectives in the same order. A collective cannot finish before the last
 * rank has joined it, so a rank that arrives early sits inside the NCCL
 * kernel until the late one arrives. Summed over the run, the rank with the
 * least NCCL kernel time is therefore the one the others wait for (the
 * straggler: it arrives last, its collectives only move the data), and each
 * other rank's NCCL time beyond the straggler's is time spent waiting for it.
 * Divided by that rank's NCCL launches it is the mean wait per collective
 * call. The model assumes symmetric collectives of the same sizes on every
 * rank (data parallelism); with pipeline or tensor parallelism, or when links
 * differ in speed, the difference also holds real transfer time.
 *
 * Load imbalance is max(compute) / mean(compute) - 1 over the ranks: 0 when
 * every rank computed as long as the others, 0.25 when the slowest computed
 * 25% longer than the average. */
#ifndef ADVISE_RANK_TABLE_H
#define ADVISE_RANK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"

typedef struct {
    int process;            /* into the profile's processes */
    int64_t pid;
    int rank;               /* -1 when not distributed */
    size_t devices;         /* timelines summed into the figures below */
    uint64_t compute_ns;    /* summed over the process's devices */
    uint64_t comm_ns;
    uint64_t exposed_comm_ns;
    uint64_t busy_ns;
    uint64_t idle_ns;       /* span - busy */
    uint64_t wall_ns;
    uint64_t nccl_kernel_ns; /* total duration of its NCCL kernels (not a union) */
    uint64_t nccl_launches;
    uint64_t wait_ns;       /* nccl_kernel_ns beyond the straggler's; 0 without a straggler */
} RankRow;

typedef struct {
    RankRow *rows;          /* ranks ascending, then processes without a rank by pid */
    size_t row_count;
    size_t ranked;          /* rows with a rank and GPU activity: the ones compared */
    /* Straggler: only when at least two ranked rows all launched NCCL kernels. */
    bool has_straggler;
    int waits_for_rank;
    int64_t waits_for_pid;
    uint64_t mean_wait_per_call_ns; /* sum of the others' wait_ns / sum of their NCCL launches */
    /* max compute / mean compute - 1 over the ranked rows; -1 when fewer than
     * two or no compute at all. */
    double load_imbalance;
} RankTable;

/* Fills t from p; false when out of memory (t is then empty). */
bool rank_table_build(const Profile *p, RankTable *t);
void rank_table_free(RankTable *t);

/* How many processes of p have a rank: the report shows the table when
 * more than one. */
size_t rank_table_ranked_processes(const Profile *p);

#endif
