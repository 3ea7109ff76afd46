/* Multi-GPU findings at the host line: PR013 (exposed communication) and
 * PR014 (rank imbalance) on two-rank profiles built with the aggregator
 * and merged as `advise profile` merges its parts, each with look-alikes
 * that must not fire; the NCCL lines they share (rules/measure/comm_facts.c); and
 * the communication figures that static findings get from such profiles
 * (MEASURE_COMM for PY012 and PY013, the per-rank waits of PY001). The
 * source is tests/fixtures/merge/ddp_train.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/aggregate.h"
#include "profiler/profile_json.h"
#include "rules/measure/comm_facts.h"
#include "rules/engine/engine.h"
#include "tests/cli_harness.h"
#include "tests/evidence_text.h"

#define SRC "tests/fixtures/merge/ddp_train.py"
#define MS 1000000ull
#define US 1000ull
#define ALLREDUCE "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
#define BROADCAST "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
#define GEMM "sm90_xmma_gemm_f32f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel"

/* the lines of ddp_train.py */
enum { LINE_DDP = 11, LINE_BACKWARD = 15, LINE_ITEM = 19, LINE_STATS = 21 };

/* ---- one rank's run, step by step ------------------------------------------------ */

/* Each step: the GPU idles host_ns (the host busy), computes compute_ns at
 * the backward line, whose all-reduce (allreduce_ns long) starts overlap_ns
 * before the compute ends; then an explicit all-reduce of stats_ns at line
 * 21 that nothing overlaps; the host waits sync_ns at line 19; the GPU
 * idles gap_ns (1 ms when 0) before the next step. */
typedef struct {
    int rank;                 /* -1: not distributed */
    uint64_t steps;
    uint64_t host_ns, compute_ns, allreduce_ns, overlap_ns, stats_ns, sync_ns;
    uint64_t gap_ns;
    uint64_t broadcast_ns;    /* a one-off broadcast at line 11 before the steps */
    uint64_t wall_ns;
    const char *file;         /* where the sites are: SRC unless set */
} Rank;

static Profile *rank_profile(const Rank *r, int world) {
    Aggregator *agg = agg_new();
    cr_assert_not_null(agg);
    ProfDevice dev = {.id = 0, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9};
    agg_device(agg, &dev);
    const char *file = r->file ? r->file : SRC;
    int backward = agg_site(agg, file, LINE_BACKWARD, "train"), stats = agg_site(agg, file, LINE_STATS, "train");
    int item = agg_site(agg, file, LINE_ITEM, "train"), ddp = agg_site(agg, file, LINE_DDP, "train");
    uint64_t t = 1000;
    AggKernel k = {.device = 0, .grid = {64, 1, 1}, .block = {256, 1, 1}};
    if (r->broadcast_ns) {
        k.name = BROADCAST, k.start_ns = t, k.end_ns = t + r->broadcast_ns, k.site = ddp;
        agg_kernel(agg, &k);
        t += r->broadcast_ns;
    }
    for (uint64_t s = 0; s < r->steps; s++) {
        t += r->host_ns;
        k.name = GEMM, k.start_ns = t, k.end_ns = t + r->compute_ns, k.site = backward;
        agg_kernel(agg, &k);
        uint64_t end = t + r->compute_ns;
        if (r->allreduce_ns) {
            uint64_t start = end - r->overlap_ns;
            k.name = ALLREDUCE, k.start_ns = start, k.end_ns = start + r->allreduce_ns, k.site = backward;
            agg_kernel(agg, &k);
            if (start + r->allreduce_ns > end) end = start + r->allreduce_ns;
        }
        if (r->stats_ns) {
            k.name = ALLREDUCE, k.start_ns = end, k.end_ns = end + r->stats_ns, k.site = stats;
            agg_kernel(agg, &k);
            end += r->stats_ns;
        }
        if (r->sync_ns) agg_sync(agg, PROF_SYNC_STREAM, r->sync_ns, item);
        t = end + (r->gap_ns ? r->gap_ns : 1 * MS);
    }
    ProfProcess proc = {.pid = 100 + (r->rank < 0 ? 0 : r->rank), .rank = r->rank, .local_rank = r->rank,
                        .world_size = r->rank < 0 ? -1 : world, .wall_ns = r->wall_ns};
    Profile *p = agg_to_profile(agg, &proc);
    cr_assert_not_null(p);
    agg_free(agg);
    return p;
}

