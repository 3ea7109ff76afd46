/* `advise import`: torch.profiler Chrome traces (the JSON files in tests/fixtures/traces,
 * hand-written in kineto's shape) into profiles. Call sites come from the
 * python_function events around each launch: the innermost user frame wins
 * over torch's; two threads keep their own stacks; files outside the
 * project root, in site-packages or in torch/ are never user code; hostile
 * input is skipped and counted, never fatal. The command line writes into
 * the profile folder and never overwrites. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/cli_harness.h"
#include "profiler/profile_json.h"
#include "profiler/import/torch_api_names.h"
#include "profiler/import/torch_import.h"
#include "profiler/import/torch_stacks.h"
#include "profiler/import/torch_user_code.h"

#define TRACES ADVISE_SOURCE_DIR "/tests/fixtures/traces"
#define PROJECT TRACES "/project"

/* A fixture's text with every "@ROOT@" replaced by the fixture project's path */
static char *fixture_text(const char *name, size_t *length) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TRACES, name);
    char *raw = harness_slurp(path);
    cr_assert(raw[0], "cannot read %s", path);
    const char *root = PROJECT;
    size_t n = 0;
    for (const char *s = strstr(raw, "@ROOT@"); s; s = strstr(s + 6, "@ROOT@")) n++;
    char *out = malloc(strlen(raw) + n * strlen(root) + 1);
    char *w = out;
    const char *r = raw;
    for (const char *s = strstr(r, "@ROOT@"); s; s = strstr(r, "@ROOT@")) {
        memcpy(w, r, (size_t)(s - r));
        w += s - r;
        strcpy(w, root);
        w += strlen(root);
        r = s + 6;
    }
    strcpy(w, r);
    free(raw);
    *length = strlen(out);
    return out;
}

static Profile *import_fixture(const char *name, TorchImportReport *report) {
    size_t length;
    char *text = fixture_text(name, &length);
    char *error = NULL;
    Profile *p = torch_import_report(text, length, PROJECT, name, report, &error);
    cr_assert_not_null(p, "%s: %s", name, error ? error : "?");
    free(text);
    return p;
}

static int find_site(const Profile *p, const char *path, uint32_t line, const char *function) {
    for (size_t i = 0; i < p->site_count; i++) {
        const ProfSite *s = &p->sites[i];
        if (s->file >= 0 && strcmp(p->files[s->file].path, path) == 0 && s->line == line &&
            (!function || (s->function && strcmp(s->function, function) == 0)))
            return (int)i;
    }
    return -1;
}

/* The site of the one launch op of kernel `name`; -2 when none or several */
static int launch_site(const Profile *p, const char *name) {
    int found = -2, count = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind == PROF_OP_LAUNCH && strcmp(p->kernels[op->kernel].name, name) == 0) {
            found = op->site;
            count++;
        }
    }
    return count == 1 ? found : -2;
}

static const ProfOp *find_op(const Profile *p, ProfOpKind kind, int site) {
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == kind && p->ops[i].site == site) return &p->ops[i];
    return NULL;
}

static const ProfKernel *find_kernel(const Profile *p, const char *name) {
    for (size_t i = 0; i < p->kernel_count; i++)
        if (strcmp(p->kernels[i].name, name) == 0) return &p->kernels[i];
    return NULL;
}

/* ---- frame names and API names */

Test(torch_frames, parses_file_line_function) {
    const char *file, *fn;
    size_t len;
    uint32_t line;
    cr_assert(torch_frame_parse("train.py(8): train_step", &file, &len, &line, &fn));
    cr_expect_eq(len, 8);
    cr_expect_eq(line, 8);
    cr_expect_str_eq(fn, "train_step");
    cr_assert(torch_frame_parse("runs (1)/x.py(12): <lambda>", &file, &len, &line, &fn));
    cr_expect_eq(len, strlen("runs (1)/x.py"));
    cr_expect_eq(line, 12);
    cr_expect_str_eq(fn, "<lambda>");
    cr_expect_not(torch_frame_parse("<built-in method relu of type object at 0x7f>", &file, &len, &line, &fn));
    cr_expect_not(torch_frame_parse("nn.Module: Net_0", &file, &len, &line, &fn));
    cr_expect_not(torch_frame_parse("x.py(0): f", &file, &len, &line, &fn));
    cr_expect_not(torch_frame_parse("(3): f", &file, &len, &line, &fn));
    cr_expect_not(torch_frame_parse("x.py(12):f", &file, &len, &line, &fn));
    cr_expect_not(torch_frame_parse("x.py(1234567890123): f", &file, &len, &line, &fn));
}

