/* The profile rules (rules/profile/, PR001-PR012) and their shared helpers
 * (rules/measure/profile_facts.h): the occupancy calculator and name helpers against
 * known values; each rule on synthetic profiles built with the aggregator or
 * read from tests/fixtures/profile/ (JSON), with a positive case and correct
 * look-alikes that must not fire; and every rule on the profiles recorded on
 * the H200 (tests/fixtures/profiles/h200/) with their sources, and through
 * `advise check --profile`. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_source.h"
#include "analysis/edits.h"
#include "analysis/python/python_source.h"
#include "profiler/aggregate.h"
#include "profiler/profile_json.h"
#include "profiler/profile_view.h"
#include "rules/measure/profile_facts.h"
#include "rules/measure/tf32_model.h"
#include "rules/engine/engine_internal.h"
#include "rules/rule.h"
#include "tests/cli_harness.h"
#include "tests/evidence_text.h"
#include "tests/profile_builder.h"
#include "analysis/base/text_format.h"

#define MS 1000000ull
#define US 1000ull

/* ---- sources ------------------------------------------------------------ */

typedef struct {
    char *relative; /* as the profile names it */
    char *text;
    Document *doc;
    PySource *py;
    CudaSource *cuda;
} Source;

static Source source_text(const char *relative, const char *text) {
    Source s = {.relative = strdup(relative), .text = strdup(text)};
    Language lang = language_for_path(relative);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ADVISE_SOURCE_DIR, relative);
    s.doc = document_new(path, lang, s.text, strlen(s.text));
    cr_assert_not_null(s.doc);
    if (lang == LANGUAGE_PYTHON) {
        s.py = py_source_new(s.doc);
        cr_assert_not_null(s.py);
    } else if (lang == LANGUAGE_CUDA) {
        CudaFlagOptions options = {0};
        char *error = NULL;
        s.cuda = cuda_source_new(s.doc, &options, &error);
        cr_assert_not_null(s.cuda, "%s: %s", relative, error ? error : "?");
    }
    return s;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* a file of the repository, by its path relative to the root */
static Source source_file(const char *relative) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ADVISE_SOURCE_DIR, relative);
    char *text = slurp(path);
    Source s = source_text(relative, text);
    free(text);
    return s;
}

static void source_free(Source *s) {
    py_source_free(s->py);
    cuda_source_free(s->cuda);
    document_free(s->doc);
    free(s->text);
    free(s->relative);
}

/* the 1-based line holding marker ("# @math", "// @spill-launch") */
static uint32_t marker_line(const Source *s, const char *marker) {
    const char *p = strstr(s->text, marker);
    cr_assert_not_null(p, "%s: no marker %s", s->relative, marker);
    return (uint32_t)document_line_of(s->doc, (size_t)(p - s->text)) + 1;
}

/* ---- running rules -------------------------------------------------------- */

static FindingList run_rule(const char *code, const ProfileView *v, const Source *s) {
    const Rule *rule = rule_find(code);
    cr_assert_not_null(rule, "no rule %s", code);
    cr_assert_not_null(rule->check_profile, "%s has no check_profile", code);
    FindingList out;
    finding_list_init(&out);
    int file = profile_view_file(v, s->relative);
    if (file < 0 || !(rule->languages & s->doc->language)) return out;
    RuleContext ctx = {.rule = rule, .doc = s->doc, .py = s->py, .cuda = s->cuda, .out = &out, .profile = v,
                       .profile_file = file, .relative_path = s->relative};
    rule->check_profile(&ctx);
    cr_assert(!ctx.out_of_memory, "%s ran out of memory", code);
    finding_list_sort(&out);
    return out;
}

static uint32_t finding_line(const Source *s, const Finding *f) {
    return (uint32_t)document_line_of(s->doc, f->range.start) + 1;
}

static const Finding *at_line(const FindingList *l, const Source *s, uint32_t line) {
    for (size_t i = 0; i < l->count; i++)
        if (finding_line(s, &l->items[i]) == line) return &l->items[i];
    return NULL;
}

static bool has_evidence(const Finding *f, const char *needle) {
    for (size_t i = 0; i < f->evidence_count; i++)
        if (strstr(ev(&f->evidence[i]), needle)) return true;
    return false;
}

/* every finding: where it is and what it says, for failure messages */
static char *describe(const FindingList *l, const Source *s) {
    size_t size = 1;
    for (size_t i = 0; i < l->count; i++) size += strlen(l->items[i].message) + 64;
    char *buf = malloc(size);
    buf[0] = '\0';
    for (size_t i = 0; i < l->count; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %u: %s ", finding_line(s, &l->items[i]), l->items[i].code);
        strcat(buf, line);
        strcat(buf, l->items[i].message);
    }
    return buf;
}

/* each finding covers its line's text, from the first non-blank byte */
static void expect_line_ranges(const FindingList *l, const Source *s) {
    for (size_t i = 0; i < l->count; i++) {
        const Finding *f = &l->items[i];
        size_t line = document_line_of(s->doc, f->range.start);
        cr_expect(f->range.start < f->range.end && f->range.end <= document_line_end(s->doc, line),
                  "%s: finding spans beyond its line", f->code);
        char c = s->text[f->range.start];
        cr_expect(c != ' ' && c != '\t', "%s: finding starts on blank space", f->code);
    }
}

/* ---- building profiles with the aggregator -------------------------------- */

static const ProfDevice h200 = {.id = 0, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9, .cc_minor = 0,
                                .memory_bytes = 150109880320ull, .bandwidth_bytes_per_s = 4814304000000ull,
                                .max_warps_per_sm = 64, .max_blocks_per_sm = 32, .max_registers_per_sm = 65536,
                                .max_shared_per_sm = 233472, .max_registers_per_block = 65536,
                                .max_shared_per_block = 49152, .max_threads_per_block = 1024,
                                .l2_bytes = 62914560};

typedef struct {
    Aggregator *agg;
    uint64_t t; /* the GPU's clock: where the next activity starts */
} Builder;

typedef struct {
    const char *name;
    uint32_t grid, block; /* x only */
    uint32_t registers, shared, local;
} Kernel;

static Builder builder(void) {
    Builder b = {agg_new(), 1000};
    cr_assert_not_null(b.agg);
    agg_device(b.agg, &h200);
    return b;
}

static int site(Builder *b, const char *file, uint32_t line, const char *function) {
    int s = agg_site(b->agg, file, line, function);
    cr_assert(s >= 0);
    return s;
}

/* n launches of k from site, each running `each` ns, the GPU idle `idle` ns after each */
static void launches(Builder *b, int at, const Kernel *k, uint64_t n, uint64_t each, uint64_t idle) {
    for (uint64_t i = 0; i < n; i++) {
        AggKernel a = {.device = 0, .name = k->name, .grid = {k->grid, 1, 1}, .block = {k->block, 1, 1},
                       .registers = k->registers, .static_shared = k->shared, .local_per_thread = k->local,
                       .start_ns = b->t, .end_ns = b->t + each, .site = at};
        agg_kernel(b->agg, &a);
        b->t += each + idle;
    }
}

static void copies(Builder *b, int at, ProfCopyKind dir, ProfMemKind host, uint64_t n, uint64_t bytes, uint64_t each,
                   uint64_t idle) {
    for (uint64_t i = 0; i < n; i++) {
        AggCopy c = {.device = 0, .copy = dir, .src = dir == PROF_COPY_HTOD ? host : PROF_MEM_DEVICE,
                     .dst = dir == PROF_COPY_HTOD ? PROF_MEM_DEVICE : host, .bytes = bytes, .start_ns = b->t,
                     .end_ns = b->t + each, .site = at};
        agg_memcpy(b->agg, &c);
        b->t += each + idle;
    }
}

static void idle(Builder *b, uint64_t ns) { b->t += ns; }

static void syncs(Builder *b, int at, ProfSyncKind kind, uint64_t n, uint64_t each) {
    for (uint64_t i = 0; i < n; i++) agg_sync(b->agg, kind, each, at);
}


/* the same, with the profiler's calibration for the run (ProfCalibration) */
static ProfileView *view_calibrated(Builder *b, uint64_t wall_ns, ProfCalibration calibration) {
    ProfProcess proc = {.pid = 1, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = wall_ns,
                        .calibration = calibration};
    Profile *p = agg_to_profile(b->agg, &proc);
    cr_assert_not_null(p);
    agg_free(b->agg);
    b->agg = NULL;
    ProfileView *v = profile_view_new(p, "");
    cr_assert_not_null(v);
    return v;
}

/* the profile of a run that took wall_ns (0: as long as the GPU's span) */
static ProfileView *view_of(Builder *b, uint64_t wall_ns) { return view_calibrated(b, wall_ns, (ProfCalibration){0}); }