/* the ranks' parts merged into one profile, last rank first (parts come in any order) */
static Profile *merged(const Rank *ranks, size_t n) {
    Profile *p = profile_new();
    cr_assert_not_null(p);
    cr_assert(profile_set_labels(p, "ddp", "cupti", "advise test"));
    for (size_t i = n; i-- > 0;) {
        Profile *part = rank_profile(&ranks[i], (int)n);
        cr_assert(profile_append(p, part));
        profile_free(part);
    }
    return p;
}

#define VIEW(...)                                                                                                    \
    ({                                                                                                               \
        static const Rank ranks_[] = {__VA_ARGS__};                                                                  \
        ProfileView *v_ = profile_view_new(merged(ranks_, sizeof ranks_ / sizeof *ranks_), "ddp.json");            \
        cr_assert_not_null(v_);                                                                                      \
        v_;                                                                                                          \
    })

/* Two ranks, 20 steps of 8 ms of compute. Rank 0's all-reduce: 2 ms, 1 ms
 * of it beside the compute: 1 ms exposed a step, 20 ms in a span of 199 ms.
 * Rank 1's: 2.2 ms, 1.2 ms exposed, 24 ms in 203 ms. */
#define EXPOSED_RANK0 {.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .overlap_ns = 1 * MS, \
                       .wall_ns = 250 * MS}
#define EXPOSED_RANK1 {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2200 * US,                     \
                       .overlap_ns = 1 * MS, .wall_ns = 250 * MS}

/* ---- running the engine ------------------------------------------------------------ */

typedef struct {
    char *text;
    Document *doc;
    FindingList findings;
} Checked;

/* engine_check and the profile merge over the file rel, with only the
 * rules in select (comma-separated) when set, minus those in ignore */
static Checked check_file(const char *rel, ProfileView *v, const char *select, const char *ignore) {
    Checked c = {0};
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ADVISE_SOURCE_DIR, rel);
    c.text = harness_slurp(path);
    c.doc = document_new(path, language_for_path(path), c.text, strlen(c.text));
    cr_assert_not_null(c.doc);
    Config cfg;
    config_init(&cfg);
    if (select) cr_assert(string_list_add_csv(&cfg.select, select));
    if (ignore) cr_assert(string_list_add_csv(&cfg.ignore, ignore));
    finding_list_init(&c.findings);
    char *error = NULL;
    cr_assert(engine_check(c.doc, NULL, &cfg, &c.findings, NULL, &error), "%s", error ? error : "");
    cr_assert(engine_merge_profile(c.doc, rel, v, &cfg, &c.findings));
    config_free(&cfg);
    profile_view_free(v);
    return c;
}

static Checked check(ProfileView *v, const char *select, const char *ignore) {
    return check_file(SRC, v, select, ignore);
}

static void checked_free(Checked *c) {
    finding_list_free(&c->findings);
    document_free(c->doc);
    free(c->text);
}

static size_t count_of(const Checked *c, const char *code) {
    size_t n = 0;
    for (size_t i = 0; i < c->findings.count; i++) n += strcmp(c->findings.items[i].code, code) == 0;
    return n;
}

static const Finding *at(const Checked *c, const char *code, uint32_t line) {
    for (size_t i = 0; i < c->findings.count; i++) {
        const Finding *f = &c->findings.items[i];
        if (strcmp(f->code, code) == 0 && document_line_of(c->doc, f->range.start) + 1 == line) return f;
    }
    return NULL;
}

static bool has_evidence(const Finding *f, const char *needle) {
    for (size_t i = 0; f && i < f->evidence_count; i++)
        if (strstr(ev(&f->evidence[i]), needle)) return true;
    return false;
}

/* every finding and its evidence, for failure messages */
static const char *shown(const Checked *c) {
    static char buf[8192];
    buf[0] = '\0';
    for (size_t i = 0; i < c->findings.count; i++) {
        const Finding *f = &c->findings.items[i];
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "\n%u %s %s", (unsigned)document_line_of(c->doc, f->range.start) + 1,
                 f->code, f->message);
        for (size_t e = 0; e < f->evidence_count; e++) {
            used = strlen(buf);
            snprintf(buf + used, sizeof buf - used, "\n    - %s", ev(&f->evidence[e]));
        }
    }
    return buf;
}

