/* Merging a profile into findings (rules/engine/profile_merge.c, rules/measure/measure_models.c): each
 * model's evidence and gain on synthetic profiles with exact figures,
 * severity raised by cost share, demoted or hidden in cold code, kept when
 * the user set it, and marked stale when the file changed. */
#include <criterion/criterion.h>
#include <math.h>

#include "rules/engine/engine.h"
#include "rules/engine/engine_internal.h"
#include "rules/measure/measure.h"
#include "rules/measure/tf32_model.h"
#include "tests/cli_harness.h"
#include "tests/evidence_text.h"
#include "tests/profile_builder.h"
#include "profiler/kernel_name.h"
#include "profiler/profile_json.h"

#define LOOP "tests/fixtures/merge/train_loop.py"

/* train_loop.py: PY005 at 6 (DataLoader) and 8 (x.to(device)), PY007 at 10,
 * PY001 at 14 (loss.item()), PY010 at 19, PY003 at 28 (in finetune()). */
static Profile *loop_profile(void) {
    Profile *p = pb_new(1000000000, 250000000); /* 1 s, GPU busy 25% */
    pb_copy(p, LOOP, 8, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 4000000, 1, 2000000);
    pb_launch(p, LOOP, 10, "void at::native::vectorized_elementwise_kernel<4, mul>(int, T)", 100, 14000000);
    pb_launch(p, LOOP, 10, "void at::native::vectorized_elementwise_kernel<4, sigmoid>(int, T)", 100, 6000000);
    pb_sync(p, LOOP, 14, 500, 110000000);
    return p;
}

typedef struct {
    Document *doc;
    FindingList findings;
    Config cfg;
    char *text;
} Checked;

static void check_with(Checked *c, const char *rel, Profile *p, void (*configure)(Config *)) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ADVISE_SOURCE_DIR, rel);
    c->text = harness_slurp(path);
    c->doc = document_new(path, language_for_path(path), c->text, strlen(c->text));
    config_init(&c->cfg);
    if (configure) configure(&c->cfg);
    finding_list_init(&c->findings);
    EngineReport report;
    char *error = NULL;
    cr_assert(engine_check(c->doc, NULL, &c->cfg, &c->findings, &report, &error), "%s", error);
    ProfileView *v = p ? profile_view_new(p, "synthetic.json") : NULL;
    if (v) cr_assert(engine_merge_profile(c->doc, rel, v, &c->cfg, &c->findings));
    profile_view_free(v);
}

static void checked_free(Checked *c) {
    finding_list_free(&c->findings);
    document_free(c->doc);
    config_free(&c->cfg);
    free(c->text);
}

static Finding *at(Checked *c, const char *code, size_t line) {
    for (size_t i = 0; i < c->findings.count; i++) {
        Finding *f = &c->findings.items[i];
        if (strcmp(f->code, code) == 0 && document_line_of(c->doc, f->range.start) + 1 == line) return f;
    }
    return NULL;
}

static bool has_evidence(const Finding *f, const char *text) {
    for (size_t i = 0; f && i < f->evidence_count; i++)
        if (strstr(ev(&f->evidence[i]), text)) return true;
    return false;
}

static void show(const Finding *f) {
    for (size_t i = 0; f && i < f->evidence_count; i++) cr_log_info("%s: %s", f->code, ev(&f->evidence[i]));
    if (f && f->gain.present) cr_log_info("gain %g s: %s", f->gain.seconds, ev(&f->gain.model));
}

Test(measure, sync_evidence_gain_and_severity) {
    Checked c;
    check_with(&c, LOOP, loop_profile(), NULL);
    Finding *f = at(&c, "PY001", 14);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "this `loss.item()` ran 500 times and waited 220 \xC2\xB5s each on average "
                              "(110 ms, 11% of the run)"));
    cr_expect(!f->gain.present, "a sync's wait is GPU work that remains: no gain is claimed for it");
    cr_expect_eq(f->severity, SEVERITY_ERROR, "11%% of the run raises it to an error");
    checked_free(&c);
}

Test(measure, copy_against_the_default_pinned_bandwidth) {
    Checked c;
    check_with(&c, LOOP, loop_profile(), NULL);
    Finding *f = at(&c, "PY005", 8);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "this copy moved 4.00 MB from pageable memory at 2.00 GB/s (2.00 ms); pinned memory "
                              "would take about 81.5 \xC2\xB5s (50.0 GB/s, the device's usual pinned bandwidth)"));
    cr_expect(fabs(f->gain.seconds - (0.002 - 81.5e-6)) < 1e-9, "%g", f->gain.seconds);
    cr_expect_eq(f->severity, SEVERITY_WARNING, "0.2%% of the run: as it was");
    Finding *loader = at(&c, "PY005", 6);
    cr_assert(loader);
    cr_expect_eq(loader->evidence_count, 0, "nothing measured at the DataLoader line");
    cr_expect_eq(loader->severity, SEVERITY_WARNING, "train() ran, so it is not cold");
    checked_free(&c);
}

Test(measure, copy_against_the_runs_own_pinned_copies) {
    Profile *p = loop_profile();
    pb_copy(p, LOOP, 20, PROF_COPY_HTOD, PROF_MEM_PINNED, 8000000, 1, 200000);   /* 40 GB/s */
    pb_copy(p, LOOP, 20, PROF_COPY_DTOH, PROF_MEM_PINNED, 8000000, 1, 100000);   /* the other way: not used */
    pb_copy(p, LOOP, 19, PROF_COPY_HTOD, PROF_MEM_PINNED, 4000, 10, 10000);      /* too small to say */
    Checked c;
    check_with(&c, LOOP, p, NULL);
    Finding *f = at(&c, "PY005", 8);
    show(f);
    cr_expect(has_evidence(f, "pinned memory would take about 102 \xC2\xB5s (40.0 GB/s, as this run's pinned copies)"));
    cr_expect(fabs(f->gain.seconds - (0.002 - 101.5e-6)) < 1e-9, "%g", f->gain.seconds);
    checked_free(&c);
}

Test(measure, launches_fused_gain_and_warning) {
    Checked c;
    check_with(&c, LOOP, loop_profile(), NULL);
    Finding *f = at(&c, "PY007", 10);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "this line launched 2 kernels 200 times: 20.0 ms on the GPU (100 \xC2\xB5s each on "
                              "average, 91% of GPU time)"));
    cr_expect(fabs(f->gain.seconds - 0.010) < 1e-9, "(N - 1) / N of 20 ms: %g", f->gain.seconds);
    cr_expect_eq(f->severity, SEVERITY_WARNING, "2%% of the run raises info to warning");
    checked_free(&c);
}

/* PyTorch's names: the operator of a kernel and of its backward */
#define SIGMOID_FWD "void at::native::vectorized_elementwise_kernel<4, at::native::sigmoid_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, T)"
#define SIGMOID_BWD "void at::native::vectorized_elementwise_kernel<4, at::native::sigmoid_backward_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda(float, float)#1}, std::array<char*, 3ul> >(int, T)"
#define MUL_FWD "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, T)"

Test(measure, elementwise_operators_and_their_backward) {
    char op[64];
    cr_expect(kernel_elementwise_op(SIGMOID_FWD, op, sizeof op));
    cr_expect_str_eq(op, "sigmoid");
    cr_expect(kernel_elementwise_op("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                                    "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}>(int, T)",
                                    op, sizeof op));
    cr_expect_str_eq(op, "silu");
    cr_expect_not(kernel_elementwise_op(SIGMOID_BWD, op, sizeof op), "a backward kernel is no forward operator");
    cr_expect_not(kernel_elementwise_op(MUL_FWD, op, sizeof op), "a generic functor names no operator");
    cr_expect_not(kernel_elementwise_op("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >(T)",
                                        op, sizeof op));
    cr_expect_not(kernel_elementwise_op("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_kernel", op, sizeof op));
    cr_expect_not(kernel_elementwise_op(SIGMOID_FWD, op, 4), "too small a buffer");
}

