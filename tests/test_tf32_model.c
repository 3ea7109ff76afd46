/* The TF32 speed-up model (rules/measure/tf32_model.c) against the data it
 * was drawn from: CUPTI kernel durations of float32 GEMMs in FP32 and TF32
 * on an H200 (bench/tf32/results/h200-kernels-2026-12-02.json). The model
 * must not promise more than the products gave, overall or for most shapes,
 * and must not fall far below either. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>

#include "rules/measure/tf32_model.h"

#define DATA ADVISE_SOURCE_DIR "/bench/tf32/results/h200-kernels-2026-12-02.json"

static const ProfDevice h200 = {.name = "NVIDIA H200", .cc_major = 9, .cc_minor = 0};

Test(tf32_model, agrees_with_the_h200_kernel_times) {
    json_error_t error;
    json_t *root = json_load_file(DATA, 0, &error);
    cr_assert_not_null(root, "%s: %s", DATA, error.text);
    json_t *rows = json_object_get(root, "rows");
    cr_assert(json_array_size(rows) >= 90, "the data has its shapes");
    double predicted = 0, measured = 0;
    size_t over = 0, under = 0, n = json_array_size(rows);
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(rows, i);
        double fp32_us = json_real_value(json_object_get(r, "fp32_us"));
        double tf32_us = json_real_value(json_object_get(r, "tf32_us"));
        cr_assert(fp32_us > 0 && tf32_us > 0);
        uint64_t fp32_ns = (uint64_t)(fp32_us * 1000);
        double saved_ns = tf32_saved_ns(&h200, fp32_ns * 10, 10); /* ten calls of that duration */
        predicted += saved_ns / 10;
        measured += (fp32_us - tf32_us) * 1000;
        double s = tf32_speedup(&h200, fp32_us * 1000), real = fp32_us / tf32_us;
        if (s > real * 1.25) over++;
        if (s < real / 2) under++;
    }
    /* overall: the products' saving within 10% under and 3% over */
    cr_expect(predicted <= measured * 1.03 && predicted >= measured * 0.9, "predicted %.0f us, measured %.0f us",
              predicted / 1000, measured / 1000);
    /* per shape: at most 1 in 20 promised 25% more speed-up than measured, and
     * at most 1 in 10 under half of it */
    cr_expect(over * 20 <= n, "%zu of %zu shapes over-predicted by more than 25%%", over, n);
    cr_expect(under * 10 <= n, "%zu of %zu shapes under half the measured speed-up", under, n);
    json_decref(root);
}

Test(tf32_model, grows_with_the_kernel_and_stays_under_the_peak) {
    double last = 0;
    for (double us = 0.5; us < 100000; us *= 1.3) {
        double s = tf32_speedup(&h200, us * 1000);
        cr_expect(s >= last, "non-decreasing at %g us", us);
        cr_expect(s >= 1 && s <= 7.4, "%g at %g us", s, us);
        last = s;
    }
    cr_expect(tf32_speedup(&h200, 1000) == 1.0, "a 1 us kernel: nothing promised");
    cr_expect(fabs(tf32_speedup(&h200, 32000) - 2.5) < 1e-9);
    cr_expect(fabs(tf32_speedup(&h200, 50e6) - 6.6) < 1e-9);
    cr_expect_eq(tf32_saved_ns(&h200, 0, 0), 0);
    cr_expect_eq(tf32_saved_ns(&h200, 5000, 5), 0, "1 us per call");
    cr_expect(fabs(tf32_saved_ns(&h200, 10 * 32000, 10) - 10 * 32000 * (1 - 1 / 2.5)) < 1e-6);
}

Test(tf32_model, no_gain_without_tf32_tensor_cores) {
    const ProfDevice rtx = {.cc_major = 8, .cc_minor = 6}, v100 = {.cc_major = 7, .cc_minor = 0};
    cr_expect_eq(tf32_peak_ratio(NULL), 0);
    cr_expect_eq(tf32_speedup(&rtx, 1e6), 0, "consumer Ampere: TF32 no faster than FP32");
    cr_expect_eq(tf32_speedup(&v100, 1e6), 0, "Volta has no TF32");
    cr_expect_eq(tf32_saved_ns(&v100, 1000000, 1), 0);
    const ProfDevice a100 = {.cc_major = 8, .cc_minor = 0};
    cr_expect(fabs(tf32_speedup(&a100, 50e6) - 6.6) < 1e-9, "the H200's curve, under A100's 8x peak");
}