/* ---- the NCCL lines ----------------------------------------------------------------- */

Test(comm_lines, the_main_line_is_the_repeated_one_with_the_most_time) {
    /* a one-off broadcast of 500 ms at line 11 outweighs everything, but runs once */
    static const Rank ranks[] = {
        {.rank = 0, .steps = 10, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .stats_ns = 1 * MS,
         .broadcast_ns = 500 * MS},
        {.rank = 1, .steps = 10, .compute_ns = 8 * MS, .allreduce_ns = 3 * MS, .stats_ns = 1 * MS,
         .broadcast_ns = 500 * MS},
    };
    Profile *p = merged(ranks, 2);
    CommLines l;
    cr_assert(comm_lines_build(p, &l));
    cr_assert_eq(l.count, 3);
    cr_expect_eq(l.total_ns, 1000 * MS + 50 * MS + 20 * MS);
    cr_expect(l.lines[0].line == LINE_DDP && l.lines[0].most_launches == 1 && l.lines[0].processes == 2);
    cr_expect_str_eq(l.lines[0].collective, "broadcast");
    const CommLine *top = comm_lines_main(&l);
    cr_assert_not_null(top);
    cr_expect_eq(top->line, LINE_BACKWARD);
    cr_expect(top->ns == 50 * MS && top->launches == 20 && top->most_launches == 10 && top->processes == 2);
    cr_expect_str_eq(top->collective, "all-reduce");
    cr_expect(l.lines[2].line == LINE_STATS && l.lines[2].ns == 20 * MS);
    char place[64];
    cr_expect_str_eq(comm_line_place(p, top->file, top, place, sizeof place), "line 15");
    cr_expect_str_eq(comm_line_place(p, -1, top, place, sizeof place), "`" SRC "` line 15");
    comm_lines_free(&l);
    profile_free(p);
}

Test(comm_lines, no_nccl_no_lines) {
    static const Rank one[] = {{.rank = -1, .steps = 5, .compute_ns = 8 * MS}};
    Profile *p = merged(one, 1);
    CommLines l;
    cr_assert(comm_lines_build(p, &l));
    cr_expect(l.count == 0 && l.total_ns == 0 && comm_lines_main(&l) == NULL);
    comm_lines_free(&l);
    profile_free(p);
}

/* ---- PR013 exposed-communication ------------------------------------------------------ */

Test(pr013, exposed_all_reduce_at_the_backward_line) {
    Checked c = check(VIEW(EXPOSED_RANK0, EXPOSED_RANK1), "PR013", NULL);
    cr_assert_eq(c.findings.count, 1, "%s", shown(&c));
    const Finding *f = at(&c, "PR013", LINE_BACKWARD);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect_str_eq(f->message,
                     "the gradient all-reduce launched from this backward() ran with no compute beside it: 20.0 ms "
                     "to 24.0 ms per rank, 11% to 13% of each rank's GPU busy time; for DDP tune `bucket_cap_mb`, set "
                     "`gradient_as_bucket_view=True`, avoid `find_unused_parameters=True`, and use `no_sync()` on "
                     "accumulation micro-steps");
    cr_expect(has_evidence(f, "rank 0: 20.0 ms of its 40.0 ms of NCCL communication overlapped no compute (11% of "
                              "its GPU busy time of 180 ms)"),
              "%s", shown(&c));
    cr_expect(has_evidence(f, "rank 1: 24.0 ms of its 44.0 ms of NCCL communication overlapped no compute (13% of "
                              "its GPU busy time of 184 ms)"),
              "%s", shown(&c));
    cr_expect(has_evidence(f, "this line launched 100% of the run's NCCL kernel time (40 launches from 2 processes); "
                              "the profile measures exposure per GPU, not per line"),
              "%s", shown(&c));
    cr_assert(f->gain.present);
    cr_expect(fabs(f->gain.seconds - 0.020) < 1e-9, "the least exposed rank's 20 ms: %g", f->gain.seconds);
    cr_expect_str_eq(f->gain.scope, "program");
    cr_expect(strstr(ev(&f->gain.model), "least exposed rank (rank 0, 20.0 ms): an upper bound"), "%s", ev(&f->gain.model));
    cr_expect_eq(f->severity, SEVERITY_WARNING, "every rank at 10%% or more");
    checked_free(&c);
}

