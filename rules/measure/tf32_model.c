/* The TF32 speed-up of float32 GEMMs by kernel duration (tf32_model.h).
 *
 * Data: bench/tf32/gemm_kernels.py on an NVIDIA H200, PyTorch 2.11, CUPTI
 * kernel durations of `a @ b` in FP32, TF32 and bf16 for 100 shapes (M
 * 128-65536, N and K 64-50304), 2026-12-02 (bench/tf32/results/
 * h200-kernels-2026-12-02.json). The speed-up grows with the FP32 kernel's
 * duration; at a given duration it is lowest for a small K (the product is
 * bound by memory, not arithmetic). The curve below takes, for each
 * power-of-two band of durations, about the lower quartile of the measured
 * speed-ups, made non-decreasing: a gain should not be promised that most
 * products of that size do not reach. Below 4 us nothing was measured and
 * nothing is promised: 1.0x at 2 us. tests/test_tf32_model.c checks it
 * against the data. */
#include "rules/measure/tf32_model.h"

#include <math.h>

typedef struct {
    double us;      /* FP32 kernel duration per call */
    double speedup; /* TF32 */
} Knot;

static const Knot h200_curve[] = {
    {2, 1.0},   {4, 1.3},   {8, 1.4},    {16, 1.95},  {32, 2.5},   {64, 2.8},   {128, 3.4},
    {256, 4.0}, {512, 4.5},  {1024, 4.6}, {2048, 5.5}, {4096, 6.0}, {8192, 6.6},
};
#define KNOTS (sizeof h200_curve / sizeof *h200_curve)

double tf32_peak_ratio(const ProfDevice *d) {
    if (!d) return 0;
    if (d->cc_major == 8 && d->cc_minor == 0) return 8.0;   /* A100 */
    if (d->cc_major == 9 && d->cc_minor == 0) return 7.4;   /* H100, H200 */
    if (d->cc_major == 10 && d->cc_minor == 0) return 13.75; /* B200 */
    return 0;
}

/* linear in log2 of the duration between knots, flat beyond the ends */
static double h200_speedup(double us) {
    if (!(us > h200_curve[0].us)) return h200_curve[0].speedup;
    for (size_t i = 1; i < KNOTS; i++)
        if (us <= h200_curve[i].us) {
            const Knot *a = &h200_curve[i - 1], *b = &h200_curve[i];
            double t = (log2(us) - log2(a->us)) / (log2(b->us) - log2(a->us));
            return a->speedup + t * (b->speedup - a->speedup);
        }
    return h200_curve[KNOTS - 1].speedup;
}

double tf32_speedup(const ProfDevice *d, double fp32_ns_per_call) {
    double peak = tf32_peak_ratio(d);
    if (peak <= 1) return 0;
    double s = h200_speedup(fp32_ns_per_call / 1000.0);
    return s < peak ? s : peak;
}

double tf32_saved_ns(const ProfDevice *d, uint64_t total_ns, uint64_t calls) {
    if (!calls || !total_ns) return 0;
    double s = tf32_speedup(d, (double)total_ns / (double)calls);
    if (s <= 1) return 0;
    return (double)total_ns * (1 - 1 / s);
}