/* The fusion gain in training: autograd ran the backward of 75 of the
 * line's 100 sigmoids (`sigmoid_backward` launched 75 times, on the line
 * that called backward()), so the gain adds twice the forward's for them. */
Test(measure, launches_fused_gain_counts_the_backward_pass) {
    Profile *p = pb_new(1000000000, 250000000);
    pb_launch(p, LOOP, 10, MUL_FWD, 100, 14000000);
    pb_launch(p, LOOP, 10, SIGMOID_FWD, 100, 6000000);
    pb_launch(p, LOOP, 12, SIGMOID_BWD, 75, 9000000);
    Checked c;
    check_with(&c, LOOP, p, NULL);
    Finding *f = at(&c, "PY007", 10);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "autograd differentiated 75% of these runs (`sigmoid_backward` kernels against "
                              "`sigmoid` here)"));
    cr_assert(f->gain.present);
    cr_expect(fabs(f->gain.seconds - 0.010 * (1 + 2 * 0.75)) < 1e-9, "%g", f->gain.seconds);
    cr_expect(strstr(ev(&f->gain.model), "x (1 + 2 x 0.75) for the backward pass"), "%s", ev(&f->gain.model));
    checked_free(&c);

    /* more backward launches than forward ones here (the operator is used elsewhere too): at most all of them */
    p = pb_new(1000000000, 250000000);
    pb_launch(p, LOOP, 10, MUL_FWD, 100, 14000000);
    pb_launch(p, LOOP, 10, SIGMOID_FWD, 100, 6000000);
    pb_launch(p, LOOP, 12, SIGMOID_BWD, 300, 9000000);
    check_with(&c, LOOP, p, NULL);
    f = at(&c, "PY007", 10);
    cr_assert(f && f->gain.present);
    cr_expect(fabs(f->gain.seconds - 0.030) < 1e-9, "%g", f->gain.seconds);
    checked_free(&c);
}

/* hardsigmoid's backward is not sigmoid's: no training factor from it */
Test(measure, another_operators_backward_does_not_count) {
    Profile *p = pb_new(1000000000, 250000000);
    pb_launch(p, LOOP, 10, MUL_FWD, 100, 14000000);
    pb_launch(p, LOOP, 10, SIGMOID_FWD, 100, 6000000);
    pb_launch(p, LOOP, 12, "void at::native::vectorized_elementwise_kernel<4, at::native::hardsigmoid_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}>(int, T)", 100, 9000000);
    Checked c;
    check_with(&c, LOOP, p, NULL);
    Finding *f = at(&c, "PY007", 10);
    cr_assert(f && f->gain.present);
    cr_expect(fabs(f->gain.seconds - 0.010) < 1e-9, "%g", f->gain.seconds);
    cr_expect(!has_evidence(f, "autograd differentiated"));
    checked_free(&c);
}

static void cold_hide(Config *cfg) { cfg->profile_cold = PROFILE_COLD_HIDE; }
static void cold_keep(Config *cfg) { cfg->profile_cold = PROFILE_COLD_KEEP; }
static void pin_py001(Config *cfg) { config_set_severity(cfg, "PY001", "info"); }

Test(measure, cold_code_demoted_hidden_or_kept) {
    Checked c;
    check_with(&c, LOOP, loop_profile(), NULL);
    Finding *f = at(&c, "PY003", 28);
    cr_assert(f);
    cr_expect_eq(f->severity, SEVERITY_HINT);
    cr_expect(has_evidence(f, "the profile measured no GPU work in `finetune`: cold code"));
    Finding *none = at(&c, "PY010", 19);
    cr_assert(none);
    cr_expect_eq(none->severity, SEVERITY_WARNING, "rules without a measure are left alone");
    checked_free(&c);

    check_with(&c, LOOP, loop_profile(), cold_hide);
    cr_expect_null(at(&c, "PY003", 28), "[profile] cold = \"hide\" drops it");
    cr_expect(at(&c, "PY001", 14));
    checked_free(&c);

    check_with(&c, LOOP, loop_profile(), cold_keep);
    f = at(&c, "PY003", 28);
    cr_assert(f);
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    cr_expect_eq(f->evidence_count, 0);
    checked_free(&c);
}

Test(measure, user_severity_is_kept) {
    Checked c;
    check_with(&c, LOOP, loop_profile(), pin_py001);
    Finding *f = at(&c, "PY001", 14);
    cr_assert(f);
    cr_expect_eq(f->severity, SEVERITY_INFO, "[severity] PY001 = \"info\" wins over the measured 11%%");
    cr_expect(f->evidence_count > 0, "the figures are still shown");
    checked_free(&c);
}

/* The merge appends what it measured after the rule's own items, each of its
 * kind: the rule's note stays a note, the figures are measured, the stale
 * profile's remark is a caveat and the gain's model a model, its figures
 * numbers. */
Test(measure, evidence_kinds_through_the_merge) {
    Profile *p = loop_profile();
    pb_hash(p, LOOP, "# an older version of the file\n");
    char *text = harness_slurp(ADVISE_SOURCE_DIR "/" LOOP);
    Document *doc = document_new(LOOP, LANGUAGE_PYTHON, text, strlen(text));
    Config cfg;
    config_init(&cfg);
    FindingList findings;
    finding_list_init(&findings);
    char *error = NULL;
    cr_assert(engine_check(doc, NULL, &cfg, &findings, NULL, &error), "%s", error);
    Finding *f = NULL;
    for (size_t i = 0; i < findings.count; i++)
        if (strcmp(findings.items[i].code, "PY007") == 0) f = &findings.items[i];
    cr_assert(f);
    cr_assert(finding_note(f, "a note of the rule's {}"));
    ProfileView *v = profile_view_new(p, "synthetic.json");
    cr_assert(engine_merge_profile(doc, LOOP, v, &cfg, &findings));
    f = NULL;
    for (size_t i = 0; i < findings.count; i++)
        if (strcmp(findings.items[i].code, "PY007") == 0) f = &findings.items[i];
    cr_assert(f);
    show(f);
    cr_assert_eq(f->evidence_count, 3);
    cr_expect_eq(f->evidence[0].kind, EVIDENCE_NOTE);
    cr_expect_str_eq(ev(&f->evidence[0]), "a note of the rule's {}");
    cr_expect_eq(f->evidence[1].kind, EVIDENCE_MEASURED);
    cr_expect_str_eq(f->evidence[1].text, "this line launched {0} kernels {1} times: {2} on the GPU ({3} each on "
                                          "average, {4} of GPU time)");
    cr_expect_eq(f->evidence[1].value_count, 5);
    cr_expect_eq(f->evidence[1].values[2].unit, UNIT_SECONDS);
    cr_expect_float_eq(f->evidence[1].values[2].value, 0.020, 1e-12);
    cr_expect_eq(f->evidence[2].kind, EVIDENCE_CAVEAT);
    cr_expect(strstr(ev(&f->evidence[2]), "profile is older than this file"));
    cr_assert(f->gain.present);
    cr_expect_eq(f->gain.model.kind, EVIDENCE_MODEL);
    cr_expect_str_eq(ev(&f->gain.model), "fusing the 2 kernels into one reads and writes memory once instead of 2 "
                                         "times: (N - 1) / N of their GPU time (20.0 ms)");
    profile_view_free(v);
    finding_list_free(&findings);
    config_free(&cfg);
    document_free(doc);
    free(text);
}