Test(torch_frames, user_code_rules) {
    char *error = NULL;
    TorchUserCode *uc = torch_user_code_new(PROJECT, &error);
    cr_assert_not_null(uc, "%s", error);
    int id = torch_user_code_lookup(uc, "model.py(8): forward");
    cr_assert_geq(id, 0);
    cr_expect_str_eq(torch_user_code_frame(uc, id)->path, "model.py");
    cr_expect_eq(torch_user_code_lookup(uc, "model.py(8): forward"), id, "the same name gives the same id");
    int helper = torch_user_code_lookup(uc, "helper.py(4): prepare");
    cr_assert_geq(helper, 0, "a file found as the only path ending in /helper.py");
    cr_expect_str_eq(torch_user_code_frame(uc, helper)->path, "sub/helper.py");
    cr_expect_eq(torch_user_code_lookup(uc, "util.py(1): f"), -1, "a/util.py and b/util.py: ambiguous");
    cr_expect_eq(torch_user_code_lookup(uc, "torch/nn/modules/module.py(1736): _call_impl"), -1);
    cr_expect_eq(torch_user_code_lookup(uc, "/usr/lib/python3/dist-packages/numpy/core/numeric.py(200): ones"), -1);
    cr_expect_eq(torch_user_code_lookup(uc, "<frozen importlib._bootstrap>(1360): _find_and_load"), -1);
    cr_expect_eq(torch_user_code_lookup(uc, "missing.py(3): f"), -1, "a relative file that is nowhere under the root");
    cr_expect_eq(torch_user_code_lookup(uc, PROJECT "/site-packages/x.py(3): f"), -1);
    cr_expect_eq(torch_user_code_lookup(uc, PROJECT "/torch/x.py(3): f"), -1);
    int abs = torch_user_code_lookup(uc, PROJECT "/sub/helper.py(4): prepare");
    cr_assert_geq(abs, 0);
    cr_expect_str_eq(torch_user_code_frame(uc, abs)->path, "sub/helper.py");
    cr_expect_eq(torch_user_code_frame_count(uc), 3);
    torch_user_code_free(uc);
}

Test(torch_frames, missing_root_is_an_error) {
    char *error = NULL;
    cr_expect_null(torch_user_code_new("/nonexistent/advise-root", &error));
    cr_assert_not_null(error);
    cr_expect(strstr(error, "/nonexistent/advise-root") != NULL, "%s", error);
    free(error);
}

Test(torch_api, sync_and_allocation_names) {
    cr_expect_eq(torch_api_sync_kind("cudaDeviceSynchronize"), PROF_SYNC_CONTEXT);
    cr_expect_eq(torch_api_sync_kind("cuCtxSynchronize"), PROF_SYNC_CONTEXT);
    cr_expect_eq(torch_api_sync_kind("cudaStreamSynchronize_ptsz"), PROF_SYNC_STREAM);
    cr_expect_eq(torch_api_sync_kind("cuStreamSynchronize"), PROF_SYNC_STREAM);
    cr_expect_eq(torch_api_sync_kind("cudaEventSynchronize"), PROF_SYNC_EVENT);
    cr_expect_eq(torch_api_sync_kind("cuStreamWaitEvent"), PROF_SYNC_STREAM_WAIT_EVENT);
    cr_expect_eq(torch_api_sync_kind("cudaLaunchKernel_v7000"), PROF_SYNC_UNKNOWN);
    cr_expect_eq(torch_api_sync_kind("cudaStreamSynchronizeX"), PROF_SYNC_UNKNOWN);
    cr_expect_eq(torch_api_alloc_kind("cudaMalloc"), PROF_MEM_DEVICE);
    cr_expect_eq(torch_api_alloc_kind("cudaMallocAsync_ptsz"), PROF_MEM_DEVICE);
    cr_expect_eq(torch_api_alloc_kind("cuMemAlloc_v2"), PROF_MEM_DEVICE);
    cr_expect_eq(torch_api_alloc_kind("cudaHostAlloc"), PROF_MEM_PINNED);
    cr_expect_eq(torch_api_alloc_kind("cudaMallocHost"), PROF_MEM_PINNED);
    cr_expect_eq(torch_api_alloc_kind("cuMemHostAlloc"), PROF_MEM_PINNED);
    cr_expect_eq(torch_api_alloc_kind("cudaMallocManaged"), PROF_MEM_MANAGED);
    cr_expect_eq(torch_api_alloc_kind("cudaFree"), PROF_MEM_UNKNOWN);
    cr_expect_eq(torch_api_alloc_kind("cudaMemcpyAsync"), PROF_MEM_UNKNOWN);
}