Test(pr013, explicit_collective_gets_the_async_advice_and_names_the_other_lines) {
    /* the stats all-reduce at line 21 (5 ms a step, exposed) outweighs the
     * backward's (2 ms, hidden by compute) */
    Checked c = check(VIEW({.rank = 0, .steps = 10, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .overlap_ns = 2 * MS,
                            .stats_ns = 5 * MS, .wall_ns = 200 * MS},
                           {.rank = 1, .steps = 10, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .overlap_ns = 2 * MS,
                            .stats_ns = 5 * MS, .wall_ns = 200 * MS}),
                      "PR013", NULL);
    cr_assert_eq(c.findings.count, 1, "%s", shown(&c));
    const Finding *f = at(&c, "PR013", LINE_STATS);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(strstr(f->message, "this all-reduce ran with no compute beside it: 50.0 ms per rank, 38% of each "
                                 "rank's GPU busy time; launch it with `async_op=True` and wait on its handle"),
              "%s", f->message);
    cr_expect(has_evidence(f, "this line launched 71% of the run's NCCL kernel time (20 launches from 2 processes); "
                              "the profile measures exposure per GPU, not per line: the rest came from line 15 (29%)"),
              "%s", shown(&c));
    checked_free(&c);
}

Test(pr013, nccl_called_from_cuda_cpp) {
#define CU "tests/fixtures/merge/nccl_step.cu"
    Checked c = check_file(CU,
                           VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .file = CU},
                                {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .file = CU}),
                           "PR013", NULL);
    cr_assert_eq(c.findings.count, 1, "%s", shown(&c));
    const Finding *f = at(&c, "PR013", 15);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect_str_eq(f->message, "the NCCL all-reduce launched here ran with no compute beside it: 40.0 ms per rank, "
                                 "20% of each rank's GPU busy time; run it on its own stream beside independent kernels");
    checked_free(&c);
#undef CU
}

Test(pr013, look_alikes) {
    /* overlapped: 1.9 ms of each 2 ms all-reduce beside compute, 1% exposed */
    Checked c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS,
                            .overlap_ns = 1900 * US},
                           {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS,
                            .overlap_ns = 1900 * US}),
                      "PR013", NULL);
    cr_expect_eq(c.findings.count, 0, "overlapped communication: %s", shown(&c));
    checked_free(&c);

    /* rank 0 sits in its all-reduces waiting for rank 1 (exposed 40%), rank 1's
     * own are hidden: one rank's waiting is PR014's, not exposure */
    c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 4 * MS, .allreduce_ns = 6 * MS, .overlap_ns = 1 * MS},
                   {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .overlap_ns = 1900 * US}),
              "PR013", NULL);
    cr_expect_eq(c.findings.count, 0, "exposed on one rank only: %s", shown(&c));
    checked_free(&c);

    /* 18% exposed, but 40 µs in all: not worth a finding */
    c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * US, .allreduce_ns = 2 * US, .gap_ns = 1 * US},
                   {.rank = 1, .steps = 20, .compute_ns = 8 * US, .allreduce_ns = 2 * US, .gap_ns = 1 * US}),
              "PR013", NULL);
    cr_expect_eq(c.findings.count, 0, "under 1 ms: %s", shown(&c));
    checked_free(&c);

    /* a long broadcast at start-up, once per rank, and nothing else */
    c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .broadcast_ns = 100 * MS},
                   {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .broadcast_ns = 100 * MS}),
              "PR013", NULL);
    cr_expect_eq(c.findings.count, 0, "one-off: %s", shown(&c));
    checked_free(&c);

    /* a single process without NCCL */
    c = check(VIEW({.rank = -1, .steps = 20, .compute_ns = 8 * MS}), "PR013", NULL);
    cr_expect_eq(c.findings.count, 0, "%s", shown(&c));
    checked_free(&c);

    /* the collectives (20% exposed) come from another file: reported there,
     * not in this one, which the profile mentions through rank 2 */
    ProfileView *v = VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .file = "other.py"},
                          {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .file = "other.py"},
                          {.rank = 2, .steps = 1, .compute_ns = 8 * MS});
    cr_assert(profile_view_file(v, SRC) >= 0);
    c = check(v, "PR013", NULL);
    cr_expect_eq(c.findings.count, 0, "%s", shown(&c));
    checked_free(&c);
}

