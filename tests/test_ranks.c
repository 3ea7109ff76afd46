/* Multi-GPU profiles: the NCCL kernel classifier (profiler/comm_kernels.c),
 * the aggregator's compute / communication / exposed-communication unions
 * (hand-checked figures, records out of order within and across batches),
 * the per-rank table and its straggler model (profiler/rank_table.c) on
 * two-rank profiles merged as `advise profile` merges its parts, old files
 * without the new keys, the checks on inconsistent values, and `advise
 * ranks` and `advise report` on such profiles. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/aggregate.h"
#include "tests/cli_harness.h"
#include "profiler/comm_kernels.h"
#include "profiler/profile_check.h"
#include "profiler/profile_json.h"
#include "profiler/rank_table.h"

#define ALLREDUCE "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

/* ---- the classifier ---------------------------------------------------------------- */

Test(comm_kernels, nccl_kernels_are_communication) {
    cr_expect(comm_kernel_name(ALLREDUCE));
    cr_expect(comm_kernel_name("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"));
    cr_expect(comm_kernel_name("void ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, ncclWork*)"));
    cr_expect(comm_kernel_name("ncclDevKernel_Generic"));
    cr_expect(comm_kernel_name("void nccl::ReduceScatter_kernel<float>(float*)"));
    cr_expect(comm_kernel_name("NCCL_Broadcast_tree"));
    cr_expect(comm_kernel_name("my_nccl_Recv"));
}

Test(comm_kernels, other_kernels_are_compute) {
    cr_expect_not(comm_kernel_name(NULL));
    cr_expect_not(comm_kernel_name(""));
    cr_expect_not(comm_kernel_name("sm90_xmma_gemm_f32f32_tn_n"));
    cr_expect_not(comm_kernel_name("void at::native::reduce_kernel<512, 1>(ReduceOp)"));   /* Reduce, no nccl */
    cr_expect_not(comm_kernel_name("ncclInitKernel(int)"));                                 /* nccl, no collective */
    cr_expect_not(comm_kernel_name("pack_AllReduce_buffer(ncclComm*, float*)")); /* nccl only in a parameter */
}