/* ---- the stack sweep on its own */

Test(torch_stacks, innermost_user_span_on_each_thread) {
    TorchSpan spans[] = {
        {1, 1, 0, 100, 0},   /* user */
        {1, 1, 10, 90, -1},  /* library, inside */
        {1, 1, 20, 50, 1},   /* user, inside */
        {1, 2, 0, 100, 2},   /* the other thread */
        {1, 1, 10, 90, 3},   /* same start as the library span, shorter: inner */
    };
    spans[4].end_ns = 80;
    TorchMoment moments[] = {
        {1, 1, 30, 0}, {1, 2, 30, 0}, {1, 1, 85, 0}, {1, 1, 95, 0}, {1, 1, 100, 0}, {1, 1, 101, 0}, {2, 1, 30, 0},
    };
    cr_assert(torch_stacks_resolve(spans, 5, moments, 7));
    cr_expect_eq(moments[0].frame, 1);
    cr_expect_eq(moments[1].frame, 2);
    cr_expect_eq(moments[2].frame, 0, "85: past the user span that ended at 80, inside the library one");
    cr_expect_eq(moments[3].frame, 0);
    cr_expect_eq(moments[4].frame, 0, "the end is inside");
    cr_expect_eq(moments[5].frame, -1);
    cr_expect_eq(moments[6].frame, -1, "another process");
}

/* 200 000 spans, depth 40 nests; a user frame at depth 10; 200 000 moments.
 * Quadratic work would not finish within Criterion's patience. */
Test(torch_stacks, large_traces_stay_fast, .timeout = 20) {
    const size_t depth = 40, nests = 5000, n = depth * nests;
    TorchSpan *spans = malloc(n * sizeof *spans);
    TorchMoment *moments = malloc(n * sizeof *moments);
    for (size_t k = 0; k < nests; k++)
        for (size_t d = 0; d < depth; d++) {
            uint64_t base = k * 1000;
            spans[k * depth + d] = (TorchSpan){7, 7, base + d, base + 900 - d, d == 10 ? (int)k : -1};
        }
    for (size_t i = 0; i < n; i++) moments[i] = (TorchMoment){7, 7, (n - 1 - i) / depth * 1000 + 450, 0};
    cr_assert(torch_stacks_resolve(spans, n, moments, n));
    for (size_t i = 0; i < n; i++) cr_assert_eq(moments[i].frame, (int)((n - 1 - i) / depth));
    free(spans);
    free(moments);
}

/* Spans that overlap without nesting (no real trace has them): answers
 * still enclose the moment, and the work stays bounded. */
Test(torch_stacks, overlapping_spans_never_give_a_wrong_answer, .timeout = 20) {
    const size_t n = 100000;
    TorchSpan *spans = malloc(n * sizeof *spans);
    TorchMoment *moments = malloc(n * sizeof *moments);
    for (size_t i = 0; i < n; i++) {
        spans[i] = (TorchSpan){1, 1, i * 10, i * 10 + 25, (int)i};
        moments[i] = (TorchMoment){1, 1, i * 10 + 5, 0};
    }
    cr_assert(torch_stacks_resolve(spans, n, moments, n));
    for (size_t i = 0; i < n; i++) {
        int f = moments[i].frame;
        cr_assert_geq(f, 0);
        uint64_t start = (uint64_t)f * 10, end = start + 25;
        cr_assert(start <= moments[i].ts_ns && moments[i].ts_ns <= end, "moment %zu got span %d", i, f);
    }
    free(spans);
    free(moments);
}

/* ---- whole traces */

