/* Headers advise adds to every libclang parse of CUDA so that clang 19
 * accepts what nvcc 13 compiles: an empty texture_fetch_functions.h (CUDA 13
 * removed it, clang's wrapper includes it), declarations nvcc makes that
 * clang's CUDA headers lack (cache-hinted loads and stores such as __ldcs,
 * host min/max), and the OpenMP API when clang's omp.h is not installed.
 * They live in a cache folder (~/.cache/advise/cuda13-shim, or under
 * $XDG_CACHE_HOME) put on the include path with -isystem. */
#ifndef ADVISE_CUDA_SHIMS_H
#define ADVISE_CUDA_SHIMS_H

#include <stdbool.h>

/* The header force-included (-include) into CUDA parses. */
#define CUDA_NVCC_COMPAT_HEADER "advise_nvcc_compat.h"

/* The folder holding the headers, written on first use; "" when it cannot
 * be written. */
const char *cuda_shim_dir(void);

#endif