Test(measure, stale_profile_marks_figures_and_raises_nothing) {
    Profile *p = loop_profile();
    pb_hash(p, LOOP, "# an older version of the file\n");
    Checked c;
    check_with(&c, LOOP, p, NULL);
    Finding *f = at(&c, "PY001", 14);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "ran 500 times"));
    cr_expect_str_eq(ev(&f->evidence[f->evidence_count - 1]),
                     "(profile is older than this file: figures from 2026-11-30 15:19 UTC)");
    cr_expect_eq(f->severity, SEVERITY_WARNING, "not raised from stale figures");
    f = at(&c, "PY003", 28);
    cr_assert(f);
    cr_expect_eq(f->severity, SEVERITY_WARNING, "nothing is judged cold when lines may have moved");
    checked_free(&c);

    p = loop_profile();
    char *text = harness_slurp(ADVISE_SOURCE_DIR "/" LOOP);
    pb_hash(p, LOOP, text);
    free(text);
    check_with(&c, LOOP, p, NULL);
    f = at(&c, "PY001", 14);
    cr_expect_eq(f->severity, SEVERITY_ERROR, "fresh: raised");
    cr_expect_not(has_evidence(f, "older than this file"));
    checked_free(&c);
}

Test(measure, a_file_the_profile_does_not_mention_is_left_alone) {
    Checked c;
    Profile *p = pb_new(1000, 0);
    pb_sync(p, "other.py", 14, 1, 900);
    check_with(&c, LOOP, p, NULL);
    for (size_t i = 0; i < c.findings.count; i++) {
        cr_expect_eq(c.findings.items[i].evidence_count, 0);
        cr_expect_not(c.findings.items[i].gain.present);
    }
    cr_expect_eq(at(&c, "PY003", 28)->severity, SEVERITY_WARNING);
    checked_free(&c);
}

/* transpose.cu: CU004 in transpose_naive (line 83), CU003 in transpose_tiled
 * (90) and transpose_warp (105). Only transpose_naive ran in this profile. */
Test(measure, kernel_time_and_kernels_that_never_ran, .timeout = 120) {
    const char *rel = "samples/cuda/transpose.cu";
    Profile *p = pb_new(400000000, 7000000);
    pb_launch(p, rel, 174, "transpose_naive(float*, float const*, int, int)", 20, 980000);
    pb_launch(p, rel, 174, "void transpose_naive<1>(float*, float const*, int, int)", 1, 20000);
    pb_launch(p, rel, 167, "copy_shared(float*, float const*, int, int)", 20, 1000000);
    Checked c;
    check_with(&c, rel, p, NULL);
    Finding *f = at(&c, "CU004", 83);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "transpose_naive ran 21 times, 49.0 \xC2\xB5s median, 1.00 ms in all (50% of GPU time)"));
    cr_expect_not(f->gain.present, "no defensible model without sector counts");
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    f = at(&c, "CU003", 90);
    cr_assert(f);
    cr_expect_eq(f->severity, SEVERITY_HINT);
    cr_expect(has_evidence(f, "the profile shows `transpose_tiled` never ran: cold code"));
    checked_free(&c);
}

/* The models on their own, through measure_apply. */
Test(measure, alloc_sync_fallback_and_gpu_time_models) {
    Profile *p = pb_new(100000000, 0);
    pb_alloc(p, "a.cu", 5, 16, 1600000);
    pb_launch(p, "a.cu", 7, "k(int)", 4, 400000);
    pb_copy(p, "a.cu", 7, PROF_COPY_DTOD, PROF_MEM_DEVICE, 100, 2, 2000);
    ProfileView *v = profile_view_new(p, "");
    MeasureSite site = {v, 0, 5, 5, "cudaMalloc(&d, n)", NULL, NULL, 0, false};
    Measurement m;
    cr_assert(measure_apply(MEASURE_ALLOC, &site, &m));
    cr_expect(m.measured);
    cr_expect_str_eq(ev(&m.evidence[0]), "this line allocated 16 times: 1.60 ms of host time (100 \xC2\xB5s each on "
                                    "average, 1.6% of the run)");
    cr_expect(fabs(m.gain_seconds - 0.0015) < 1e-12, "all but one: %g", m.gain_seconds);
    measurement_free(&m);

    cr_assert(measure_apply(MEASURE_SYNC, &site, &m));
    cr_expect(m.measured && m.evidence_count == 1 && strstr(ev(&m.evidence[0]), "allocated 16 times"),
              "a sync finding on an allocation line takes the allocation model");
    measurement_free(&m);

    site.first = site.last = 7;
    cr_assert(measure_apply(MEASURE_GPU_TIME, &site, &m));
    cr_expect_str_eq(ev(&m.evidence[0]), "this line ran 402 \xC2\xB5s of GPU work (4 kernel launches, 2 copies; 100% of "
                                    "GPU time)");
    cr_expect_not(m.has_gain);
    measurement_free(&m);

    cr_assert(measure_apply(MEASURE_LAUNCHES, &site, &m));
    cr_expect(m.measured && !m.has_gain, "one kernel: nothing to fuse");
    measurement_free(&m);

    site.first = site.last = 6;
    cr_assert(measure_apply(MEASURE_SYNC, &site, &m));
    cr_expect_not(m.measured);
    measurement_free(&m);
    site.kernel = "nope";
    cr_assert(measure_apply(MEASURE_KERNEL, &site, &m));
    cr_expect_not(m.measured);
    measurement_free(&m);
    profile_view_free(v);
}

Test(measure, numbers_in_words) {
    char buf[UNITS_BUF];
    cr_expect_str_eq(units_ns(6930, buf, sizeof buf), "6.93 \xC2\xB5s");
    cr_expect_str_eq(units_ns(900000000, buf, sizeof buf), "900 ms");
    cr_expect_str_eq(units_ns(1800000000, buf, sizeof buf), "1.80 s");
    cr_expect_str_eq(units_ns(512, buf, sizeof buf), "512 ns");
    cr_expect_str_eq(units_bytes(16777216, buf, sizeof buf), "16.8 MB");
    cr_expect_str_eq(units_bytes(64, buf, sizeof buf), "64 bytes");
    cr_expect_str_eq(units_share(11, 100, buf, sizeof buf), "11%");
    cr_expect_str_eq(units_share(5, 1000, buf, sizeof buf), "0.5%");
    cr_expect_str_eq(units_share(1, 100000, buf, sizeof buf), "<0.1%");
}

/* A profile rule of the test's own: one finding on each line the profile
 * says waited, with what its context holds. */
static int profile_rule_runs;
static void check_waits(RuleContext *ctx) {
    profile_rule_runs++;
    cr_expect_str_eq(ctx->relative_path, LOOP);
    cr_expect(ctx->profile && ctx->profile_file >= 0 && ctx->py);
    const ProfileLineCost *lines;
    size_t n = profile_view_lines(ctx->profile, ctx->profile_file, &lines);
    for (size_t i = 0; i < n; i++)
        if (lines[i].syncs) {
            size_t start = ctx->doc->line_starts[lines[i].line - 1];
            Finding *f = rule_report(ctx, start, start + 1, "waited %llu times", (unsigned long long)lines[i].syncs);
            if (f) finding_measured(f, NO_VALUES, "measured by the rule");
        }
}

static const Rule wait_rule = {.code = "PX900", .name = "test-waits", .severity = SEVERITY_INFO,
                               .languages = LANGUAGE_PYTHON, .summary = "test", .documentation = "",
                               .check_profile = check_waits};

static size_t count_code(const FindingList *list, const char *code) {
    size_t n = 0;
    for (size_t i = 0; i < list->count; i++) n += strcmp(list->items[i].code, code) == 0;
    return n;
}

static MergeReport merge_with_rule(const char *text, Profile *p, Config *cfg, FindingList *out) {
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, text, strlen(text));
    ProfileView *v = profile_view_new(p, "");
    const Rule *rules[] = {&wait_rule};
    MergeReport report;
    finding_list_init(out);
    cr_assert(engine_merge_profile_with(doc, NULL, NULL, LOOP, v, cfg, rules, 1, out, &report));
    for (size_t i = 0; i < out->count; i++) cr_expect_eq(out->items[i].range.start < doc->length, true);
    profile_view_free(v);
    document_free(doc);
    return report;
}