/* ---- PR014 rank-imbalance ----------------------------------------------------------------- */

Test(pr014, a_rank_that_computes_more) {
    /* rank 1 computes 10 ms a step, rank 0 8 ms and then waits 2 ms in each
     * all-reduce for rank 1 (4 ms instead of 2) */
    Checked c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 4 * MS,
                            .overlap_ns = 1 * MS, .wall_ns = 250 * MS},
                           {.rank = 1, .steps = 20, .compute_ns = 10 * MS, .allreduce_ns = 2 * MS,
                            .overlap_ns = 1 * MS, .wall_ns = 250 * MS}),
                      "PR014", NULL);
    cr_assert_eq(c.findings.count, 1, "%s", shown(&c));
    const Finding *f = at(&c, "PR014", LINE_BACKWARD);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect_str_eq(f->message,
                     "the other ranks waited for rank 1 at this line's collectives: 2.00 ms per call on average, "
                     "rank 0 40.0 ms in all (18% of its GPU busy time); rank 1 computed 40.0 ms more than the others' "
                     "mean (25% more): balance the data per rank (uneven batch or sequence lengths, "
                     "`DistributedSampler(..., drop_last=True)`)");
    cr_expect(has_evidence(f, "rank 0: computed 160 ms; NCCL kernels 80.0 ms in 20 calls, of which 40.0 ms waiting "
                              "for rank 1 (2.00 ms per call, 18% of its GPU busy time)"),
              "%s", shown(&c));
    cr_expect(has_evidence(f, "rank 1: computed 200 ms; NCCL kernels 40.0 ms in 20 calls, the least of the ranks"),
              "%s", shown(&c));
    cr_expect(has_evidence(f, "the straggler model"), "%s", shown(&c));
    cr_assert(f->gain.present);
    cr_expect(fabs(f->gain.seconds - 0.040) < 1e-9, "%g", f->gain.seconds);
    cr_expect_str_eq(f->gain.scope, "program");
    cr_expect_eq(f->severity, SEVERITY_WARNING, "a rank waited 18%% of its GPU busy time");
    checked_free(&c);
}

Test(pr014, a_rank_late_from_the_host) {
    /* rank 0's host works 3 ms before each step (its GPU idles); both compute
     * 8 ms, and rank 1 waits 3 ms in each all-reduce */
    Checked c = check(VIEW({.rank = 0, .steps = 20, .host_ns = 3 * MS, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS,
                            .overlap_ns = 1 * MS, .wall_ns = 300 * MS},
                           {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 5 * MS,
                            .overlap_ns = 1 * MS, .wall_ns = 300 * MS}),
                      "PR014", NULL);
    const Finding *f = at(&c, "PR014", LINE_BACKWARD);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(strstr(f->message, "the other ranks waited for rank 0 at this line's collectives: 3.00 ms per call on "
                                 "average, rank 1 60.0 ms in all (25% of its GPU busy time); its GPU computed at most "
                                 "5% more than theirs, so the delay is not GPU compute but host-side work: move work only "
                                 "rank 0 does"),
              "%s", f->message);
    cr_expect(fabs(f->gain.seconds - 0.060) < 1e-9, "%g", f->gain.seconds);
    checked_free(&c);
}

Test(pr014, imbalance_without_much_waiting) {
    /* four ranks; rank 3 computes 12 ms a step against 8 ms, yet the others'
     * collectives barely wait (the model's waits stay under 100 µs a call) */
    Checked c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2050 * US},
                           {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2050 * US},
                           {.rank = 2, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2050 * US},
                           {.rank = 3, .steps = 20, .compute_ns = 12 * MS, .allreduce_ns = 2 * MS}),
                      "PR014", NULL);
    const Finding *f = at(&c, "PR014", LINE_BACKWARD);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(strstr(f->message, "load imbalance across the ranks: rank 3 computed 60.0 ms more than the mean (33% "
                                 "more)"),
              "%s", f->message);
    cr_expect_eq(f->severity, SEVERITY_INFO);
    checked_free(&c);
}

