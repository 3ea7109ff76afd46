/* The profile view: kernel base names, indexes by line and by kernel, run
 * totals and freshness on synthetic profiles (built directly and through the
 * aggregator); the H200 fixtures against the samples they were recorded
 * from; folders (the newest profile, every profile, files skipped with a
 * reason) and finding a file by a suffix of its absolute path. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profiler/aggregate.h"
#include "profiler/kernel_name.h"
#include "profiler/profile_json.h"
#include "profiler/profile_set.h"
#include "profiler/profile_view.h"
#include "tests/cli_harness.h"
#include "tests/profile_builder.h"

#define H200 ADVISE_SOURCE_DIR "/tests/fixtures/profiles/h200/"

static void expect_base(const char *demangled, const char *want) {
    char *got = kernel_base_name(demangled);
    cr_expect_str_eq(got, want, "%s", demangled);
    free(got);
}

Test(profile_view, kernel_base_names) {
    expect_base("transpose_naive(float*, float const*, int, int)", "transpose_naive");
    expect_base("void at::native::foo<4>(int, float*)", "foo");
    expect_base("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                "namespace)::TensorListMetadata<4>, float>(T1, T2)",
                "multi_tensor_apply_kernel");
    expect_base("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float>(T13)", "kernel");
    expect_base("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(T1::Params)", "Kernel2");
    expect_base("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize32x32x8", "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize32x32x8");
    expect_base("void ns::transpose_naive<32>(float*, float const*, int, int)", "transpose_naive");
    expect_base("", "");
}

static Profile *sample_profile(void) {
    Profile *p = pb_new(1000000000, 250000000); /* 1 s run, GPU busy 25% */
    pb_launch(p, "src/train.py", 10, "void at::native::vectorized_elementwise_kernel<4, mul>(int, T)", 100, 2000000);
    pb_launch(p, "src/train.py", 10, "void at::native::vectorized_elementwise_kernel<4, sigmoid>(int, T)", 100,
              1000000);
    pb_copy(p, "src/train.py", 12, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 4000000, 1, 2000000);
    pb_sync(p, "src/train.py", 14, 500, 900000000);
    pb_alloc(p, "src/data.py", 3, 2, 50000);
    pb_launch(p, "src/data.py", 5, "transpose_naive(float*, float const*, int, int)", 20, 980000);
    pb_launch(p, "src/data.py", 6, "transpose_naive(float*, float const*, int, int)", 1, 50000); /* another shape */
    return p;
}

Test(profile_view, totals_lines_and_kernels) {
    ProfileView *v = profile_view_new(sample_profile(), "mem.json");
    cr_assert(v);
    cr_expect_eq(profile_view_run_ns(v), 1000000000);
    cr_expect_eq(profile_view_busy_ns(v), 250000000);
    cr_expect_eq(profile_view_kernel_ns(v), 2000000 + 1000000 + 980000 + 50000);
    cr_expect_eq(profile_view_gpu_ns(v), 2000000 + 1000000 + 980000 + 50000 + 2000000);
    cr_expect_str_eq(profile_view_device(v)->name, "NVIDIA H200");
    cr_expect_str_eq(profile_view_path(v), "mem.json");

    int train = profile_view_file(v, "src/train.py"), data = profile_view_file(v, "src/data.py");
    cr_assert(train >= 0 && data >= 0);
    cr_expect_eq(profile_view_file(v, "train.py"), -1);

    const ProfOp *ops[8];
    cr_expect_eq(profile_view_ops_in(v, train, 10, 10, ops, 8), 2);
    cr_expect_eq(profile_view_ops_in(v, train, 11, 13, ops, 8), 1);
    cr_expect_eq(ops[0]->kind, PROF_OP_MEMCPY);
    cr_expect_eq(profile_view_ops_in(v, train, 1, 100, ops, 1), 4, "counts all, fills at most max");
    cr_expect_eq(profile_view_ops_in(v, train, 15, 100, ops, 8), 0);
    cr_expect_eq(profile_view_ops_in(v, -1, 1, 100, ops, 8), 0);

    const ProfileLineCost *lines;
    size_t n = profile_view_lines(v, train, &lines);
    cr_assert_eq(n, 3);
    cr_expect_eq(lines[0].line, 10);
    cr_expect_eq(lines[0].launches, 200);
    cr_expect_eq(lines[0].kernel_ns, 3000000);
    cr_expect_eq(lines[1].line, 12);
    cr_expect_eq(lines[1].copy_bytes, 4000000);
    cr_expect_eq(lines[1].copies, 1);
    cr_expect_eq(lines[2].syncs, 500);
    cr_expect_eq(lines[2].sync_ns, 900000000);
    n = profile_view_lines(v, data, &lines);
    cr_assert_eq(n, 3);
    cr_expect_eq(lines[0].allocs, 2);
    cr_expect_eq(lines[0].alloc_ns, 50000);

    ProfStats sum;
    const ProfKernel *example;
    cr_assert(profile_view_kernel(v, "transpose_naive", &sum, &example));
    cr_expect_eq(sum.count, 21);
    cr_expect_eq(sum.total_ns, 1030000);
    cr_expect_eq(sum.median_ns, 49000, "the median of the most-launched shape");
    cr_expect_eq(example->stats.count, 20);
    cr_expect(profile_view_kernel(v, "vectorized_elementwise_kernel", &sum, NULL));
    cr_expect_eq(sum.count, 200);
    cr_expect_not(profile_view_kernel(v, "transpose", NULL, NULL));
    int sites[4];
    cr_expect_eq(profile_view_kernel_sites(v, 2, sites, 4), 1);
    profile_view_free(v);
}