Test(measure, profile_rules_run_filtered_like_the_others) {
    const char *text = "import torch\nx = 1\ny = 2  # advise: ignore[PX900]\nz = 3\n";
    Config cfg;
    config_init(&cfg);
    Profile *p = pb_new(1000, 0);
    pb_sync(p, LOOP, 2, 3, 300);
    pb_sync(p, LOOP, 3, 1, 100);
    pb_sync(p, LOOP, 4, 2, 200);
    FindingList out;
    profile_rule_runs = 0;
    MergeReport report = merge_with_rule(text, p, &cfg, &out);
    cr_expect_eq(profile_rule_runs, 1);
    cr_expect_eq(count_code(&out, "PX900"), 2, "line 3 is suppressed by its comment");
    cr_expect_eq(report.suppressed, 1);
    cr_expect_str_eq(out.items[0].message, "waited 3 times");
    cr_expect_str_eq(out.items[1].message, "waited 2 times");
    finding_list_free(&out);

    /* a profile that does not mention the file: the rule does not run */
    p = pb_new(1000, 0);
    pb_sync(p, "elsewhere.py", 2, 1, 100);
    profile_rule_runs = 0;
    report = merge_with_rule(text, p, &cfg, &out);
    cr_expect_eq(profile_rule_runs, 0);
    cr_expect_not(report.mentioned);
    finding_list_free(&out);

    /* ignored by the config */
    string_list_add(&cfg.ignore, "PX900");
    p = pb_new(1000, 0);
    pb_sync(p, LOOP, 2, 3, 300);
    profile_rule_runs = 0;
    merge_with_rule(text, p, &cfg, &out);
    cr_expect_eq(profile_rule_runs, 0);
    cr_expect_eq(out.count, 0);
    finding_list_free(&out);
    config_free(&cfg);

    /* a stale file: the rule's findings say so too */
    config_init(&cfg);
    p = pb_new(1000, 0);
    pb_sync(p, LOOP, 2, 3, 300);
    pb_hash(p, LOOP, "older text\n");
    report = merge_with_rule(text, p, &cfg, &out);
    cr_expect(report.stale);
    cr_assert_eq(out.count, 1);
    cr_expect_eq(out.items[0].evidence_count, 2);
    cr_expect(strstr(ev(&out.items[0].evidence[1]), "older than this file"));
    finding_list_free(&out);
    config_free(&cfg);
}

/* PY009 measures the whole program's float32 matrix products on CUDA cores
 * (FFMA GEMM kernels); the gain is each kernel's time x (1 - 1/S), S the
 * TF32 speed-up measured on an H200 for its duration per call, at most the
 * peak ratio of the profiled GPU's compute capability. */
Test(measure, fp32_gemm_on_cuda_cores_and_the_tf32_gain) {
    cr_expect(kernel_is_fp32_simt_gemm("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4"));
    cr_expect(kernel_is_fp32_simt_gemm("volta_sgemm_128x64_nn"));
    cr_expect(kernel_is_fp32_simt_gemm("ampere_sgemm_64x32_sliced1x4_tn"));
    cr_expect_not(kernel_is_fp32_simt_gemm("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize32x32x64_stage3_tensor16x8x8"));
    cr_expect_not(kernel_is_fp32_simt_gemm("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1"));
    cr_expect_not(kernel_is_fp32_simt_gemm("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nt_align4>"));
    cr_expect_not(kernel_is_fp32_simt_gemm("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"));
    cr_expect_not(kernel_is_fp32_simt_gemm("void at::native::vectorized_elementwise_kernel<4, mul>(int, T)"));

    const char *src = "samples/python/benchmark_matmul.py";
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/samples/profiles/benchmark_matmul.json", PROFILE_FINAL, &error);
    cr_assert(p, "%s", error);
    uint64_t ffma = 0;
    for (size_t i = 0; i < p->kernel_count; i++)
        if (kernel_is_fp32_simt_gemm(p->kernels[i].name)) ffma += p->kernels[i].stats.total_ns;
    cr_assert_gt(ffma, 900000000, "the recorded run spent 0.95 s in FFMA GEMMs");
    /* per kernel, by its duration per call (tf32_model.c); the same run with TF32
     * took 118 ms for the 930 ms of products (samples/RESULTS.md): 812 ms saved */
    double saved = 0;
    for (size_t i = 0; i < p->kernel_count; i++)
        if (kernel_is_fp32_simt_gemm(p->kernels[i].name))
            saved += tf32_saved_ns(p->devices, p->kernels[i].stats.total_ns, p->kernels[i].stats.count);
    Checked c;
    check_with(&c, src, p, NULL);
    Finding *f = NULL;
    for (size_t i = 0; i < c.findings.count; i++)
        if (strcmp(c.findings.items[i].code, "PY009") == 0) f = &c.findings.items[i];
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "float32 matrix products ran on CUDA cores, not tensor cores: 495 FFMA GEMM kernels"));
    cr_assert(f->gain.present);
    cr_expect(fabs(f->gain.seconds - saved / 1e9) < 1e-9, "%g", f->gain.seconds);
    cr_expect(f->gain.seconds > 0.812 * 0.9 && f->gain.seconds < 0.812 * 1.05,
              "within 10%% under to 5%% over the 812 ms measured on the H200: %g", f->gain.seconds);
    cr_expect_str_eq(f->gain.scope, "program");
    checked_free(&c);

    /* with critical-path figures: half of each FFMA kernel's time on it; then the host's wait as the bound */
    for (int capped = 0; capped < 2; capped++) {
        p = profile_read_file(ADVISE_SOURCE_DIR "/samples/profiles/benchmark_matmul.json", PROFILE_FINAL, &error);
        cr_assert(p, "%s", error);
        for (size_t i = 0; i < p->kernel_count; i++)
            p->kernels[i].critical = (CriticalTime){true, p->kernels[i].stats.total_ns / 2};
        for (size_t i = 0; i < p->process_count; i++)
            p->processes[i].host_wait_known = true, p->processes[i].host_wait_ns = capped ? 100000000 : 10000000000;
        check_with(&c, src, p, NULL);
        f = NULL;
        for (size_t i = 0; i < c.findings.count; i++)
            if (strcmp(c.findings.items[i].code, "PY009") == 0) f = &c.findings.items[i];
        cr_assert(f && f->gain.present);
        double expected = capped ? 0.1 : saved / 2 / 1e9;
        cr_expect(fabs(f->gain.seconds - expected) < 1e-6, "%g against %g", f->gain.seconds, expected);
        cr_expect(strstr(ev(&f->gain.model), "x 50%, the part of that saving on the run's critical path"), "%s",
                  ev(&f->gain.model));
        cr_expect(!capped || strstr(ev(&f->gain.model), "at most the time the host waited for the GPU (100 ms)"), "%s",
                  ev(&f->gain.model));
        cr_expect(has_evidence(f, "50% of this GPU time was on the run's critical path"));
        checked_free(&c);
    }

    /* consumer Ampere (8.6): TF32 runs no faster than FP32 there: no gain */
    p = profile_read_file(ADVISE_SOURCE_DIR "/samples/profiles/benchmark_matmul.json", PROFILE_FINAL, &error);
    cr_assert(p, "%s", error);
    for (size_t i = 0; i < p->device_count; i++) p->devices[i].cc_major = 8, p->devices[i].cc_minor = 6;
    check_with(&c, src, p, NULL);
    f = NULL;
    for (size_t i = 0; i < c.findings.count; i++)
        if (strcmp(c.findings.items[i].code, "PY009") == 0) f = &c.findings.items[i];
    cr_assert(f);
    cr_expect(f->evidence_count > 0 && !f->gain.present);
    checked_free(&c);
    free(error);
}

static Finding *first_of(Checked *c, const char *code) {
    for (size_t i = 0; i < c->findings.count; i++)
        if (strcmp(c->findings.items[i].code, code) == 0) return &c->findings.items[i];
    return NULL;
}

static uint64_t multi_tensor_ns(const Profile *p) {
    uint64_t ns = 0;
    for (size_t i = 0; i < p->kernel_count; i++)
        if (strstr(p->kernels[i].name, "multi_tensor_apply_kernel")) ns += p->kernels[i].stats.total_ns;
    return ns;
}