Test(torch_import, innermost_user_frame_wins_over_torch_frames) {
    TorchImportReport r;
    Profile *p = import_fixture("nested.json", &r);
    int forward = find_site(p, "model.py", 8, "forward");
    int step = find_site(p, "train.py", 8, "train_step");
    int main_site = find_site(p, "train.py", 14, "main");
    cr_assert_geq(forward, 0);
    cr_assert_geq(step, 0);
    cr_assert_geq(main_site, 0);
    cr_expect_eq(p->site_count, 3);
    cr_expect(p->sites[forward].function_level, "imported sites are function-level");
    /* launched under forward > torch's functional.relu > <built-in method relu> */
    cr_expect_eq(launch_site(p, "k3"), main_site, "<frozen importlib> is not user code: main");
    const ProfKernel *relu = NULL;
    for (size_t i = 0; i < p->kernel_count; i++)
        if (strstr(p->kernels[i].name, "vectorized_elementwise_kernel")) relu = &p->kernels[i];
    cr_assert_not_null(relu);
    cr_expect_eq(launch_site(p, relu->name), forward);
    cr_expect_eq(launch_site(p, "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_"
                                "execute_segment_k_off_kernel__5x_cublas"),
                 step, "dist-packages numpy is not user code: train_step");
    cr_expect_eq(launch_site(p, "k4"), -1, "launched outside every Python frame");
    cr_expect_eq(launch_site(p, "k5"), -1, "no runtime call with its correlation");
    const ProfOp *copy = find_op(p, PROF_OP_MEMCPY, step);
    cr_assert_not_null(copy);
    cr_expect_eq(copy->copy, PROF_COPY_HTOD);
    cr_expect_eq(copy->src, PROF_MEM_PAGEABLE);
    cr_expect_eq(copy->dst, PROF_MEM_DEVICE);
    cr_expect_eq(copy->bytes, 4096);
    cr_expect_eq(copy->stats.total_ns, 50000);
    const ProfOp *sync = find_op(p, PROF_OP_SYNC, step);
    cr_assert_not_null(sync, "the stream sync at 750 µs: forward ended at 700, train_step still runs");
    cr_expect_eq(sync->sync, PROF_SYNC_STREAM);
    cr_expect_eq(sync->stats.total_ns, 40000);
    cr_expect_eq(r.kernels, 5);
    cr_expect_eq(r.copies, 1);
    cr_expect_eq(r.syncs, 1, "the cuda_sync GPU record is not counted again");
    cr_expect_eq(r.attributed, 5);
    cr_expect_eq(r.python_events, 9);
    cr_expect_eq(r.skipped, 0);
    profile_free(p);
}

Test(torch_import, kernel_launch_details_devices_and_metadata) {
    Profile *p = import_fixture("nested.json", NULL);
    const ProfKernel *gemm = NULL;
    for (size_t i = 0; i < p->kernel_count; i++)
        if (strncmp(p->kernels[i].name, "sm90_xmma_gemm", 14) == 0) gemm = &p->kernels[i];
    cr_assert_not_null(gemm);
    cr_expect_eq(gemm->grid[0], 16);
    cr_expect_eq(gemm->block[0], 128);
    cr_expect_eq(gemm->registers, 168);
    cr_expect_eq(gemm->static_shared, 213248, "kineto's shared memory (static + dynamic)");
    cr_expect_eq(gemm->stats.count, 1);
    cr_expect_eq(gemm->stats.total_ns, 100000);
    cr_assert_eq(p->device_count, 1);
    const ProfDevice *d = &p->devices[0];
    cr_expect_str_eq(d->name, "NVIDIA H200");
    cr_expect_eq(d->sm_count, 132);
    cr_expect_eq(d->cc_major, 9);
    cr_expect_eq(d->memory_bytes, 150754820096ull);
    cr_expect_eq(d->max_warps_per_sm, 64);
    cr_expect_eq(d->max_registers_per_sm, 65536);
    cr_expect_eq(d->max_shared_per_sm, 233472);
    cr_expect_eq(d->max_shared_per_block, 49152);
    cr_expect_eq(d->bandwidth_bytes_per_s, 0, "not in the trace");
    cr_expect_eq(gemm->device, 0);
    cr_assert_eq(p->process_count, 1);
    cr_expect_eq(p->processes[0].pid, 100);
    cr_expect_eq(p->processes[0].rank, 1);
    cr_expect_eq(p->processes[0].world_size, 2);
    cr_expect_str_eq(p->source, "torch-profiler");
    cr_expect_str_eq(p->name, "nested");
    cr_assert_eq(p->command_count, 2);
    cr_expect_str_eq(p->command[0], "torch.profiler");
    cr_expect_str_eq(p->command[1], "nested.json");
    cr_expect_eq(p->overhead_count, 1);
    bool launches = false;
    for (size_t i = 0; i < p->api_count; i++)
        if (strcmp(p->apis[i].name, "cudaLaunchKernel") == 0) launches = p->apis[i].stats.count == 4;
    cr_expect(launches, "four cudaLaunchKernel calls");
    for (size_t i = 0; i < p->file_count; i++) cr_expect_not_null(p->files[i].sha256, "%s hashed", p->files[i].path);
    profile_free(p);
}

