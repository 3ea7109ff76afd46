/* `advise diff`: the comparison of two profiles (profiler/profile_diff.h) on
 * profiles built by the aggregator and on the pairs recorded on the H200,
 * and the command's text, JSON, warnings and exit codes. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/aggregate.h"
#include "tests/cli_harness.h"
#include "profiler/profile_diff.h"
#include "profiler/profile_json.h"

#define H200 ADVISE_SOURCE_DIR "/tests/fixtures/profiles/h200/"

/* ---- profiles built by the aggregator ----------------------------------------- */

static AggKernel kernel(const char *name, uint32_t grid, uint64_t start, uint64_t duration, int site) {
    AggKernel k = {.device = 0, .name = name, .grid = {grid, 1, 1}, .block = {256, 1, 1}, .registers = 32,
                   .start_ns = start, .end_ns = start + duration, .site = site};
    return k;
}

static void label(Profile *p, const char *name, const char *created, const char *command) {
    p->name = strdup(name);
    p->source = strdup("cupti");
    p->created = strdup(created);
    p->tool = strdup("advise test");
    p->command = calloc(1, sizeof *p->command);
    p->command[0] = strdup(command);
    p->command_count = 1;
}

static void add_device(Aggregator *agg, const char *name) {
    ProfDevice dev = {.id = 0, .name = (char *)name, .sm_count = 132, .cc_major = 9, .memory_bytes = 1ull << 37,
                      .bandwidth_bytes_per_s = 4800000000000ull, .max_warps_per_sm = 64, .max_blocks_per_sm = 32,
                      .max_registers_per_sm = 65536, .max_shared_per_sm = 233472, .max_registers_per_block = 65536,
                      .max_shared_per_block = 49152, .max_threads_per_block = 1024, .l2_bytes = 62914560};
    agg_device(agg, &dev);
}

/* BEFORE: gemm (two launch shapes) and relu from train.py:10, a slow copy at
 * :12 and a sync at :14; AFTER: gemm faster, relu gone, a new fused kernel,
 * the copy faster and a new sync at :20. */
static Profile *before_profile(const char *gpu, const char *created) {
    Aggregator *agg = agg_new();
    add_device(agg, gpu);
    int launch = agg_site(agg, "train.py", 10, "step"), copy = agg_site(agg, "train.py", 12, "step");
    int sync = agg_site(agg, "train.py", 14, "step");
    AggKernel k = kernel("gemm", 128, 0, 4000, launch);
    agg_kernel(agg, &k);
    k = kernel("gemm", 256, 5000, 6000, launch); /* another configuration of the same kernel */
    agg_kernel(agg, &k);
    k = kernel("relu", 128, 12000, 1000, launch);
    agg_kernel(agg, &k);
    AggCopy c = {.copy = PROF_COPY_HTOD, .src = PROF_MEM_PAGEABLE, .dst = PROF_MEM_DEVICE, .bytes = 1 << 20,
                 .start_ns = 14000, .end_ns = 20000, .site = copy};
    agg_memcpy(agg, &c);
    agg_sync(agg, PROF_SYNC_STREAM, 3000, sync);
    ProfProcess proc = {.pid = 1, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 100000};
    Profile *p = agg_to_profile(agg, &proc);
    agg_free(agg);
    label(p, "before", created, "python3 train.py");
    return p;
}

static Profile *after_profile(const char *gpu, const char *created, const char *command) {
    Aggregator *agg = agg_new();
    add_device(agg, gpu);
    int launch = agg_site(agg, "train.py", 10, "step"), copy = agg_site(agg, "train.py", 12, "step");
    int sync = agg_site(agg, "train.py", 20, "step");
    AggKernel k = kernel("gemm", 128, 0, 2500, launch);
    agg_kernel(agg, &k);
    k = kernel("fused_relu", 128, 3000, 500, launch);
    agg_kernel(agg, &k);
    AggCopy c = {.copy = PROF_COPY_HTOD, .src = PROF_MEM_PINNED, .dst = PROF_MEM_DEVICE, .bytes = 1 << 20,
                 .start_ns = 4000, .end_ns = 6000, .site = copy};
    agg_memcpy(agg, &c);
    agg_sync(agg, PROF_SYNC_STREAM, 1000, sync);
    ProfProcess proc = {.pid = 2, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 50000};
    Profile *p = agg_to_profile(agg, &proc);
    agg_free(agg);
    label(p, "after", created, command);
    return p;
}