/* the multi-tensor kernels launched from one line (of the only profiled file) */
static uint64_t multi_tensor_ns_at(const Profile *p, uint32_t line) {
    uint64_t ns = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind == PROF_OP_LAUNCH && op->site >= 0 && p->sites[op->site].line == line &&
            strstr(p->kernels[op->kernel].name, "multi_tensor_apply_kernel"))
            ns += op->stats.total_ns;
    }
    return ns;
}

/* PY014 (train_loop.py line 6, a DataLoader without workers whose batches
 * are copied at line 8): the GPU's waits of 1 ms or more that end with a
 * batch's copy, in the steady steps, are its gain; start-up's wait and a
 * wait before other work are not; PR003 at the copy's line steps back. */
Test(measure, loader_waits_before_the_batch_copies) {
    Profile *p = loop_profile();
    p->processes[0].steps = (ProfSteps){.count = 40, .median_ns = 20000000, .steady_steps = 38};
    for (int i = 0; i < 30; i++) /* each step: the last work at opt.step (13), then 15 ms of loading */
        pb_gap(p, LOOP, 13, 8, 100000000 + (uint64_t)i * 20000000, 15000000, PROF_PHASE_STEADY);
    pb_gap(p, LOOP, 0, 8, 0, 80000000, PROF_PHASE_FIRST);         /* start-up: not a loader falling behind */
    pb_gap(p, LOOP, 8, 10, 5000000, 3000000, PROF_PHASE_STEADY);    /* before other work */
    pb_gap(p, LOOP, 13, 8, 90000000, 900000, PROF_PHASE_STEADY);    /* under 1 ms */
    Checked c;
    check_with(&c, LOOP, p, NULL);
    Finding *f = at(&c, "PY014", 6);
    cr_assert_not_null(f);
    show(f);
    cr_expect(has_evidence(f, "the GPU sat idle in the steady training steps 30 times before a batch was copied to it, "
                              "15.0 ms each on average (450 ms, 45% of the run): the host was loading the next batch"));
    cr_assert(f->gain.present);
    cr_expect_float_eq(f->gain.seconds, 0.450, 1e-9);
    cr_expect_str_eq(f->gain.scope, "program");
    cr_expect(f->gain.steady_steps, "the steady steps' waits only");
    cr_expect_null(at(&c, "PR003", 8), "the same waits: PY014 carries them");
    checked_free(&c); /* the view took the profile */

    /* no steps recorded: every wait of 1 ms or more before the copies, start-up's too */
    p = loop_profile();
    for (int i = 0; i < 3; i++) pb_gap(p, LOOP, 13, 8, (uint64_t)i * 20000000, 10000000, PROF_PHASE_UNKNOWN);
    check_with(&c, LOOP, p, NULL);
    f = at(&c, "PY014", 6);
    cr_assert_not_null(f);
    cr_expect(has_evidence(f, "the GPU sat idle 3 times before a batch was copied to it, 10.0 ms each"));
    cr_expect_float_eq(f->gain.seconds, 0.030, 1e-9);
    cr_expect(!f->gain.steady_steps, "no steps: the whole run's waits");
    checked_free(&c); /* the view took the profile */

    /* a single wait is start-up's: no figures */
    p = loop_profile();
    pb_gap(p, LOOP, 13, 8, 0, 10000000, PROF_PHASE_STEADY);
    check_with(&c, LOOP, p, NULL);
    f = at(&c, "PY014", 6);
    cr_assert_not_null(f);
    cr_expect_not(f->gain.present);
    checked_free(&c); /* the view took the profile */
}

/* A gain in GPU time (PY007's fused launches) carries a caveat when the GPU
 * idled half the steady steps or more: the host set their pace. */
static Profile *steady_profile(uint64_t steady_idle_ns) {
    Profile *p = loop_profile();
    ProfSteps *s = &p->processes[0].steps;
    *s = (ProfSteps){.count = 40, .median_ns = 20000000, .steady_steps = 38, .steady_ns = 760000000,
                     .phase_idle_known = true};
    s->idle_ns[PROF_PHASE_STEADY] = steady_idle_ns;
    s->activities[PROF_PHASE_STEADY] = 1000;
    return p;
}

Test(measure, gpu_time_gains_in_host_bound_steps_carry_a_caveat) {
    Checked c;
    check_with(&c, LOOP, steady_profile(400000000), NULL); /* idle 53% of the steady steps */
    Finding *f = at(&c, "PY007", 10);
    cr_assert_not_null(f);
    cr_assert(f->gain.present);
    cr_expect(has_evidence(f, "the GPU was idle 53% of the steady training steps: the host sets their pace"), "%s",
              f->evidence_count ? ev(&f->evidence[f->evidence_count - 1]) : "");
    Finding *sync = at(&c, "PY001", 14);
    cr_expect(!sync || !has_evidence(sync, "the host sets their pace"), "a sync has no GPU-time gain");
    checked_free(&c);

    check_with(&c, LOOP, steady_profile(200000000), NULL); /* idle 26%: the GPU sets the pace */
    f = at(&c, "PY007", 10);
    cr_assert_not_null(f);
    cr_expect_not(has_evidence(f, "the host sets their pace"));
    checked_free(&c);

    check_with(&c, LOOP, loop_profile(), NULL); /* no steps: nothing to judge by */
    f = at(&c, "PY007", 10);
    cr_assert_not_null(f);
    cr_expect_not(has_evidence(f, "the host sets their pace"));
    checked_free(&c);
}

/* Every launch and copy of the profile gets this share of its time on the
 * critical path (FORMAT.md critical_ns). */
static Profile *with_critical_share(Profile *p, double share) {
    for (size_t i = 0; i < p->op_count; i++)
        if (prof_op_has_critical(p->ops[i].kind))
            p->ops[i].critical = (CriticalTime){true, (uint64_t)((double)p->ops[i].stats.total_ns * share)};
    for (size_t i = 0; i < p->kernel_count; i++)
        p->kernels[i].critical = (CriticalTime){true, (uint64_t)((double)p->kernels[i].stats.total_ns * share)};
    return p;
}

/* With critical-path figures, a GPU-time gain counts only the part of the
 * GPU time the run waited for, says so, and needs no caveat. */
Test(measure, gpu_time_gains_count_the_critical_path_only) {
    Checked c;
    check_with(&c, LOOP, with_critical_share(steady_profile(400000000), 0.25), NULL);
    Finding *f = at(&c, "PY007", 10);
    cr_assert_not_null(f);
    show(f);
    cr_assert(f->gain.present);
    cr_expect(fabs(f->gain.seconds - 0.010 * 0.25) < 1e-9, "a quarter of (N - 1) / N of 20 ms: %g", f->gain.seconds);
    cr_expect(has_evidence(f, "25% of this GPU time was on the run's critical path (5.00 ms of 20.0 ms)"));
    cr_expect(strstr(ev(&f->gain.model), "the part of that GPU time on the run's critical path"), "%s",
              ev(&f->gain.model));
    cr_expect_not(has_evidence(f, "the host sets their pace"), "the figures replace the caveat");
    /* the copy at line 8 and its pageable-copy gain follow the same share */
    Finding *copy = at(&c, "PY005", 8);
    cr_assert_not_null(copy);
    cr_assert(copy->gain.present);
    double quarter = copy->gain.seconds;
    checked_free(&c);

    /* all of it on the critical path: the gain as before, and nothing said */
    check_with(&c, LOOP, with_critical_share(steady_profile(400000000), 1.0), NULL);
    f = at(&c, "PY007", 10);
    cr_assert_not_null(f);
    cr_expect(fabs(f->gain.seconds - 0.010) < 1e-9, "%g", f->gain.seconds);
    cr_expect_not(has_evidence(f, "critical path"));
    cr_expect_not(has_evidence(f, "the host sets their pace"));
    copy = at(&c, "PY005", 8);
    cr_assert(copy && copy->gain.present);
    cr_expect(fabs(copy->gain.seconds * 0.25 - quarter) < 1e-9, "%g against %g", quarter, copy->gain.seconds);
    checked_free(&c);

    /* one operation without the figure: the share is unknown, the caveat stays */
    Profile *p = with_critical_share(steady_profile(400000000), 0.25);
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == PROF_OP_LAUNCH) {
            p->ops[i].critical.known = false;
            break;
        }
    check_with(&c, LOOP, p, NULL);
    f = at(&c, "PY007", 10);
    cr_assert_not_null(f);
    cr_expect(fabs(f->gain.seconds - 0.010) < 1e-9, "%g", f->gain.seconds);
    cr_expect(has_evidence(f, "the host sets their pace"));
    checked_free(&c);
}

