/* What the multi-GPU rules (PR013, PR014) and the communication measure
 * (MEASURE_COMM in measure_ranks.c) share: the lines of the user's code
 * that launched NCCL kernels, the one that launched most of them, and the
 * words for the rows of the rank table (profiler/rank_table.h).
 *
 * A profile measures communication per GPU (ProfTimeline: comm_ns,
 * exposed_comm_ns), not per line: a line's NCCL time is the duration of the
 * NCCL kernels launched there, and how much of it overlapped compute is
 * only known for the whole process. */
#ifndef ADVISE_COMM_FACTS_H
#define ADVISE_COMM_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"
#include "profiler/rank_table.h"
#include "rules/rule.h"

typedef struct {
    int file;                 /* into the profile's files */
    uint32_t line;
    bool function_level;      /* the site names a function only (imported traces) */
    uint64_t ns;              /* NCCL kernel time launched there, all processes */
    uint64_t launches;
    uint64_t most_launches;   /* by one process */
    size_t processes;         /* processes that launched NCCL kernels there */
    const char *collective;   /* of its NCCL kernel with the most time (comm_kernel_collective), or NULL */
} CommLine;

typedef struct {
    CommLine *lines;          /* most NCCL time first, then by file and line */
    size_t count;
    uint64_t total_ns;        /* all NCCL kernel time of the run, with a line or not */
} CommLines;

/* The lines of p whose launches include NCCL kernels. False when memory runs out. */
bool comm_lines_build(const Profile *p, CommLines *out);
void comm_lines_free(CommLines *l);

/* The line that launched the most NCCL time among those some process
 * launched NCCL kernels from at least twice: the per-step communication,
 * not a one-off broadcast at start-up. NULL when there is none. */
const CommLine *comm_lines_main(const CommLines *l);

/* "line 20" for a line of file here_file, else "`train/loop.py` line 20". */
const char *comm_line_place(const Profile *p, int here_file, const CommLine *l, char *buf, size_t size);

/* A row of the rank table that took part in communication: it used a GPU
 * and launched NCCL kernels. */
bool comm_row_communicates(const RankRow *r);
/* "rank 3", or "pid 4242" for a process without a rank. */
const char *comm_row_name(const RankRow *r, char *buf, size_t size);
/* The row's GPU span, summed over its devices (busy + idle). */
uint64_t comm_row_span(const RankRow *r);
/* The communicating row with the least exposed communication; NULL when none. */
const RankRow *comm_least_exposed(const RankTable *t);
/* Communicating rows of t. */
size_t comm_rows(const RankTable *t);

/* For the profile rules placed at the run's main NCCL line (PR013, PR014):
 * builds the lines and the rank table and calls judge when that line is in
 * the context's file; sets ctx->out_of_memory when memory runs out. */
typedef void (*CommJudge)(RuleContext *ctx, const RankTable *t, const CommLines *lines, const CommLine *top);
void comm_judge_main_line(RuleContext *ctx, CommJudge judge);

#endif