static const DiffKernel *find_kernel(const ProfileDiff *d, const char *name) {
    for (size_t i = 0; i < d->kernel_count; i++)
        if (strcmp(d->kernels[i].name, name) == 0) return &d->kernels[i];
    return NULL;
}

static const DiffSite *find_site(const ProfileDiff *d, const char *path, uint32_t line, ProfOpKind kind) {
    for (size_t i = 0; i < d->site_count; i++) {
        const DiffSite *s = &d->sites[i];
        if (s->kind == kind && s->line == line && ((!path && !s->path) || (path && s->path && !strcmp(path, s->path))))
            return s;
    }
    return NULL;
}

Test(diff, kernels_match_by_name_summed_over_configurations) {
    Profile *b = before_profile("NVIDIA H200", "2026-11-30T10:00:00Z");
    Profile *a = after_profile("NVIDIA H200", "2026-11-30T11:00:00Z", "python3 train.py");
    cr_assert_eq(b->kernel_count, 3, "gemm has two configurations");
    ProfileDiff d;
    cr_assert(profile_diff(b, a, &d));
    cr_assert_eq(d.kernel_count, 3);
    const DiffKernel *gemm = find_kernel(&d, "gemm"), *relu = find_kernel(&d, "relu"),
                     *fused = find_kernel(&d, "fused_relu");
    cr_assert(gemm && relu && fused);
    cr_expect_eq(gemm->side, DIFF_BOTH);
    cr_expect_eq(gemm->before.total_ns, 10000);
    cr_expect_eq(gemm->before.count, 2);
    cr_expect_eq(gemm->after.total_ns, 2500);
    cr_expect_eq(diff_saved_ns(gemm->before, gemm->after), 7500);
    cr_expect_float_eq(diff_speedup(gemm->before, gemm->after), 4.0, 1e-9);
    cr_expect_eq(relu->side, DIFF_BEFORE_ONLY);
    cr_expect_eq(relu->after.count, 0);
    cr_expect_eq(fused->side, DIFF_AFTER_ONLY);
    cr_expect_lt(diff_speedup(fused->before, fused->after), 0, "no ratio for a new kernel");
    /* order: in both by time saved, then only before, then only after */
    cr_expect_eq(&d.kernels[0], gemm);
    cr_expect_eq(&d.kernels[1], relu);
    cr_expect_eq(&d.kernels[2], fused);
    profile_diff_free(&d);
    profile_free(a);
    profile_free(b);
}

Test(diff, sites_match_by_path_line_and_kind) {
    Profile *b = before_profile("NVIDIA H200", "2026-11-30T10:00:00Z");
    Profile *a = after_profile("NVIDIA H200", "2026-11-30T11:00:00Z", "python3 train.py");
    ProfileDiff d;
    cr_assert(profile_diff(b, a, &d));
    const DiffSite *launch = find_site(&d, "train.py", 10, PROF_OP_LAUNCH);
    const DiffSite *copy = find_site(&d, "train.py", 12, PROF_OP_MEMCPY);
    const DiffSite *old_sync = find_site(&d, "train.py", 14, PROF_OP_SYNC);
    const DiffSite *new_sync = find_site(&d, "train.py", 20, PROF_OP_SYNC);
    cr_assert(launch && copy && old_sync && new_sync);
    cr_expect_eq(d.site_count, 4);
    cr_expect_eq(launch->side, DIFF_BOTH);
    cr_expect_eq(launch->before.total_ns, 11000, "every kernel launched there, summed");
    cr_expect_eq(launch->before.count, 3);
    cr_expect_eq(launch->after.total_ns, 3000);
    cr_expect_str_eq(launch->function, "step");
    cr_expect_eq(copy->side, DIFF_BOTH);
    cr_expect_eq(copy->before.total_ns, 6000);
    cr_expect_eq(copy->after.total_ns, 2000);
    cr_expect_eq(old_sync->side, DIFF_BEFORE_ONLY);
    cr_expect_eq(old_sync->before.total_ns, 3000);
    cr_expect_eq(new_sync->side, DIFF_AFTER_ONLY);
    cr_expect_eq(&d.sites[0], launch, "launch saved 8 µs, the copy 4 µs");
    cr_expect_eq(&d.sites[1], copy);
    profile_diff_free(&d);
    profile_free(a);
    profile_free(b);
}