static ProfileView *view_from_file(const char *relative) {
    char path[1024], *error = NULL;
    snprintf(path, sizeof path, "%s/%s", ADVISE_SOURCE_DIR, relative);
    Profile *p = profile_read_file(path, PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s: %s", relative, error ? error : "?");
    ProfileView *v = profile_view_new(p, path);
    cr_assert_not_null(v);
    return v;
}

/* ======================================================================== */
/* helpers                                                                   */
/* ======================================================================== */

static Occupancy occupancy(uint32_t threads, uint32_t registers, uint32_t shared) {
    Occupancy o;
    cr_assert(pf_occupancy(&h200, threads, registers, shared, &o));
    return o;
}

Test(occupancy, h200_full_at_32_registers) {
    Occupancy o = occupancy(256, 32, 0);
    cr_expect_eq(o.blocks_per_sm, 8);
    cr_expect_eq(o.active_warps, 64);
    cr_expect_float_eq(o.occupancy, 1.0, 1e-9);
    cr_expect_eq(o.blocks_by_registers, 8);
}

Test(occupancy, h200_registers_limit) {
    Occupancy o = occupancy(256, 128, 0); /* 4096 registers a warp: 16 warps */
    cr_expect_eq(o.blocks_per_sm, 2);
    cr_expect_float_eq(o.occupancy, 0.25, 1e-9);
    cr_expect_eq(o.limit, PF_LIMIT_REGISTERS);
    o = occupancy(256, 64, 0);
    cr_expect_float_eq(o.occupancy, 0.5, 1e-9);
    /* 255 registers round up to 256 a thread: a GEMM-style 128-thread block fits twice */
    o = occupancy(128, 255, 0);
    cr_expect_eq(o.registers_per_warp, 8192);
    cr_expect_eq(o.blocks_per_sm, 2);
    cr_expect_float_eq(o.occupancy, 0.125, 1e-9);
    /* 40 registers: 1280 a warp, 12 warps a sub-partition: 48 warps, 6 blocks of 8 */
    o = occupancy(256, 40, 0);
    cr_expect_eq(o.blocks_per_sm, 6);
    cr_expect_float_eq(o.occupancy, 0.75, 1e-9);
    /* 33 registers: 1056 round to 1280 a warp, the same as 40 */
    cr_expect_eq(occupancy(256, 33, 0).blocks_per_sm, 6);
}

Test(occupancy, h200_shared_memory_limit) {
    /* 100 KiB + 1 KiB reserved a block: two fit in 228 KiB */
    Occupancy o = occupancy(128, 32, 100 * 1024);
    cr_expect_eq(o.blocks_by_shared, 2);
    cr_expect_eq(o.blocks_per_sm, 2);
    cr_expect_eq(o.limit, PF_LIMIT_SHARED);
    cr_expect_float_eq(o.occupancy, 8.0 / 64, 1e-9);
    /* the UNet's cuDNN kernel: 384 threads, 168 registers, 226 KiB of shared memory: one block */
    o = occupancy(384, 168, 231424);
    cr_expect_eq(o.blocks_per_sm, 1);
    cr_expect_float_eq(o.occupancy, 12.0 / 64, 1e-9);
    /* no shared memory at all: the 1 KiB reserve still counts, 228 blocks */
    cr_expect_eq(occupancy(64, 16, 0).blocks_by_shared, 228);
    /* more than an SM holds: it cannot run */
    o = occupancy(128, 32, 240 * 1024);
    cr_expect_eq(o.blocks_per_sm, 0);
    cr_expect_eq(o.limit, PF_LIMIT_NONE);
}

Test(occupancy, h200_block_and_warp_slots) {
    Occupancy o = occupancy(32, 16, 0); /* one warp a block, 32 block slots */
    cr_expect_eq(o.blocks_per_sm, 32);
    cr_expect_eq(o.limit, PF_LIMIT_BLOCKS);
    cr_expect_float_eq(o.occupancy, 0.5, 1e-9);
    o = occupancy(1024, 32, 0);
    cr_expect_eq(o.blocks_per_sm, 2);
    cr_expect_float_eq(o.occupancy, 1.0, 1e-9);
    o = occupancy(640, 16, 0); /* 20 warps: 3 blocks, 60 of 64 warps */
    cr_expect_eq(o.blocks_per_sm, 3);
    cr_expect_eq(o.limit, PF_LIMIT_WARPS);
    /* a block above the device's 1024 threads does not launch */
    cr_expect_eq(occupancy(2048, 16, 0).blocks_per_sm, 0);
    /* a block with more registers than a block may have */
    cr_expect_eq(occupancy(1024, 128, 0).blocks_per_sm, 0);
}

Test(occupancy, unknown_device_limits) {
    ProfDevice placeholder = {.name = "unknown device"};
    Occupancy o;
    cr_expect_not(pf_occupancy(&placeholder, 256, 32, 0, &o));
    cr_expect_not(pf_occupancy(NULL, 256, 32, 0, &o));
    cr_expect_not(pf_occupancy(&h200, 0, 32, 0, &o));
}

Test(names, display_names) {
    char buf[128];
    cr_expect_str_eq(pf_kernel_display_name("transpose_naive(float*, float const*, int, int)", buf, sizeof buf),
                     "transpose_naive");
    cr_expect_str_eq(pf_kernel_display_name("std::enable_if<!(false), void>::type internal::gemvx::kernel<int>(int)",
                                            buf, sizeof buf),
                     "internal::gemvx::kernel<int>");
    cr_expect_str_eq(pf_kernel_display_name("void (anonymous namespace)::softmax_warp_forward<float, 8>(float*, int)",
                                            buf, sizeof buf),
                     "(anonymous namespace)::softmax_warp_forward<float, 8>");
    cr_expect_str_eq(pf_kernel_display_name("sm80_xmma_gemm_f32f32_tn_n", buf, sizeof buf), "sm80_xmma_gemm_f32f32_tn_n");
    cr_expect_str_eq(pf_kernel_display_name("void at::native::foo<4>(int, float*)", buf, sizeof buf),
                     "at::native::foo<4>");
    char small[12];
    cr_expect_str_eq(pf_kernel_display_name("a_very_long_kernel_name(int)", small, sizeof small), "a_very_l...");
}

Test(names, library_and_kinds) {
    cr_expect(pf_kernel_is_library("void at::native::vectorized_elementwise_kernel<4>(int)"));
    cr_expect(pf_kernel_is_library("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize64x64x32"));
    cr_expect(pf_kernel_is_library("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>(float)"));
    cr_expect(pf_kernel_is_library("std::enable_if<!(false), void>::type internal::gemvx::kernel<int>(int)"));
    cr_expect(pf_kernel_is_library("triton_poi_fused_add_mul_0"));
    cr_expect_not(pf_kernel_is_library("transpose_naive(float*, float const*, int, int)"));
    cr_expect_not(pf_kernel_is_library("sgemm_tiled(float const*, float const*, float*, int)"));
    cr_expect_not(pf_kernel_is_library("flat::reduce(float*)")); /* "at::" only where a name starts */
    cr_expect(pf_kernel_is_gemm("ampere_sgemm_128x64_tn"));
    cr_expect(pf_kernel_is_gemm("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(Params)"));
    cr_expect_not(pf_kernel_is_gemm("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::Params)"));
    cr_expect(pf_kernel_is_softmax("void (anonymous namespace)::softmax_warp_forward<float>(float*)"));
    cr_expect(pf_kernel_is_softmax("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)"));
    cr_expect(pf_kernel_is_fused_attention("void pytorch_flash::flash_fwd_kernel<Traits>(FLASH_FWD_params)"));
    cr_expect(pf_kernel_is_fused_attention("fmha_cutlassF_f32_aligned_64x64_rf_sm80(Params)"));
    cr_expect(pf_kernel_is_fused_attention("cudnn_generated_fort_native_sdpa_sm90_flash_fprop(Params)"));
    cr_expect_not(pf_kernel_is_fused_attention("ampere_sgemm_128x64_tn"));
}

Test(figures, in_the_merge_s_words) {
    char b[32];
    /* durations, transfer sizes and shares are measure.h's words */
    cr_expect_str_eq(units_ns(12345, b, sizeof b), "12.3 \xc2\xb5s");
    cr_expect_str_eq(units_bytes(16u << 20, b, sizeof b), "16.8 MB");
    cr_expect_str_eq(units_share(1, 8, b, sizeof b), "12%");
    /* on-chip capacities in binary units */
    cr_expect_str_eq(units_capacity(49152, b, sizeof b), "48 KiB");
    cr_expect_str_eq(units_capacity(233472, b, sizeof b), "228 KiB");
    cr_expect_str_eq(units_capacity(1000, b, sizeof b), "1000 bytes");
    cr_expect_str_eq(units_ratio(0.314, b, sizeof b), "31%");
    cr_expect_str_eq(units_ratio(0.042, b, sizeof b), "4.2%");
    cr_expect_str_eq(units_rate(48.5e9, b, sizeof b), "48.5 GB/s");
    cr_expect_str_eq(units_count(1234567, b, sizeof b), "1,234,567");
    cr_expect_str_eq(units_count(12, b, sizeof b), "12");
}

Test(lines, line_range_skips_indentation) {
    Source s = source_text("x.py", "a = 1\n    b = 2  \n\n");
    size_t start, end;
    cr_assert(pf_line_range(s.doc, 2, &start, &end));
    cr_expect_eq(end - start, 5);
    cr_expect_eq(s.text[start], 'b');
    cr_expect_not(pf_line_range(s.doc, 3, &start, &end), "a blank line has no range");
    cr_expect_not(pf_line_range(s.doc, 40, &start, &end), "a line past the end");
    cr_expect_not(pf_line_range(s.doc, 0, &start, &end));
    source_free(&s);
}

/* ======================================================================== */
/* PR001 hotspot-kernel                                                      */
/* ======================================================================== */

static const char hot_py[] = "import torch\n"
                             "def step(x, w):\n"
                             "    y = x @ w\n"
                             "    z = torch.relu(y)\n"
                             "    s = z.sum()\n"
                             "    return s + 1\n";

Test(pr001, lines_with_a_large_share_of_gpu_time) {
    Builder b = builder();
    int gemm = site(&b, "hot.py", 3, "step"), relu = site(&b, "hot.py", 4, "step");
    int sum = site(&b, "hot.py", 5, "step"), add = site(&b, "hot.py", 6, "step");
    Kernel k_gemm = {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8", 128, 128, 255, 0, 0};
    Kernel k_relu = {"void at::native::vectorized_elementwise_kernel<4, at::native::relu>(int)", 4096, 128, 28, 0, 0};
    Kernel k_sum = {"void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)", 256, 512, 32, 0, 0};
    Kernel k_add = {"void at::native::vectorized_elementwise_kernel<4, at::native::add>(int)", 1, 128, 20, 0, 0};
    for (int i = 0; i < 300; i++) {
        launches(&b, gemm, &k_gemm, 1, 1 * MS, 10 * US); /* 300 ms: 75% */
        launches(&b, relu, &k_relu, 1, 250 * US, 10 * US); /* 75 ms: 19% */
        launches(&b, sum, &k_sum, 1, 50 * US, 10 * US); /* 15 ms: 3.8%, cold */
        launches(&b, add, &k_add, 1, 33 * US, 10 * US); /* 10 ms: 2.5%, cold */
    }
    ProfileView *v = view_of(&b, 1000 * MS);
    Source s = source_text("hot.py", hot_py);
    FindingList l = run_rule("PR001", v, &s);
    char *all = describe(&l, &s);
    cr_expect_eq(l.count, 2, "%s", all);
    const Finding *f = at_line(&l, &s, 3);
    cr_assert_not_null(f, "%s", all);
    cr_expect_str_eq(f->message, "75% of GPU time \xc2\xb7 1.00 ms avg \xc2\xb7 300 calls: "
                                 "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8");
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    cr_expect(has_evidence(f, "grid [128, 1, 1], block [128, 1, 1], 255 registers/thread"));
    cr_expect_not(f->gain.present, "no gain model for a hotspot");
    f = at_line(&l, &s, 4);
    cr_assert_not_null(f, "%s", all);
    cr_expect(strncmp(f->message, "19% of GPU time", 15) == 0, "%s", f->message);
    cr_expect_eq(f->severity, SEVERITY_INFO);
    cr_expect_null(at_line(&l, &s, 5), "3.8%% of GPU time is below 10%%");
    cr_expect_null(at_line(&l, &s, 6));
    expect_line_ranges(&l, &s);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

Test(pr001, not_when_the_gpu_work_is_a_sliver_of_the_run) {
    /* the same shares, but the kernels take 0.4% of a 100 s run */
    Builder b = builder();
    int gemm = site(&b, "hot.py", 3, "step"), relu = site(&b, "hot.py", 4, "step");
    Kernel k = {"gemm_kernel(float*)", 128, 128, 64, 0, 0};
    launches(&b, gemm, &k, 300, 1 * MS, 10 * US);
    launches(&b, relu, &k, 300, 300 * US, 10 * US);
    ProfileView *v = view_of(&b, 100000 * MS);
    Source s = source_text("hot.py", hot_py);
    FindingList l = run_rule("PR001", v, &s);
    cr_expect_eq(l.count, 0);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

Test(pr001, other_files_and_stale_lines) {
    Builder b = builder();
    int other = site(&b, "other.py", 3, "step"), past = site(&b, "hot.py", 400, "gone");
    Kernel k = {"gemm_kernel(float*)", 128, 128, 64, 0, 0};
    launches(&b, other, &k, 100, 1 * MS, 0);
    launches(&b, past, &k, 100, 1 * MS, 0);
    ProfileView *v = view_of(&b, 300 * MS);
    Source s = source_text("hot.py", hot_py);
    FindingList l = run_rule("PR001", v, &s);
    cr_expect_eq(l.count, 0, "line 400 is not in the file (it changed), line 3 of other.py is not this file's");
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* ======================================================================== */
/* PR002 launch-bound                                                        */
/* ======================================================================== */

static const char launch_py[] = "import torch\n"
                                "def gelu(x):\n"
                                "    y = x * 0.5\n"
                                "    z = torch.tanh(y)\n"
                                "    # a comment between\n"
                                "    return y * (1.0 + z)\n"
                                "def other(x):\n"
                                "    return x + 1\n";

static const Kernel tiny = {"void at::native::vectorized_elementwise_kernel<4, at::native::mul>(int)", 8, 128, 20, 0,
                            0};

Test(pr002, tiny_kernels_with_the_gpu_idle_between) {
    Builder b = builder();
    int l3 = site(&b, "launch.py", 3, "gelu"), l4 = site(&b, "launch.py", 4, "gelu"),
        l6 = site(&b, "launch.py", 6, "gelu");
    for (int i = 0; i < 1000; i++) {
        launches(&b, l3, &tiny, 1, 2 * US, 20 * US);
        launches(&b, l4, &tiny, 1, 2 * US, 20 * US);
        launches(&b, l6, &tiny, 1, 2 * US, 20 * US);
    }
    ProfileView *v = view_of(&b, 100 * MS);
    Source s = source_text("launch.py", launch_py);
    FindingList l = run_rule("PR002", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "one finding for the run of lines 3-6 of gelu:%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 3);
    cr_expect(strstr(f->message, "3,000 tiny kernel launches from lines 3-6 of `gelu` (median 2.00 \xc2\xb5s"), "%s",
              f->message);
    cr_expect(strstr(f->message, "torch.compile(mode=\"reduce-overhead\")"), "%s", f->message);
    cr_expect_eq(f->related_count, 2, "lines 4 and 6 are related places");
    cr_assert(f->gain.present);
    cr_expect_str_eq(f->gain.scope, "program");
    /* 3,000 launches x (~20 us idle per activity - 2 us) = ~54 ms */
    cr_expect(f->gain.seconds > 0.050 && f->gain.seconds < 0.056, "gain %f", f->gain.seconds);
    cr_expect_eq(f->severity, SEVERITY_WARNING, "the gain is over 10%% of the run");
    expect_line_ranges(&l, &s);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* The same run, profiled with a calibration: 1,000 traced launches took
 * 6 us more on the host than the 2,000 untraced ones, and the callbacks
 * 0.5 us each. That 7.5 ms was the profiler's, not idle time a CUDA graph
 * could recover. */
Test(pr002, the_profilers_own_cost_is_taken_out_of_the_idle_time) {
    Builder b = builder();
    int l3 = site(&b, "launch.py", 3, "gelu"), l4 = site(&b, "launch.py", 4, "gelu"),
        l6 = site(&b, "launch.py", 6, "gelu");
    for (int i = 0; i < 1000; i++) {
        launches(&b, l3, &tiny, 1, 2 * US, 20 * US);
        launches(&b, l4, &tiny, 1, 2 * US, 20 * US);
        launches(&b, l6, &tiny, 1, 2 * US, 20 * US);
    }
    ProfCalibration c = {.trace_every = 8, .launches = 3000, .traced_launches = 1000,
                         .traced_launch_api_ns = 1000 * 12 * US, .untraced_launches = 2000,
                         .untraced_launch_api_ns = 2000 * 6 * US, .callback_ns = 3000 * US / 2};
    ProfileView *v = view_calibrated(&b, 100 * MS, c);
    cr_expect_eq(profile_view_profiler_ns(v), 7500 * US);
    cr_expect_eq(profile_view_recoverable_idle_ns(v), profile_view_idle_ns(v) - 7500 * US);
    Source s = source_text("launch.py", launch_py);
    FindingList l = run_rule("PR002", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_assert(f->gain.present);
    /* 3,000 launches x (~(60 - 7.5) ms / 3,000 = 17.5 us - 2 us) = ~46.5 ms, not ~54 ms */
    cr_expect(f->gain.seconds > 0.044 && f->gain.seconds < 0.049, "gain %f", f->gain.seconds);
    cr_expect(has_evidence(f, "the profiler's own cost on the launching threads, 7.50 ms as measured in this run"),
              "%s", all);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* With the training steps known, the warm-up's idle time is a phase, not
 * launch overhead: a first step of 1,000 tiny launches 200 us apart (lazy
 * initialization, autotuning), then 30 steady steps of 100 launches 20 us
 * apart. The gain counts the steady steps' ~20 us per activity, and the
 * launches that fell in them (3,000 of 4,000), not the run's ~65 us. */
Test(pr002, only_the_steady_steps_count_where_the_steps_are_known) {
    Builder b = builder();
    int l3 = site(&b, "launch.py", 3, "gelu");
    launches(&b, l3, &tiny, 1000, 2 * US, 200 * US);
    uint64_t marks[31];
    marks[0] = b.t;
    for (int i = 1; i <= 30; i++) {
        launches(&b, l3, &tiny, 100, 2 * US, 20 * US);
        marks[i] = b.t;
    }
    agg_steps(b.agg, marks, 31, 1, 31);
    ProfileView *v = view_of(&b, 0);
    const ProfileSteady *steady = profile_view_steady(v);
    cr_assert_not_null(steady);
    cr_expect_eq(steady->steps, 30);
    cr_expect_eq(steady->activities, 3000, "%llu", (unsigned long long)steady->activities);
    cr_expect_eq(profile_view_recoverable_idle_ns(v), steady->idle_ns, "the warm-up's 200 ms is not recoverable");
    Source s = source_text("launch.py", launch_py);
    FindingList l = run_rule("PR002", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_assert(f->gain.present);
    /* 3,000 steady launches x (~20 us - 2 us) = ~54 ms; over the whole run it would be 4,000 x ~63 us = ~252 ms */
    cr_expect(f->gain.seconds > 0.050 && f->gain.seconds < 0.056, "gain %f:%s", f->gain.seconds, all);
    cr_expect(has_evidence(f, "in the steady training steps, outside their gaps of 1 ms or more, the GPU was idle"),
              "%s", all);
    cr_expect(has_evidence(f, "of the 4,000 tiny launches ran in those steps"), "%s", all);
    const Profile *p = profile_view_profile(v);
    cr_assert_eq(p->op_count, 1);
    cr_expect(p->ops[0].steady.known && p->ops[0].steady.count >= 2950 && p->ops[0].steady.count <= 3000,
              "%llu of 4,000 launches in the steady steps", (unsigned long long)p->ops[0].steady.count);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* Thirty steady steps of 100 tiny launches from line 3 (gelu, called by
 * the training step), then a sampling loop after the last optimizer step:
 * 3,000 launches from line 8 (other) and 1,000 more from line 3 (gelu, called
 * to generate). The run's activities were 3,000 of 7,000 in the steady steps;
 * taking each line's launches to fall there as the run's did gave line 8
 * 3,000 x 43% = 1,286 steady launches and line 3 1,714 of its 4,000. Each
 * line's own count gives line 8 none (no finding) and line 3 its 3,000. */
Test(pr002, launches_after_the_last_step_are_no_gain_per_step) {
    Builder b = builder();
    int l3 = site(&b, "launch.py", 3, "gelu"), l8 = site(&b, "launch.py", 8, "other");
    uint64_t marks[31];
    marks[0] = b.t;
    for (int i = 1; i <= 30; i++) {
        launches(&b, l3, &tiny, 100, 2 * US, 20 * US);
        marks[i] = b.t;
    }
    b.t += 5 * MS;
    for (int i = 0; i < 1000; i++) {
        launches(&b, l8, &tiny, 3, 2 * US, 20 * US);
        launches(&b, l3, &tiny, 1, 2 * US, 20 * US);
    }
    agg_steps(b.agg, marks, 31, 1, 31);
    ProfileView *v = view_of(&b, 0);
    const Profile *p = profile_view_profile(v);
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        cr_assert(op->steady.known, "op %zu", i);
        uint32_t line = p->sites[op->site].line;
        /* line 8 ran after the last step only: none; line 3's count is blurred by at most the
         * width of the bucket (op_times.h) that holds the last step's end, here 2.1 ms of 22 us launches */
        if (line == 8) cr_expect_eq(op->steady.count, 0, "%llu", (unsigned long long)op->steady.count);
        else cr_expect(op->steady.count >= 2900 && op->steady.count <= 3000, "line %u: %llu of %llu in the steady steps",
                       line, (unsigned long long)op->steady.count, (unsigned long long)op->stats.count);
    }
    Source s = source_text("launch.py", launch_py);
    FindingList l = run_rule("PR002", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "only line 3 ran in the training steps:%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 3);
    cr_assert(f->gain.present);
    /* 3,000 steady launches x (~20 us - 2 us) = ~54 ms */
    cr_expect(f->gain.seconds > 0.050 && f->gain.seconds < 0.056, "gain %f:%s", f->gain.seconds, all);
    cr_expect(has_evidence(f, "of the 4,000 tiny launches ran in those steps"), "%s", all);
    cr_expect(f->gain.steady_steps, "the gain counts the steady steps only: its per-step share is per steady step");
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* Thirty steady steps, each 100 tiny launches from line 3 (gelu) with the
 * GPU idle 30 us before each, then 100 from line 8 (other) 2 us apart, as a
 * graph would leave them. Idle per activity over the steps is 16 us;
 * charging it evenly gave both lines 3,000 x 14 us = 42 ms. The profile has
 * the idle time before each launch: line 3's 3,000 x 30 us less 2 us each
 * is 84 ms, and line 8 has nothing to gain. */
Test(pr002, the_idle_time_is_charged_to_the_launches_it_preceded) {
    Builder b = builder();
    int l3 = site(&b, "launch.py", 3, "gelu"), l8 = site(&b, "launch.py", 8, "other");
    uint64_t marks[31];
    marks[0] = b.t;
    for (int i = 1; i <= 30; i++) {
        for (int k = 0; k < 100; k++) {
            idle(&b, 30 * US);
            launches(&b, l3, &tiny, 1, 2 * US, 0);
        }
        for (int k = 0; k < 100; k++) {
            idle(&b, 2 * US);
            launches(&b, l8, &tiny, 1, 2 * US, 0);
        }
        marks[i] = b.t;
    }
    agg_steps(b.agg, marks, 31, 1, 31);
    ProfileView *v = view_of(&b, 0);
    Source s = source_text("launch.py", launch_py);
    FindingList l = run_rule("PR002", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "line 3 only:%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 3);
    cr_assert(f->gain.present);
    cr_expect(f->gain.seconds > 0.080 && f->gain.seconds < 0.088, "gain %f:%s", f->gain.seconds, all);
    cr_expect(has_evidence(f, "in the steady training steps the GPU sat idle 90.0 ms right before the work of these "
                              "lines' 3,000 launches"), "%s", all);
    cr_expect(strstr(f->message, "while the GPU idles ~30.0 \xc2\xb5s before each"), "%s", f->message);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* Thirty steady steps, each 100 tiny launches from line 3 (gelu) with the
 * GPU idle 30 us before each, then a 10 ms kernel from line 8 (other): the
 * GPU is busy 77% of each step, so the run as a whole is not host-paced, and
 * a 10 s start-up makes 1% of the run 100 ms. The idle time measured before
 * line 3's own launches is still 3,000 x 30 us, and a graph of its launches
 * recovers ~84 ms, 21% of the steady steps (pytorch-cifar on an H200,
 * 2026-12-04: a recording 26% idle in its steady steps gave no finding, and
 * graphing the model saved 4.05 of 19.93 ms per step). Look-alike: the same
 * steps with the tiny launches 2 us apart, as a graph leaves them. */
Test(pr002, measured_idle_before_a_lines_launches_counts_in_a_gpu_bound_run) {
    for (int graphed = 0; graphed <= 1; graphed++) {
        Builder b = builder();
        int l3 = site(&b, "launch.py", 3, "gelu"), l8 = site(&b, "launch.py", 8, "other");
        Kernel big = {"gemm_kernel(float*)", 128, 128, 64, 0, 0};
        uint64_t marks[31];
        marks[0] = b.t;
        for (int i = 1; i <= 30; i++) {
            for (int k = 0; k < 100; k++) {
                idle(&b, graphed ? 2 * US : 30 * US);
                launches(&b, l3, &tiny, 1, 2 * US, 0);
            }
            launches(&b, l8, &big, 1, 10 * MS, 0);
            marks[i] = b.t;
        }
        agg_steps(b.agg, marks, 31, 1, 31);
        ProfileView *v = view_of(&b, 10000 * MS);
        Source s = source_text("launch.py", launch_py);
        FindingList l = run_rule("PR002", v, &s);
        char *all = describe(&l, &s);
        if (graphed) {
            cr_expect_eq(l.count, 0, "launches 2 us apart leave nothing to gain:%s", all);
        } else {
            cr_assert_eq(l.count, 1, "line 3:%s", all);
            const Finding *f = &l.items[0];
            cr_expect_eq(finding_line(&s, f), 3);
            cr_assert(f->gain.present);
            cr_expect(f->gain.seconds > 0.080 && f->gain.seconds < 0.088, "gain %f:%s", f->gain.seconds, all);
        }
        free(all);
        finding_list_free(&l);
        source_free(&s);
        profile_view_free(v);
    }
}

/* 30 steady steps of a backward-like pass: 100 tiny launches at line 3, each
 * after 20 us of idle GPU; then `triples` times a long cuDNN kernel, a tiny
 * one and a long one at line 4, each after `wait` ns of idle GPU. */
static void backward_steps(Builder *b, int triples, uint64_t wait) {
    int l3 = site(b, "launch.py", 3, "gelu"), l4 = site(b, "launch.py", 4, "gelu");
    Kernel conv = {"cudnn::bn_bw_kernel(float*)", 64, 512, 32, 0, 0};
    uint64_t marks[31];
    marks[0] = b->t;
    for (int i = 1; i <= 30; i++) {
        for (int k = 0; k < 100; k++) {
            idle(b, 20 * US);
            launches(b, l3, &tiny, 1, 2 * US, 0);
        }
        for (int k = 0; k < triples; k++) {
            idle(b, wait);
            launches(b, l4, &conv, 1, 40 * US, 0);
            idle(b, wait);
            launches(b, l4, &tiny, 1, 2 * US, 0);
            idle(b, wait);
            launches(b, l4, &conv, 1, 40 * US, 0);
        }
        marks[i] = b->t;
    }
    agg_steps(b->agg, marks, 31, 1, 31);
}

/* A backward pass: a line whose launches are mostly long kernels (cuDNN's)
 * between a few tiny ones. Where the profile measured the GPU waiting before
 * them for longer than a graph would leave, the line joins the tiny launches
 * beside it; where its kernels followed each other back to back it does not,
 * and the tiny line is reported alone. */
Test(pr002, a_line_of_long_kernels_joins_when_the_gpu_measurably_waited_for_it) {
    for (int waited = 0; waited <= 1; waited++) {
        Builder b = builder();
        backward_steps(&b, 30, waited ? 25 * US : 1 * US);
        ProfileView *v = view_of(&b, 1000 * MS);
        Source s = source_text("launch.py", launch_py);
        FindingList l = run_rule("PR002", v, &s);
        char *all = describe(&l, &s);
        cr_assert_eq(l.count, 1, "%s", all);
        const Finding *f = &l.items[0];
        cr_expect_eq(finding_line(&s, f), 3);
        cr_assert(f->gain.present);
        /* 30 steady steps: 100 waits of 20 us before line 3's launches in each, and
         * with the wait, 90 of 25 us before line 4's; less 2 us a launch */
        double line3 = 30 * 100 * (20e-6 - 2e-6), line4 = 30 * 90 * (25e-6 - 2e-6);
        if (waited) {
            cr_expect_eq(f->related_count, 1, "line 4 joins:%s", all);
            cr_expect(f->gain.seconds > 0.99 * (line3 + line4) && f->gain.seconds < 1.01 * (line3 + line4),
                      "gain %f against %f:%s", f->gain.seconds, line3 + line4, all);
        } else {
            cr_expect_eq(f->related_count, 0, "back-to-back long kernels do not join:%s", all);
            cr_expect(f->gain.seconds > 0.99 * line3 && f->gain.seconds < 1.01 * line3, "gain %f against %f:%s",
                      f->gain.seconds, line3, all);
        }
        free(all);
        finding_list_free(&l);
        source_free(&s);
        profile_view_free(v);
    }
}

/* The wait measured before a line's launches holds the profiler's own cost
 * on them: 4 us before each of line 4's launches is more than a graph's 2
 * us, but not once the profiler's 3 us a launch is taken out. */
Test(pr002, the_profilers_cost_is_taken_out_before_a_line_of_long_kernels_joins) {
    for (int calibrated = 0; calibrated <= 1; calibrated++) {
        Builder b = builder();
        backward_steps(&b, 20, 4 * US);
        ProfCalibration c = {.trace_every = 1, .launches = 30 * 160, .callback_ns = 30 * 160 * 3 * US};
        ProfileView *v = view_calibrated(&b, 1000 * MS, calibrated ? c : (ProfCalibration){0});
        Source s = source_text("launch.py", launch_py);
        FindingList l = run_rule("PR002", v, &s);
        char *all = describe(&l, &s);
        cr_assert_eq(l.count, 1, "%s", all);
        cr_expect_eq(l.items[0].related_count, calibrated ? 0 : 1, "%s", all);
        free(all);
        finding_list_free(&l);
        source_free(&s);
        profile_view_free(v);
    }
}

/* One optimizer step: no steady steps to judge by, so the whole run counts,
 * as without steps (not no idle time at all). */
Test(pr002, a_single_step_leaves_the_whole_run_to_judge) {
    Builder b = builder();
    int l3 = site(&b, "launch.py", 3, "gelu");
    launches(&b, l3, &tiny, 3000, 2 * US, 20 * US);
    uint64_t mark = b.t;
    agg_steps(b.agg, &mark, 1, 1, 1);
    ProfileView *v = view_of(&b, 0);
    cr_expect_null(profile_view_steady(v));
    cr_expect_eq(profile_view_recoverable_idle_ns(v), profile_view_idle_ns(v));
    Source s = source_text("launch.py", launch_py);
    FindingList l = run_rule("PR002", v, &s);
    cr_assert_eq(l.count, 1);
    cr_assert(l.items[0].gain.present);
    cr_expect(l.items[0].gain.seconds > 0.050 && l.items[0].gain.seconds < 0.056, "gain %f", l.items[0].gain.seconds);
    cr_expect(!l.items[0].gain.steady_steps, "no steady steps: the whole run");
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

Test(pr002, cuda_advice_in_a_cuda_file) {
    Builder b = builder();
    int at = site(&b, "chain.cu", 3, "main");
    Kernel k = {"scale(float*, float, int)", 8, 128, 16, 0, 0};
    launches(&b, at, &k, 2000, 3 * US, 15 * US);
    ProfileView *v = view_of(&b, 100 * MS);
    Source s = source_text("chain.cu", "int main() {\n    for (int i = 0; i < 2000; ++i)\n        launch_scale(i);\n}\n");
    FindingList l = run_rule("PR002", v, &s);
    cr_assert_eq(l.count, 1);
    cr_expect(strstr(l.items[0].message, "cudaGraphLaunch"), "%s", l.items[0].message);
    cr_expect(strstr(l.items[0].message, "from this line"), "%s", l.items[0].message);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

Test(pr002, look_alikes) {
    Source s = source_text("launch.py", launch_py);
    /* tiny kernels back to back: the GPU keeps up, it is not waiting on launches */
    Builder b = builder();
    int at = site(&b, "launch.py", 3, "gelu");
    launches(&b, at, &tiny, 3000, 2 * US, 500);
    ProfileView *v = view_of(&b, 10 * MS);
    FindingList l = run_rule("PR002", v, &s);
    cr_expect_eq(l.count, 0, "busy GPU");
    finding_list_free(&l);
    profile_view_free(v);
    /* long kernels with the same gaps: not tiny */
    b = builder();
    at = site(&b, "launch.py", 3, "gelu");
    Kernel big = {"gemm_kernel(float*)", 128, 128, 64, 0, 0};
    launches(&b, at, &big, 3000, 200 * US, 250 * US);
    v = view_of(&b, 1500 * MS);
    l = run_rule("PR002", v, &s);
    cr_expect_eq(l.count, 0, "kernels of 200 us are not launch-bound");
    finding_list_free(&l);
    profile_view_free(v);
    /* few launches */
    b = builder();
    at = site(&b, "launch.py", 3, "gelu");
    launches(&b, at, &tiny, 60, 2 * US, 20 * US);
    v = view_of(&b, 2 * MS);
    l = run_rule("PR002", v, &s);
    cr_expect_eq(l.count, 0, "60 launches are not many");
    finding_list_free(&l);
    profile_view_free(v);
    /* many, but the estimated gain is under 1% of a long run */
    b = builder();
    at = site(&b, "launch.py", 3, "gelu");
    launches(&b, at, &tiny, 3000, 2 * US, 20 * US);
    v = view_of(&b, 100000 * MS);
    l = run_rule("PR002", v, &s);
    cr_expect_eq(l.count, 0, "54 ms of a 100 s run");
    finding_list_free(&l);
    profile_view_free(v);
    /* tiny launches of two functions, and a line of long kernels between, are separate runs */
    b = builder();
    int g = site(&b, "launch.py", 3, "gelu"), o = site(&b, "launch.py", 8, "other");
    launches(&b, g, &tiny, 1500, 2 * US, 20 * US);
    launches(&b, o, &tiny, 1500, 2 * US, 20 * US);
    v = view_of(&b, 100 * MS);
    l = run_rule("PR002", v, &s);
    cr_expect_eq(l.count, 2, "one per function");
    if (l.count == 2) cr_expect_eq(l.items[0].related_count, 0);
    finding_list_free(&l);
    profile_view_free(v);
    source_free(&s);
}

/* ======================================================================== */
/* PR003 gpu-idle-gap                                                        */
/* ======================================================================== */

static const char gap_cu[] = "int main() {\n"                         /* 1 */
                             "    for (int b = 0; b < 8; ++b) {\n"    /* 2 */
                             "        upload(b);\n"                   /* 3 */
                             "        block_sum();\n"                 /* 4 */
                             "        download(b);\n"                 /* 5 */
                             "        check_on_cpu(b);\n"             /* 6 */
                             "    }\n"                                /* 7 */
                             "    finish();\n"                        /* 8 */
                             "}\n";

Test(pr003, repeated_gaps_before_a_line) {
    Builder b = builder();
    int up = site(&b, "gap.cu", 3, "main"), sum = site(&b, "gap.cu", 4, "main"), down = site(&b, "gap.cu", 5, "main");
    Kernel k = {"block_sum(float const*, float*, int)", 528, 256, 16, 1024, 0};
    for (int i = 0; i < 8; i++) {
        copies(&b, up, PROF_COPY_HTOD, PROF_MEM_PINNED, 1, 4u << 20, 90 * US, 5 * US);
        launches(&b, sum, &k, 1, 20 * US, 5 * US);
        copies(&b, down, PROF_COPY_DTOH, PROF_MEM_PINNED, 1, 2048, 2 * US, 3 * MS); /* the host checks */
    }
    ProfileView *v = view_of(&b, 40 * MS);
    Source s = source_text("gap.cu", gap_cu);
    FindingList l = run_rule("PR003", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 3, "on the line whose work arrived late");
    cr_expect(strstr(f->message, "the GPU sat idle 3.00 ms before this line's work arrived, 7 times (21.0 ms"), "%s",
              f->message);
    cr_expect(strstr(f->message, "the host was busy after line 5"), "%s", f->message);
    cr_expect_eq(f->severity, SEVERITY_WARNING, "21 ms of a 40 ms run");
    cr_assert(f->gain.present);
    cr_expect_float_eq(f->gain.seconds, 0.021, 1e-6);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* With the training steps recorded (profiler/step_phases.c), idle time
 * outside the steady steps is a phase: the first step's gap and an
 * evaluation's 40 ms between two steps are shown, not counted as gain. */
Test(pr003, gaps_outside_the_steady_steps_are_phases_not_gains) {
    Builder b = builder();
    int up = site(&b, "gap.cu", 3, "main"), sum = site(&b, "gap.cu", 4, "main"), down = site(&b, "gap.cu", 5, "main");
    Kernel k = {"block_sum(float const*, float*, int)", 528, 256, 16, 1024, 0};
    uint64_t marks[8];
    for (int i = 0; i < 8; i++) {
        copies(&b, up, PROF_COPY_HTOD, PROF_MEM_PINNED, 1, 4u << 20, 90 * US, 5 * US);
        launches(&b, sum, &k, 1, 20 * US, 5 * US);
        copies(&b, down, PROF_COPY_DTOH, PROF_MEM_PINNED, 1, 2048, 2 * US, 0);
        marks[i] = b.t + 1 * MS;                        /* the step ends while the host checks */
        idle(&b, i == 4 ? 40 * MS : 3 * MS);            /* step 5 is followed by an evaluation */
    }
    agg_steps(b.agg, marks, 8, 1, 8);
    ProfileView *v = view_of(&b, 80 * MS);
    Source s = source_text("gap.cu", gap_cu);
    FindingList l = run_rule("PR003", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_expect(strstr(f->message, "7 times (58.0 ms"), "%s", f->message);
    cr_expect(has_evidence(f, "by training phase: 0 ns before the first optimizer step ended"), "%s", all);
    cr_expect(has_evidence(f, "40.0 ms in slow steps (evaluation, checkpoints or logging between steps), 0 ns "
                                   "after the last step; 18.0 ms in the steady steps"),
              "%s", all);
    cr_assert(f->gain.present);
    cr_expect_float_eq(f->gain.seconds, 0.018, 1e-6, "six steady gaps of 3 ms, not 58 ms");
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* In a sampled trace window (trace_sampling.c) each recorded gap stands for
 * the window's weight in gaps. */
Test(pr003, gaps_of_a_sampled_window_count_with_their_weight) {
    Builder b = builder();
    int sum = site(&b, "gap.cu", 4, "main"), up = site(&b, "gap.cu", 3, "main");
    for (uint32_t w = 1; w <= 4; w++) {
        AggKernel k1 = {.device = 0, .name = "block_sum", .grid = {528, 1, 1}, .block = {256, 1, 1},
                        .start_ns = b.t, .end_ns = b.t + 20 * US, .site = sum, .window = w, .weight = 8};
        AggKernel k2 = k1;
        k2.start_ns = b.t + 20 * US + 3 * MS;
        k2.end_ns = k2.start_ns + 20 * US;
        k2.site = up;
        agg_kernel(b.agg, &k1);
        agg_kernel(b.agg, &k2);
        b.t = k2.end_ns + 50 * MS; /* untraced work in between: no gap is measured there */
    }
    ProfileView *v = view_of(&b, 400 * MS);
    Source s = source_text("gap.cu", gap_cu);
    FindingList l = run_rule("PR003", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 3);
    cr_expect(strstr(f->message, "the GPU sat idle 3.00 ms before this line's work arrived, 32 times (96.0 ms"), "%s",
              f->message);
    cr_assert(f->gain.present);
    cr_expect_float_eq(f->gain.seconds, 0.096, 1e-6);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* Gains from idle time add up to no more than the run's idle time less the
 * profiler's cost, and all of a file's program gains to no more than the run. */
Test(gain_cap, idle_gains_are_scaled_to_the_recoverable_idle_time) {
    Builder b = builder();
    Kernel k = {"k(float*)", 528, 256, 16, 0, 0};
    int at = site(&b, "gap.cu", 4, "main");
    launches(&b, at, &k, 2, 10 * US, 40 * MS); /* 40 ms idle between the two, 10 ms after... */
    ProfCalibration c = {.trace_every = 1, .launches = 2, .traced_launches = 2, .callback_ns = 10 * MS};
    ProfileView *v = view_calibrated(&b, 100 * MS, c);
    cr_assert_eq(profile_view_idle_ns(v), 40 * MS);
    cr_assert_eq(profile_view_recoverable_idle_ns(v), 30 * MS);
    FindingList l;
    finding_list_init(&l);
    const char *codes[] = {"PR002", "PR003", "PY008", "PY001"};
    double gains[] = {0.030, 0.015, 0.050, 0.040};
    for (size_t i = 0; i < 4; i++) {
        Finding *f = finding_list_push(&l);
        cr_assert_not_null(f);
        f->code = codes[i];
        cr_assert(finding_set_gain(f, gains[i], "program", NO_VALUES, "claimed"));
    }
    cr_assert(engine_cap_gains(v, &l, 0));
    /* idle gains: 45 ms claimed, 30 ms there: x 2/3, to 20 and 10 ms; then all
     * program gains: 20 + 10 + 50 + 40 = 120 ms in a 100 ms run: x 5/6 */
    cr_expect_float_eq(l.items[0].gain.seconds, 0.020 * 5 / 6, 1e-9);
    cr_expect_float_eq(l.items[1].gain.seconds, 0.010 * 5 / 6, 1e-9);
    cr_expect_float_eq(l.items[2].gain.seconds, 0.050 * 5 / 6, 1e-9);
    cr_expect_float_eq(l.items[3].gain.seconds, 0.040 * 5 / 6, 1e-9);
    cr_expect(strstr(ev(&l.items[0].gain.model), "scaled down from 30.0 ms: this file's idle-time gains add up to "
                                                 "45.0 ms, more than the 30.0 ms of GPU idle time"),
              "%s", ev(&l.items[0].gain.model));
    cr_expect(strstr(ev(&l.items[2].gain.model), "scaled down from 50.0 ms: this file's program gains add up to "
                                                 "120 ms, more than the 100 ms the run lasted"),
              "%s", ev(&l.items[2].gain.model));
    cr_expect_not(strstr(ev(&l.items[2].gain.model), "idle"), "PY008's gain is not idle time");
    finding_list_free(&l);
    profile_view_free(v);
}

Test(gain_cap, gains_within_what_is_there_are_left_alone) {
    Builder b = builder();
    Kernel k = {"k(float*)", 528, 256, 16, 0, 0};
    int at = site(&b, "gap.cu", 4, "main");
    launches(&b, at, &k, 2, 10 * US, 40 * MS);
    ProfileView *v = view_of(&b, 100 * MS);
    FindingList l;
    finding_list_init(&l);
    Finding *f = finding_list_push(&l);
    f->code = "PR003";
    cr_assert(finding_set_gain(f, 0.039, "program", NO_VALUES, "claimed"));
    cr_assert(engine_cap_gains(v, &l, 0));
    cr_expect_float_eq(l.items[0].gain.seconds, 0.039, 1e-12);
    cr_expect_str_eq(ev(&l.items[0].gain.model), "claimed");
    finding_list_free(&l);
    profile_view_free(v);
}

Test(pr003, one_gap_is_a_hint) {
    Builder b = builder();
    int up = site(&b, "gap.cu", 3, "main"), fin = site(&b, "gap.cu", 8, "main");
    Kernel k = {"block_sum(float const*, float*, int)", 528, 256, 16, 1024, 0};
    launches(&b, up, &k, 10, 20 * US, 5 * US);
    idle(&b, 80 * MS);
    launches(&b, fin, &k, 10, 20 * US, 5 * US);
    ProfileView *v = view_of(&b, 200 * MS);
    Source s = source_text("gap.cu", gap_cu);
    FindingList l = run_rule("PR003", v, &s);
    cr_assert_eq(l.count, 1);
    cr_expect_eq(finding_line(&s, &l.items[0]), 8);
    cr_expect_eq(l.items[0].severity, SEVERITY_HINT);
    cr_expect(strstr(l.items[0].message, "sat idle 80.0 ms before this line's work arrived (40% of the run)"), "%s",
              l.items[0].message);
    cr_expect(has_evidence(&l.items[0], "a single gap"));
    cr_expect_not(l.items[0].gain.present, "no estimate for a one-off gap");
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* Gaps before a line in no loop that came a few times in a process are
 * start-up (several GPUs, ranks, or set-up calls): a hint with no gain. The
 * same gaps before a line in a loop, or many of them, stay findings. */
Test(pr003, a_few_gaps_before_a_line_in_no_loop_are_start_up) {
    Source s = source_text("gap.cu", gap_cu);
    Kernel k = {"block_sum(float const*, float*, int)", 528, 256, 16, 1024, 0};
    for (int gaps = 3; gaps <= 6; gaps += 3) {
        Builder b = builder();
        int up = site(&b, "gap.cu", 3, "main"), fin = site(&b, "gap.cu", 8, "main");
        for (int i = 0; i < gaps; i++) {
            launches(&b, up, &k, 10, 20 * US, 5 * US);
            idle(&b, 30 * MS);
            launches(&b, fin, &k, 1, 20 * US, 5 * US);
        }
        ProfileView *v = view_of(&b, 400 * MS);
        FindingList l = run_rule("PR003", v, &s);
        char *all = describe(&l, &s);
        cr_assert_eq(l.count, 1, "%s", all);
        const Finding *f = &l.items[0];
        cr_expect_eq(finding_line(&s, f), 8);
        if (gaps == 3) {
            cr_expect_eq(f->severity, SEVERITY_HINT, "%s", all);
            cr_expect_not(f->gain.present, "start-up: no estimate");
            cr_expect(has_evidence(f, "this line is in no loop and its gaps came at most 3 times in one process"),
                      "%s", all);
        } else {
            cr_expect_neq(f->severity, SEVERITY_HINT, "6 gaps in one process are not start-up: %s", all);
            cr_expect(f->gain.present, "%s", all);
        }
        free(all);
        finding_list_free(&l);
        profile_view_free(v);
    }
    /* the same three gaps before line 3, inside the loop, stay a finding with a gain */
    Builder b = builder();
    int up = site(&b, "gap.cu", 3, "main"), down = site(&b, "gap.cu", 5, "main");
    for (int i = 0; i < 3; i++) {
        launches(&b, down, &k, 1, 20 * US, 5 * US);
        idle(&b, 30 * MS);
        launches(&b, up, &k, 1, 20 * US, 5 * US);
    }
    ProfileView *v = view_of(&b, 400 * MS);
    FindingList l = run_rule("PR003", v, &s);
    cr_assert_eq(l.count, 1);
    cr_expect_eq(finding_line(&s, &l.items[0]), 3);
    cr_expect_neq(l.items[0].severity, SEVERITY_HINT);
    cr_expect(l.items[0].gain.present);
    finding_list_free(&l);
    profile_view_free(v);
    source_free(&s);
}

Test(pr003, look_alikes) {
    Source s = source_text("gap.cu", gap_cu);
    Kernel k = {"block_sum(float const*, float*, int)", 528, 256, 16, 1024, 0};
    /* gaps under 1 ms, however many */
    Builder b = builder();
    int up = site(&b, "gap.cu", 3, "main");
    launches(&b, up, &k, 200, 20 * US, 900 * US);
    ProfileView *v = view_of(&b, 200 * MS);
    FindingList l = run_rule("PR003", v, &s);
    cr_expect_eq(l.count, 0, "0.9 ms gaps");
    finding_list_free(&l);
    profile_view_free(v);
    /* gaps of 2 ms that add up to under 1% of a long run */
    b = builder();
    up = site(&b, "gap.cu", 3, "main");
    launches(&b, up, &k, 5, 20 * US, 2 * MS);
    v = view_of(&b, 10000 * MS);
    l = run_rule("PR003", v, &s);
    cr_expect_eq(l.count, 0, "8 ms of a 10 s run");
    finding_list_free(&l);
    profile_view_free(v);
    /* a long gap before work of another file */
    b = builder();
    up = site(&b, "gap.cu", 3, "main");
    int other = site(&b, "helper.cu", 3, "main");
    launches(&b, up, &k, 1, 20 * US, 50 * MS);
    launches(&b, other, &k, 1, 20 * US, 0);
    v = view_of(&b, 60 * MS);
    l = run_rule("PR003", v, &s);
    cr_expect_eq(l.count, 0, "the work that arrived late is helper.cu's");
    finding_list_free(&l);
    profile_view_free(v);
    source_free(&s);
}

/* ======================================================================== */
/* PR004 sync-stall                                                          */
/* ======================================================================== */

static const char sync_py[] = "import time\n"                                      /* 1 */
                              "import torch\n"                                     /* 2 */
                              "def train(model, batches):\n"                       /* 3 */
                              "    for x in batches:\n"                            /* 4 */
                              "        loss = model(x)\n"                          /* 5 */
                              "        print(loss.item())\n"                       /* 6 */
                              "    torch.cuda.synchronize()\n"                     /* 7 */
                              "def bench(model, x):\n"                             /* 8 */
                              "    for _ in range(3):\n"                           /* 9 */
                              "        t0 = time.perf_counter()\n"                 /* 10 */
                              "        model(x)\n"                                 /* 11 */
                              "        torch.cuda.synchronize()\n"                 /* 12 */
                              "        elapsed = time.perf_counter() - t0\n"       /* 13 */
                              "    return elapsed\n";                              /* 14 */

Test(pr004, repeated_waits_of_a_measurable_share) {
    Builder b = builder();
    int item = site(&b, "sync.py", 6, "train"), once = site(&b, "sync.py", 7, "train");
    syncs(&b, item, PROF_SYNC_STREAM, 30, 8 * MS); /* 240 ms: 24% */
    syncs(&b, once, PROF_SYNC_CONTEXT, 1, 300 * MS); /* a single wait */
    Kernel k = {"gemm_kernel(float*)", 128, 128, 64, 0, 0};
    launches(&b, site(&b, "sync.py", 5, "train"), &k, 30, 8 * MS, 1 * MS);
    ProfileView *v = view_of(&b, 1000 * MS);
    Source s = source_text("sync.py", sync_py);
    FindingList l = run_rule("PR004", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 6);
    cr_expect_str_eq(f->message, "the host waited 240 ms here for the GPU, 30 times (stream synchronize), 24% of the run");
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    cr_expect(has_evidence(f, "each wait: mean 8.00 ms, longest 8.00 ms"));
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

Test(pr004, look_alikes) {
    Source s = source_text("sync.py", sync_py);
    Builder b = builder();
    /* timing done right: the wait sits next to a clock read */
    syncs(&b, site(&b, "sync.py", 12, "bench"), PROF_SYNC_CONTEXT, 3, 100 * MS);
    /* short waits: 100 x 10 us */
    syncs(&b, site(&b, "sync.py", 6, "train"), PROF_SYNC_STREAM, 100, 10 * US);
    /* one long wait at the end */
    syncs(&b, site(&b, "sync.py", 7, "train"), PROF_SYNC_CONTEXT, 1, 400 * MS);
    Kernel k = {"gemm_kernel(float*)", 128, 128, 64, 0, 0};
    launches(&b, site(&b, "sync.py", 11, "bench"), &k, 3, 100 * MS, 0);
    ProfileView *v = view_of(&b, 1000 * MS);
    FindingList l = run_rule("PR004", v, &s);
    char *all = describe(&l, &s);
    cr_expect_eq(l.count, 0, "%s", all);
    free(all);
    finding_list_free(&l);
    profile_view_free(v);
    source_free(&s);
}

/* ======================================================================== */
/* PR005-PR007 on kernels.cu and its profile                                 */
/* ======================================================================== */

typedef struct {
    Source s;
    ProfileView *v;
} Fixture;

static Fixture fixture(const char *source, const char *profile) {
    Fixture x = {source_file(source), view_from_file(profile)};
    return x;
}

static void fixture_free(Fixture *x) {
    source_free(&x->s);
    profile_view_free(x->v);
}

Test(pr005, spills_at_the_definition_and_the_launch) {
    Fixture x = fixture("tests/fixtures/profile/kernels.cu", "tests/fixtures/profile/kernels.json");
    FindingList l = run_rule("PR005", x.v, &x.s);
    char *all = describe(&l, &x.s);
    cr_expect_eq(l.count, 2, "%s", all);
    uint32_t def = marker_line(&x.s, "// @spill-def"), launch = marker_line(&x.s, "// @spill-launch");
    const Finding *f = at_line(&l, &x.s, def);
    cr_assert_not_null(f, "no finding at the definition:%s", all);
    cr_expect(strstr(f->message, "`spill` uses 48 bytes of local memory per thread"), "%s", f->message);
    cr_expect(strstr(f->message, "of GPU time"), "%s", f->message);
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    f = at_line(&l, &x.s, launch);
    cr_assert_not_null(f, "no finding at the launch:%s", all);
    cr_expect(strstr(f->message, "`spill` launched here uses 48 bytes"), "%s", f->message);
    /* cold_spill spills too, but takes 0.5% of the kernel time */
    cr_expect_null(at_line(&l, &x.s, marker_line(&x.s, "// @cold-def")));
    cr_expect_null(at_line(&l, &x.s, marker_line(&x.s, "// @cold-launch")));
    expect_line_ranges(&l, &x.s);
    free(all);
    finding_list_free(&l);
    fixture_free(&x);
}

Test(pr005, library_kernels_in_python) {
    Builder b = builder();
    int at = site(&b, "model.py", 2, "forward");
    Kernel aten = {"void at::native::(anonymous namespace)::cat_kernel<float>(float*)", 1024, 256, 64, 0, 32};
    Kernel mine = {"my_extension_kernel(float*)", 1024, 256, 64, 0, 32};
    launches(&b, at, &aten, 100, 1 * MS, 10 * US);
    launches(&b, site(&b, "model.py", 3, "forward"), &mine, 100, 1 * MS, 10 * US);
    ProfileView *v = view_of(&b, 300 * MS);
    Source s = source_text("model.py", "def forward(x):\n    y = torch.cat([x, x])\n    return ext.run(y)\n");
    FindingList l = run_rule("PR005", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "ATen's kernel is not the user's to fix; the extension's is:%s", all);
    cr_expect_eq(finding_line(&s, &l.items[0]), 3);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

Test(pr006, low_occupancy_of_a_kernel_that_matters) {
    Fixture x = fixture("tests/fixtures/profile/kernels.cu", "tests/fixtures/profile/kernels.json");
    FindingList l = run_rule("PR006", x.v, &x.s);
    char *all = describe(&l, &x.s);
    cr_assert_eq(l.count, 1, "only stencil:%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&x.s, f), marker_line(&x.s, "// @stencil-launch"));
    cr_expect(strstr(f->message, "`stencil` runs at 25% theoretical occupancy (16 of 64 warps per SM): limited by "
                                 "registers: 128 per thread allow 2 blocks of 256 threads per SM"),
              "%s", f->message);
    cr_expect(has_evidence(f, "blocks per SM allowed by: warp slots 8, block slots 32, registers 2"));
    /* spill (32 registers), small_grid and wide run at full occupancy; cold_spill does not matter */
    free(all);
    finding_list_free(&l);
    fixture_free(&x);
}

Test(pr006, look_alikes) {
    Builder b = builder();
    Kernel gemm = {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", 264, 128, 255, 33792, 0};
    Kernel small = {"tiled(float*)", 4096, 256, 128, 0, 0};
    Kernel shared = {"big_tile(float*)", 4096, 128, 32, 100 * 1024, 0};
    launches(&b, site(&b, "occ.py", 1, NULL), &gemm, 100, 1 * MS, 0);  /* library: 12.5% by design */
    launches(&b, site(&b, "occ.py", 2, NULL), &small, 10, 100 * US, 0); /* 25%, but 0.6% of GPU time */
    launches(&b, site(&b, "occ.py", 3, NULL), &shared, 100, 500 * US, 0); /* 12.5%, shared memory: reported */
    ProfileView *v = view_of(&b, 200 * MS);
    Source s = source_text("occ.py", "a = lib_gemm(x)\nb = tiled(x)\nc = big_tile(x)\n");
    FindingList l = run_rule("PR006", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    cr_expect_eq(finding_line(&s, &l.items[0]), 3);
    cr_expect(strstr(l.items[0].message, "limited by shared memory: 100 KiB per block allow 2 blocks per SM"), "%s",
              l.items[0].message);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

Test(pr007, small_grid_from_the_fixture) {
    Fixture x = fixture("tests/fixtures/profile/kernels.cu", "tests/fixtures/profile/kernels.json");
    FindingList l = run_rule("PR007", x.v, &x.s);
    char *all = describe(&l, &x.s);
    cr_assert_eq(l.count, 1, "only small_grid (wide fills 4 whole waves):%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&x.s, f), marker_line(&x.s, "// @small-launch"));
    cr_expect(strstr(f->message, "`small_grid` runs 64 blocks on the 132 SMs of NVIDIA H200: 68 SMs idle"), "%s",
              f->message);
    cr_assert(f->gain.present);
    cr_expect_str_eq(f->gain.scope, "kernel");
    /* 200 ms x (1 - 64/132) */
    cr_expect_float_eq(f->gain.seconds, 0.2 * (1 - 64.0 / 132), 1e-6);
    free(all);
    finding_list_free(&l);
    /* with the critical path: a tenth of the launches' time on it */
    Profile *p = (Profile *)profile_view_profile(x.v); /* the test's own */
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == PROF_OP_LAUNCH) p->ops[i].critical = (CriticalTime){true, p->ops[i].stats.total_ns / 10};
    for (size_t i = 0; i < p->process_count; i++) p->processes[i].host_wait_known = true, p->processes[i].host_wait_ns = 1000 * MS;
    l = run_rule("PR007", x.v, &x.s);
    cr_assert_eq(l.count, 1);
    cr_expect_float_eq(l.items[0].gain.seconds, 0.02 * (1 - 64.0 / 132), 1e-6);
    cr_expect(strstr(ev(&l.items[0].gain.model), "x 10%, the part of that time on the run's critical path"), "%s",
              ev(&l.items[0].gain.model));
    finding_list_free(&l);
    fixture_free(&x);
}

Test(pr007, tail_and_look_alikes) {
    Builder b = builder();
    /* 256 threads, 32 registers: 8 blocks per SM, 1,056 a wave */
    Kernel tail = {"tail(float*)", 1162, 256, 32, 0, 0};         /* 1.1 waves: the second is 10% full */
    Kernel exact = {"exact(float*)", 2112, 256, 32, 0, 0};       /* 2 full waves */
    Kernel many = {"many(float*)", 52810, 256, 32, 0, 0};        /* 50.01 waves: the tail is noise */
    Kernel one = {"one_wave(float*)", 200, 256, 32, 0, 0};       /* fewer than a wave, every SM busy */
    Kernel lib = {"void at::native::reduce_kernel<512, 1>(float*)", 8, 512, 32, 0, 0}; /* small, library */
    Kernel cold = {"cold(float*)", 8, 256, 32, 0, 0};            /* small, 0.4% */
    launches(&b, site(&b, "grid.py", 1, NULL), &tail, 100, 1 * MS, 0);
    launches(&b, site(&b, "grid.py", 2, NULL), &exact, 100, 1 * MS, 0);
    launches(&b, site(&b, "grid.py", 3, NULL), &many, 100, 1 * MS, 0);
    launches(&b, site(&b, "grid.py", 4, NULL), &one, 100, 1 * MS, 0);
    launches(&b, site(&b, "grid.py", 5, NULL), &lib, 100, 1 * MS, 0);
    launches(&b, site(&b, "grid.py", 6, NULL), &cold, 10, 200 * US, 0);
    ProfileView *v = view_of(&b, 600 * MS);
    Source s = source_text("grid.py", "a = tail(x)\nb = exact(x)\nc = many(x)\nd = one_wave(x)\ne = x.sum()\nf = cold(x)\n");
    FindingList l = run_rule("PR007", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 1);
    cr_expect(strstr(f->message, "`tail`: the last of its 2 waves of blocks fills 10% of the GPU, so 45% of the SMs' "
                                 "time in this kernel is idle"),
              "%s", f->message);
    cr_assert(f->gain.present);
    cr_expect_float_eq(f->gain.seconds, 0.1 * (1 - 1162.0 / 2112), 1e-6);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* ======================================================================== */
/* PR008 pageable-copy                                                       */
/* ======================================================================== */

static const char copy_cu[] = "int main() {\n"                                                   /* 1 */
                              "    for (int c = 0; c < 16; ++c) {\n"                             /* 2 */
                              "        cudaMemcpyAsync(d_x, h_in + off, bytes, H2D, s);\n"       /* 3 */
                              "        cudaMemcpyAsync(h_out + off, d_y, bytes, D2H, s);\n"      /* 4 */
                              "        cudaMemcpyAsync(h_pinned, d_y, bytes, D2H, s);\n"         /* 5 */
                              "        cudaMemcpyAsync(&flag, d_flag, 4, D2H, s);\n"             /* 6 */
                              "        cudaMemcpy(d_big, h_big, big, H2D);\n"                    /* 7 */
                              "    }\n"                                                          /* 8 */
                              "    cudaMemcpy(d_all, h_all, all, H2D);\n"                        /* 9 */
                              "}\n";

Test(pr008, pageable_copies_with_a_pinned_estimate) {
    Builder b = builder();
    int h2d = site(&b, "copy.cu", 3, "main"), d2h = site(&b, "copy.cu", 4, "main");
    int pinned = site(&b, "copy.cu", 5, "main"), flag = site(&b, "copy.cu", 6, "main");
    int big = site(&b, "copy.cu", 7, "main"), once = site(&b, "copy.cu", 9, "main");
    for (int i = 0; i < 16; i++) {
        copies(&b, h2d, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 1, 4u << 20, 1400 * US, 10 * US); /* 3 GB/s */
        copies(&b, d2h, PROF_COPY_DTOH, PROF_MEM_PAGEABLE, 1, 1u << 20, 21 * US, 10 * US);  /* 50 GB/s */
        copies(&b, pinned, PROF_COPY_DTOH, PROF_MEM_PINNED, 1, 64u << 10, 3 * US, 10 * US); /* too small a sample */
        copies(&b, flag, PROF_COPY_DTOH, PROF_MEM_PAGEABLE, 1, 4, 2 * US, 10 * US);
    }
    /* the host's time in the copy calls: 48 ms, shared out over 144 MiB of pageable copies */
    for (int i = 0; i < 48; i++) agg_api(b.agg, "cudaMemcpyAsync", 1 * MS);
    copies(&b, big, PROF_COPY_HTOD, PROF_MEM_PINNED, 2, 64u << 20, 1600 * US, 0);
    copies(&b, once, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 1, 64u << 20, 8 * MS, 0); /* one upload */
    ProfileView *v = view_of(&b, 100 * MS);
    Source s = source_text("copy.cu", copy_cu);
    FindingList l = run_rule("PR008", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 2, "%s", all);
    const Finding *f = at_line(&l, &s, 3);
    cr_assert_not_null(f, "%s", all);
    cr_expect(strstr(f->message, "16 host-to-device copies from pageable memory (67.1 MB, 4.19 MB each) at 3.00 GB/s"),
              "%s", f->message);
    cr_expect(strstr(f->message, "`cudaMallocHost`"), "%s", f->message);
    /* the pinned estimate uses this run's pinned host-to-device copies: 128 MiB in 3.2 ms */
    cr_expect(has_evidence(f, "(41.9 GB/s, as this run's pinned copies)"), "%s", all);
    cr_assert(f->gain.present);
    double pinned_bw = (128.0 * (1 << 20)) / 3.2e-3;
    double want = 16 * 1.4e-3 - (64.0 * (1 << 20) / pinned_bw + 16 * 1.5e-6);
    cr_expect_float_eq(f->gain.seconds, want, 1e-6);
    cr_expect_eq(f->severity, SEVERITY_WARNING, "the gain is over 1%% of the run");
    f = at_line(&l, &s, 4);
    cr_assert_not_null(f, "%s", all);
    cr_expect(strstr(f->message, "16 device-to-host copies into pageable memory (16.8 MB, 1.05 MB each) at 49.9 GB/s"),
              "%s", f->message);
    cr_expect_not(f->gain.present, "already at pinned speed on the GPU's side");
    /* 0.34 ms on the GPU, but about 48 ms x 16 / 144 = 5.33 ms on the host */
    cr_expect(has_evidence(f, "downloads on the host: about 5.33 ms (5.3% of the run)"), "%s", all);
    cr_expect(has_evidence(f, "(50.0 GB/s, the device's usual pinned bandwidth)"),
              "no pinned device-to-host sample of 256 KiB: %s", all);
    cr_expect(has_evidence(f, "pinned memory would copy no faster here"));
    /* lines 5 (pinned), 6 (4 bytes), 7 (pinned) and 9 (one copy) are not reported */
    expect_line_ranges(&l, &s);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

Test(pr008, python_advice_and_a_cheap_line) {
    Builder b = builder();
    int at = site(&b, "load.py", 2, "main");
    copies(&b, at, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 30, 32u << 20, 4 * MS, 1 * MS);
    int cheap = site(&b, "load.py", 3, "main");
    copies(&b, cheap, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 4, 2u << 20, 100 * US, 0); /* 0.4 ms of 300 ms */
    ProfileView *v = view_of(&b, 300 * MS);
    Source s = source_text("load.py", "def main(batches):\n    x = torch.from_numpy(a).cuda()\n    y = b.cuda()\n");
    FindingList l = run_rule("PR008", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    cr_expect_eq(finding_line(&s, &l.items[0]), 2);
    cr_expect(strstr(l.items[0].message, "`pin_memory=True`"), "%s", l.items[0].message);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* Pinning a std::vector in place (rules/profile/support/pin_in_place_fix.c): offered where
 * the copies gain more than pinning their bytes costs the host, and only for
 * a vector whose storage stays put. */
static const char pin_cu[] = "#include <cuda_runtime.h>\n"                                                 /* 1 */
                             "#include <cstdlib>\n"                                                         /* 2 */
                             "#include <vector>\n"                                                          /* 3 */
                             "int upload(float *d, int n, int batches) {\n"                                 /* 4 */
                             "    std::vector<float> h(n * batches);\n"                                     /* 5 */
                             "    for (float &x : h) x = 1.0f;\n"                                           /* 6 */
                             "    for (int b = 0; b < batches; ++b) {\n"                                    /* 7 */
                             "        cudaMemcpy(d, h.data() + b * n, n * sizeof(float), cudaMemcpyHostToDevice);\n" /* 8 */
                             "        if (h[b] < 0) return 1;\n"                                            /* 9 */
                             "    }\n"                                                                      /* 10 */
                             "    std::vector<float> g(n);\n"                                               /* 11 */
                             "    g.resize(2 * n);\n"                                                       /* 12 */
                             "    for (int b = 0; b < batches; ++b)\n"                                      /* 13 */
                             "        cudaMemcpy(d, g.data(), n * sizeof(float), cudaMemcpyHostToDevice);\n" /* 14 */
                             "    float *raw = (float *)malloc(n * sizeof(float));\n"                       /* 15 */
                             "    for (int b = 0; b < batches; ++b)\n"                                      /* 16 */
                             "        cudaMemcpy(d, raw, n * sizeof(float), cudaMemcpyHostToDevice);\n"     /* 17 */
                             "    free(raw);\n"                                                             /* 18 */
                             "    std::vector<float> k(n);\n"                                               /* 19 */
                             "    for (int b = 0; b < batches; ++b)\n"                                      /* 20 */
                             "        cudaMemcpy(k.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);\n" /* 21 */
                             "    std::vector<float> q(batches * n);\n"                                    /* 22 */
                             "    for (int b = 0; b < batches; ++b)\n"                                      /* 23 */
                             "        cudaMemcpy(q.data() + b * n, d, n * sizeof(float), cudaMemcpyDeviceToHost);\n" /* 24 */
                             "    return 0;\n"                                                              /* 25 */
                             "}\n";

/* the guard the fix declares after `h` */
static const char pin_guard[] =
    "\n"
    "    // pinned in place (advise): copies to and from h run at full bus speed; unpinned before it goes\n"
    "    struct h_pin_guard {\n"
    "        void *p = nullptr;\n"
    "        h_pin_guard(void *q, size_t bytes) {\n"
    "            if (bytes && cudaHostRegister(q, bytes, cudaHostRegisterPortable) == cudaSuccess) p = q;\n"
    "            else if (bytes) cudaGetLastError();  // not pinned: the copies stay pageable, only slower\n"
    "        }\n"
    "        ~h_pin_guard() { if (p) (void)cudaHostUnregister(p); }\n"
    "        h_pin_guard(const h_pin_guard &) = delete;\n"
    "        h_pin_guard &operator=(const h_pin_guard &) = delete;\n"
    "    } h_pinned(h.data(), h.size() * sizeof(h[0]));";

Test(pr008, pins_a_vector_in_place_where_it_pays) {
    Builder b = builder();
    int fast = site(&b, "pin.cu", 8, "upload"), grown = site(&b, "pin.cu", 14, "upload");
    int raw = site(&b, "pin.cu", 17, "upload"), same = site(&b, "pin.cu", 21, "upload");
    int slices = site(&b, "pin.cu", 24, "upload");
    /* 8 x 4 MiB at 4.2 GB/s: 8 ms, pinned about 0.68 ms; pinning 33.6 MB costs about 2.27 ms */
    copies(&b, fast, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 8, 4u << 20, 1 * MS, 10 * US);
    copies(&b, grown, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 8, 4u << 20, 1 * MS, 10 * US);
    copies(&b, raw, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 8, 4u << 20, 1 * MS, 10 * US);
    /* 8 x 4 MiB at 14 GB/s: gains 1.72 ms; pinning 4.19 MB costs 0.55 ms, pinning 33.6 MB 2.27 ms */
    copies(&b, same, PROF_COPY_DTOH, PROF_MEM_PAGEABLE, 8, 4u << 20, 300 * US, 10 * US);
    copies(&b, slices, PROF_COPY_DTOH, PROF_MEM_PAGEABLE, 8, 4u << 20, 300 * US, 10 * US);
    ProfileView *v = view_of(&b, 100 * MS);
    Source s = source_text("pin.cu", pin_cu);
    cr_assert(!s.cuda->has_errors, "%s", s.cuda->first_error_message ? s.cuda->first_error_message : "");
    FindingList l = run_rule("PR008", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 5, "%s", all);
    const Finding *f = at_line(&l, &s, 8);
    cr_assert_not_null(f, "%s", all);
    cr_expect(has_evidence(f, "pinning `h` in place costs the host about 2.27 ms once (cudaHostRegister and "
                              "cudaHostUnregister of the 33.6 MB these copies moved), less than they gain"),
              "%s", all);
    cr_assert_eq(f->fix_count, 1, "%s", all);
    cr_expect_not(f->fixes[0].safe, "pinning is an unsafe fix");
    cr_expect_str_eq(f->fixes[0].title, "Pin `h` in place with cudaHostRegister (unpinned before it goes)");
    size_t fixed_len;
    char *fixed = edits_apply(s.text, strlen(s.text), f->fixes[0].edits, f->fixes[0].edit_count, &fixed_len);
    cr_assert_not_null(fixed);
    /* one insertion after the declaration; the returns are left alone (the guard's destructor unpins) */
    const char *decl = "    std::vector<float> h(n * batches);";
    size_t at = (size_t)(strstr(s.text, decl) - s.text) + strlen(decl);
    char *want = format_string("%.*s%s%s", (int)at, s.text, pin_guard, s.text + at);
    cr_expect_str_eq(fixed, want);
    free(want);
    free(fixed);
    /* look-alikes: a vector that is resized, a malloc'ed pointer, and copies that gain too little */
    f = at_line(&l, &s, 14);
    cr_assert_not_null(f, "%s", all);
    cr_expect_eq(f->fix_count, 0, "g is resized after its declaration: %s", all);
    f = at_line(&l, &s, 17);
    cr_assert_not_null(f, "%s", all);
    cr_expect_eq(f->fix_count, 0, "not a vector: %s", all);
    /* every copy from k.data(): the same 4 MiB again, cheap to pin */
    f = at_line(&l, &s, 21);
    cr_assert_not_null(f, "%s", all);
    cr_expect_eq(f->fix_count, 1, "%s", all);
    cr_expect(has_evidence(f, "pinning `k` in place costs the host about 547 µs once (cudaHostRegister and "
                              "cudaHostUnregister of the 4.19 MB each copy moved)"),
              "%s", all);
    /* slices of q: all 33.6 MB would be pinned, for 1.72 ms of gain */
    f = at_line(&l, &s, 24);
    cr_assert_not_null(f, "%s", all);
    cr_expect_eq(f->fix_count, 0, "%s", all);
    cr_expect(has_evidence(f, "pinning `q` in place would cost the host at least 2.27 ms once (cudaHostRegister and "
                              "cudaHostUnregister of the 33.6 MB these copies moved), more than the copies gain: "
                              "pin it only if the program copies it more than this run did"),
              "%s", all);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* Where pinning in place is unsafe, PR008 keeps its advice and offers no fix. */
static const char unsafe_pin_cu[] =
    "#include <cuda_runtime.h>\n"                                                          /* 1 */
    "#include <vector>\n"                                                                  /* 2 */
    "using Buf = std::vector<float> &;\n"                                                  /* 3 */
    "void grow(Buf b);\n"                                                                  /* 4 */
    "std::vector<float> g;\n"                                                              /* 5 */
    "void f(float *d, int n, cudaStream_t s) {\n"                                          /* 6 */
    "    const std::vector<float> c(n, 1.0f);\n"                                           /* 7 */
    "    std::vector<float> &r = g;\n"                                                     /* 8 */
    "    std::vector<float> a(n);\n"                                                       /* 9 */
    "    std::vector<float> t(n);\n"                                                       /* 10 */
    "    grow(t);\n"                                                                       /* 11 */
    "    std::vector<float> w(n);  // scratch\n"                                           /* 12 */
    "    for (int i = 0; i < 8; ++i) {\n"                                                  /* 13 */
    "        cudaMemcpy(d, c.data(), n * sizeof(float), cudaMemcpyHostToDevice);\n"         /* 14 */
    "        cudaMemcpy(d, r.data(), n * sizeof(float), cudaMemcpyHostToDevice);\n"         /* 15 */
    "        cudaMemcpy(d, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);\n"         /* 16 */
    "        cudaMemcpyAsync(a.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, s);\n" /* 17 */
    "        cudaMemcpy(d, t.data(), n * sizeof(float), cudaMemcpyHostToDevice);\n"         /* 18 */
    "        cudaMemcpy(d, w.data(), n * sizeof(float), cudaMemcpyHostToDevice);\n"         /* 19 */
    "    }\n"                                                                              /* 20 */
    "    cudaStreamSynchronize(s);\n"                                                      /* 21 */
    "}\n"                                                                                  /* 22 */
    "void pinned_by_hand(float *d, int n) {\n"                                             /* 23 */
    "    std::vector<float> v(n);\n"                                                       /* 24 */
    "    float *p = v.data();\n"                                                           /* 25 */
    "    cudaHostRegister(p, n * sizeof(float), 0);\n"                                     /* 26 */
    "    for (int i = 0; i < 8; ++i)\n"                                                    /* 27 */
    "        cudaMemcpy(d, v.data(), n * sizeof(float), cudaMemcpyHostToDevice);\n"         /* 28 */
    "    cudaHostUnregister(p);\n"                                                         /* 29 */
    "}\n";

Test(pr008, no_pinning_where_it_is_unsafe) {
    Builder b = builder();
    static const uint32_t lines[] = {14, 15, 16, 18, 19, 28};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        copies(&b, site(&b, "unsafe_pin.cu", lines[i], i < 5 ? "f" : "pinned_by_hand"), PROF_COPY_HTOD,
               PROF_MEM_PAGEABLE, 8, 4u << 20, 1 * MS, 10 * US);
    ProfileView *v = view_of(&b, 100 * MS);
    Source s = source_text("unsafe_pin.cu", unsafe_pin_cu);
    cr_assert(!s.cuda->has_errors, "%s", s.cuda->first_error_message ? s.cuda->first_error_message : "");
    FindingList l = run_rule("PR008", v, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 6, "%s", all);
    /* const (data() is const float *), a reference (owned elsewhere), an async copy (pinned, it would
     * race with the host), lent out through a non-const reference alias, pinned by hand */
    static const uint32_t unsafe[] = {14, 15, 16, 18, 28};
    for (size_t i = 0; i < sizeof unsafe / sizeof *unsafe; i++) {
        const Finding *f = at_line(&l, &s, unsafe[i]);
        cr_assert_not_null(f, "line %u: %s", unsafe[i], all);
        cr_expect_eq(f->fix_count, 0, "line %u: %s", unsafe[i], all);
    }
    /* w: the guard goes after the declaration's trailing comment */
    const Finding *f = at_line(&l, &s, 19);
    cr_assert_not_null(f, "%s", all);
    cr_assert_eq(f->fix_count, 1, "%s", all);
    size_t len;
    char *fixed = edits_apply(s.text, strlen(s.text), f->fixes[0].edits, f->fixes[0].edit_count, &len);
    cr_assert_not_null(fixed);
    cr_expect(strstr(fixed, "    std::vector<float> w(n);  // scratch\n    // pinned in place (advise)"), "%s", fixed);
    cr_expect(strstr(fixed, "    } w_pinned(w.data(), w.size() * sizeof(w[0]));\n    for (int i"), "%s", fixed);
    free(fixed);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* ======================================================================== */
/* PR009 attention-math-fallback                                             */
/* ======================================================================== */

Test(pr009, sdpa_on_the_math_path) {
    Fixture x = fixture("tests/fixtures/profile/attention.py", "tests/fixtures/profile/attention.json");
    FindingList l = run_rule("PR009", x.v, &x.s);
    char *all = describe(&l, &x.s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&x.s, f), marker_line(&x.s, "# @math"));
    cr_expect(strstr(f->message, "scaled_dot_product_attention ran on the math path: 200 matmul and 100 softmax "
                                 "kernels, no fused attention kernel (17% of GPU time); likely because of its "
                                 "explicit `attn_mask`"),
              "%s", f->message);
    cr_expect_null(strstr(f->message, "dropout_p"), "the call has no dropout");
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    cr_expect(has_evidence(f, "matmul and softmax kernels launched here: 25.0 ms on the GPU"));
    /* look-alikes: the flash line, the cold line, hand-written attention and a whole model */
    cr_expect_null(at_line(&l, &x.s, marker_line(&x.s, "# @flash")));
    cr_expect_null(at_line(&l, &x.s, marker_line(&x.s, "# @cold")));
    cr_expect_null(at_line(&l, &x.s, marker_line(&x.s, "# @manual")));
    cr_expect_null(at_line(&l, &x.s, marker_line(&x.s, "# @model")));
    expect_line_ranges(&l, &x.s);
    free(all);
    finding_list_free(&l);
    fixture_free(&x);
}

Test(pr009, not_in_cuda_files_nor_without_softmax) {
    const Rule *r = rule_find("PR009");
    cr_assert_not_null(r);
    cr_expect_eq(r->languages, LANGUAGE_PYTHON);
    Builder b = builder();
    int at = site(&b, "attn.py", 2, "f");
    Kernel gemm = {"ampere_sgemm_128x64_tn", 128, 128, 122, 0, 0};
    launches(&b, at, &gemm, 200, 100 * US, 0); /* matmuls only */
    ProfileView *v = view_of(&b, 100 * MS);
    Source s = source_text("attn.py", "def f(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n");
    FindingList l = run_rule("PR009", v, &s);
    cr_expect_eq(l.count, 0);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* ======================================================================== */
/* PR010-PR012: per-line SASS metrics (advise profile --source-metrics)       */
/* ======================================================================== */

#define TRANSPOSE "samples/cuda/transpose.cu"
#define NAIVE "transpose_naive(float*, float const*, int, int)"
#define TILED "transpose_tiled(float*, float const*, int, int)"
#define M4096 4194304ull /* sectors of a 4096 x 4096 float matrix read or written coalesced */

/* transpose.cu's naive and tiled kernels, 1 ms each of a 5 ms run, with the
 * figures an H200 measured for a 4096 x 4096 transpose: the naive store
 * (83) moves 4.5x the ideal sectors, its load (82) 1x; the tiled kernel's
 * shared read of a column (99) takes 32x the ideal wavefronts, its write
 * of a row (94) 1x. */
static Profile *transpose_lines(void) {
    Profile *p = pb_new(5 * MS, 3 * MS);
    pb_launch(p, TRANSPOSE, 174, NAIVE, 20, 1 * MS);
    pb_launch(p, TRANSPOSE, 188, TILED, 20, 1 * MS);
    pb_line_metrics(p, TRANSPOSE, 82, NAIVE, (PbLineCounts){M4096, M4096, 0, 0, 0});
    pb_line_metrics(p, TRANSPOSE, 83, NAIVE, (PbLineCounts){18874368, M4096, 0, 0, 0});
    pb_line_metrics(p, TRANSPOSE, 94, TILED, (PbLineCounts){M4096, M4096, 32768, 32768, 0});
    pb_line_metrics(p, TRANSPOSE, 99, TILED, (PbLineCounts){M4096, M4096, 1048576, 32768, 0});
    return p;
}

/* the findings of rule code on transpose.cu with p (taken) */
static FindingList on_transpose(const char *code, Profile *p, const Source *s) {
    ProfileView *v = profile_view_new(p, "");
    cr_assert_not_null(v);
    FindingList l = run_rule(code, v, s);
    expect_line_ranges(&l, s);
    profile_view_free(v);
    return l;
}

static ProfLineMetrics *entry_at(Profile *p, uint32_t line) {
    for (size_t i = 0; i < p->line_metric_count; i++)
        if (p->line_metrics[i].line == line) return &p->line_metrics[i];
    cr_assert_fail("no line metrics at %u", line);
    return NULL;
}

Test(pr010, the_naive_transpose_store, .timeout = 120) {
    Source s = source_file(TRANSPOSE);
    FindingList l = on_transpose("PR010", transpose_lines(), &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "only the store:%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 83);
    cr_expect_str_eq(f->message, "global accesses on this line move 4.5x the sectors coalesced accesses would "
                                 "(18,874,368 vs 4,194,304 in one launch of transpose_naive, 82% of its global "
                                 "sectors); make consecutive threads touch consecutive addresses, or stage the data "
                                 "through shared memory");
    cr_expect_eq(f->severity, SEVERITY_WARNING, "4.5x in a kernel with half the kernel time");
    cr_expect(has_evidence(f, "604 MB moved in 32-byte sectors where coalesced accesses would move 134 MB"));
    cr_expect(has_evidence(f, "the kernel: 1.00 ms of GPU time, 50% of all kernel time"));
    /* 23.1 M sectors (738 MB) per 50 us launch: memory-bound; 1 ms x (18.9 M - 4.2 M) / 23.1 M */
    cr_assert(f->gain.present, "a memory-bound kernel's excess sectors cost time");
    cr_expect_float_eq(f->gain.seconds, 1e-3 * (18874368.0 - 4194304.0) / (18874368.0 + 4194304.0), 1e-9);
    cr_expect(has_evidence(f, "of the GPU's peak memory bandwidth (4.80 TB/s; sectors are L1 requests"), "%s", all);
    free(all);
    finding_list_free(&l);
    source_free(&s);
}

Test(pr010, look_alikes, .timeout = 120) {
    Source s = source_file(TRANSPOSE);
    /* 1.9x: under the threshold */
    Profile *p = transpose_lines();
    entry_at(p, 83)->global_sectors = M4096 * 19 / 10;
    FindingList l = on_transpose("PR010", p, &s);
    cr_expect_eq(l.count, 0, "1.9x");
    finding_list_free(&l);

    /* 4.5x on a line making 1% of the kernel's sectors */
    p = transpose_lines();
    entry_at(p, 82)->global_sectors = entry_at(p, 82)->global_sectors_ideal = 400 * M4096;
    l = on_transpose("PR010", p, &s);
    cr_expect_eq(l.count, 0, "a small share");
    finding_list_free(&l);

    /* a kernel of 0.2% of the kernel time */
    p = transpose_lines();
    pb_launch(p, TRANSPOSE, 167, "copy_shared(float*, float const*, int, int)", 20, 500 * MS);
    l = on_transpose("PR010", p, &s);
    cr_expect_eq(l.count, 0, "a kernel that hardly runs");
    finding_list_free(&l);

    /* a kernel the profile has no time for */
    p = transpose_lines();
    free(entry_at(p, 83)->kernel);
    entry_at(p, 83)->kernel = strdup("ghost(float*)");
    l = on_transpose("PR010", p, &s);
    cr_expect_eq(l.count, 0, "no time, no share");
    finding_list_free(&l);

    /* fewer than 64 ideal sectors */
    p = transpose_lines();
    entry_at(p, 83)->global_sectors = 270;
    entry_at(p, 83)->global_sectors_ideal = 60;
    entry_at(p, 82)->global_sectors = entry_at(p, 82)->global_sectors_ideal = 60;
    l = on_transpose("PR010", p, &s);
    cr_expect_eq(l.count, 0, "60 ideal sectors");
    finding_list_free(&l);

    /* the same lines of another file */
    p = pb_new(5 * MS, 3 * MS);
    pb_launch(p, TRANSPOSE, 174, NAIVE, 20, 1 * MS);
    pb_line_metrics(p, "samples/cuda/transpose_fixed.cu", 83, NAIVE, (PbLineCounts){18874368, M4096, 0, 0, 0});
    l = on_transpose("PR010", p, &s);
    cr_expect_eq(l.count, 0, "another file");
    finding_list_free(&l);

    /* the file changed since it was profiled */
    p = transpose_lines();
    pb_hash(p, TRANSPOSE, "// an older transpose.cu\n");
    l = on_transpose("PR010", p, &s);
    cr_expect_eq(l.count, 0, "stale: lines may have moved");
    finding_list_free(&l);
    source_free(&s);
}

/* The same store in a kernel that is not memory-bound (its sectors come at
 * 3% of the peak bandwidth): the finding stands, without a gain. */
Test(pr010, no_gain_when_the_kernel_is_not_memory_bound, .timeout = 120) {
    Source s = source_file(TRANSPOSE);
    Profile *p = transpose_lines();
    p->kernels[0].stats.total_ns = 100 * MS; /* 5 ms a launch */
    FindingList l = on_transpose("PR010", p, &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    cr_expect_not(l.items[0].gain.present);
    bool said = false;
    for (size_t i = 0; i < l.items[0].evidence_count; i++)
        said |= strstr(ev(&l.items[0].evidence[i]), "no estimate: the kernel's sectors came at 3.1% of the GPU's "
                                                    "peak memory bandwidth") != NULL;
    cr_expect(said, "%s", all);
    free(all);
    finding_list_free(&l);
    source_free(&s);
}

Test(pr010, two_kernels_on_one_line, .timeout = 120) {
    Source s = source_file(TRANSPOSE);
    Profile *p = transpose_lines();
    const char *copy = "void transpose_naive<2>(float*, float const*, int, int)";
    pb_launch(p, TRANSPOSE, 174, copy, 20, 1 * MS);
    pb_line_metrics(p, TRANSPOSE, 83, copy, (PbLineCounts){3 * M4096, M4096, 0, 0, 0});
    FindingList l = on_transpose("PR010", p, &s);
    cr_assert_eq(l.count, 1, "one finding for the line");
    cr_expect(strstr(l.items[0].message, "4.5x") && strstr(l.items[0].message, "of transpose_naive,"),
              "the kernel that wastes most: %s", l.items[0].message);
    cr_expect(has_evidence(&l.items[0], "1 other kernel running this line moves 2x the ideal or more too"));
    finding_list_free(&l);

    /* 3x: info, though the kernel takes a third of the kernel time */
    p = transpose_lines();
    entry_at(p, 83)->global_sectors = 3 * M4096;
    l = on_transpose("PR010", p, &s);
    cr_assert_eq(l.count, 1);
    cr_expect_eq(l.items[0].severity, SEVERITY_INFO);
    finding_list_free(&l);
    source_free(&s);
}

Test(pr011, the_column_read_of_a_tile, .timeout = 120) {
    Source s = source_file(TRANSPOSE);
    FindingList l = on_transpose("PR011", transpose_lines(), &s);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "only the column read:%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 99);
    cr_expect_str_eq(f->message, "shared-memory accesses on this line take 32.0x the wavefronts of conflict-free "
                                 "accesses (1,048,576 vs 32,768 in one launch of transpose_tiled, 97% of its shared "
                                 "wavefronts): bank conflicts; pad the array (`[32][33]` for a 32 x 32 tile) or "
                                 "swizzle the index");
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    cr_expect(has_evidence(f, "the kernel: 1.00 ms of GPU time, 50% of all kernel time"));
    free(all);
    finding_list_free(&l);

    /* padded (the build that ran had [32][33]): no conflicts */
    Profile *p = transpose_lines();
    entry_at(p, 99)->shared_wavefronts = 32768;
    l = on_transpose("PR011", p, &s);
    cr_expect_eq(l.count, 0);
    finding_list_free(&l);

    /* 1.5x: a few two-way conflicts */
    p = transpose_lines();
    entry_at(p, 99)->shared_wavefronts = 49152;
    l = on_transpose("PR011", p, &s);
    cr_expect_eq(l.count, 0);
    finding_list_free(&l);

    /* uncoalesced global accesses are PR010's, not PR011's */
    p = transpose_lines();
    entry_at(p, 99)->shared_wavefronts = 32768;
    entry_at(p, 99)->global_sectors = 8 * M4096;
    l = on_transpose("PR011", p, &s);
    cr_expect_eq(l.count, 0);
    finding_list_free(&l);
    source_free(&s);
}

/* reduction.cu's block_sum as an H200 runs it: a grid-stride read (70),
 * consecutive shared accesses in the tree (72, 79), one store per block
 * (83): nothing to report, though it takes all the kernel time */
Test(pr011, a_tree_reduction_is_conflict_free, .timeout = 120) {
    const char *rel = "samples/cuda/reduction.cu", *k = "block_sum(float const*, float*, int)";
    Profile *p = pb_new(5 * MS, 3 * MS);
    pb_launch(p, rel, 105, k, 20, 2 * MS);
    pb_line_metrics(p, rel, 70, k, (PbLineCounts){8388608, 8388608, 0, 0, 0});
    pb_line_metrics(p, rel, 72, k, (PbLineCounts){0, 0, 512, 512, 0});
    pb_line_metrics(p, rel, 79, k, (PbLineCounts){0, 0, 9216, 9216, 0});
    pb_line_metrics(p, rel, 83, k, (PbLineCounts){64, 64, 64, 64, 0});
    ProfileView *v = profile_view_new(p, "");
    Source s = source_file(rel);
    for (int i = 0; i < 3; i++) {
        FindingList l = run_rule(i == 0 ? "PR010" : i == 1 ? "PR011" : "PR012", v, &s);
        char *all = describe(&l, &s);
        cr_expect_eq(l.count, 0, "%s", all);
        free(all);
        finding_list_free(&l);
    }
    source_free(&s);
    profile_view_free(v);
}

/* kernels.json: spill's window[] stores move 28% of its sectors in local
 * memory; its dynamically indexed load 0.4%; cold_spill's stores as much
 * as spill's, but the kernel is 0.5% of the kernel time; stencil moves no
 * local memory */
Test(pr012, the_local_array_s_stores, .timeout = 120) {
    Fixture x = fixture("tests/fixtures/profile/kernels.cu", "tests/fixtures/profile/kernels.json");
    FindingList l = run_rule("PR012", x.v, &x.s);
    char *all = describe(&l, &x.s);
    cr_assert_eq(l.count, 1, "%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&x.s, f), marker_line(&x.s, "// @spill-store"));
    cr_expect_str_eq(f->message, "this line moves 8,388,608 local-memory sectors (268 MB) in one launch of spill, 28% "
                                 "of the kernel's global and local sectors: register spills or a local array; reduce "
                                 "register pressure (`__launch_bounds__`, fewer live values) or index local arrays "
                                 "with compile-time constants only");
    cr_expect_eq(f->severity, SEVERITY_WARNING, "spill takes 21%% of the kernel time");
    expect_line_ranges(&l, &x.s);
    free(all);
    finding_list_free(&l);

    /* PR005 names the kernel at its definition and launch: other lines, both stay */
    l = run_rule("PR005", x.v, &x.s);
    cr_expect_eq(l.count, 2);
    cr_expect_null(at_line(&l, &x.s, marker_line(&x.s, "// @spill-store")));
    finding_list_free(&l);

    /* nothing here for PR010 (1.25x and 1.1x) or PR011 (no shared memory) */
    l = run_rule("PR010", x.v, &x.s);
    cr_expect_eq(l.count, 0, "%s", l.count ? l.items[0].message : "");
    finding_list_free(&l);
    l = run_rule("PR011", x.v, &x.s);
    cr_expect_eq(l.count, 0);
    finding_list_free(&l);
    fixture_free(&x);
}

Test(pr012, too_few_local_sectors_and_python_files) {
    Profile *p = pb_new(5 * MS, 3 * MS);
    pb_launch(p, "k.cu", 9, "k(float*)", 10, 1 * MS);
    pb_line_metrics(p, "k.cu", 3, "k(float*)", (PbLineCounts){0, 0, 0, 0, 63});
    ProfileView *v = profile_view_new(p, "");
    Source s = source_text("k.cu", "__global__ void k(float *x)\n{\n    float t[8]; x[threadIdx.x] = t[x[0]];\n}\n"
                                   "int main() { k<<<1, 1>>>(0); }\n");
    FindingList l = run_rule("PR012", v, &s);
    cr_expect_eq(l.count, 0, "63 sectors");
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);

    /* a Triton kernel's lines in a Python file: not these rules' (their advice is CUDA's) */
    p = pb_new(5 * MS, 3 * MS);
    pb_launch(p, "model.py", 9, "triton_kernel", 10, 1 * MS);
    pb_line_metrics(p, "model.py", 2, "triton_kernel", (PbLineCounts){8 * M4096, M4096, 0, 0, M4096});
    v = profile_view_new(p, "");
    s = source_text("model.py", "import torch\nx = torch.ones(4)\n");
    for (int i = 0; i < 3; i++) {
        l = run_rule(i == 0 ? "PR010" : i == 1 ? "PR011" : "PR012", v, &s);
        cr_expect_eq(l.count, 0);
        finding_list_free(&l);
    }
    source_free(&s);
    profile_view_free(v);
}

/* a profile at the caps: 100,000 entries of as many kernels on four lines,
 * 20,000 kernels; one of them takes the time. Each kernel's totals are
 * looked up, not scanned for: this runs in well under a second. */
Test(pr010, a_hostile_profile_at_the_caps, .timeout = 60) {
    Profile *p = pb_new(5 * MS, 3 * MS);
    int file = profile_add_file(p, "k.cu");
    p->kernels = calloc(PROFILE_MAX_KERNELS, sizeof *p->kernels);
    p->line_metrics = calloc(PROFILE_MAX_LINE_METRICS, sizeof *p->line_metrics);
    cr_assert(p->kernels && p->line_metrics);
    for (size_t i = 0; i < PROFILE_MAX_LINE_METRICS; i++) {
        char name[32];
        snprintf(name, sizeof name, "k%zu(float*)", i);
        if (i < PROFILE_MAX_KERNELS)
            p->kernels[p->kernel_count++] = (ProfKernel){.process = 0, .device = 0, .name = strdup(name),
                                                         .grid = {1, 1, 1}, .block = {32, 1, 1},
                                                         .stats = pb_stats(1, i == 7 ? 500 * MS : 1000)};
        p->line_metrics[p->line_metric_count++] =
            (ProfLineMetrics){.kernel = strdup(name), .file = file, .line = 2 + (uint32_t)(i % 4), .launches = 1,
                              .global_sectors = 8 * 4096, .global_sectors_ideal = 4096, .local_sectors = 4096};
    }
    ProfileView *v = profile_view_new(p, "");
    Source s = source_text("k.cu", "__global__ void k(float *x)\n{\n    x[threadIdx.x * 32] = 0;\n    x[1] = 1;\n"
                                   "    x[2] = 2;\n}\n");
    FindingList l = run_rule("PR010", v, &s);
    cr_assert_eq(l.count, 1, "k7 alone takes a share of the time, on line %u", 2 + 7 % 4);
    cr_expect_eq(finding_line(&s, &l.items[0]), 5);
    cr_expect(strstr(l.items[0].message, "in one launch of k7"), "%s", l.items[0].message);
    finding_list_free(&l);
    l = run_rule("PR012", v, &s);
    cr_expect_eq(l.count, 1);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* ======================================================================== */
/* PR019 fp32-gemm-on-cuda-cores                                              */
/* ======================================================================== */

static const Kernel ffma = {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
                            "alignc4_execute_kernel__5x_cublas", 264, 128, 122, 0, 0};
static const Kernel tf32_gemm = {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
                                 "segment_k_off_kernel__5x_cublas", 264, 128, 168, 0, 0};
static const Kernel gelu = {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int)",
                            1024, 128, 20, 0, 0};

#define MODEL_PY "class MLP(nn.Module):\n" \
                 "    def forward(self, x):\n" \
                 "        h = self.fc(x)\n" /* 3: the big product */ \
                 "        h = F.gelu(h)\n" /* 4 */ \
                 "        return self.head(h)\n" /* 5: a small one */

/* model.py's lines: 400 big FFMA products (200 us each) at 3, gelu at 4, and
 * `head`'s kernel at 5 (the kernel given, 400 x 1 us) */
static ProfileView *mlp_profile(const Kernel *big, const Kernel *head) {
    Builder b = builder();
    int fc = site(&b, "model.py", 3, "forward"), act = site(&b, "model.py", 4, "forward"),
        out = site(&b, "model.py", 5, "forward");
    launches(&b, fc, big, 400, 200 * US, 0);
    launches(&b, act, &gelu, 400, 50 * US, 0);
    launches(&b, out, head, 400, 1 * US, 0);
    return view_of(&b, 0);
}

static FindingList run_pr019(const ProfileView *v, const Source *s, const char *static_code) {
    FindingList out;
    finding_list_init(&out);
    if (static_code) { /* a static finding of the file, as the engine runs them first */
        Finding *f = finding_list_push(&out);
        cr_assert_not_null(f);
        f->code = static_code; /* codes are the rules' static strings */
        f->message = strdup("static");
    }
    const Rule *rule = rule_find("PR019");
    cr_assert_not_null(rule);
    RuleContext ctx = {.rule = rule, .doc = s->doc, .py = s->py, .cuda = s->cuda, .out = &out, .profile = v,
                       .profile_file = profile_view_file(v, s->relative), .relative_path = s->relative};
    cr_assert_geq(ctx.profile_file, 0);
    rule->check_profile(&ctx);
    cr_assert(!ctx.out_of_memory);
    engine_drop_subsumed(s->doc, &out); /* as the engine and the server's quick pass do */
    finding_list_sort(&out);
    return out;
}

/* how many PR019 findings the profile gives the text of a file of that name */
static size_t pr019_count(const ProfileView *v, const char *relative, const char *text, const char *static_code) {
    Source s = source_text(relative, text);
    FindingList l = run_pr019(v, &s, static_code);
    size_t n = l.count;
    finding_list_free(&l);
    source_free(&s);
    return n;
}

Test(pr019, the_lines_of_fp32_products_wherever_the_model_is) {
    ProfileView *v = mlp_profile(&ffma, &ffma);
    Source s = source_text("model.py", MODEL_PY);
    FindingList l = run_pr019(v, &s, NULL);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "the big product only: the small one is under 1%% of GPU time%s", all);
    const Finding *f = &l.items[0];
    cr_expect_eq(finding_line(&s, f), 3);
    cr_expect_str_eq(f->code, "PR019");
    /* the share in the message; the counts and times once, in the evidence */
    cr_expect(strstr(f->message, "float32 matrix products launched here ran on CUDA cores, not tensor cores (80% of "
                                 "the GPU's time); TF32 (torch.backends.cuda.matmul.allow_tf32 = True) or bf16 autocast"),
              "%s", f->message);
    cr_expect(!strstr(f->message, "400"), "%s", f->message);
    cr_expect_eq(f->severity, SEVERITY_WARNING);
    cr_expect(has_evidence(f, "FP32 GEMM kernels (FFMA) launched here: 400 calls, 80.0 ms (80% of GPU time)"), "%s",
              all);
    /* 200 us per call: 4.0x and a bit more on the H200's curve, not the peak rates' 7.4x */
    cr_assert(f->gain.present);
    double expected = tf32_saved_ns(&h200, 400 * 200 * US, 400) / 1e9;
    cr_expect(fabs(f->gain.seconds - expected) < 1e-9, "%g against %g", f->gain.seconds, expected);
    cr_expect(f->gain.seconds > 0.080 * (1 - 1 / 3.4) && f->gain.seconds < 0.080 * (1 - 1 / 4.0), "%g",
              f->gain.seconds);
    cr_expect_str_eq(f->gain.scope, "program");
    expect_line_ranges(&l, &s);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* a run whose GPU was mostly idle: the gain stays GPU time, and says what that means */
Test(pr019, a_caveat_when_the_host_set_the_pace) {
    Builder b = builder();
    launches(&b, site(&b, "model.py", 3, "forward"), &ffma, 100, 200 * US, 0);
    ProfileView *v = view_of(&b, 200 * MS); /* the GPU busy 20 ms of a 200 ms run */
    Source s = source_text("model.py", MODEL_PY);
    FindingList l = run_pr019(v, &s, NULL);
    cr_assert_eq(l.count, 1);
    bool caveat = false;
    for (size_t i = 0; i < l.items[0].evidence_count; i++)
        caveat |= l.items[0].evidence[i].kind == EVIDENCE_CAVEAT &&
                  strstr(ev(&l.items[0].evidence[i]), "the GPU was busy 10% of the run") != NULL;
    cr_expect(caveat);
    cr_expect(l.items[0].gain.present);
    finding_list_free(&l);
    profile_view_free(v);
    /* busy all along: no caveat */
    v = mlp_profile(&ffma, &ffma);
    l = run_pr019(v, &s, NULL);
    cr_assert_eq(l.count, 1);
    for (size_t i = 0; i < l.items[0].evidence_count; i++) cr_expect_neq(l.items[0].evidence[i].kind, EVIDENCE_CAVEAT);
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* With critical-path figures: each kernel's saving counts the part of its
 * time the host waited for, at most the host's whole wait, and no caveat. */
Test(pr019, the_critical_path_and_the_hosts_wait_bound_the_gain) {
    Source s = source_text("model.py", MODEL_PY);
    double full = tf32_saved_ns(&h200, 400 * 200 * US, 400) / 1e9;
    for (int capped = 0; capped < 2; capped++) {
        ProfileView *v = mlp_profile(&ffma, &ffma);
        Profile *p = (Profile *)profile_view_profile(v); /* the test's own: figures set after the build */
        for (size_t i = 0; i < p->op_count; i++)
            p->ops[i].critical = (CriticalTime){true, p->ops[i].stats.total_ns / 4};
        p->processes[0].host_wait_known = true;
        p->processes[0].host_wait_ns = capped ? 5 * MS : 1000 * MS;
        FindingList l = run_pr019(v, &s, NULL);
        cr_assert_eq(l.count, 1);
        const Finding *f = &l.items[0];
        cr_assert(f->gain.present);
        double expected = capped ? 0.005 : full / 4;
        cr_expect(fabs(f->gain.seconds - expected) < 1e-9, "%g against %g", f->gain.seconds, expected);
        cr_expect(strstr(ev(&f->gain.model), "x 25%, the part of that saving on the run's critical path"), "%s",
                  ev(&f->gain.model));
        cr_expect(!capped || strstr(ev(&f->gain.model), "at most the time the host waited for the GPU (5.00 ms)"),
                  "%s", ev(&f->gain.model));
        for (size_t i = 0; i < f->evidence_count; i++) cr_expect_neq(f->evidence[i].kind, EVIDENCE_CAVEAT);
        finding_list_free(&l);
        profile_view_free(v);
    }
    source_free(&s);
}

Test(pr019, look_alikes_stay_silent) {
    /* TF32 kernels: the products already ran on tensor cores */
    ProfileView *v = mlp_profile(&tf32_gemm, &tf32_gemm);
    cr_expect_eq(pr019_count(v, "model.py", MODEL_PY, NULL), 0, "tensor-core kernels");
    profile_view_free(v);

    /* the program's FFMA products are under 5% of its GPU time */
    Builder b = builder();
    int fc = site(&b, "model.py", 3, "forward"), act = site(&b, "model.py", 4, "forward");
    launches(&b, fc, &ffma, 10, 100 * US, 0);
    launches(&b, act, &gelu, 400, 100 * US, 0);
    v = view_of(&b, 0);
    cr_expect_eq(pr019_count(v, "model.py", MODEL_PY, NULL), 0, "2.4%% of GPU time");
    profile_view_free(v);

    /* PY009 reported this file's program: its gain counts the same kernels */
    v = mlp_profile(&ffma, &ffma);
    cr_expect_eq(pr019_count(v, "model.py", MODEL_PY, "PY009"), 1, "the PY009 finding alone");

    /* full float32 kept on purpose, in any of its spellings */
    static const char *const choices[] = {"torch.set_float32_matmul_precision(\"highest\")\n",
                                          "torch.backends.cuda.matmul.allow_tf32 = False\n",
                                          "torch.backends.cuda.matmul.fp32_precision = 'ieee'\n"};
    for (size_t i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", MODEL_PY, choices[i]);
        cr_expect_eq(pr019_count(v, "model.py", text, NULL), 0, "%s", choices[i]);
    }
    /* "high" is TF32: the profile says the products still ran in FP32 (set too late, or elsewhere) */
    cr_expect_eq(pr019_count(v, "model.py", MODEL_PY "torch.set_float32_matmul_precision(\"high\")\n", NULL), 1);
    profile_view_free(v);
}

Test(pr019, no_finding_on_a_gpu_without_tf32_tensor_cores) {
    Builder b = builder();
    int fc = site(&b, "model.py", 3, "forward");
    launches(&b, fc, &ffma, 100, 200 * US, 0);
    ProfileView *v = view_of(&b, 0);
    Profile *p = (Profile *)profile_view_profile(v);
    for (size_t i = 0; i < p->device_count; i++) p->devices[i].cc_major = 8, p->devices[i].cc_minor = 6;
    cr_expect_eq(pr019_count(v, "model.py", MODEL_PY, NULL), 0, "consumer Ampere: TF32 runs no faster there");
    profile_view_free(v);
}

#define GEMM_CU "#include <cublas_v2.h>\n" \
                "__global__ void sgemm_naive(float *c) { c[threadIdx.x] = 0; }\n" \
                "void run(cublasHandle_t h, float *a, float *b, float *c, int n) {\n" \
                "    float one = 1, zero = 0;\n" \
                "    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);\n" /* 5 */ \
                "    sgemm_naive<<<1, 32>>>(c);\n" /* 6 */ \
                "}\n"

Test(pr019, cuda_cublas_calls_but_not_the_users_own_sgemm) {
    Builder b = builder();
    Kernel mine = {"sgemm_naive(float*)", 1, 32, 16, 0, 0};
    Kernel cublas = {"ampere_sgemm_128x64_nn", 128, 128, 122, 0, 0};
    launches(&b, site(&b, "gemm.cu", 5, "run"), &cublas, 50, 400 * US, 0);
    launches(&b, site(&b, "gemm.cu", 6, "run"), &mine, 50, 400 * US, 0);
    ProfileView *v = view_of(&b, 0);
    Source s = source_text("gemm.cu", GEMM_CU);
    FindingList l = run_pr019(v, &s, NULL);
    char *all = describe(&l, &s);
    cr_assert_eq(l.count, 1, "%s", all);
    cr_expect_eq(finding_line(&s, &l.items[0]), 5);
    cr_expect(strstr(l.items[0].message, "cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH)"), "%s",
              l.items[0].message);
    free(all);
    finding_list_free(&l);
    source_free(&s);
    /* a file that sets cuBLAS's math mode made its choice */
    cr_expect_eq(pr019_count(v, "gemm.cu",
                             GEMM_CU "void setup(cublasHandle_t h) { cublasSetMathMode(h, CUBLAS_DEFAULT_MATH); }\n",
                             NULL),
                 0);
    profile_view_free(v);
}

Test(pr019, documented_as_a_profile_rule) {
    const Rule *r = rule_find("PR019");
    cr_assert_not_null(r);
    cr_expect_null(r->check);
    cr_expect_eq(r->languages, LANGUAGE_PYTHON | LANGUAGE_CUDA);
    cr_expect(strstr(r->documentation, "## The numbers"));
    cr_expect(strstr(r->summary, "(profile)"));
}

/* ======================================================================== */
/* The rules' descriptors                                                    */
/* ======================================================================== */

Test(descriptors, every_profile_rule_is_complete) {
    static const char *const codes[] = {"PR001", "PR002", "PR003", "PR004", "PR005", "PR006",
                                        "PR007", "PR008", "PR009", "PR010", "PR011", "PR012"};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        const Rule *r = rule_find(codes[i]);
        cr_assert_not_null(r, "%s is not registered", codes[i]);
        cr_expect_null(r->check, "%s: a profile rule has no static check", codes[i]);
        cr_expect_not_null(r->check_profile, "%s", codes[i]);
        cr_expect_eq(r->measure, MEASURE_NONE, "%s", codes[i]);
        /* the per-line rules give CUDA's advice: Triton's lines in Python files are left alone */
        bool per_line = strcmp(codes[i], "PR010") >= 0;
        cr_expect(r->languages & (per_line ? LANGUAGE_CUDA : LANGUAGE_PYTHON), "%s", codes[i]);
        if (per_line) cr_expect_not(r->languages & LANGUAGE_PYTHON, "%s", codes[i]);
        cr_expect(strstr(r->documentation, "## The numbers"), "%s: the model behind the numbers", codes[i]);
        cr_expect(strstr(r->summary, "(profile)"), "%s", codes[i]);
    }
}

/* ======================================================================== */
/* The H200 profiles with their sources                                      */
/* ======================================================================== */

typedef struct {
    const char *code;
    uint32_t line;
} Want;

/* runs every profile rule over source with profile; the findings must be
 * exactly `want` (code and line) */
static void expect_exactly(const char *profile, const char *source, const Want *want, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/profiles/h200/%s", profile);
    ProfileView *v = view_from_file(path);
    Source s = source_file(source);
    cr_assert(profile_view_file(v, source) >= 0, "%s does not name %s", profile, source);
    size_t count;
    const Rule *const *all = rules_all(&count);
    bool *seen = calloc(n ? n : 1, sizeof *seen);
    for (size_t i = 0; i < count; i++) {
        if (!all[i]->check_profile) continue;
        FindingList l = run_rule(all[i]->code, v, &s);
        expect_line_ranges(&l, &s);
        for (size_t k = 0; k < l.count; k++) {
            uint32_t line = finding_line(&s, &l.items[k]);
            bool listed = false;
            for (size_t w = 0; w < n; w++)
                if (strcmp(want[w].code, l.items[k].code) == 0 && want[w].line == line) listed = seen[w] = true;
            cr_expect(listed, "%s with %s: unexpected %s at line %u: %s", source, profile, l.items[k].code, line,
                      l.items[k].message);
        }
        finding_list_free(&l);
    }
    for (size_t w = 0; w < n; w++)
        cr_expect(seen[w], "%s with %s: expected %s at line %u", source, profile, want[w].code, want[w].line);
    free(seen);
    source_free(&s);
    profile_view_free(v);
}

#define EXPECT(profile, source, ...)                                                                                 \
    do {                                                                                                             \
        static const Want want_[] = {__VA_ARGS__};                                                                   \
        expect_exactly(profile, source, want_, sizeof want_ / sizeof *want_);                                        \
    } while (0)
#define EXPECT_NONE(profile, source) expect_exactly(profile, source, NULL, 0)

Test(h200, pipeline_pageable_copies_and_the_gap_they_cause) {
    /* the pageable cudaMemcpyAsync of lines 105 and 109; the GPU idles before
     * each chunk's upload while the host sums the previous chunk */
    EXPECT("pipeline.json", "samples/cuda/pipeline.cu", {"PR003", 105}, {"PR008", 105}, {"PR008", 109});
    EXPECT_NONE("pipeline_fixed.json", "samples/cuda/pipeline_fixed.cu");
}

Test(h200, reduction_and_transpose) {
    /* a pageable upload per batch, and the host's check between batches */
    EXPECT("reduction.json", "samples/cuda/reduction.cu", {"PR003", 103}, {"PR008", 103});
    EXPECT_NONE("reduction_fixed.json", "samples/cuda/reduction_fixed.cu");
    /* each kernel's result copied back into pageable memory; the host's
     * reference check between kernels leaves one 21 ms gap each (hints) */
    EXPECT("transpose.json", "samples/cuda/transpose.cu", {"PR003", 172}, {"PR003", 179}, {"PR003", 186},
           {"PR008", 156});
    EXPECT("transpose_fixed.json", "samples/cuda/transpose_fixed.cu", {"PR003", 130});
    EXPECT_NONE("elementwise_chain.json", "samples/cuda/elementwise_chain.cu");
    EXPECT_NONE("elementwise_chain_fixed.json", "samples/cuda/elementwise_chain_fixed.cu");
}

Test(h200, python_samples) {
    /* the timed matmuls are the hotspot; the module built on the host and
     * copied up for each size leaves the GPU idle and copies pageable
     * memory; the warm-up loop's synchronize; the timing synchronizes at
     * lines 69 and 74 sit next to clock reads and are not reported; the
     * products at 54, 61 and 100 ran in FP32 (PR019: with the static rules,
     * as the engine runs them, PY009's finding in this file takes their place) */
    EXPECT("benchmark_matmul.json", "samples/python/benchmark_matmul.py", {"PR001", 54}, {"PR001", 61},
           {"PR003", 93}, {"PR003", 94}, {"PR003", 96}, {"PR003", 100}, {"PR004", 103}, {"PR008", 96},
           {"PR019", 54}, {"PR019", 61}, {"PR019", 100});
    /* token-by-token decoding: every function of the model is launch-bound */
    EXPECT("generate_text.json", "samples/python/generate_text.py", {"PR002", 51}, {"PR002", 70}, {"PR002", 81},
           {"PR002", 96}, {"PR002", 112}, {"PR003", 51}, {"PR003", 70}, {"PR003", 77}, {"PR003", 112},
           {"PR003", 114});
    EXPECT("train_classifier.json", "samples/python/train_classifier.py", {"PR002", 50}, {"PR002", 107},
           {"PR003", 104});
    EXPECT("torch_sites.json", "tests/gpu/torch_sites.py", {"PR003", 24}, {"PR003", 25}, {"PR003", 30},
           {"PR019", 24}); /* x @ w in FP32 */
}

Test(h200, workloads) {
    /* weights built on the host and copied from pageable memory; decoding
     * with the whole model re-run per token, launch-bound; attention ran
     * fused (fmha), so no PR009; the model's products ran in FP32 (PR019,
     * where PY009, reading the code, sees no sizes) */
    EXPECT("llama_generate.json", "bench/workloads/llama_generate.py", {"PR001", 27}, {"PR002", 27}, {"PR003", 27},
           {"PR008", 22}, {"PR019", 27});
    /* the batch copied from pageable memory each step; the forward (26) and
     * backward (28, autograd's launches attributed to backward()) are the
     * hotspots; loss.item() waits 281 ms over 30 steps */
    EXPECT("resnet50_step.json", "bench/workloads/resnet50_step.py", {"PR001", 26}, {"PR001", 28}, {"PR003", 24},
           {"PR003", 26}, {"PR003", 28}, {"PR004", 30}, {"PR008", 24});
    /* backward() is the hotspot; the rest is idle gaps of the host */
    EXPECT("unet_step.json", "bench/workloads/unet_step.py", {"PR001", 75}, {"PR003", 28}, {"PR003", 53},
           {"PR003", 75});
}

Test(h200, messages_carry_the_measured_figures) {
    ProfileView *v = view_from_file("tests/fixtures/profiles/h200/pipeline.json");
    Source s = source_file("samples/cuda/pipeline.cu");
    FindingList l = run_rule("PR008", v, &s);
    const Finding *f = at_line(&l, &s, 105);
    cr_assert_not_null(f);
    cr_expect_str_eq(f->message, "16 host-to-device copies from pageable memory (16.8 MB, 1.05 MB each) at 48.5 GB/s; "
                                 "pinned memory makes them asynchronous (`cudaMallocHost`/`cudaHostRegister`, then "
                                 "`cudaMemcpyAsync`)");
    cr_expect(has_evidence(f, "uploads on the host: about 8.15 ms (2.5% of the run)"), "%s",
              f->evidence_count > 2 ? ev(&f->evidence[2]) : "");
    /* the merge's copy model, as CU006 at the same line gets it */
    cr_expect(has_evidence(f, "this copy moved 16.8 MB in 16 copies from pageable memory at 48.5 GB/s"));
    finding_list_free(&l);
    l = run_rule("PR003", v, &s);
    f = at_line(&l, &s, 105);
    cr_assert_not_null(f);
    cr_expect_str_eq(f->message, "the GPU sat idle 1.22 ms before this line's work arrived, 15 times (18.4 ms, 5.5% "
                                 "of the run); the host was busy after line 111");
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);

    v = view_from_file("tests/fixtures/profiles/h200/resnet50_step.json");
    s = source_file("bench/workloads/resnet50_step.py");
    l = run_rule("PR004", v, &s);
    cr_assert_eq(l.count, 1);
    cr_expect_str_eq(l.items[0].message,
                     "the host waited 281 ms here for the GPU, 30 times (stream synchronize), 8.5% of the run");
    finding_list_free(&l);
    source_free(&s);
    profile_view_free(v);
}

/* ======================================================================== */
/* Through `advise check --profile`                                          */
/* ======================================================================== */

Test(cli, profile_rules_reach_advise_check) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--no-source", "--fail-on", "never",
                                "--profile", "tests/fixtures/profiles/h200/pipeline.json", "samples/cuda/pipeline.cu");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "samples/cuda/pipeline.cu:105:9: PR003 [gpu-idle-gap] the GPU sat idle 1.22 ms"), "%s",
              r.out);
    /* CU006 on the same lines already carries the copies' figures: PR008 steps aside there */
    cr_expect(strstr(r.out, "samples/cuda/pipeline.cu:105:15: CU006"), "%s", r.out);
    cr_expect_null(strstr(r.out, "PR008"), "%s", r.out);
    run_result_free(&r);

    /* with CU006 ignored, PR008 reports the same pageable copies */
    r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--no-source", "--fail-on", "never", "--ignore",
                      "CU006", "--profile", "tests/fixtures/profiles/h200/pipeline.json", "samples/cuda/pipeline.cu");
    cr_expect(strstr(r.out, "samples/cuda/pipeline.cu:105:9: PR008 [pageable-copy] 16 host-to-device copies"), "%s",
              r.out);
    cr_expect(strstr(r.out, "samples/cuda/pipeline.cu:109:9: PR008 [pageable-copy] 16 device-to-host copies"), "%s",
              r.out);
    run_result_free(&r);

    /* selected off like any rule (CU006 off too, or PR008 would step aside anyway) */
    r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--no-source", "--fail-on", "never", "--ignore",
                      "CU006,pageable-copy", "--profile", "tests/fixtures/profiles/h200/pipeline.json",
                      "samples/cuda/pipeline.cu");
    cr_expect_null(strstr(r.out, "PR008"), "%s", r.out);
    cr_expect(strstr(r.out, "PR003"), "%s", r.out);
    run_result_free(&r);

    r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--no-source", "--fail-on", "never", "--profile",
                      "tests/fixtures/profiles/h200/pipeline_fixed.json", "samples/cuda/pipeline_fixed.cu");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_null(strstr(r.out, ": PR0"), "the corrected pipeline gets no profile finding:\n%s", r.out);
    run_result_free(&r);
}

/* PR010 and PR011 step aside where CU004 and CU003 (at the array, with the
 * access as a related line) already carry the line's figures */
Test(cli, per_line_rules_step_aside_for_the_static_findings, .timeout = 120) {
    char path[] = "/tmp/advise-line-metrics-XXXXXX.json";
    int fd = mkstemps(path, 5);
    cr_assert(fd >= 0);
    close(fd);
    Profile *p = transpose_lines();
    char *error = NULL;
    cr_assert(profile_write_file(p, PROFILE_FINAL, path, &error), "%s", error);
    profile_free(p);

    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--fail-on", "never", "--profile", path,
                                TRANSPOSE);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "samples/cuda/transpose.cu:83:9: CU004"), "%s", r.out);
    cr_expect(strstr(r.out, "this line moves 4.5x the ideal global sectors"), "%s", r.out);
    cr_expect(strstr(r.out, "samples/cuda/transpose.cu:90:5: CU003"), "%s", r.out);
    cr_expect(strstr(r.out, "shared-memory accesses on line 99 take 32.0x the ideal wavefronts"), "%s", r.out);
    cr_expect_null(strstr(r.out, "PR010"), "%s", r.out);
    cr_expect_null(strstr(r.out, "PR011"), "%s", r.out);
    run_result_free(&r);

    r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--no-source", "--fail-on", "never", "--ignore",
                      "CU003,CU004", "--profile", path, TRANSPOSE);
    cr_expect(strstr(r.out, "samples/cuda/transpose.cu:83:9: PR010 [uncoalesced-global-access] global accesses on "
                            "this line move 4.5x"), "%s", r.out);
    cr_expect(strstr(r.out, "samples/cuda/transpose.cu:99:9: PR011 [shared-bank-conflicts] shared-memory accesses on "
                            "this line take 32.0x"), "%s", r.out);
    run_result_free(&r);
    unlink(path);
}
