/* How much faster float32 matrix products run when TF32 tensor cores take
 * them from the FP32 CUDA cores, by the size of the product as a profile
 * sees it: the FP32 kernel's duration per call. Small products gain far
 * less than the peak rates' ratio (7.4x on an H200): launch, tiling and
 * memory costs stay. PY009's measured gain and PR019 use it. */
#ifndef ADVISE_TF32_MODEL_H
#define ADVISE_TF32_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "profiler/profile.h"

/* TF32 over FP32 dense peak rate of the device's compute capability; 0
 * when unknown (no TF32 tensor cores, or a chip not in the table). */
double tf32_peak_ratio(const ProfDevice *d);

/* The expected speed-up of one FP32 GEMM kernel call that took
 * fp32_ns_per_call: the H200's measured curve (tf32_model.c), never above
 * the device's peak ratio; 0 when the device is unknown. */
double tf32_speedup(const ProfDevice *d, double fp32_ns_per_call);

/* The GPU time TF32 would save on `calls` FP32 GEMM calls that took
 * total_ns together (their mean duration picks the speed-up). */
double tf32_saved_ns(const ProfDevice *d, uint64_t total_ns, uint64_t calls);

/* The model in words, for a finding's gain model. */
#define TF32_MODEL_WORDS                                                                                           \
    "each kernel's time x (1 - 1/S), S the TF32 speed-up measured on an H200 for an FP32 GEMM kernel of that "    \
    "duration per call (none at 2 us, 1.3x at 4 us, 2.5x at 32 us, 4x at 256 us, 6.6x from 8 ms; bench/tf32), at most the "   \
    "GPU's peak ratio"

#endif