Test(torch_import, the_profile_survives_its_own_format) {
    Profile *p = import_fixture("nested.json", NULL);
    char *error = NULL;
    char *json = profile_to_json(p, PROFILE_FINAL, &error);
    cr_assert_not_null(json, "%s", error);
    Profile *back = profile_from_json(json, strlen(json), PROFILE_FINAL, &error);
    cr_assert_not_null(back, "%s", error);
    cr_expect_eq(back->site_count, p->site_count);
    cr_expect_eq(back->kernel_count, p->kernel_count);
    int forward = find_site(back, "model.py", 8, "forward");
    cr_assert_geq(forward, 0);
    cr_expect(back->sites[forward].function_level);
    free(json);
    profile_free(back);
    profile_free(p);
}

Test(torch_import, two_threads_keep_their_own_stacks) {
    TorchImportReport r;
    Profile *p = import_fixture("threads.json", &r);
    int a = find_site(p, "train.py", 20, "worker_a");
    int b = find_site(p, "model.py", 12, "worker_b");
    int c = find_site(p, "sub/helper.py", 4, "prepare");
    cr_assert_geq(a, 0);
    cr_assert_geq(b, 0);
    cr_assert_geq(c, 0, "helper.py found as sub/helper.py under the root");
    cr_expect_eq(launch_site(p, "kernel_a"), a);
    cr_expect_eq(launch_site(p, "kernel_b"), b);
    cr_expect_eq(launch_site(p, "kernel_c"), c, "same tid, another process");
    cr_expect_eq(find_kernel(p, "kernel_a")->stats.count, 4);
    cr_expect_eq(r.attributed, 12);
    profile_free(p);
}

static uint64_t sync_total(const Profile *p, ProfSyncKind kind, uint64_t *count) {
    uint64_t total = 0;
    *count = 0;
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == PROF_OP_SYNC && p->ops[i].sync == kind) {
            total += p->ops[i].stats.total_ns;
            *count += p->ops[i].stats.count;
        }
    return total;
}

Test(torch_import, syncs_and_allocations_from_runtime_and_driver_calls) {
    TorchImportReport r;
    Profile *p = import_fixture("syncs.json", &r);
    uint64_t n;
    cr_expect_eq(sync_total(p, PROF_SYNC_CONTEXT, &n), 110000, "cudaDeviceSynchronize + cuCtxSynchronize");
    cr_expect_eq(n, 2);
    cr_expect_eq(sync_total(p, PROF_SYNC_STREAM, &n), 37000, "the nested cuStreamSynchronize is not counted");
    cr_expect_eq(n, 2);
    cr_expect_eq(sync_total(p, PROF_SYNC_EVENT, &n), 10000);
    cr_expect_eq(sync_total(p, PROF_SYNC_STREAM_WAIT_EVENT, &n), 1000);
    cr_expect_eq(r.syncs, 6);
    cr_expect_eq(r.allocations, 3);
    int step = find_site(p, "train.py", 8, "train_step");
    cr_assert_geq(step, 0);
    size_t allocs = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind == PROF_OP_SYNC || op->kind == PROF_OP_ALLOC) cr_expect_eq(op->site, step);
        if (op->kind != PROF_OP_ALLOC) continue;
        allocs++;
        cr_expect_eq(op->bytes, 0, "bytes are not in the trace");
        if (op->dst == PROF_MEM_DEVICE) cr_expect_eq(op->stats.total_ns, 100000);
        else if (op->dst == PROF_MEM_PINNED) cr_expect_eq(op->stats.total_ns, 200000);
        else cr_expect_eq(op->dst, PROF_MEM_MANAGED);
    }
    cr_expect_eq(allocs, 3);
    cr_expect_eq(r.api_calls, 12, "every runtime and driver call keeps its host time");
    profile_free(p);
}

static const ProfOp *copy_op(const Profile *p, ProfCopyKind copy, ProfMemKind src, ProfMemKind dst) {
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind == PROF_OP_MEMCPY && op->copy == copy && op->src == src && op->dst == dst) return op;
    }
    return NULL;
}