/* The critical path on profiles recorded on the H200 (bench/critical): one
 * float32 MLP, 300 steps, TF32's saving measured per step at three batch
 * sizes (bench/RESULTS.md): -0.61 ms at 32 (host-paced: TF32 was slower),
 * 0.69 ms at 1024, 9.87 ms at 4096 (GPU-bound). Without the critical path
 * PY009 promised 0.23, 2.49 and 9.59 ms. */
static double py009_ms_per_step(const char *fixture) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/profiles/h200/%s", ADVISE_SOURCE_DIR, fixture);
    char *error = NULL;
    Profile *p = profile_read_file(path, PROFILE_FINAL, &error);
    cr_assert(p, "%s", error);
    Checked c;
    check_with(&c, "bench/critical/mlp_train.py", p, NULL);
    Finding *f = first_of(&c, "PY009");
    cr_assert(f, "%s", fixture);
    show(f);
    double ms = f->gain.present ? f->gain.seconds * 1000 / 300 : 0;
    checked_free(&c);
    return ms;
}

Test(measure, tf32_estimates_follow_the_critical_path_on_the_h200) {
    double host_paced = py009_ms_per_step("mlp_tf32_b32.json");
    cr_expect_lt(host_paced, 0.05, "the host set the pace: next to nothing, not 0.23 ms (%g)", host_paced);
    double between = py009_ms_per_step("mlp_tf32_b1024.json");
    cr_expect(between > 0.3 && between < 0.69 * 1.1, "bounded by the host's wait, 0.48 ms: %g", between);
    double gpu_bound = py009_ms_per_step("mlp_tf32_b4096.json");
    cr_expect(gpu_bound > 9.87 * 0.9 && gpu_bound < 9.87 * 1.05, "9.87 ms measured: %g", gpu_bound);
}

/* PY008 measures the foreach kernels its optimizer's steps launched; the
 * gain follows the fused step's measured share: 0.38 for Adam, 5/8 for SGD. */
Test(measure, foreach_optimizer_kernels_and_the_fused_gain) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/samples/profiles/train_classifier.json", PROFILE_FINAL, &error);
    cr_assert(p, "%s", error);
    uint64_t ns = multi_tensor_ns(p);
    cr_assert_gt(ns, 8000000, "8.04 ms of foreach Adam kernels in the recorded run");
    Checked c;
    check_with(&c, "samples/python/train_classifier.py", p, NULL);
    Finding *f = first_of(&c, "PY008");
    cr_assert(f);
    show(f);
    /* every multi-tensor kernel of this run was launched by optimizer.step() (line 110) */
    cr_expect(has_evidence(f, "this optimizer's steps launched multi-tensor (foreach) kernels 800 times, 8 kinds"));
    cr_assert(f->gain.present);
    cr_expect(fabs(f->gain.seconds - (double)ns / 1e9 * (1 - 0.38)) < 1e-12, "%g", f->gain.seconds);
    cr_expect(strstr(ev(&f->gain.model), "0.38"));
    checked_free(&c);

    p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/h200/resnet50_step.json", PROFILE_FINAL, &error);
    cr_assert(p, "%s", error);
    ns = multi_tensor_ns(p);
    uint64_t step_ns = multi_tensor_ns_at(p, 29); /* optimizer.step(); zero_grad() at 27 runs foreach kernels too */
    cr_assert(step_ns > 0 && step_ns < ns, "%llu of %llu", (unsigned long long)step_ns, (unsigned long long)ns);
    check_with(&c, "bench/workloads/resnet50_step.py", p, NULL);
    f = first_of(&c, "PY008");
    cr_assert(f);
    cr_assert(f->gain.present);
    cr_expect(fabs(f->gain.seconds - (double)step_ns / 1e9 * (1 - 5.0 / 8.0)) < 1e-12, "SGD: %g", f->gain.seconds);
    checked_free(&c);
    free(error);
}

#define STEPS "tests/fixtures/merge/optimizer_steps.py"

/* optimizer_steps.py: AdamW (line 4) stepped at 16, Adam (5) never stepped,
 * SGD (6) stepped by a GradScaler at 17; clip_grad_norm_'s foreach kernels
 * at 15 belong to no optimizer. */
Test(measure, optimizer_kernels_are_told_apart_by_the_step_line) {
    Profile *p = pb_new(1000000000, 250000000);
    const char *mt = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<4>, "
                     "FusedAdamMathFunctor<float, 4>>(TensorListMetadata<4>, FusedAdamMathFunctor<float, 4>)";
    const char *norm = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<1>, "
                       "LpNormFunctor<float, 2>>(TensorListMetadata<1>, LpNormFunctor<float, 2>)";
    const char *sgd = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<3>, "
                      "BinaryOpListAlphaFunctor<float, 3>>(TensorListMetadata<3>, BinaryOpListAlphaFunctor<float, 3>)";
    pb_launch(p, STEPS, 15, norm, 200, 3000000);
    pb_launch(p, STEPS, 16, mt, 100, 10000000);
    pb_launch(p, STEPS, 17, sgd, 100, 4000000);
    pb_launch(p, STEPS, 12, "void at::native::vectorized_elementwise_kernel<4, sum>(int, T)", 100, 2000000);
    Checked c;
    check_with(&c, STEPS, p, NULL);
    Finding *adamw = at(&c, "PY008", 4), *spare = at(&c, "PY008", 5), *head = at(&c, "PY008", 6);
    cr_assert(adamw && spare && head, "three PY008 findings");
    show(adamw);
    cr_expect(has_evidence(adamw, "this optimizer's steps launched multi-tensor (foreach) kernels 100 times, 1 kind: "
                                  "10.0 ms"),
              "clip_grad_norm_'s kernels at line 15 are not counted");
    cr_assert(adamw->gain.present);
    cr_expect(fabs(adamw->gain.seconds - 0.010 * (1 - 0.38)) < 1e-12, "%g", adamw->gain.seconds);
    /* never stepped: no figures at all */
    cr_expect_eq(spare->evidence_count, 0);
    cr_expect(!spare->gain.present);
    /* stepped through scaler.step(head) */
    cr_assert(head->gain.present);
    cr_expect(fabs(head->gain.seconds - 0.004 * (1 - 5.0 / 8.0)) < 1e-12, "%g", head->gain.seconds);
    checked_free(&c);
}

/* ---- per-line SASS metrics: CU003, CU004, CU005 (rules/measure/measure_lines.c) ---------------------- */

/* One parse of a CUDA sample for many merges (libclang is the slow part). */
typedef struct {
    const char *rel;
    char *text;
    Document *doc;
    CudaSource *cuda;
} Parsed;

static Parsed parse_cuda(const char *rel) {
    Parsed ps = {.rel = rel};
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ADVISE_SOURCE_DIR, rel);
    ps.text = harness_slurp(path);
    ps.doc = document_new(path, LANGUAGE_CUDA, ps.text, strlen(ps.text));
    CudaFlagOptions options = {0};
    char *error = NULL;
    ps.cuda = cuda_source_new(ps.doc, &options, &error);
    cr_assert_not_null(ps.cuda, "%s: %s", rel, error ? error : "?");
    return ps;
}

