/* Construction of DistributedDataParallel, as the DDP rules read it (PY011,
 * PY012, PY013): `DistributedDataParallel(model, ...)` under any import
 * spelling (`torch.nn.parallel.DistributedDataParallel`, `DDP` after `from
 * torch.nn.parallel import DistributedDataParallel as DDP`). */
#ifndef ADVISE_RULES_PYTHON_DDP_CALLS_H
#define ADVISE_RULES_PYTHON_DDP_CALLS_H

#include <stdbool.h>

#include "analysis/python/python_query.h"

/* call constructs torch's DistributedDataParallel (names resolved through
 * the imports; a class of that name the file defines is not checked here) */
bool py_constructs_ddp(const PySource *src, TSNode call);

#endif