Test(diff, totals_and_what_the_runs_were) {
    Profile *b = before_profile("NVIDIA H200", "2026-11-30T10:00:00Z");
    Profile *a = after_profile("NVIDIA A100-SXM4-80GB", "2026-11-30T09:59:00Z", "python3 train_fused.py");
    ProfileDiff d;
    cr_assert(profile_diff(b, a, &d));
    cr_expect_eq(d.before.kernel_ns, 11000);
    cr_expect_eq(d.before.launches, 3);
    cr_expect_eq(d.before.copy_ns, 6000);
    cr_expect_eq(d.before.copy_bytes, 1 << 20);
    cr_expect_eq(d.before.sync_ns, 3000);
    cr_expect_eq(d.before.wall_ns, 100000);
    cr_expect_eq(d.after.kernel_ns, 3000);
    cr_expect_eq(d.after.wall_ns, 50000);
    /* BEFORE: kernels 0-4000, 5000-11000, 12000-13000, copy 14000-20000: busy 17000 of 20000 */
    cr_expect_eq(d.before.span_ns, 20000);
    cr_expect_eq(d.before.busy_ns, 17000);
    cr_expect_float_eq(profile_totals_busy_share(&d.before), 0.85, 1e-9);
    cr_expect_gt(d.older, 0, "AFTER was recorded a minute before BEFORE");
    cr_expect_eq(d.created_gap_s, 60);
    cr_expect(d.different_gpu);
    cr_expect_str_eq(d.before_gpu, "NVIDIA H200");
    cr_expect_str_eq(d.after_gpu, "NVIDIA A100-SXM4-80GB");
    cr_expect(d.different_command);
    cr_expect_not(d.different_source);
    profile_diff_free(&d);
    profile_free(a);
    profile_free(b);
}

Test(diff, processes_are_summed_and_gpus_counted) {
    Profile *b = before_profile("NVIDIA H200", "2026-11-30T10:00:00Z");
    Profile *second = before_profile("NVIDIA H200", "2026-11-30T10:00:00Z");
    cr_assert(profile_append(b, second));
    profile_free(second);
    Profile *a = after_profile("NVIDIA H200", "2026-11-30T10:00:00Z", "python3 train.py");
    ProfileDiff d;
    cr_assert(profile_diff(b, a, &d));
    const DiffKernel *gemm = find_kernel(&d, "gemm");
    cr_assert_not_null(gemm);
    cr_expect_eq(gemm->before.total_ns, 20000, "two processes, two configurations each");
    cr_expect_eq(gemm->before.count, 4);
    const DiffSite *launch = find_site(&d, "train.py", 10, PROF_OP_LAUNCH);
    cr_expect_eq(launch->before.total_ns, 22000);
    cr_expect_str_eq(d.before_gpu, "2 x NVIDIA H200");
    cr_expect(d.different_gpu, "two GPUs against one");
    cr_expect_eq(d.older, 0);
    profile_diff_free(&d);
    profile_free(a);
    profile_free(b);
}

Test(diff, an_empty_profile_against_itself) {
    Profile *p = profile_new();
    label(p, "empty", "2026-11-30T10:00:00Z", "true");
    ProfileDiff d;
    cr_assert(profile_diff(p, p, &d));
    cr_expect_eq(d.kernel_count, 0);
    cr_expect_eq(d.site_count, 0);
    cr_expect_lt(profile_totals_busy_share(&d.before), 0, "no timeline: no share");
    cr_expect_str_eq(d.before_gpu, "no GPU recorded");
    cr_expect_not(d.different_gpu);
    profile_diff_free(&d);
    profile_free(p);
}

/* ---- the pairs recorded on the H200 ------------------------------------------------ */

static Profile *read_h200(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, H200 "%s", name);
    char *error = NULL;
    Profile *p = profile_read_file(path, PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error ? error : "");
    return p;
}