Test(profile_view, freshness_by_content_hash) {
    Profile *p = sample_profile();
    pb_hash(p, "src/train.py", "x = 1\n");
    ProfileView *v = profile_view_new(p, NULL);
    int train = profile_view_file(v, "src/train.py"), data = profile_view_file(v, "src/data.py");
    cr_expect_eq(profile_view_freshness(v, train, "x = 1\n", 6), PROFILE_FRESH);
    cr_expect_eq(profile_view_freshness(v, train, "x = 2\n", 6), PROFILE_STALE);
    cr_expect_eq(profile_view_freshness(v, data, "", 0), PROFILE_NO_HASH);
    cr_expect_eq(profile_view_freshness(v, -1, "", 0), PROFILE_NO_HASH);
    profile_view_free(v);
}

Test(profile_view, built_by_the_aggregator) {
    Aggregator *agg = agg_new();
    int site = agg_site(agg, "app/main.cu", 42, "main");
    for (int i = 0; i < 3; i++) {
        AggKernel k = {.name = "scale(float*, float, int)", .grid = {4, 1, 1}, .block = {256, 1, 1},
                       .start_ns = 1000u + 1000u * i, .end_ns = 1500u + 1000u * i, .site = site};
        agg_kernel(agg, &k);
    }
    agg_sync(agg, PROF_SYNC_CONTEXT, 7000, site);
    ProfProcess proc = {.pid = 2, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 100000};
    ProfileView *v = profile_view_new(agg_to_profile(agg, &proc), "");
    agg_free(agg);
    cr_assert(v);
    int f = profile_view_file(v, "app/main.cu");
    const ProfileLineCost *lines;
    cr_assert_eq(profile_view_lines(v, f, &lines), 1);
    cr_expect_eq(lines[0].line, 42);
    cr_expect_eq(lines[0].launches, 3);
    cr_expect_eq(lines[0].kernel_ns, 1500);
    cr_expect_eq(lines[0].sync_ns, 7000);
    ProfStats sum;
    cr_expect(profile_view_kernel(v, "scale", &sum, NULL));
    cr_expect_eq(sum.count, 3);
    cr_expect_eq(profile_view_run_ns(v), 100000);
    profile_view_free(v);
}

Test(profile_view, h200_pipeline_matches_its_sample) {
    char *error = NULL;
    ProfileView *v = profile_view_load(H200 "pipeline.json", &error);
    cr_assert(v, "%s", error);
    int f = profile_view_file(v, "samples/cuda/pipeline.cu");
    cr_assert(f >= 0);
    char *text = harness_slurp(ADVISE_SOURCE_DIR "/samples/cuda/pipeline.cu");
    cr_expect_eq(profile_view_freshness(v, f, text, strlen(text)), PROFILE_FRESH);
    free(text);
    const ProfOp *ops[8];
    cr_assert_eq(profile_view_ops_in(v, f, 105, 106, ops, 8), 1);
    cr_expect_eq(ops[0]->kind, PROF_OP_MEMCPY);
    cr_expect_eq(ops[0]->src, PROF_MEM_PAGEABLE);
    cr_expect_eq(ops[0]->stats.count, 16);
    cr_expect_eq(ops[0]->bytes, 16777216);
    ProfStats sum;
    cr_expect(profile_view_kernel(v, "square_plus_one", &sum, NULL));
    cr_expect_eq(sum.count, 16);
    cr_expect_eq(profile_view_run_ns(v), 332448929);
    cr_expect_eq(profile_view_busy_ns(v), 817758);
    profile_view_free(v);

    v = profile_view_load(H200 "transpose.json", &error);
    cr_assert(v, "%s", error);
    cr_expect(profile_view_kernel(v, "transpose_naive", &sum, NULL));
    cr_expect_eq(sum.count, 21);
    cr_expect_eq(sum.total_ns, 47424 + 951360);
    profile_view_free(v);
}