static void parsed_free(Parsed *ps) {
    cuda_source_free(ps->cuda);
    document_free(ps->doc);
    free(ps->text);
}

/* the static findings of the sample with profile p (taken) merged; configure may be NULL */
static FindingList merged(const Parsed *ps, Profile *p, void (*configure)(Config *)) {
    Config cfg;
    config_init(&cfg);
    if (configure) configure(&cfg);
    FindingList out;
    finding_list_init(&out);
    EngineReport report;
    char *error = NULL;
    cr_assert(engine_check_cuda(ps->doc, ps->cuda, &cfg, &out, &report, &error), "%s", error);
    ProfileView *v = profile_view_new(p, "synthetic.json");
    cr_assert(engine_merge_profile_parsed(ps->doc, NULL, ps->cuda, ps->rel, v, &cfg, &out, NULL));
    profile_view_free(v);
    config_free(&cfg);
    return out;
}

static Finding *finding_at(const Parsed *ps, FindingList *l, const char *code, size_t line) {
    for (size_t i = 0; i < l->count; i++) {
        Finding *f = &l->items[i];
        if (strcmp(f->code, code) == 0 && document_line_of(ps->doc, f->range.start) + 1 == line) return f;
    }
    return NULL;
}

#define TRANSPOSE "samples/cuda/transpose.cu"
#define NAIVE "transpose_naive(float*, float const*, int, int)"
#define TILED "transpose_tiled(float*, float const*, int, int)"
#define M4096 4194304ull /* sectors of 4096 x 4096 floats read or written coalesced */

/* transpose.cu: CU004 at 83 in transpose_naive (the store; 82 is its load),
 * CU003 at 90 in transpose_tiled (the array; its conflicting read is line
 * 99), CU003 at 105 in transpose_warp (112). Each kernel ran 1 ms of a 5 ms
 * run: 20%, enough for an error by cost alone. */
static Profile *transpose_run(void) {
    Profile *p = pb_new(5000000, 3000000);
    pb_launch(p, TRANSPOSE, 174, NAIVE, 20, 1000000);
    pb_launch(p, TRANSPOSE, 188, TILED, 20, 1000000);
    return p;
}

/* transpose_run with transpose_naive's store line moving `store` sectors
 * against M4096 ideal and its load line `load` against M4096 */
static Profile *naive_lines(uint64_t store, uint64_t load) {
    Profile *p = transpose_run();
    pb_line_metrics(p, TRANSPOSE, 83, NAIVE, (PbLineCounts){.global = store, .global_ideal = M4096});
    pb_line_metrics(p, TRANSPOSE, 82, NAIVE, (PbLineCounts){.global = load, .global_ideal = M4096});
    return p;
}

static void pin_cu004(Config *cfg) { config_set_severity(cfg, "CU004", "info"); }

Test(measure_lines, global_sectors_judge_the_uncoalesced_store, .timeout = 240) {
    Parsed ps = parse_cuda(TRANSPOSE);
    /* without line metrics the kernel's 20% makes it an error */
    FindingList l = merged(&ps, transpose_run(), NULL);
    Finding *f = finding_at(&ps, &l, "CU004", 83);
    cr_assert(f);
    cr_expect_eq(f->severity, SEVERITY_ERROR);
    cr_expect_not(has_evidence(f, "ideal global sectors"));
    finding_list_free(&l);

    /* the H200's naive 4096 x 4096 transpose: 4.5x, an error */
    l = merged(&ps, naive_lines(18874368, M4096), NULL);
    f = finding_at(&ps, &l, "CU004", 83);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "transpose_naive ran 20 times"), "the kernel's time stays");
    cr_expect(has_evidence(f, "this line moves 4.5x the ideal global sectors (18,874,368 vs 4,194,304 in one launch "
                              "of transpose_naive), 82% of the kernel's global sectors"));
    cr_expect_eq(f->severity, SEVERITY_ERROR);
    /* 23.1 M sectors per 50 us launch, memory-bound: the kernel's 1 ms x the excess 14.7 M of 23.1 M sectors */
    cr_assert(f->gain.present, "a memory-bound kernel's excess sectors cost time");
    cr_expect_float_eq(f->gain.seconds, 1e-3 * (18874368.0 - M4096) / (18874368.0 + M4096), 1e-9);
    cr_expect(strstr(ev(&f->gain.model), "in a memory-bound kernel"), "%s", ev(&f->gain.model));
    double whole = f->gain.seconds;
    finding_list_free(&l);

    /* with the critical path: 40% of the kernel's time on it, then the host's wait as the bound */
    for (int capped = 0; capped < 2; capped++) {
        Profile *p = naive_lines(18874368, M4096);
        for (size_t i = 0; i < p->kernel_count; i++)
            p->kernels[i].critical = (CriticalTime){true, p->kernels[i].stats.total_ns * 2 / 5};
        for (size_t i = 0; i < p->process_count; i++)
            p->processes[i].host_wait_known = true, p->processes[i].host_wait_ns = capped ? 100000 : 1000000000;
        l = merged(&ps, p, NULL);
        f = finding_at(&ps, &l, "CU004", 83);
        cr_assert(f && f->gain.present);
        cr_expect_float_eq(f->gain.seconds, capped ? 100e-6 : whole * 0.4, 1e-9);
        cr_expect(strstr(ev(&f->gain.model), "x 40%, the part of the kernel's time on the run's critical path"), "%s",
                  ev(&f->gain.model));
        cr_expect(!capped || strstr(ev(&f->gain.model), "at most the time the host waited for the GPU (100 \xC2\xB5s)"),
                  "%s", ev(&f->gain.model));
        finding_list_free(&l);
    }

    /* 3x: at most a warning, though the kernel takes 20% */
    l = merged(&ps, naive_lines(3 * M4096, M4096), NULL);
    f = finding_at(&ps, &l, "CU004", 83);
    cr_assert(f);
    cr_expect(has_evidence(f, "this line moves 3.0x the ideal global sectors"));
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    finding_list_free(&l);

    /* 1.6x: figures shown, nothing raised */
    l = merged(&ps, naive_lines(M4096 * 8 / 5, M4096), NULL);
    f = finding_at(&ps, &l, "CU004", 83);
    cr_assert(f);
    cr_expect(has_evidence(f, "this line moves 1.6x the ideal global sectors"));
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    finding_list_free(&l);

    /* 4.5x on a line that makes 4% of the kernel's sectors: not raised */
    l = merged(&ps, naive_lines(18874368, 100 * M4096), NULL);
    f = finding_at(&ps, &l, "CU004", 83);
    cr_assert(f);
    cr_expect(has_evidence(f, "4.5x the ideal global sectors") && has_evidence(f, "4.3% of the kernel's global"));
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    finding_list_free(&l);
    parsed_free(&ps);
}

Test(measure_lines, a_coalesced_line_makes_the_finding_a_hint, .timeout = 240) {
    Parsed ps = parse_cuda(TRANSPOSE);
    FindingList l = merged(&ps, naive_lines(M4096, M4096), NULL);
    Finding *f = finding_at(&ps, &l, "CU004", 83);
    cr_assert(f);
    show(f);
    cr_expect_eq(f->severity, SEVERITY_HINT);
    cr_expect(has_evidence(f, "this line moves 1.0x the ideal global sectors (4,194,304 vs 4,194,304 in one launch "
                              "of transpose_naive), 50% of the kernel's global sectors: coalesced in the measured "
                              "launch, a false alarm there"));
    finding_list_free(&l);

    /* 1.25x (an access 4 bytes off its sectors) is as good as it gets */
    l = merged(&ps, naive_lines(M4096 * 5 / 4, M4096), NULL);
    cr_expect_eq(finding_at(&ps, &l, "CU004", 83)->severity, SEVERITY_HINT);
    finding_list_free(&l);

    /* a severity the user set stays */
    l = merged(&ps, naive_lines(M4096, M4096), pin_cu004);
    f = finding_at(&ps, &l, "CU004", 83);
    cr_expect_eq(f->severity, SEVERITY_INFO);
    cr_expect(has_evidence(f, "coalesced in the measured launch"));
    finding_list_free(&l);
    parsed_free(&ps);
}