Test(diff, h200_transpose_against_the_fixed_one) {
    Profile *b = read_h200("transpose.json"), *a = read_h200("transpose_fixed.json");
    ProfileDiff d;
    cr_assert(profile_diff(b, a, &d));
    const DiffKernel *tiled = find_kernel(&d, "transpose_tiled(float*, float const*, int, int)");
    const DiffKernel *copy = find_kernel(&d, "copy_shared(float*, float const*, int, int)");
    const DiffKernel *naive = find_kernel(&d, "transpose_naive(float*, float const*, int, int)");
    const DiffKernel *warp = find_kernel(&d, "transpose_warp(float*, float const*, int, int)");
    cr_assert(tiled && copy && naive && warp);
    cr_expect_eq(tiled->side, DIFF_BOTH);
    cr_expect_eq(tiled->before.total_ns, 332611);
    cr_expect_eq(tiled->after.total_ns, 94080);
    cr_expect_gt(diff_speedup(tiled->before, tiled->after), 3.5, "the padded tile removes the bank conflicts");
    cr_expect_eq(copy->side, DIFF_BOTH);
    cr_expect_eq(naive->side, DIFF_BEFORE_ONLY);
    cr_expect_eq(warp->side, DIFF_BEFORE_ONLY);
    cr_expect_eq(d.kernel_count, 4);
    cr_expect_eq(&d.kernels[0], tiled, "the largest saving first");
    cr_expect_eq(d.before.kernel_ns, 93633 + 998784 + 136128 + 332611);
    cr_expect_eq(d.before.wall_ns, 444654698);
    cr_expect_lt(d.older, 0);
    cr_expect_eq(d.created_gap_s, 1);
    cr_expect_not(d.different_gpu);
    cr_expect(d.different_command);
    /* the two programs are different files: every site is on one side only */
    for (size_t i = 0; i < d.site_count; i++) cr_expect_neq(d.sites[i].side, DIFF_BOTH);
    const DiffSite *alloc = find_site(&d, "samples/cuda/transpose.cu", 147, PROF_OP_ALLOC);
    cr_assert_not_null(alloc);
    cr_expect_eq(alloc->side, DIFF_BEFORE_ONLY);
    profile_diff_free(&d);
    profile_free(a);
    profile_free(b);
}

Test(diff, h200_pipeline_against_the_fixed_one) {
    Profile *b = read_h200("pipeline.json"), *a = read_h200("pipeline_fixed.json");
    ProfileDiff d;
    cr_assert(profile_diff(b, a, &d));
    cr_assert_eq(d.kernel_count, 1);
    cr_expect_eq(d.kernels[0].side, DIFF_BOTH);
    cr_expect_eq(d.kernels[0].before.count, 16);
    cr_expect_eq(d.kernels[0].after.count, 16);
    /* the fixed pipeline overlaps its copies with the kernels: far busier GPU */
    cr_expect_lt(profile_totals_busy_share(&d.before), 0.05);
    cr_expect_gt(profile_totals_busy_share(&d.after), 0.5);
    cr_expect_gt(d.before.allocs, d.after.allocs, "the fixed one allocates once, not per batch");
    profile_diff_free(&d);
    profile_free(a);
    profile_free(b);
}

Test(diff, h200_a_profile_against_itself_saves_nothing) {
    Profile *b = read_h200("llama_generate.json"), *a = read_h200("llama_generate.json");
    ProfileDiff d;
    cr_assert(profile_diff(b, a, &d));
    cr_expect_gt(d.kernel_count, 10);
    for (size_t i = 0; i < d.kernel_count; i++) {
        cr_expect_eq(d.kernels[i].side, DIFF_BOTH);
        cr_expect_eq(diff_saved_ns(d.kernels[i].before, d.kernels[i].after), 0);
    }
    for (size_t i = 0; i < d.site_count; i++) cr_expect_eq(d.sites[i].side, DIFF_BOTH);
    cr_expect_eq(d.older, 0);
    cr_expect_not(d.different_command);
    profile_diff_free(&d);
    profile_free(a);
    profile_free(b);
}

/* ---- the command ------------------------------------------------------------------- */

static char *write_profile(const char *dir, const char *name, Profile *p) {
    char *path = path_in(dir, name);
    char *error = NULL;
    cr_assert(profile_write_file(p, PROFILE_FINAL, path, &error), "%s", error ? error : "");
    profile_free(p);
    return path;
}