static char *copy_to(const char *dir, const char *name, const char *text) {
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static char *with_created(const char *fixture, const char *created) {
    char *text = harness_slurp(fixture);
    char *at = strstr(text, "\"created\":\"");
    cr_assert(at);
    memcpy(at + 11, created, 20);
    return text;
}

Test(profile_view, folders_newest_and_every_profile) {
    char dir[] = "/tmp/advise-view-XXXXXX";
    cr_assert(mkdtemp(dir));
    char *old = with_created(H200 "pipeline.json", "2026-11-29T10:00:00Z");
    char *new = with_created(H200 "transpose.json", "2026-12-01T10:00:00Z");
    char *paths[4] = {copy_to(dir, "b-old.json", old), copy_to(dir, "a-new.json", new),
                      copy_to(dir, "broken.json", "{\"format\":"), copy_to(dir, "notes.txt", "not a profile")};
    char *error = NULL;
    ProfileView *v = profile_view_load(dir, &error);
    cr_assert(v, "%s", error);
    cr_expect(strstr(profile_view_path(v), "a-new.json"), "the newest by created, not by name");
    const char *const *notes;
    cr_expect_eq(profile_view_notes(v, &notes), 1);
    cr_expect(strstr(notes[0], "broken.json"), "%s", notes[0]);
    profile_view_free(v);

    ProfileSet *set = profile_set_load(dir, &error);
    cr_assert(set, "%s", error);
    cr_expect_eq(profile_set_count(set), 2);
    int file;
    const ProfileView *pv = profile_set_for_file(set, "samples/cuda/pipeline.cu", NULL, &file);
    cr_expect(pv && strstr(profile_view_path(pv), "b-old.json"), "each file from the profile that mentions it");
    pv = profile_set_for_file(set, "samples/cuda/transpose.cu", NULL, &file);
    cr_expect(pv && strstr(profile_view_path(pv), "a-new.json"));
    cr_expect_null(profile_set_for_file(set, "samples/cuda/reduction.cu", "/x/samples/cuda/reduction.cu", &file));
    pv = profile_set_for_file(set, NULL, "/elsewhere/checkout/samples/cuda/pipeline.cu", &file);
    cr_expect(pv && file == 0, "found by a suffix of the absolute path");
    cr_expect_null(profile_set_for_file(set, NULL, "/x/mysamples/cuda/pipeline.cu", &file), "only at a '/'");
    profile_set_free(set);

    for (int i = 0; i < 4; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    free(old);
    free(new);
    cr_expect_null(profile_view_load(dir, &error), "an empty folder holds no profile");
    cr_expect(error && strstr(error, "no profile"), "%s", error);
    free(error);
    error = NULL;
    cr_expect_null(profile_set_load("/nonexistent/advise", &error));
    free(error);
    rmdir(dir);
}

/* kernel_short_name: what hovers and sidebars show of a kernel */
Test(kernel_name, short_names_stop_at_the_parameters_not_at_anonymous_namespaces) {
    char buf[96];
    kernel_short_name("relu(float*, int)", buf, sizeof buf);
    cr_expect_str_eq(buf, "relu");
    kernel_short_name("void at::native::(anonymous namespace)::apply<at::T<float, 3>>(at::T<float, 3>)", buf,
                      sizeof buf);
    cr_expect_str_eq(buf, "void at::native::(anonymous namespace)::apply<at::T<float, 3>>");
    kernel_short_name("sm80_xmma_gemm_f32f32_tn_n", buf, sizeof buf);
    cr_expect_str_eq(buf, "sm80_xmma_gemm_f32f32_tn_n");
    /* long template names are cut with an ellipsis, on a character boundary */
    char longer[300];
    memset(longer, 'k', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    kernel_short_name(longer, buf, sizeof buf);
    cr_expect_eq(strlen(buf), 80 + 3, "%zu bytes: %s", strlen(buf), buf);
    cr_expect_str_eq(buf + 80, "\xE2\x80\xA6");
    kernel_short_name("(anonymous namespace)", buf, sizeof buf);
    cr_expect_str_eq(buf, "(anonymous namespace)");
}