Test(pr014, look_alikes) {
    /* a single process */
    Checked c = check(VIEW({.rank = -1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 4 * MS}), "PR014", NULL);
    cr_expect_eq(c.findings.count, 0, "%s", shown(&c));
    checked_free(&c);

    /* balanced but for jitter: 50 µs a call */
    c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .wall_ns = 250 * MS},
                   {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2050 * US, .wall_ns = 250 * MS}),
              "PR014", NULL);
    cr_expect_eq(c.findings.count, 0, "jitter: %s", shown(&c));
    checked_free(&c);

    /* 200 µs a call, but 1.6% of the wall time (PR013's profile) */
    c = check(VIEW(EXPOSED_RANK0, EXPOSED_RANK1), "PR014", NULL);
    cr_expect_eq(c.findings.count, 0, "a small share: %s", shown(&c));
    checked_free(&c);

    /* a rank without collectives: no straggler model, whatever the compute */
    c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 4 * MS},
                   {.rank = 1, .steps = 20, .compute_ns = 16 * MS}),
              "PR014", NULL);
    cr_expect_eq(c.findings.count, 0, "%s", shown(&c));
    checked_free(&c);

    /* one rank 5% slower: a little waiting, little imbalance */
    c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2400 * US, .wall_ns = 250 * MS},
                   {.rank = 1, .steps = 20, .compute_ns = 8400 * US, .allreduce_ns = 2 * MS, .wall_ns = 250 * MS}),
              "PR014", NULL);
    cr_expect_eq(c.findings.count, 0, "%s", shown(&c));
    checked_free(&c);
}

/* ---- static findings with the profile's communication figures ----------------------------- */

Test(measure_comm, py013_at_the_backward_line_and_pr013_steps_aside) {
    Checked c = check(VIEW(EXPOSED_RANK0, EXPOSED_RANK1), NULL, NULL);
    const Finding *f = at(&c, "PY013", LINE_BACKWARD);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(has_evidence(f, "NCCL kernels launched at this line: rank 0: 20 launches, 40.0 ms; rank 1: 20 "
                              "launches, 44.0 ms"),
              "%s", shown(&c));
    cr_expect(has_evidence(f, "communication no compute overlapped (per GPU, whole run): rank 0: 20.0 ms (11% of its "
                              "GPU busy time); rank 1: 24.0 ms (13% of its GPU busy time)"),
              "%s", shown(&c));
    cr_assert(f->gain.present);
    cr_expect(fabs(f->gain.seconds - 0.020) < 1e-9, "%g", f->gain.seconds);
    cr_expect_eq(count_of(&c, "PR013"), 0, "PY013 carries the same figures on that line: %s", shown(&c));
    /* DDP's constructor: the figures of the backward line, no gain */
    f = at(&c, "PY012", LINE_DDP);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(has_evidence(f, "the run's NCCL kernels came mostly from line 15 (100% of their time): rank 0: 20 "
                              "launches, 40.0 ms; rank 1: 20 launches, 44.0 ms"),
              "%s", shown(&c));
    cr_expect(has_evidence(f, "rank 1: 24.0 ms (13% of its GPU busy time)"), "%s", shown(&c));
    cr_expect_not(f->gain.present, "what find_unused_parameters costs where it is written is not communication");
    checked_free(&c);

    /* with PY013 ignored, PR013 reports the line itself */
    c = check(VIEW(EXPOSED_RANK0, EXPOSED_RANK1), NULL, "PY013");
    cr_expect_not_null(at(&c, "PR013", LINE_BACKWARD), "%s", shown(&c));
    checked_free(&c);
}

Test(measure_comm, a_profile_without_nccl_measures_nothing) {
    Checked c = check(VIEW({.rank = -1, .steps = 20, .compute_ns = 8 * MS}), "PY012,PY013", NULL);
    const Finding *f = at(&c, "PY013", LINE_BACKWARD);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect_not(has_evidence(f, "NCCL"), "%s", shown(&c));
    cr_expect_not(f->gain.present);
    f = at(&c, "PY012", LINE_DDP);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect_not(has_evidence(f, "NCCL"), "%s", shown(&c));
    checked_free(&c);
}