Test(torch_import, memory_kinds_from_copy_and_memset_names) {
    TorchImportReport r;
    Profile *p = import_fixture("syncs.json", &r);
    const ProfOp *pageable = copy_op(p, PROF_COPY_DTOH, PROF_MEM_DEVICE, PROF_MEM_PAGEABLE);
    cr_assert_not_null(pageable);
    cr_expect_eq(pageable->bytes, 4194304);
    cr_expect_eq(pageable->stats.total_ns, 2060000);
    cr_expect_not_null(copy_op(p, PROF_COPY_DTOH, PROF_MEM_DEVICE, PROF_MEM_PINNED));
    cr_expect_not_null(copy_op(p, PROF_COPY_HTOD, PROF_MEM_PINNED, PROF_MEM_DEVICE));
    cr_expect_not_null(copy_op(p, PROF_COPY_DTOD, PROF_MEM_DEVICE, PROF_MEM_DEVICE));
    cr_expect_not_null(copy_op(p, PROF_COPY_PTOP, PROF_MEM_DEVICE, PROF_MEM_DEVICE));
    cr_expect_not_null(copy_op(p, PROF_COPY_UNKNOWN, PROF_MEM_PAGEABLE, PROF_MEM_UNKNOWN), "HtoA into an array");
    bool device = false, managed = false;
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == PROF_OP_MEMSET) {
            device |= p->ops[i].dst == PROF_MEM_DEVICE && p->ops[i].bytes == 512;
            managed |= p->ops[i].dst == PROF_MEM_MANAGED && p->ops[i].bytes == 256;
        }
    cr_expect(device && managed);
    cr_expect_eq(r.copies, 6);
    cr_expect_eq(r.memsets, 2);
    profile_free(p);
}

Test(torch_import, hostile_events_are_skipped_and_counted) {
    TorchImportReport r;
    Profile *p = import_fixture("hostile.json", &r);
    cr_expect_eq(r.skipped, 17);
    cr_expect_eq(r.kernels, 1);
    cr_expect_eq(r.copies, 1);
    cr_expect_eq(r.api_calls, 1);
    cr_expect_eq(r.python_events, 4);
    cr_assert_eq(p->kernel_count, 1);
    const ProfKernel *k = &p->kernels[0];
    cr_expect_str_eq(k->name, "good_kernel", "an integer beyond 64 bits elsewhere does not sink it");
    cr_expect_eq(k->grid[0] * k->grid[1] * k->grid[2], 24);
    cr_expect_eq(k->block[1], 4);
    cr_expect_eq(launch_site(p, "good_kernel"), find_site(p, "train.py", 8, "train_step"));
    cr_expect_eq(p->site_count, 1, "line 0, ten-digit lines and file-less names are no sites");
    cr_assert_eq(p->device_count, 1, "the device with numSms as a string is skipped");
    cr_expect_eq(p->devices[0].id, 1);
    cr_expect_eq(p->devices[0].sm_count, 132);
    profile_free(p);
}

Test(torch_import, files_outside_the_root_or_in_libraries_are_not_user_code) {
    Profile *p = import_fixture("outside_root.json", NULL);
    int forward = find_site(p, "model.py", 8, "forward");
    int worker = find_site(p, "train.py", 20, "worker_a");
    cr_assert_geq(forward, 0, "an absolute path under the root, made relative");
    cr_assert_geq(worker, 0, "./train.py");
    cr_expect_eq(launch_site(p, "k1"), forward, "not /elsewhere/..., not the root's .venv site-packages");
    cr_expect_eq(launch_site(p, "k2"), forward, "util.py is ambiguous (a/ and b/)");
    cr_expect_eq(launch_site(p, "k3"), forward, "relative site-packages/ and torch/ paths");
    cr_expect_eq(launch_site(p, "k4"), forward, "a path through ..");
    cr_expect_eq(launch_site(p, "k5"), worker);
    cr_expect_eq(p->site_count, 2);
    for (size_t i = 0; i < p->file_count; i++) cr_expect(profile_path_ok(p->files[i].path), "%s", p->files[i].path);
    profile_free(p);
}

Test(torch_import, a_trace_without_stacks_still_imports) {
    TorchImportReport r;
    Profile *p = import_fixture("no_stack.json", &r);
    cr_expect_eq(r.python_events, 0);
    cr_expect_eq(r.kernels, 1);
    cr_expect_eq(r.copies, 1);
    cr_expect_eq(p->site_count, 0);
    cr_expect_eq(launch_site(p, "add_kernel"), -1);
    profile_free(p);
}

static char *import_error(const char *text, size_t length) {
    char *error = NULL;
    Profile *p = torch_import(text, length, PROJECT, "t.json", &error);
    cr_expect_null(p);
    if (p) profile_free(p);
    cr_assert_not_null(error);
    return error;
}

Test(torch_import, truncated_json_names_line_and_column) {
    size_t length;
    char *text = fixture_text("truncated.json", &length);
    char *error = import_error(text, length);
    cr_expect(strstr(error, "truncated.json") == NULL && strstr(error, "t.json: line ") == error, "%s", error);
    cr_expect(strstr(error, "column") != NULL, "%s", error);
    free(error);
    free(text);
}