Test(diff_cli, text_shows_totals_kernels_and_sites) {
    RunResult r = run_advise("diff", H200 "transpose.json", H200 "transpose_fixed.json");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.err, "");
    cr_expect(strstr(r.out, "BEFORE is the older profile (recorded 1 s earlier)."), "%s", r.out);
    cr_expect(strstr(r.out, "warning: recorded from different commands"), "%s", r.out);
    cr_expect_null(strstr(r.out, "different GPUs"), "both on the H200");
    cr_expect(strstr(r.out, "GPU kernel time            1.56 ms      188 \xC2\xB5s     1.37 ms    8.32x          84 -> 42"),
              "%s", r.out);
    cr_expect(strstr(r.out, "GPU busy                      9.5%         23%"), "%s", r.out);
    cr_expect(strstr(r.out, "      333 \xC2\xB5s     94.1 \xC2\xB5s      239 \xC2\xB5s    3.54x          21 -> 21  transpose_tiled("), "%s",
              r.out);
    cr_expect(strstr(r.out, " only in BEFORE:\n      999 \xC2\xB5s           -      999 \xC2\xB5s     gone           21 -> 0  "
                            "transpose_naive("),
              "%s", r.out);
    cr_expect(strstr(r.out, "samples/cuda/transpose.cu:147 alloc"), "%s", r.out);
    cr_expect(strstr(r.out, "new            0 -> 1  samples/cuda/transpose_fixed.cu:105 alloc"), "%s", r.out);
    cr_expect(strstr(r.out, "note: no call site is in both profiles"), "%s", r.out);
    run_result_free(&r);
}

Test(diff_cli, the_limit_cuts_each_section) {
    RunResult r = run_advise("diff", "--limit", "2", H200 "transpose.json", H200 "transpose_fixed.json");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "  ... and 11 more (--limit 0 shows all)\n"), "%s", r.out);
    cr_expect(strstr(r.out, "  ... and 7 more (--limit 0 shows all)\n"), "%s", r.out);
    run_result_free(&r);
    r = run_advise("diff", "--limit", "0", H200 "transpose.json", H200 "transpose_fixed.json");
    cr_expect_null(strstr(r.out, "more (--limit"), "%s", r.out);
    run_result_free(&r);
}

Test(diff_cli, json_has_the_documented_shape) {
    RunResult r = run_advise("diff", "--format", "json", H200 "transpose.json", H200 "transpose_fixed.json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc, "%s", jerr.text);
    cr_expect_eq(json_integer_value(json_object_get(doc, "version")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "older")), "before");
    json_t *before = json_object_get(doc, "before");
    cr_expect_str_eq(json_string_value(json_object_get(before, "name")), "transpose");
    cr_expect_str_eq(json_string_value(json_object_get(before, "gpu")), "NVIDIA H200");
    json_t *totals = json_object_get(before, "totals");
    cr_expect_eq(json_integer_value(json_object_get(totals, "wall_ns")), 444654698);
    cr_expect_float_eq(json_real_value(json_object_get(totals, "gpu_busy_share")), 6693374.0 / 70748970.0, 1e-9);
    json_t *warnings = json_object_get(doc, "warnings");
    cr_expect_eq(json_array_size(warnings), 1);
    cr_expect_str_eq(json_string_value(json_array_get(warnings, 0)), "recorded from different commands");
    json_t *kernels = json_object_get(doc, "kernels");
    cr_assert_eq(json_array_size(kernels), 4);
    json_t *k0 = json_array_get(kernels, 0);
    cr_expect_str_eq(json_string_value(json_object_get(k0, "name")), "transpose_tiled(float*, float const*, int, int)");
    cr_expect_str_eq(json_string_value(json_object_get(k0, "in")), "both");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(k0, "before"), "total_ns")), 332611);
    cr_expect_eq(json_integer_value(json_object_get(k0, "saved_ns")), 332611 - 94080);
    json_t *k2 = json_array_get(kernels, 2);
    cr_expect_str_eq(json_string_value(json_object_get(k2, "in")), "before");
    cr_expect(json_is_null(json_object_get(k2, "speedup")));
    json_t *sites = json_object_get(doc, "sites");
    cr_assert_eq(json_array_size(sites), 22);
    json_t *s0 = json_array_get(sites, 0);
    cr_expect_str_eq(json_string_value(json_object_get(s0, "path")), "samples/cuda/transpose.cu");
    cr_expect_eq(json_integer_value(json_object_get(s0, "line")), 147);
    cr_expect_str_eq(json_string_value(json_object_get(s0, "kind")), "alloc");
    cr_expect_str_eq(json_string_value(json_object_get(s0, "function")), "main");
    json_decref(doc);
    run_result_free(&r);
}