Test(measure_sync, per_rank_waits_in_a_multi_rank_profile) {
    Checked c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .sync_ns = 500 * US,
                            .wall_ns = 250 * MS},
                           {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 2 * MS, .sync_ns = 1500 * US,
                            .wall_ns = 250 * MS}),
                      "PY001", NULL);
    const Finding *f = at(&c, "PY001", LINE_ITEM);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(has_evidence(f, "this `loss.item()` ran 40 times and waited 1.00 ms each on average (40.0 ms"),
              "%s", shown(&c));
    cr_expect(has_evidence(f, "per rank: rank 0 waited 20 times, 500 \xC2\xB5s each on average (10.0 ms); rank 1 "
                              "waited 20 times, 1.50 ms each on average (30.0 ms)"),
              "%s", shown(&c));
    cr_expect(has_evidence(f, "with 2 ranks in NCCL collectives, a wait on every step holds each rank's host until "
                              "its own GPU is done, and every rank then waits for the slowest in the next collective"),
              "%s", shown(&c));
    cr_expect_not(f->gain.present, "sync findings claim no gain");
    checked_free(&c);

    /* ranks without collectives: the figures per rank, no claim about collectives */
    c = check(VIEW({.rank = 0, .steps = 20, .compute_ns = 8 * MS, .sync_ns = 500 * US},
                   {.rank = 1, .steps = 20, .compute_ns = 8 * MS, .sync_ns = 500 * US}),
              "PY001", NULL);
    f = at(&c, "PY001", LINE_ITEM);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(has_evidence(f, "per rank: rank 0 waited 20 times"), "%s", shown(&c));
    cr_expect_not(has_evidence(f, "collective"), "%s", shown(&c));
    checked_free(&c);

    /* one process: as before */
    c = check(VIEW({.rank = -1, .steps = 20, .compute_ns = 8 * MS, .sync_ns = 500 * US}), "PY001", NULL);
    f = at(&c, "PY001", LINE_ITEM);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect_eq(f->evidence_count, 1, "%s", shown(&c));
    cr_expect_not(has_evidence(f, "per rank"), "%s", shown(&c));
    checked_free(&c);
}

/* ---- descriptors --------------------------------------------------------------------------- */

Test(descriptors, the_multi_gpu_rules) {
    static const char *const profile_rules[] = {"PR013", "PR014"};
    for (size_t i = 0; i < 2; i++) {
        const Rule *r = rule_find(profile_rules[i]);
        cr_assert_not_null(r, "%s is not registered", profile_rules[i]);
        cr_expect(r->check_profile && !r->check && r->measure == MEASURE_NONE, "%s", r->code);
        cr_expect(strstr(r->documentation, "## The numbers"), "%s: the model behind the numbers", r->code);
        cr_expect(strstr(r->summary, "(profile)"), "%s", r->code);
    }
    /* PR013 steps aside where PY013 carries the same figures */
    cr_expect_eq(rule_find("PR013")->subsumed_by, MEASURE_COMM);
    cr_expect_eq(rule_find("PY013")->measure, MEASURE_COMM);
    cr_expect_eq(rule_find("PY012")->measure, MEASURE_COMM);
    cr_expect(rule_find("PY013")->whole_file, "the DDP model is assigned elsewhere in the file");
}

/* ---- the command line ------------------------------------------------------------------- */

Test(cli, rules_list_and_document_the_multi_gpu_rules) {
    RunResult r = run_advise("rules");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "PR013  exposed-communication"), "%s", r.out);
    cr_expect(strstr(r.out, "PR014  rank-imbalance"), "%s", r.out);
    cr_expect(strstr(r.out, "PY013  ddp-accumulation-without-no-sync"), "%s", r.out);
    run_result_free(&r);
    static const char *const codes[] = {"PR013", "rank-imbalance", "PY013"};
    for (size_t i = 0; i < 3; i++) {
        r = run_advise("rule", codes[i]);
        cr_expect_eq(r.status, 0, "%s", codes[i]);
        cr_expect(strstr(r.out, "## Use instead"), "%s: %s", codes[i], r.out);
        run_result_free(&r);
    }
}

Test(cli, advise_check_with_a_two_rank_profile_file) {
    char *dir = temp_dir();
    Profile *p = merged((const Rank[]){{.rank = 0, .steps = 20, .compute_ns = 8 * MS, .allreduce_ns = 4 * MS,
                                        .overlap_ns = 1 * MS, .wall_ns = 250 * MS},
                                       {.rank = 1, .steps = 20, .compute_ns = 10 * MS, .allreduce_ns = 2 * MS,
                                        .overlap_ns = 1 * MS, .wall_ns = 250 * MS}},
                        2);
    char *path = path_in(dir, "ddp.json"), *error = NULL;
    cr_assert(profile_write_file(p, PROFILE_FINAL, path, &error), "%s", error ? error : "");
    profile_free(p);
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--no-source", "--fail-on", "never",
                                "--profile", path, SRC);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, SRC ":15:9: PR014 [rank-imbalance] the other ranks waited for rank 1"), "%s", r.out);
    cr_expect(strstr(r.out, SRC ":15:9: PY013 [ddp-accumulation-without-no-sync]"), "%s", r.out);
    run_result_free(&r);
}