Test(torch_import, no_trace_events_is_a_clear_error) {
    size_t length;
    char *text = fixture_text("no_trace_events.json", &length);
    char *error = import_error(text, length);
    cr_expect(strstr(error, "no traceEvents array") != NULL, "%s", error);
    free(error);
    free(text);
    error = import_error("42", 2);
    cr_expect(strstr(error, "t.json: line 1") == error, "a bare number is not a trace: %s", error);
    free(error);
    error = import_error("{\"traceEvents\": {}}", 19);
    cr_expect(strstr(error, "traceEvents") != NULL, "%s", error);
    free(error);
}

Test(torch_import, a_bare_event_array_is_a_trace) {
    const char *text = "[{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": 2}]";
    char *error = NULL;
    TorchImportReport r;
    Profile *p = torch_import_report(text, strlen(text), PROJECT, "array.json", &r, &error);
    cr_assert_not_null(p, "%s", error);
    cr_expect_eq(r.kernels, 1);
    profile_free(p);
}

Test(torch_import, gzip_is_named_as_such) {
    char *error = import_error("\x1f\x8b\x08\x00", 4);
    cr_expect(strstr(error, "gzip-compressed") != NULL, "%s", error);
    free(error);
}

Test(torch_import, refuses_more_than_two_gib) {
    char *error = import_error("{}", TORCH_IMPORT_MAX_BYTES + 1); /* never read past the length check */
    cr_expect(strstr(error, "2 GiB") != NULL, "%s", error);
    free(error);
}

/* ---- the command line */

static void copy_file(const char *from, const char *to) {
    char *text = harness_slurp(from);
    write_text(to, text);
    free(text);
}

/* A project folder with advise.toml ([profile] dir), the user's files and a trace */
static char *make_project(const char *toml) {
    char *dir = temp_dir();
    if (toml) write_text(path_in(dir, "advise.toml"), toml);
    copy_file(PROJECT "/train.py", path_in(dir, "train.py"));
    copy_file(PROJECT "/model.py", path_in(dir, "model.py"));
    copy_file(TRACES "/nested.json", path_in(dir, "nested.pt.trace.json"));
    return dir;
}

static char *only_json_in(const char *dir, int *count) {
    char command[1024];
    snprintf(command, sizeof command, "ls %s/*.json 2>/dev/null", dir);
    RunResult r = harness_run_shell(command);
    *count = 0;
    char *first = NULL;
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        if (!first) first = remember(strdup(line));
        (*count)++;
    }
    run_result_free(&r);
    return first;
}

Test(import_cli, writes_into_the_profile_folder_and_never_overwrites) {
    char *dir = make_project("[profile]\ndir = \"out/profiles\"\n");
    RunResult r = run_advise_at(dir, "import", "nested.pt.trace.json");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.err, "advise: imported 5 kernels, 1 copies, 3 call sites from nested.pt.trace.json into "
                            "out/profiles/nested-") != NULL,
              "%s", r.err);
    run_result_free(&r);
    int count;
    char *first = only_json_in(path_in(dir, "out/profiles"), &count);
    cr_assert_eq(count, 1);
    cr_expect(strstr(first, "/nested-") != NULL, "%s", first);
    char *error = NULL;
    Profile *p = profile_read_file(first, PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error);
    cr_expect_str_eq(p->source, "torch-profiler");
    cr_expect_geq(find_site(p, "model.py", 8, "forward"), 0);
    profile_free(p);
    char *before = harness_slurp(first);

    r = run_advise_at(dir, "import", "nested.pt.trace.json");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    run_result_free(&r);
    only_json_in(path_in(dir, "out/profiles"), &count);
    cr_expect_eq(count, 2, "a second import adds a file");
    char *after = harness_slurp(first);
    cr_expect_str_eq(after, before, "the first profile is untouched");
    free(before);
    free(after);
}

Test(import_cli, default_folder_under_the_git_root_and_options) {
    char *dir = make_project(NULL);
    mkdir(path_in(dir, ".git"), 0777);
    mkdir(path_in(dir, "scripts"), 0777);
    RunResult r = run_advise_at(path_in(dir, "scripts"), "import", "../nested.pt.trace.json", "--name", "my run");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    run_result_free(&r);
    int count;
    char *written = only_json_in(path_in(dir, ".advise/profiles"), &count);
    cr_assert_eq(count, 1);
    cr_expect(strstr(written, "/my_run-") != NULL, "%s", written);
    char *error = NULL;
    Profile *p = profile_read_file(written, PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error);
    cr_expect_str_eq(p->name, "my run");
    cr_expect_eq(p->site_count, 3, "the root is the git work tree, not scripts/");
    profile_free(p);

    char *out = path_in(dir, "chosen.json");
    r = run_advise_at(dir, "import", "-o", out, "nested.pt.trace.json");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.err, "into chosen.json") != NULL, "%s", r.err);
    run_result_free(&r);
    p = profile_read_file(out, PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error);
    profile_free(p);
}