Test(measure_lines, no_line_figures_from_elsewhere_too_few_or_stale, .timeout = 240) {
    Parsed ps = parse_cuda(TRANSPOSE);
    /* the same line number in another file */
    Profile *p = transpose_run();
    pb_line_metrics(p, "samples/cuda/transpose_fixed.cu", 83, NAIVE, (PbLineCounts){.global = M4096, .global_ideal = M4096});
    FindingList l = merged(&ps, p, NULL);
    Finding *f = finding_at(&ps, &l, "CU004", 83);
    cr_assert(f);
    cr_expect_not(has_evidence(f, "ideal global sectors"));
    cr_expect_eq(f->severity, SEVERITY_ERROR, "judged by the kernel's time alone");
    finding_list_free(&l);

    /* fewer than 64 ideal sectors: a ratio of nothing */
    p = transpose_run();
    pb_line_metrics(p, TRANSPOSE, 83, NAIVE, (PbLineCounts){.global = 60, .global_ideal = 60});
    l = merged(&ps, p, NULL);
    f = finding_at(&ps, &l, "CU004", 83);
    cr_expect_not(has_evidence(f, "ideal global sectors"));
    cr_expect_eq(f->severity, SEVERITY_ERROR);
    finding_list_free(&l);

    /* the file changed since it was profiled: lines may have moved */
    p = naive_lines(M4096, M4096);
    pb_hash(p, TRANSPOSE, "// an older transpose.cu\n");
    l = merged(&ps, p, NULL);
    f = finding_at(&ps, &l, "CU004", 83);
    cr_assert(f);
    show(f);
    cr_expect_not(has_evidence(f, "ideal global sectors"));
    cr_expect(has_evidence(f, "older than this file"));
    cr_expect_eq(f->severity, SEVERITY_WARNING, "neither raised nor made a hint");
    finding_list_free(&l);
    parsed_free(&ps);
}

Test(measure_lines, shared_wavefronts_at_the_conflicting_accesses, .timeout = 240) {
    Parsed ps = parse_cuda(TRANSPOSE);
    /* CU003 marks the array (90); its conflicting read is line 99 */
    Profile *p = transpose_run();
    pb_line_metrics(p, TRANSPOSE, 99, TILED,
                    (PbLineCounts){.global = M4096, .global_ideal = M4096, .shared = 1048576, .shared_ideal = 32768});
    pb_line_metrics(p, TRANSPOSE, 94, TILED, (PbLineCounts){.global = M4096, .global_ideal = M4096, .shared = 32768,
                                                            .shared_ideal = 32768});
    FindingList l = merged(&ps, p, NULL);
    Finding *f = finding_at(&ps, &l, "CU003", 90);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "shared-memory accesses on line 99 take 32.0x the ideal wavefronts (bank conflicts): "
                              "1,048,576 vs 32,768 in one launch of transpose_tiled, 97% of the kernel's shared "
                              "wavefronts"));
    cr_expect_not(has_evidence(f, "global sectors"), "a bank conflict is about shared memory");
    cr_expect_eq(f->severity, SEVERITY_ERROR);
    Finding *warp = finding_at(&ps, &l, "CU003", 105);
    cr_assert(warp);
    cr_expect_not(has_evidence(warp, "wavefronts"), "transpose_warp's lines were not measured");
    finding_list_free(&l);

    /* padded in the build that ran: no conflicts, a hint */
    p = transpose_run();
    pb_line_metrics(p, TRANSPOSE, 99, TILED, (PbLineCounts){.shared = 32768, .shared_ideal = 32768});
    l = merged(&ps, p, NULL);
    f = finding_at(&ps, &l, "CU003", 90);
    cr_assert(f);
    cr_expect_eq(f->severity, SEVERITY_HINT);
    cr_expect(has_evidence(f, "take 1.0x the ideal wavefronts: 32,768 vs 32,768 in one launch of transpose_tiled, "
                              "100% of the kernel's shared wavefronts; no bank conflicts in the measured launch, a false "
                              "alarm there"));
    finding_list_free(&l);
    parsed_free(&ps);
}

/* elementwise_chain.cu: CU005 at 78, an array of 12-byte Particle read per
 * thread (three 4-byte loads at a 12-byte stride: 3x the ideal sectors) */
Test(measure_lines, twelve_byte_structs_move_three_times_the_sectors, .timeout = 240) {
    const char *rel = "samples/cuda/elementwise_chain.cu";
    Parsed ps = parse_cuda(rel);
    Profile *p = pb_new(5000000, 1000000);
    pb_launch(p, rel, 138, "radius(Particle const*, float*, int)", 1, 1000000);
    pb_line_metrics(p, rel, 78, "radius(Particle const*, float*, int)",
                    (PbLineCounts){.global = 3 * 393216, .global_ideal = 393216});
    pb_line_metrics(p, rel, 79, "radius(Particle const*, float*, int)",
                    (PbLineCounts){.global = 131072, .global_ideal = 131072});
    FindingList l = merged(&ps, p, NULL);
    Finding *f = finding_at(&ps, &l, "CU005", 78);
    cr_assert(f);
    show(f);
    cr_expect(has_evidence(f, "this line moves 3.0x the ideal global sectors (1,179,648 vs 393,216 in one launch of "
                              "radius), 90% of the kernel's global sectors"));
    cr_expect_eq(f->severity, SEVERITY_WARNING, "20%% of the run, but 3x: at most a warning");
    finding_list_free(&l);
    parsed_free(&ps);
}

/* PY006's fix (F.scaled_dot_product_attention) is withheld where the
 * attention's products ran as float32 matrix-vector kernels (one query row
 * at a time: decoding), which SDPA made 2.3x slower on an H200. */
#define GEN "samples/python/generate_text.py"
static Profile *attention_profile(const char *product) {
    Profile *p = pb_new(1000000000, 100000000);
    pb_launch(p, GEN, 77, product, 800, 1600000);
    pb_launch(p, GEN, 76, "void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, false>", 800,
              500000);
    return p;
}

Test(measure, decode_attention_keeps_its_unfused_kernels, .timeout = 120) {
    static const char *const fp32_gemv = "void gemvNSP_kernel<float, float, float, float, 1, 32, 4, 1024, false>";
    Checked c;
    check_with(&c, GEN, attention_profile(fp32_gemv), NULL);
    Finding *f = at(&c, "PY006", 77);
    cr_assert_not_null(f);
    show(f);
    cr_expect(has_evidence(f, "the matrix products here ran as float32 matrix-vector kernels (gemv: 800 launches"));
    cr_expect_eq(f->fix_count, 0, "the fix that measured slower is withheld");
    cr_expect_eq(f->severity, SEVERITY_HINT);
    checked_free(&c);

    /* prefill or training: matrix-matrix products, the fix stays */
    check_with(&c, GEN, attention_profile("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize64x64x32"), NULL);
    f = at(&c, "PY006", 77);
    cr_assert_not_null(f);
    cr_expect_gt(f->fix_count, 0);
    cr_expect_neq(f->severity, SEVERITY_HINT);
    cr_expect_not(has_evidence(f, "matrix-vector"));
    checked_free(&c);

    /* bf16 decoding: SDPA has flash kernels there; the fix stays */
    check_with(&c, GEN, attention_profile("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float>"), NULL);
    f = at(&c, "PY006", 77);
    cr_assert_not_null(f);
    cr_expect_gt(f->fix_count, 0);
    checked_free(&c);

    /* a stale profile judges nothing */
    Profile *p = attention_profile(fp32_gemv);
    pb_hash(p, GEN, "an older version of the file");
    check_with(&c, GEN, p, NULL);
    f = at(&c, "PY006", 77);
    cr_assert_not_null(f);
    cr_expect_gt(f->fix_count, 0);
    checked_free(&c);
}