Test(comm_kernels, the_collective_in_words) {
    cr_expect_str_eq(comm_kernel_collective(ALLREDUCE), "all-reduce");
    cr_expect_str_eq(comm_kernel_collective("ncclKernel_ReduceScatter_RING_LL_Sum_bf16(ncclDevComm*)"),
                     "reduce-scatter");
    cr_expect_str_eq(comm_kernel_collective("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
                     "all-gather");
    cr_expect_str_eq(comm_kernel_collective("void ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*)"),
                     "broadcast");
    cr_expect_str_eq(comm_kernel_collective("ncclDevKernel_Reduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
                     "reduce");
    cr_expect_str_eq(comm_kernel_collective("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)"),
                     "send/receive");
    /* the name says nothing, or it is no NCCL kernel: no words */
    cr_expect_null(comm_kernel_collective("ncclDevKernel_Generic"));
    cr_expect_null(comm_kernel_collective("void at::native::reduce_kernel<512, 1>(ReduceOp)"));
    cr_expect_null(comm_kernel_collective(NULL));
}

/* ---- profiles built by the aggregator ------------------------------------------------- */

static void kernel_at(Aggregator *agg, const char *name, uint64_t start, uint64_t end) {
    AggKernel k = {.device = 0, .name = name, .grid = {64, 1, 1}, .block = {256, 1, 1}, .start_ns = start,
                   .end_ns = end, .site = agg_site(agg, "train.py", 10, "step")};
    agg_kernel(agg, &k);
}

static void copy_at(Aggregator *agg, uint64_t start, uint64_t end) {
    AggCopy c = {.device = 0, .copy = PROF_COPY_DTOD, .src = PROF_MEM_DEVICE, .dst = PROF_MEM_DEVICE,
                 .bytes = 1 << 20, .start_ns = start, .end_ns = end, .site = agg_site(agg, "train.py", 12, "step")};
    agg_memcpy(agg, &c);
}

static void label(Profile *p) {
    p->name = strdup("ddp");
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T15:19:37Z");
    p->tool = strdup("advise test");
}

static Profile *process_profile(Aggregator *agg, int64_t pid, int rank, int world, uint64_t wall) {
    ProfDevice dev = {.id = 0, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9};
    agg_device(agg, &dev);
    ProfProcess proc = {.pid = pid, .rank = rank, .local_rank = rank, .world_size = world, .wall_ns = wall};
    Profile *p = agg_to_profile(agg, &proc);
    cr_assert_not_null(p);
    return p;
}

/* gemm [0,1000), an all-reduce [600,1600) that overlaps it for 400 ns, relu
 * [2000,2500), an all-reduce [3000,3500) that no kernel overlaps, and a copy
 * [3400,3600) that overlaps its last 100 ns. */
static void overlap_records(Aggregator *agg) {
    kernel_at(agg, "gemm", 0, 1000);
    kernel_at(agg, ALLREDUCE, 600, 1600);
    kernel_at(agg, "relu", 2000, 2500);
    kernel_at(agg, ALLREDUCE, 3000, 3500);
    copy_at(agg, 3400, 3600);
}

static void expect_overlap_figures(const ProfTimeline *t) {
    cr_expect_eq(t->span_ns, 3600);
    cr_expect_eq(t->busy_ns, 1600 + 500 + 600);
    cr_expect_eq(t->idle_ns, 900);
    cr_expect_eq(t->compute_ns, 1000 + 500 + 200);
    cr_expect_eq(t->comm_ns, 1000 + 500);
    /* [1000,1600) and [3000,3400): no compute ran beside them */
    cr_expect_eq(t->exposed_comm_ns, 600 + 400);
}

Test(aggregate_comm, overlapping_and_exposed_communication) {
    Aggregator *agg = agg_new();
    overlap_records(agg);
    Profile *p = process_profile(agg, 1, -1, -1, 5000);
    cr_assert_eq(p->timeline_count, 1);
    expect_overlap_figures(&p->timelines[0]);
    profile_free(p);
    agg_free(agg);
}

Test(aggregate_comm, no_communication_means_all_compute) {
    Aggregator *agg = agg_new();
    kernel_at(agg, "gemm", 0, 1000);
    kernel_at(agg, "relu", 500, 1500);
    Profile *p = process_profile(agg, 1, -1, -1, 5000);
    const ProfTimeline *t = &p->timelines[0];
    cr_expect(t->busy_ns == 1500 && t->compute_ns == 1500 && t->comm_ns == 0 && t->exposed_comm_ns == 0);
    profile_free(p);
    agg_free(agg);
}

Test(aggregate_comm, communication_alone_is_all_exposed) {
    Aggregator *agg = agg_new();
    kernel_at(agg, ALLREDUCE, 100, 600);
    kernel_at(agg, ALLREDUCE, 400, 900); /* a second stream's overlapping collective counts once */
    Profile *p = process_profile(agg, 1, -1, -1, 5000);
    const ProfTimeline *t = &p->timelines[0];
    cr_expect(t->busy_ns == 800 && t->compute_ns == 0 && t->comm_ns == 800 && t->exposed_comm_ns == 800);
    profile_free(p);
    agg_free(agg);
}

/* Records in reverse order within one batch: the sweep sorts them, exact. */
Test(aggregate_comm, out_of_order_within_a_batch_is_exact) {
    Aggregator *agg = agg_new();
    copy_at(agg, 3400, 3600);
    kernel_at(agg, ALLREDUCE, 3000, 3500);
    kernel_at(agg, "relu", 2000, 2500);
    kernel_at(agg, ALLREDUCE, 600, 1600);
    kernel_at(agg, "gemm", 0, 1000);
    Profile *p = process_profile(agg, 1, -1, -1, 5000);
    expect_overlap_figures(&p->timelines[0]);
    profile_free(p);
    agg_free(agg);
}

/* Across batches (agg_to_profile sweeps what is pending, as a full batch
 * would): a late record counts only beyond each union's watermark. */
Test(aggregate_comm, out_of_order_across_batches_is_the_documented_approximation) {
    Aggregator *agg = agg_new();
    kernel_at(agg, ALLREDUCE, 1000, 2000);
    kernel_at(agg, "gemm", 3000, 4000);
    profile_free(process_profile(agg, 1, -1, -1, 9000)); /* sweeps: watermarks at 2000 (comm), 4000 */
    kernel_at(agg, "late_gemm", 1500, 2500);            /* behind the compute watermark: not counted */
    kernel_at(agg, ALLREDUCE, 5000, 5500);              /* beyond both: counted */
    Profile *p = process_profile(agg, 1, -1, -1, 9000);
    const ProfTimeline *t = &p->timelines[0];
    cr_expect_eq(t->busy_ns, 1000 + 1000 + 500);
    cr_expect_eq(t->compute_ns, 1000);
    cr_expect_eq(t->comm_ns, 1500);
    cr_expect_eq(t->exposed_comm_ns, 1500); /* exact would be 1000: the late gemm overlapped 500 */
    label(p);
    char *error = NULL;
    cr_expect(profile_check(p, PROFILE_FINAL, &error), "%s", error ? error : "");
    free(error);
    profile_free(p);
    agg_free(agg);
}

/* Each union has its own watermark, so a late compute record can add to
 * compute what busy had already passed: clamped to keep compute <= busy. */
Test(aggregate_comm, late_compute_is_clamped_to_busy) {
    Aggregator *agg = agg_new();
    kernel_at(agg, "gemm", 0, 10);
    kernel_at(agg, ALLREDUCE, 20, 30);
    profile_free(process_profile(agg, 1, -1, -1, 100));
    kernel_at(agg, "late_gemm", 12, 28); /* behind busy's watermark (30), beyond compute's (10) */
    Profile *p = process_profile(agg, 1, -1, -1, 100);
    const ProfTimeline *t = &p->timelines[0];
    cr_expect_eq(t->busy_ns, 20);
    cr_expect_eq(t->compute_ns, 20);
    cr_expect_eq(t->comm_ns, 10);
    cr_expect_eq(t->exposed_comm_ns, 0);
    label(p);
    char *error = NULL;
    cr_expect(profile_check(p, PROFILE_FINAL, &error), "%s", error ? error : "");
    free(error);
    profile_free(p);
    agg_free(agg);
}

/* ---- two ranks ------------------------------------------------------------------------ */

/* Two training steps. Rank 1 computes longer (2800 and 2300 ns); rank 0
 * finishes its compute early and waits inside each all-reduce until rank 1
 * joins, so its NCCL kernels are long (2000 and 1500 ns) and rank 1's short
 * (200 each). The parts are merged rank 1 first, as the files may come. */
static Profile *straggler_profile(void) {
    Aggregator *a0 = agg_new(), *a1 = agg_new();
    kernel_at(a0, "gemm", 0, 1000);
    kernel_at(a0, ALLREDUCE, 1000, 3000);
    kernel_at(a0, "gemm", 3000, 4000);
    kernel_at(a0, ALLREDUCE, 4000, 5500);
    kernel_at(a1, "gemm", 0, 2800);
    kernel_at(a1, ALLREDUCE, 2800, 3000);
    kernel_at(a1, "gemm", 3000, 5300);
    kernel_at(a1, ALLREDUCE, 5300, 5500);
    Profile *p1 = process_profile(a1, 201, 1, 2, 8000), *p0 = process_profile(a0, 200, 0, 2, 7000);
    Profile *merged = profile_new();
    label(merged);
    cr_assert(profile_append(merged, p1) && profile_append(merged, p0));
    profile_free(p0);
    profile_free(p1);
    agg_free(a0);
    agg_free(a1);
    return merged;
}

Test(rank_table, straggler_and_imbalance) {
    Profile *p = straggler_profile();
    char *error = NULL;
    cr_assert(profile_check(p, PROFILE_FINAL, &error), "%s", error ? error : "");
    RankTable t;
    cr_assert(rank_table_build(p, &t));
    cr_assert_eq(t.row_count, 2);
    cr_expect_eq(t.ranked, 2);
    const RankRow *r0 = &t.rows[0], *r1 = &t.rows[1];
    cr_expect(r0->rank == 0 && r0->pid == 200 && r0->process == 1);
    cr_expect(r1->rank == 1 && r1->pid == 201 && r1->process == 0);
    cr_expect(r0->compute_ns == 2000 && r0->comm_ns == 3500 && r0->exposed_comm_ns == 3500);
    cr_expect(r0->busy_ns == 5500 && r0->idle_ns == 0 && r0->wall_ns == 7000);
    cr_expect(r1->compute_ns == 5100 && r1->comm_ns == 400 && r1->exposed_comm_ns == 400);
    cr_expect(r0->nccl_kernel_ns == 3500 && r0->nccl_launches == 2);
    cr_expect(r1->nccl_kernel_ns == 400 && r1->nccl_launches == 2);
    cr_expect(t.has_straggler);
    cr_expect_eq(t.waits_for_rank, 1);
    cr_expect_eq(t.waits_for_pid, 201);
    cr_expect_eq(r0->wait_ns, 3100);
    cr_expect_eq(r1->wait_ns, 0);
    cr_expect_eq(t.mean_wait_per_call_ns, 1550); /* 3100 ns over rank 0's 2 calls */
    cr_expect(fabs(t.load_imbalance - (5100.0 / 3550.0 - 1)) < 1e-9, "%f", t.load_imbalance);
    rank_table_free(&t);
    profile_free(p);
}

Test(rank_table, balanced_ranks_wait_for_nobody) {
    Aggregator *a0 = agg_new(), *a1 = agg_new();
    overlap_records(a0);
    overlap_records(a1);
    Profile *p0 = process_profile(a0, 300, 0, 2, 5000), *p1 = process_profile(a1, 301, 1, 2, 5000);
    cr_assert(profile_append(p0, p1));
    RankTable t;
    cr_assert(rank_table_build(p0, &t));
    cr_expect(t.has_straggler && t.mean_wait_per_call_ns == 0);
    cr_expect(t.load_imbalance == 0);
    cr_expect(t.rows[0].exposed_comm_ns == 1000 && t.rows[1].exposed_comm_ns == 1000);
    rank_table_free(&t);
    profile_free(p0);
    profile_free(p1);
    agg_free(a0);
    agg_free(a1);
}

Test(rank_table, a_single_process_has_one_row_and_no_straggler) {
    Aggregator *agg = agg_new();
    overlap_records(agg);
    Profile *p = process_profile(agg, 42, -1, -1, 5000);
    cr_expect_eq(rank_table_ranked_processes(p), 0);
    RankTable t;
    cr_assert(rank_table_build(p, &t));
    cr_assert_eq(t.row_count, 1);
    cr_expect(t.rows[0].rank == -1 && t.rows[0].pid == 42 && t.rows[0].compute_ns == 1700);
    cr_expect_eq(t.ranked, 0);
    cr_expect_not(t.has_straggler);
    cr_expect_eq(t.waits_for_rank, -1);
    cr_expect(t.load_imbalance < 0);
    rank_table_free(&t);
    profile_free(p);
    agg_free(agg);
}

/* A rank without NCCL kernels: the model does not apply. */
Test(rank_table, no_straggler_when_a_rank_has_no_collectives) {
    Aggregator *a0 = agg_new(), *a1 = agg_new();
    kernel_at(a0, "gemm", 0, 1000);
    kernel_at(a0, ALLREDUCE, 1000, 2000);
    kernel_at(a1, "gemm", 0, 3000);
    Profile *p0 = process_profile(a0, 1, 0, 2, 5000), *p1 = process_profile(a1, 2, 1, 2, 5000);
    cr_assert(profile_append(p0, p1));
    RankTable t;
    cr_assert(rank_table_build(p0, &t));
    cr_expect_eq(t.ranked, 2);
    cr_expect_not(t.has_straggler);
    cr_expect(fabs(t.load_imbalance - 0.5) < 1e-9); /* 3000 over a mean of 2000 */
    rank_table_free(&t);
    profile_free(p0);
    profile_free(p1);
    agg_free(a0);
    agg_free(a1);
}

/* ---- the format ------------------------------------------------------------------------ */

Test(rank_format, written_and_read_back) {
    Profile *p = straggler_profile();
    char *error = NULL;
    char *text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_assert_not_null(text, "%s", error ? error : "");
    cr_expect(strstr(text, "\"compute_ns\"") && strstr(text, "\"exposed_comm_ns\""));
    Profile *q = profile_from_json(text, strlen(text), PROFILE_FINAL, &error);
    cr_assert_not_null(q, "%s", error ? error : "");
    for (size_t i = 0; i < p->timeline_count; i++)
        cr_expect(memcmp(&p->timelines[i], &q->timelines[i], sizeof *p->timelines) == 0);
    free(text);
    profile_free(q);
    profile_free(p);
}

/* Files written before the three keys existed read as 0 for each. */
Test(rank_format, old_files_without_the_keys_read_as_zero) {
    Profile *p = straggler_profile();
    char *text = profile_to_json(p, PROFILE_FINAL, NULL);
    json_t *root = json_loads(text, 0, NULL);
    cr_assert_not_null(root);
    json_t *timelines = json_object_get(root, "timelines");
    for (size_t i = 0; i < json_array_size(timelines); i++) {
        json_t *t = json_array_get(timelines, i);
        json_object_del(t, "compute_ns");
        json_object_del(t, "comm_ns");
        json_object_del(t, "exposed_comm_ns");
    }
    char *old = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    cr_assert(!strstr(old, "comm_ns"));
    char *error = NULL;
    Profile *q = profile_from_json(old, strlen(old), PROFILE_FINAL, &error);
    cr_assert_not_null(q, "%s", error ? error : "");
    cr_assert_eq(q->timeline_count, 2);
    for (size_t i = 0; i < q->timeline_count; i++)
        cr_expect(q->timelines[i].compute_ns == 0 && q->timelines[i].comm_ns == 0 &&
                  q->timelines[i].exposed_comm_ns == 0 && q->timelines[i].busy_ns == 5500);
    free(old);
    free(text);
    json_decref(root);
    profile_free(q);
    profile_free(p);
}

static void expect_refused(Profile *p, const char *message) {
    char *error = NULL;
    char *text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_expect_null(text);
    cr_expect(error && strstr(error, message), "%s", error ? error : "(no error)");
    free(text);
    free(error);
}

Test(rank_format, inconsistent_values_are_refused) {
    Profile *p = straggler_profile();
    ProfTimeline *t = &p->timelines[1]; /* rank 0's: busy 5500, compute 2000, comm 3500, exposed 3500 */
    t->compute_ns = 5501;
    expect_refused(p, "timelines[1].compute_ns: more than busy_ns");
    t->compute_ns = 2000;
    t->comm_ns = 5501;
    expect_refused(p, "timelines[1].comm_ns: more than busy_ns");
    t->comm_ns = 3000;
    expect_refused(p, "timelines[1].exposed_comm_ns: more than comm_ns");
    t->comm_ns = 3500;
    char *error = NULL;
    char *text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_expect_not_null(text, "%s", error ? error : "");
    /* and the reader refuses the same in a file */
    char *bad = strstr(text, "\"exposed_comm_ns\":3500");
    cr_assert_not_null(bad, "%s", text);
    memcpy(bad, "\"exposed_comm_ns\":3501", strlen("\"exposed_comm_ns\":3501"));
    Profile *q = profile_from_json(text, strlen(text), PROFILE_FINAL, &error);
    cr_expect_null(q);
    cr_expect(error && strstr(error, "timelines[1].exposed_comm_ns: more than comm_ns"), "%s", error ? error : "");
    free(error);
    free(text);
    profile_free(p);
}

/* ---- the command ------------------------------------------------------------------------ */

static char *write_profile(Profile *p, const char *dir, const char *name) {
    char *path = path_in(dir, name);
    char *error = NULL;
    cr_assert(profile_write_file(p, PROFILE_FINAL, path, &error), "%s", error ? error : "");
    return path;
}

Test(ranks_cli, text) {
    char *dir = temp_dir();
    Profile *p = straggler_profile();
    char *path = write_profile(p, dir, "ddp.json");
    profile_free(p);
    RunResult r = run_advise("ranks", path);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.err, "");
    cr_expect(strstr(r.out, "2 processes, 2 with a rank and GPU activity"), "%s", r.out);
    cr_expect(strstr(r.out, "  rank       pid     compute        comm     exposed    idle GPU        wall  NCCL calls\n"
                            "     0       200     2.00 µs     3.50 µs     3.50 µs        0 ns     7.00 µs           2\n"
                            "     1       201     5.10 µs      400 ns      400 ns        0 ns     8.00 µs           2\n"),
              "%s", r.out);
    cr_expect(strstr(r.out, "load imbalance 44%"), "%s", r.out);
    cr_expect(strstr(r.out, "straggler      the other ranks wait for rank 1: 1.55 µs more per NCCL call"), "%s", r.out);
    run_result_free(&r);
}

Test(ranks_cli, json) {
    char *dir = temp_dir();
    Profile *p = straggler_profile();
    char *path = write_profile(p, dir, "ddp.json");
    profile_free(p);
    RunResult r = run_advise("ranks", "--format", "json", path);
    cr_expect_eq(r.status, 0, "%s", r.err);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc, "%s: %s", jerr.text, r.out);
    json_t *rows = json_object_get(doc, "rows");
    cr_assert_eq(json_array_size(rows), 2);
    json_t *r0 = json_array_get(rows, 0);
    cr_expect_eq(json_integer_value(json_object_get(r0, "rank")), 0);
    cr_expect_eq(json_integer_value(json_object_get(r0, "exposed_comm_ns")), 3500);
    cr_expect_eq(json_integer_value(json_object_get(r0, "wait_ns")), 3100);
    json_t *s = json_object_get(doc, "straggler");
    cr_expect_eq(json_integer_value(json_object_get(s, "waits_for_rank")), 1);
    cr_expect_eq(json_integer_value(json_object_get(s, "mean_wait_per_call_ns")), 1550);
    cr_expect(json_is_real(json_object_get(doc, "load_imbalance")));
    json_decref(doc);
    run_result_free(&r);
}