Test(import_cli, errors_and_help) {
    char *dir = make_project(NULL);
    RunResult r = run_advise_at(dir, "import", "--help");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "usage: advise import TRACE.json [-o FILE] [--name NAME]") != NULL, "%s", r.out);
    run_result_free(&r);

    r = run_advise_at(dir, "import", "missing.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise import: cannot read 'missing.json': No such file or directory") != NULL, "%s",
              r.err);
    run_result_free(&r);

    mkdir(path_in(dir, "folder.json"), 0777);
    r = run_advise_at(dir, "import", "folder.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "'folder.json' is not a regular file") != NULL, "%s", r.err);
    run_result_free(&r);

    copy_file(TRACES "/truncated.json", path_in(dir, "truncated.json"));
    r = run_advise_at(dir, "import", "truncated.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise import: truncated.json: line ") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "column") != NULL, "%s", r.err);
    run_result_free(&r);

    copy_file(TRACES "/no_trace_events.json", path_in(dir, "none.json"));
    r = run_advise_at(dir, "import", "none.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "no traceEvents array") != NULL, "%s", r.err);
    run_result_free(&r);

    r = run_advise_at(dir, "import");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "which trace?") != NULL, "%s", r.err);
    run_result_free(&r);

    r = run_advise_at(dir, "import", "--bogus", "x.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "unknown option '--bogus'") != NULL, "%s", r.err);
    run_result_free(&r);

    struct stat st;
    cr_expect_neq(stat(path_in(dir, ".advise"), &st), 0, "no profile folder after failures");
}

Test(import_cli, a_trace_without_stacks_warns) {
    char *dir = make_project(NULL);
    copy_file(TRACES "/no_stack.json", path_in(dir, "flat.json"));
    RunResult r = run_advise_at(dir, "import", "flat.json");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "warning: 'flat.json' has no python_function events") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "with_stack=True") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "imported 1 kernels, 1 copies, 0 call sites") != NULL, "%s", r.err);
    run_result_free(&r);
}

Test(import_cli, listed_in_the_usage) {
    RunResult r = run_advise("help");
    cr_expect(strstr(r.out, "  import TRACE.json    turn a torch.profiler trace into an advise profile\n") != NULL,
              "%s", r.out);
    run_result_free(&r);
}

/* A real trace recorded on an H200 (tests/fixtures/traces/h200/README.md), in
 * a checkout at another path: its files are found by their tails, and the
 * work lands on the functions of tests/gpu/torch_sites.py that made it. */
Test(torch_import, a_trace_recorded_on_an_h200_in_another_checkout) {
    char *text = harness_slurp(TRACES "/h200/torch_sites.trace.json");
    cr_assert(text[0]);
    TorchImportReport report;
    char *error = NULL;
    Profile *p = torch_import_report(text, strlen(text), ADVISE_SOURCE_DIR, "torch_sites.trace.json", &report, &error);
    cr_assert_not_null(p, "%s", error ? error : "?");
    int layer = find_site(p, "tests/gpu/torch_sites.py", 23, "layer");
    int step = find_site(p, "tests/gpu/torch_sites.py", 28, "step");
    cr_assert_geq(layer, 0, "layer() holds the matmul and relu launches");
    cr_assert_geq(step, 0, "step() holds the sum, the .item() copy and its sync");
    cr_expect(p->sites[layer].function_level);
    size_t gemm = 0, item_copies = 0, item_syncs = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind == PROF_OP_LAUNCH && op->site == layer && strstr(p->kernels[op->kernel].name, "gemm"))
            gemm += op->stats.count;
        if (op->kind == PROF_OP_MEMCPY && op->site == step && op->copy == PROF_COPY_DTOH) item_copies += op->stats.count;
        if (op->kind == PROF_OP_SYNC && op->site == step) item_syncs += op->stats.count;
    }
    cr_expect_eq(gemm, 5, "one matmul per step, 5 steps");
    cr_expect_eq(item_copies, 5);
    cr_expect_eq(item_syncs, 5);
    cr_expect_eq(p->device_count, 1);
    cr_expect_str_eq(p->devices[0].name, "NVIDIA H200");
    profile_free(p);
    free(error);
    free(text);
}