Test(diff_cli, warnings_for_other_gpus_and_swapped_profiles) {
    char *dir = temp_dir();
    char *b = write_profile(dir, "b.json", before_profile("NVIDIA H200", "2026-11-30T10:00:00Z"));
    char *a = write_profile(dir, "a.json", after_profile("NVIDIA A100-SXM4-80GB", "2026-11-29T10:00:00Z",
                                                         "python3 train.py"));
    RunResult r = run_advise("diff", b, a);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "warning: AFTER is the older profile (recorded 24 h earlier): are the two the wrong way "
                            "round?"),
              "%s", r.out);
    cr_expect(strstr(r.out, "warning: recorded on different GPUs (NVIDIA H200 before, NVIDIA A100-SXM4-80GB after)"),
              "%s", r.out);
    cr_expect_null(strstr(r.out, "different commands"), "%s", r.out);
    cr_expect(strstr(r.out, "  in both:\n") || strstr(r.out, " in both:\n"), "%s", r.out);
    cr_expect(strstr(r.out, "train.py:10 launch"), "%s", r.out);
    cr_expect_null(strstr(r.out, "note: no call site"), "%s", r.out);
    run_result_free(&r);
}

Test(diff_cli, errors_exit_2_with_the_readers_message) {
    RunResult r = run_advise("diff", H200 "transpose.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise diff: wants two profiles, BEFORE and AFTER (1 given)"), "%s", r.err);
    run_result_free(&r);

    r = run_advise("diff", H200 "transpose.json", "/nonexistent/after.json");
    cr_expect_eq(r.status, 2);
    cr_expect_str_eq(r.out, "");
    cr_expect(strstr(r.err, "advise diff: /nonexistent/after.json: No such file or directory"), "%s", r.err);
    run_result_free(&r);

    r = run_advise("diff", ADVISE_SOURCE_DIR "/tests/fixtures/profiles/invalid/version-2.json", H200 "transpose.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise diff: "), "%s", r.err);
    cr_expect(strstr(r.err, "version-2.json: version: 2: this profile was written by a newer advise"), "%s", r.err);
    run_result_free(&r);

    r = run_advise("diff", ADVISE_SOURCE_DIR "/tests/fixtures/profiles/invalid/grid-zero.json", H200 "transpose.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "grid"), "%s", r.err);
    run_result_free(&r);

    r = run_advise("diff", "--format", "xml", H200 "transpose.json", H200 "transpose.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--format wants text or json, not 'xml'"), "%s", r.err);
    run_result_free(&r);

    r = run_advise("diff", "--limit", "-1", H200 "transpose.json", H200 "transpose.json");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);

    r = run_advise("diff", "--help");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "usage: advise diff"), "%s", r.out);
    run_result_free(&r);
}

/* Every process lists every GPU it can see; the description names the GPUs
 * that did work. */
Test(diff, gpu_description_counts_the_devices_that_worked) {
    char path[1024], *err = NULL;
    snprintf(path, sizeof path, "%s/tests/fixtures/profiles/h200/ddp_train.json", ADVISE_SOURCE_DIR);
    Profile *p = profile_read_file(path, PROFILE_FINAL, &err);
    cr_assert_not_null(p, "%s", err ? err : "");
    cr_expect_eq(p->device_count, 6, "three processes, each seeing both GPUs");
    char *d = profile_gpu_description(p);
    cr_expect_str_eq(d, "2 x NVIDIA H200", "two ranks, one GPU each");
    free(d);
    profile_free(p);

    /* one process that sees two GPUs and ran on one */
    Aggregator *agg = agg_new();
    ProfDevice a = {.id = 0, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9};
    ProfDevice b = {.id = 1, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9};
    agg_device(agg, &a);
    agg_device(agg, &b);
    AggKernel k = {.name = "k", .grid = {1, 1, 1}, .block = {32, 1, 1}, .device = 0, .start_ns = 10, .end_ns = 20,
                   .site = -1};
    agg_kernel(agg, &k);
    ProfProcess proc = {.pid = 1, .rank = -1, .local_rank = -1, .world_size = -1};
    p = agg_to_profile(agg, &proc);
    d = profile_gpu_description(p);
    cr_expect_str_eq(d, "NVIDIA H200");
    free(d);
    profile_free(p);
    agg_free(agg);
    free(err);
}