/* ---- the two-rank DDP run recorded on nvidia-h200-x2 --------------------------------- */

static ProfileView *recorded(const char *name) {
    char path[1024], *error = NULL;
    snprintf(path, sizeof path, "%s/tests/fixtures/profiles/h200/%s.json", ADVISE_SOURCE_DIR, name);
    ProfileView *v = profile_view_load(path, &error);
    cr_assert_not_null(v, "%s", error ? error : "");
    return v;
}

Test(recorded_ddp, as_written_every_multi_gpu_finding_is_on_its_line) {
    /* bench/ddp/ddp_train.py: accumulation over 4 micro-batches without
     * no_sync(), find_unused_parameters=True, loss.item() per micro-batch */
    Checked c = check_file("bench/ddp/ddp_train.py", recorded("ddp_train"), NULL, NULL);
    const Finding *f = at(&c, "PY013", 68);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(has_evidence(f, "NCCL kernels launched at this line: rank 0: 937 launches, 284 ms; rank 1: 993 "
                              "launches, 258 ms"),
              "%s", shown(&c));
    cr_assert(f->gain.present, "an upper bound from the exposed communication");
    cr_expect(f->gain.seconds > 0.120 && f->gain.seconds < 0.135, "rank 1's 128 ms: %g", f->gain.seconds);
    cr_expect_eq(count_of(&c, "PR013"), 0, "PY013 carries the figures of the backward line: %s", shown(&c));
    f = at(&c, "PY012", 52);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(has_evidence(f, "rank 0: 188 ms (37% of its GPU busy time)"), "%s", shown(&c));
    f = at(&c, "PY001", 69);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(has_evidence(f, "per rank: rank 0 waited 118 times"), "%s", shown(&c));
    cr_expect(has_evidence(f, "every rank then waits for the slowest in the next collective"), "%s", shown(&c));
    /* the process group's and NCCL's set-up before DDP(...) is start-up */
    f = at(&c, "PR003", 52);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect_eq(f->severity, SEVERITY_HINT, "%s", shown(&c));
    cr_expect_not(f->gain.present, "no estimate for start-up gaps");
    /* kernel time summed over both GPUs is set against both GPUs' time */
    f = at(&c, "PR001", 68);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(has_evidence(f, "the run took 12.2 s on 2 GPUs: these kernels are 3.7% of their time"), "%s", shown(&c));
    checked_free(&c);

    c = check_file("bench/ddp/ddp_train.py", recorded("ddp_train"), "PR013", NULL);
    f = at(&c, "PR013", 68);
    cr_assert_not_null(f, "without PY013, the exposure is PR013's: %s", shown(&c));
    cr_expect(strstr(f->message, "128 ms to 188 ms per rank, 28% to 37% of each rank's GPU busy time"), "%s",
              f->message);
    checked_free(&c);
}

Test(recorded_ddp, advised_the_straggler_remains) {
    /* bench/ddp/ddp_train_advised.py: no_sync() on 3 of 4 micro-batches; the
     * last rank still gets 25% more data (--skew 0.25) */
    Checked c = check_file("bench/ddp/ddp_train_advised.py", recorded("ddp_train_advised"), NULL, NULL);
    cr_expect_eq(count_of(&c, "PY013"), 0, "%s", shown(&c));
    cr_expect_eq(count_of(&c, "PY012"), 0, "%s", shown(&c));
    cr_expect_eq(count_of(&c, "PY001"), 0, "%s", shown(&c));
    const Finding *f = at(&c, "PR014", 73);
    cr_assert_not_null(f, "%s", shown(&c));
    cr_expect(strstr(f->message, "the other ranks waited for rank 1 at this line's collectives: 1.12 ms per call"),
              "%s", f->message);
    cr_expect(strstr(f->message, "balance the data per rank"), "%s", f->message);
    checked_free(&c);
}
