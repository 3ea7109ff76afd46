/* The per-rank table (profiler/rank_table.h) as text, shared by `advise
 * ranks` and `advise report`. */
#ifndef ADVISE_RANK_TEXT_H
#define ADVISE_RANK_TEXT_H

#include <stdio.h>

#include "profiler/rank_table.h"

/* One row per process, then the load imbalance and the straggler line. */
void rank_text_write(FILE *out, const RankTable *t);

#endif