/* ---- --fail-if-slower: the CI gate --------------------------------------------------- */

Test(diff_cli, fail_if_slower_passes_a_speedup_and_fails_a_slowdown) {
    /* GPU time (kernels + copies + memsets): 6.69 ms in transpose.json, 3.20 ms in transpose_fixed.json */
    RunResult r = run_advise("diff", "--fail-if-slower", "5", H200 "transpose.json", H200 "transpose_fixed.json");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "advise diff: GPU time 6.69 ms -> 3.20 ms (-52.3%): within the 5.0% threshold\n"), "%s",
              r.err);
    run_result_free(&r);
    r = run_advise("diff", "--fail-if-slower", "5%", H200 "transpose_fixed.json", H200 "transpose.json");
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "GPU time 3.20 ms -> 6.69 ms (+109.4%): slower past the 5.0% threshold\n"), "%s", r.err);
    cr_expect(strstr(r.out, "Totals"), "the comparison is still printed: %s", r.out);
    run_result_free(&r);
    /* a threshold above the slowdown passes */
    r = run_advise("diff", "--fail-if-slower", "150", H200 "transpose_fixed.json", H200 "transpose.json");
    cr_expect_eq(r.status, 0, "%s", r.err);
    run_result_free(&r);
    /* the same profile twice is not slower, at a threshold of 0 */
    r = run_advise("diff", "--fail-if-slower", "0", H200 "transpose.json", H200 "transpose.json");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "(+0.0%): within the 0.0% threshold"), "%s", r.err);
    run_result_free(&r);
}

Test(diff_cli, fail_if_slower_by_wall_time_and_in_json) {
    RunResult r = run_advise("diff", "--fail-if-slower", "50", "--metric", "wall", H200 "transpose_fixed.json",
                             H200 "transpose.json");
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "wall time 258 ms -> 445 ms (+72.5%): slower past the 50.0% threshold"), "%s", r.err);
    run_result_free(&r);
    r = run_advise("diff", "--format", "json", "--fail-if-slower", "5", H200 "transpose_fixed.json",
                   H200 "transpose.json");
    cr_expect_eq(r.status, 1);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc, "%s", jerr.text);
    json_t *gate = json_object_get(doc, "gate");
    cr_expect_str_eq(json_string_value(json_object_get(gate, "metric")), "gpu");
    cr_expect_eq(json_integer_value(json_object_get(gate, "before_ns")), 3195932);
    cr_expect_eq(json_integer_value(json_object_get(gate, "after_ns")), 6693374);
    cr_expect(json_is_true(json_object_get(gate, "slower")));
    cr_expect_float_eq(json_real_value(json_object_get(gate, "change_pct")), 100.0 * (6693374.0 / 3195932.0 - 1), 1e-9);
    json_decref(doc);
    run_result_free(&r);
    /* without the option, no gate in the JSON */
    r = run_advise("diff", "--format", "json", H200 "transpose_fixed.json", H200 "transpose.json");
    doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc);
    cr_expect_null(json_object_get(doc, "gate"));
    json_decref(doc);
    run_result_free(&r);
}

Test(diff_cli, fail_if_slower_usage_errors) {
    const char *bad[] = {"x", "-1", "", "5x", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        RunResult r = run_advise("diff", "--fail-if-slower", bad[i], H200 "transpose.json", H200 "transpose.json");
        cr_expect_eq(r.status, 2, "'%s' accepted", bad[i]);
        cr_expect(strstr(r.err, "--fail-if-slower wants a percentage"), "%s", r.err);
        run_result_free(&r);
    }
    RunResult r = run_advise("diff", "--metric", "wall", H200 "transpose.json", H200 "transpose.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--metric goes with --fail-if-slower"), "%s", r.err);
    run_result_free(&r);
    r = run_advise("diff", "--fail-if-slower", "5", "--metric", "cpu", H200 "transpose.json", H200 "transpose.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--metric wants gpu or wall"), "%s", r.err);
    run_result_free(&r);
}