Test(ranks_cli, single_process) {
    char *dir = temp_dir();
    Aggregator *agg = agg_new();
    overlap_records(agg);
    Profile *p = process_profile(agg, 42, -1, -1, 5000);
    label(p);
    char *path = write_profile(p, dir, "one.json");
    profile_free(p);
    agg_free(agg);
    RunResult r = run_advise("ranks", path);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "1 process, 0 with a rank"), "%s", r.out);
    cr_expect(strstr(r.out, "     -        42     1.70 µs     1.50 µs     1.00 µs      900 ns     5.00 µs           2\n"),
              "%s", r.out);
    cr_expect_not(strstr(r.out, "straggler"), "%s", r.out);
    cr_expect_not(strstr(r.out, "load imbalance"), "%s", r.out);
    run_result_free(&r);
    r = run_advise("ranks", "--format", "json", path);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "%s", r.out);
    cr_expect(json_is_null(json_object_get(doc, "straggler")) && json_is_null(json_object_get(doc, "load_imbalance")));
    cr_expect(json_is_null(json_object_get(json_array_get(json_object_get(doc, "rows"), 0), "rank")));
    json_decref(doc);
    run_result_free(&r);
}

Test(ranks_cli, errors) {
    RunResult r = run_advise("ranks");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise ranks: wants one profile (0 given)"), "%s", r.err);
    run_result_free(&r);
    r = run_advise("ranks", "--format", "xml", "p.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--format wants text or json, not 'xml'"), "%s", r.err);
    run_result_free(&r);
    r = run_advise("ranks", "--bogus", "p.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "unknown or incomplete option '--bogus'"), "%s", r.err);
    run_result_free(&r);
    r = run_advise("ranks", "/nonexistent/p.json");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise ranks: "), "%s", r.err);
    cr_expect_str_eq(r.out, "");
    run_result_free(&r);
    r = run_advise("ranks", "--help");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "usage: advise ranks"), "%s", r.out);
    run_result_free(&r);
    r = run_advise("--help");
    cr_expect(strstr(r.out, "  ranks PROFILE "), "%s", r.out);
    run_result_free(&r);
}

Test(ranks_cli, report_shows_the_table_for_several_ranks) {
    char *dir = temp_dir();
    Profile *p = straggler_profile();
    char *path = write_profile(p, dir, "ddp.json");
    profile_free(p);
    write_text(path_in(dir, "train.py"), "import torch\n");
    RunResult r = run_advise_at(dir, "report", "--no-config", "--profile", path, "train.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "ranks    per process (as `advise ranks` shows it):\n  rank  "), "%s", r.out);
    cr_expect(strstr(r.out, "straggler      the other ranks wait for rank 1"), "%s", r.out);
    run_result_free(&r);

    Aggregator *agg = agg_new();
    overlap_records(agg);
    p = process_profile(agg, 42, -1, -1, 5000);
    label(p);
    path = write_profile(p, dir, "one.json");
    profile_free(p);
    agg_free(agg);
    r = run_advise_at(dir, "report", "--no-config", "--profile", path, "train.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_not(strstr(r.out, "ranks    "), "%s", r.out);
    run_result_free(&r);
}
