/* Profiles recorded on an H200 by `advise profile` (tests/fixtures/profiles/h200/):
 * the reader accepts them, the device facts are the H200's, and every launch,
 * copy, sync and allocation of the samples sits on the line that made it
 * (tests/gpu/check_profile.py, the same checker the GPU run uses). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli_harness.h"
#include "profiler/profile_json.h"

#define FIXTURES ADVISE_SOURCE_DIR "/tests/fixtures/profiles/h200"

static const char *const cuda_samples[] = {"transpose", "transpose_fixed", "reduction", "reduction_fixed",
                                           "elementwise_chain", "elementwise_chain_fixed", "pipeline",
                                           "pipeline_fixed"};
static const char *const python_runs[] = {"torch_sites", "train_classifier", "generate_text", "benchmark_matmul",
                                          "resnet50_step", "llama_generate", "unet_step", "transpose_nodebug"};

static Profile *read_fixture(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", FIXTURES, name);
    char *err = NULL;
    Profile *p = profile_read_file(path, PROFILE_FINAL, &err);
    cr_assert_not_null(p, "%s: %s", path, err ? err : "?");
    free(err);
    return p;
}

static void expect_h200(const Profile *p, const char *name) {
    cr_assert_geq(p->device_count, 1, "%s", name);
    const ProfDevice *d = &p->devices[0];
    cr_expect_str_eq(d->name, "NVIDIA H200", "%s", name);
    cr_expect_eq(d->sm_count, 132, "%s", name);
    cr_expect_eq(d->cc_major, 9, "%s", name);
    cr_expect_gt(d->bandwidth_bytes_per_s, 1000000000000ull, "%s: over 1 TB/s", name);
    cr_expect_eq(d->max_registers_per_sm, 65536, "%s", name);
    cr_expect_gt(p->kernel_count, 0, "%s", name);
    cr_expect_geq(p->timeline_count, 1, "%s", name);
    cr_expect_leq(p->timelines[0].busy_ns, p->timelines[0].span_ns, "%s", name);
}

Test(profile_fixtures, every_recorded_profile_reads_and_describes_the_h200) {
    for (size_t i = 0; i < sizeof cuda_samples / sizeof *cuda_samples; i++) {
        Profile *p = read_fixture(cuda_samples[i]);
        expect_h200(p, cuda_samples[i]);
        cr_expect_str_eq(p->source, "cupti");
        profile_free(p);
    }
    for (size_t i = 0; i < sizeof python_runs / sizeof *python_runs; i++) {
        Profile *p = read_fixture(python_runs[i]);
        expect_h200(p, python_runs[i]);
        profile_free(p);
    }
}

Test(profile_fixtures, kernel_names_are_demangled_and_launch_configurations_kept) {
    Profile *p = read_fixture("transpose");
    bool naive = false;
    for (size_t i = 0; i < p->kernel_count; i++) {
        const ProfKernel *k = &p->kernels[i];
        if (strncmp(k->name, "transpose_naive(", 16) == 0) {
            naive = true;
            cr_expect_eq(k->block[0] * k->block[1] * k->block[2] > 0, true);
            cr_expect_gt(k->registers, 0);
            cr_expect_gt(k->stats.count, 0);
            cr_expect_leq(k->stats.min_ns, k->stats.median_ns);
            cr_expect_leq(k->stats.median_ns, k->stats.max_ns);
        }
    }
    cr_expect(naive, "transpose_naive(...) is in the profile under its demangled name");
    profile_free(p);
}

Test(profile_fixtures, a_program_without_host_line_info_has_a_note_and_no_sites) {
    Profile *p = read_fixture("transpose_nodebug");
    cr_expect_eq(p->site_count, 0);
    cr_assert_not_null(p->processes[0].error);
    cr_expect(strstr(p->processes[0].error, "build it with -g"), "%s", p->processes[0].error);
    profile_free(p);
}

Test(profile_fixtures, the_pageable_copies_of_the_pipeline_are_measured_as_such) {
    Profile *p = read_fixture("pipeline");
    uint64_t pageable = 0, pinned = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind != PROF_OP_MEMCPY) continue;
        if (op->src == PROF_MEM_PAGEABLE || op->dst == PROF_MEM_PAGEABLE) pageable += op->stats.count;
        if (op->src == PROF_MEM_PINNED || op->dst == PROF_MEM_PINNED) pinned += op->stats.count;
    }
    cr_expect_gt(pageable, 0, "pipeline.cu copies from std::vector and malloc() memory");
    cr_expect_gt(pinned, 0, "its h_above buffer comes from cudaMallocHost");
    profile_free(p);
    p = read_fixture("pipeline_fixed");
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind == PROF_OP_MEMCPY && op->copy != PROF_COPY_DTOD)
            cr_expect(op->src != PROF_MEM_PAGEABLE && op->dst != PROF_MEM_PAGEABLE, "the fixed pipeline pins its buffers");
    }
    profile_free(p);
}

static void check_attribution(const char *profile, const char *source) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && python3 tests/gpu/check_profile.py %s/%s.json %s", ADVISE_SOURCE_DIR,
             FIXTURES, profile, source);
    RunResult r = harness_run_shell(cmd);
    cr_expect_eq(r.status, 0, "%s\n%s%s", cmd, r.out, r.err);
    cr_expect(strstr(r.out, "expectations met"), "%s", r.out);
    run_result_free(&r);
}

Test(profile_fixtures, each_launch_copy_sync_and_allocation_is_on_its_line) {
    for (size_t i = 0; i < sizeof cuda_samples / sizeof *cuda_samples; i++) {
        char source[256];
        snprintf(source, sizeof source, "samples/cuda/%s.cu", cuda_samples[i]);
        check_attribution(cuda_samples[i], source);
    }
    check_attribution("torch_sites", "tests/gpu/torch_sites.py");
}

Test(profile_fixtures, the_checker_notices_a_misplaced_launch) {
    /* the same checker must fail when the lines are wrong: compare the
     * fixed transpose's profile against the problem version's source */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && python3 tests/gpu/check_profile.py %s/transpose_fixed.json samples/cuda/transpose.cu",
             ADVISE_SOURCE_DIR, FIXTURES);
    RunResult r = harness_run_shell(cmd);
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "MISSING") || strstr(r.out, "MISPLACED"), "%s", r.out);
    run_result_free(&r);
}
