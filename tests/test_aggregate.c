/* The in-process aggregator on synthetic activity records: statistics,
 * call-site keys, busy/idle and gaps, caps, and out-of-order arrival. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/aggregate.h"
#include "profiler/profile_json.h"

static Aggregator *agg;

static void setup(void) {
    agg = agg_new();
    cr_assert_not_null(agg);
}

static void teardown(void) {
    agg_free(agg);
}

TestSuite(aggregate, .init = setup, .fini = teardown);

static AggKernel kernel_at(const char *name, uint64_t start, uint64_t end, int site) {
    AggKernel k = {.device = 0, .name = name, .grid = {128, 1, 1}, .block = {256, 1, 1}, .registers = 32,
                   .start_ns = start, .end_ns = end, .site = site};
    return k;
}

static const ProfOp *find_op(const Profile *p, ProfOpKind kind, int site) {
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == kind && p->ops[i].site == site) return &p->ops[i];
    return NULL;
}

Test(aggregate, kernel_statistics_are_exact_for_few_calls) {
    int site = agg_site(agg, "train.py", 12, "step");
    uint64_t durations[] = {50, 10, 40, 20, 30};
    uint64_t t = 1000;
    for (size_t i = 0; i < 5; i++) {
        AggKernel k = kernel_at("_Z4gemmv", t, t + durations[i], site);
        agg_kernel(agg, &k);
        t += 1000;
    }
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_not_null(p);
    cr_assert_eq(p->kernel_count, 1);
    const ProfStats *s = &p->kernels[0].stats;
    cr_expect_eq(s->count, 5);
    cr_expect_eq(s->total_ns, 150);
    cr_expect_eq(s->min_ns, 10);
    cr_expect_eq(s->median_ns, 30);
    cr_expect_eq(s->max_ns, 50);
    const ProfOp *op = find_op(p, PROF_OP_LAUNCH, site);
    cr_assert_not_null(op);
    cr_expect_eq(op->kernel, 0);
    cr_expect_eq(op->stats.count, 5);
    cr_expect_str_eq(p->files[p->sites[site].file].path, "train.py");
    cr_expect_eq(p->sites[site].line, 12);
    cr_expect_str_eq(p->sites[site].function, "step");
    profile_free(p);
}

Test(aggregate, median_of_many_calls_stays_close) {
    /* 100,000 launches with durations 1..100000 in a scrambled order: the
     * reservoir median must land near 50,000. */
    int site = agg_site(agg, "loop.py", 3, NULL);
    uint64_t t = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t d = (i * 7919) % 100000 + 1;
        AggKernel k = kernel_at("k", t, t + d, site);
        agg_kernel(agg, &k);
        t += d + 5;
    }
    Profile *p = agg_to_profile(agg, NULL);
    const ProfStats *s = &p->kernels[0].stats;
    cr_expect_eq(s->count, 100000);
    cr_expect_eq(s->min_ns, 1);
    cr_expect_eq(s->max_ns, 100000);
    cr_expect_eq(s->total_ns, 100000ull * 100001ull / 2);
    cr_expect(s->median_ns > 25000 && s->median_ns < 75000, "median %llu", (unsigned long long)s->median_ns);
    profile_free(p);
}

Test(aggregate, launch_configuration_splits_kernels_and_sites_split_ops) {
    int a = agg_site(agg, "model.py", 10, "forward");
    int b = agg_site(agg, "model.py", 20, "forward");
    cr_expect_eq(agg_site(agg, "model.py", 10, "forward"), a, "sites are interned");
    AggKernel k1 = kernel_at("relu", 0, 10, a);
    AggKernel k2 = kernel_at("relu", 20, 30, b);
    AggKernel k3 = kernel_at("relu", 40, 50, b);
    k3.grid[0] = 64;
    agg_kernel(agg, &k1);
    agg_kernel(agg, &k2);
    agg_kernel(agg, &k3);
    Profile *p = agg_to_profile(agg, NULL);
    cr_expect_eq(p->kernel_count, 2, "two configurations of relu");
    cr_expect_eq(p->file_count, 1);
    size_t launches = 0;
    for (size_t i = 0; i < p->op_count; i++) launches += p->ops[i].kind == PROF_OP_LAUNCH;
    cr_expect_eq(launches, 3, "(site a, k), (site b, k), (site b, k')");
    profile_free(p);
}

Test(aggregate, copies_keep_direction_memory_kind_and_bytes) {
    int site = agg_site(agg, "io.py", 7, NULL);
    for (int i = 0; i < 3; i++) {
        AggCopy c = {.copy = PROF_COPY_DTOH, .src = PROF_MEM_DEVICE, .dst = PROF_MEM_PAGEABLE,
                     .bytes = 4 << 20, .start_ns = 100u * i, .end_ns = 100u * i + 60, .site = site};
        agg_memcpy(agg, &c);
    }
    AggCopy pinned = {.copy = PROF_COPY_DTOH, .src = PROF_MEM_DEVICE, .dst = PROF_MEM_PINNED, .bytes = 8,
                      .start_ns = 1000, .end_ns = 1001, .site = site};
    agg_memcpy(agg, &pinned);
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_eq(p->op_count, 2);
    const ProfOp *pageable = p->ops[0].dst == PROF_MEM_PAGEABLE ? &p->ops[0] : &p->ops[1];
    cr_expect_eq(pageable->kind, PROF_OP_MEMCPY);
    cr_expect_eq(pageable->copy, PROF_COPY_DTOH);
    cr_expect_eq(pageable->bytes, 3ull * (4 << 20));
    cr_expect_eq(pageable->stats.count, 3);
    cr_expect_eq(pageable->stats.total_ns, 180);
    profile_free(p);
}

Test(aggregate, syncs_allocations_apis_and_overheads) {
    int site = agg_site(agg, "train.py", 30, NULL);
    agg_sync(agg, PROF_SYNC_STREAM, 1800000, site);
    agg_sync(agg, PROF_SYNC_STREAM, 1700000, site);
    agg_sync(agg, PROF_SYNC_CONTEXT, 5, -1);
    agg_alloc(agg, PROF_MEM_PINNED, 1 << 20, 3000, site);
    agg_api(agg, "cudaLaunchKernel", 4000);
    agg_api(agg, "cudaLaunchKernel", 2000);
    agg_overhead(agg, "module_loading", 47000000);
    Profile *p = agg_to_profile(agg, NULL);
    const ProfOp *sync = find_op(p, PROF_OP_SYNC, site);
    cr_assert_not_null(sync);
    cr_expect_eq(sync->sync, PROF_SYNC_STREAM);
    cr_expect_eq(sync->stats.count, 2);
    cr_expect_eq(sync->stats.total_ns, 3500000);
    const ProfOp *unattributed = find_op(p, PROF_OP_SYNC, -1);
    cr_assert_not_null(unattributed);
    cr_expect_eq(unattributed->sync, PROF_SYNC_CONTEXT);
    const ProfOp *alloc = find_op(p, PROF_OP_ALLOC, site);
    cr_assert_not_null(alloc);
    cr_expect_eq(alloc->bytes, 1 << 20);
    cr_expect_eq(alloc->dst, PROF_MEM_PINNED);
    cr_assert_eq(p->api_count, 1);
    cr_expect_str_eq(p->apis[0].name, "cudaLaunchKernel");
    cr_expect_eq(p->apis[0].stats.total_ns, 6000);
    cr_assert_eq(p->overhead_count, 1);
    cr_expect_eq(p->overheads[0].stats.total_ns, 47000000);
    cr_expect_eq(p->kernel_count, 0, "overheads never become kernel figures");
    profile_free(p);
}

Test(aggregate, busy_idle_and_the_largest_gaps_with_their_sites) {
    int a = agg_site(agg, "train.py", 10, NULL);
    int b = agg_site(agg, "train.py", 11, NULL);
    int c = agg_site(agg, "train.py", 12, NULL);
    /* [0,100) [50,150) overlap on two streams; gap 150..1150 (1000); [1150,1200); gap 1200..1300 (100); [1300,1400) */
    AggKernel k1 = kernel_at("k1", 0, 100, a);
    AggKernel k2 = kernel_at("k2", 50, 150, a);
    AggKernel k3 = kernel_at("k3", 1150, 1200, b);
    AggMemset m = {.device = 0, .dst = PROF_MEM_DEVICE, .bytes = 64, .start_ns = 1300, .end_ns = 1400, .site = c};
    /* arrive out of order */
    agg_kernel(agg, &k3);
    agg_memset(agg, &m);
    agg_kernel(agg, &k2);
    agg_kernel(agg, &k1);
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_eq(p->timeline_count, 1);
    cr_expect_eq(p->timelines[0].span_ns, 1400);
    cr_expect_eq(p->timelines[0].busy_ns, 300);
    cr_expect_eq(p->timelines[0].idle_ns, 1100);
    cr_assert_eq(p->gap_count, 2);
    const ProfGap *big = p->gaps[0].duration_ns > p->gaps[1].duration_ns ? &p->gaps[0] : &p->gaps[1];
    cr_expect_eq(big->duration_ns, 1000);
    cr_expect_eq(big->start_ns, 150);
    cr_expect_eq(big->before_site, a);
    cr_expect_eq(big->after_site, b);
    profile_free(p);
}

/* Every gap of 1 ms or more is kept, not only the device's 16 largest: a
 * data loader that starves the GPU leaves one gap per step, shorter than
 * start-up's. Of the shorter gaps only enough to list 16 gaps are kept, the
 * largest first; past PROF_LONG_GAPS_PER_DEVICE long gaps, the largest stay. */
Test(aggregate, every_long_gap_is_kept_and_short_ones_only_to_make_up_sixteen) {
    int startup = agg_site(agg, "train.py", 3, NULL);
    int step = agg_site(agg, "train.py", 20, NULL);
    const uint64_t MS = 1000000;
    uint64_t t = 0;
    /* 20 start-up gaps of 500 ms, then 300 steps each after a 5 ms wait for data, 10 µs apart inside a step */
    for (int i = 0; i < 20; i++) {
        AggKernel k = kernel_at("init", t, t + 1000, startup);
        agg_kernel(agg, &k);
        t += 1000 + 500 * MS;
    }
    for (int i = 0; i < 300; i++) {
        for (int j = 0; j < 3; j++) {
            AggKernel k = kernel_at("step", t, t + 1000, step);
            agg_kernel(agg, &k);
            t += 1000 + 10000;
        }
        t += 5 * MS;
    }
    AggKernel last = kernel_at("step", t, t + 1000, step);
    agg_kernel(agg, &last);
    Profile *p = agg_to_profile(agg, NULL);
    size_t startup_gaps = 0, step_gaps = 0, short_gaps = 0;
    for (size_t i = 0; i < p->gap_count; i++) {
        if (p->gaps[i].duration_ns >= 500 * MS) startup_gaps++;
        else if (p->gaps[i].duration_ns >= 5 * MS) step_gaps++;
        else short_gaps++;
    }
    cr_expect_eq(startup_gaps, 20);
    cr_expect_eq(step_gaps, 300, "every step's wait for data");
    cr_expect_eq(short_gaps, 0, "320 long gaps: no short one is needed to list 16");
    profile_free(p);

    /* few long gaps: the largest short ones make up 16 */
    agg_free(agg);
    agg = agg_new();
    int s = agg_site(agg, "train.py", 5, NULL);
    t = 0;
    for (int i = 0; i < 40; i++) {
        AggKernel k = kernel_at("k", t, t + 1000, s);
        agg_kernel(agg, &k);
        t += 1000 + (i < 2 ? 2 * MS : 1000 + (uint64_t)i * 100);
    }
    p = agg_to_profile(agg, NULL);
    cr_expect_eq(p->gap_count, 16);
    size_t long_gaps = 0;
    uint64_t shortest = UINT64_MAX;
    for (size_t i = 0; i < p->gap_count; i++) {
        if (p->gaps[i].duration_ns >= 2 * MS) long_gaps++;
        else if (p->gaps[i].duration_ns < shortest) shortest = p->gaps[i].duration_ns;
    }
    cr_expect_eq(long_gaps, 2);
    cr_expect_eq(shortest, 1000 + 25 * 100, "the 14 largest short gaps: i = 25..38");
    profile_free(p);

    /* past the cap, the largest long gaps stay */
    agg_free(agg);
    agg = agg_new();
    s = agg_site(agg, "train.py", 5, NULL);
    t = 0;
    for (uint64_t i = 0; i <= PROF_LONG_GAPS_PER_DEVICE + 100; i++) {
        AggKernel k = kernel_at("k", t, t + 1000, s);
        agg_kernel(agg, &k);
        t += 1000 + MS + i * 1000;
    }
    p = agg_to_profile(agg, NULL);
    cr_expect_eq(p->gap_count, PROF_LONG_GAPS_PER_DEVICE);
    shortest = UINT64_MAX;
    for (size_t i = 0; i < p->gap_count; i++)
        if (p->gaps[i].duration_ns < shortest) shortest = p->gaps[i].duration_ns;
    cr_expect_eq(shortest, MS + 100 * 1000, "the 100 shortest were dropped");
    profile_free(p);
}

/* Sampled tracing (profiler/inject/trace_sampling.c): a record of a sampled
 * window counts `weight` times in counts, totals, bytes and busy time; idle
 * gaps are measured only between records of one window, and carry the
 * window's weight. */
Test(aggregate, sampled_windows_are_weighted_and_gaps_stay_inside_a_window) {
    int a = agg_site(agg, "train.py", 10, NULL);
    int b = agg_site(agg, "train.py", 11, NULL);
    /* the prefix (window 0, weight 1): [0,100), gap 100, [200,300) */
    AggKernel p1 = kernel_at("k", 0, 100, a), p2 = kernel_at("k", 200, 300, b);
    /* window 1 (weight 8): [10000,10100), gap 50, [10150,10200) */
    AggKernel w1 = kernel_at("k", 10000, 10100, a), w2 = kernel_at("k", 10150, 10200, b);
    w1.window = w2.window = 1;
    w1.weight = w2.weight = 8;
    /* window 2 (weight 8): [20000,20100); the 9,800 ns before it are untraced work, not idle */
    AggKernel w3 = kernel_at("k", 20000, 20100, a);
    w3.window = 2;
    w3.weight = 8;
    AggCopy c = {.device = 0, .copy = PROF_COPY_HTOD, .src = PROF_MEM_PINNED, .dst = PROF_MEM_DEVICE, .bytes = 100,
                 .start_ns = 20100, .end_ns = 20110, .site = b, .window = 2, .weight = 8};
    agg_kernel(agg, &w3);
    agg_kernel(agg, &p2);
    agg_kernel(agg, &w1);
    agg_kernel(agg, &p1);
    agg_kernel(agg, &w2);
    agg_memcpy(agg, &c);
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_eq(p->kernel_count, 1);
    cr_expect_eq(p->kernels[0].stats.count, 2 + 3 * 8);
    cr_expect_eq(p->kernels[0].stats.total_ns, 200 + 8 * (100 + 50 + 100));
    cr_expect_eq(p->kernels[0].stats.min_ns, 50);
    cr_expect_eq(p->kernels[0].stats.max_ns, 100);
    const ProfOp *copy = find_op(p, PROF_OP_MEMCPY, b);
    cr_assert_not_null(copy);
    cr_expect_eq(copy->stats.count, 8);
    cr_expect_eq(copy->bytes, 800);
    cr_assert_eq(p->timeline_count, 1);
    cr_expect_eq(p->timelines[0].span_ns, 20110);
    cr_expect_eq(p->timelines[0].busy_ns, 200 + 8 * (100 + 50 + 100 + 10));
    cr_expect_eq(p->timelines[0].idle_ns, 20110 - p->timelines[0].busy_ns);
    /* two gaps: the prefix's (100 ns, weight 1) and window 1's (50 ns, weight 8) */
    cr_assert_eq(p->gap_count, 2);
    const ProfGap *g100 = p->gaps[0].duration_ns == 100 ? &p->gaps[0] : &p->gaps[1];
    const ProfGap *g50 = g100 == &p->gaps[0] ? &p->gaps[1] : &p->gaps[0];
    cr_expect_eq(g100->duration_ns, 100);
    cr_expect_eq(prof_gap_weight(g100), 1);
    cr_expect_eq(g50->duration_ns, 50);
    cr_expect_eq(g50->weight, 8);
    cr_expect_eq(g50->before_site, a);
    cr_expect_eq(g50->after_site, b);
    profile_free(p);
}

/* An estimate from sampled windows never makes the GPU busier than the span. */
Test(aggregate, a_weighted_busy_time_is_capped_at_the_span) {
    AggKernel k1 = kernel_at("k", 0, 100, -1), k2 = kernel_at("k", 100, 200, -1);
    k1.window = k2.window = 1;
    k1.weight = k2.weight = 8;
    agg_kernel(agg, &k1);
    agg_kernel(agg, &k2);
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_eq(p->timeline_count, 1);
    cr_expect_eq(p->timelines[0].span_ns, 200);
    cr_expect_eq(p->timelines[0].busy_ns, 200);
    cr_expect_eq(p->timelines[0].idle_ns, 0);
    profile_free(p);
}

Test(aggregate, devices_are_kept_and_placeholders_named) {
    ProfDevice d = {.id = 1, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9, .cc_minor = 0,
                    .memory_bytes = 150754820096ull, .bandwidth_bytes_per_s = 4800000000000ull};
    agg_device(agg, &d);
    AggKernel k = kernel_at("k", 0, 10, -1);
    k.device = 3; /* never described */
    agg_kernel(agg, &k);
    Profile *p = agg_to_profile(agg, NULL);
    cr_assert_eq(p->device_count, 2);
    cr_expect_str_eq(p->devices[0].name, "NVIDIA H200");
    cr_expect_eq(p->devices[0].sm_count, 132);
    cr_expect_eq(p->devices[1].id, 3);
    cr_expect_eq(p->kernels[0].device, 1);
    cr_expect_eq(p->timelines[0].device, 1);
    profile_free(p);
}

Test(aggregate, sites_reject_bad_paths_and_indices_are_checked) {
    cr_expect_eq(agg_site(agg, "/abs/train.py", 1, NULL), -1);
    cr_expect_eq(agg_site(agg, "../up.py", 1, NULL), -1);
    cr_expect_eq(agg_site(agg, "ok.py", 0, NULL), -1, "lines are 1-based");
    AggKernel k = kernel_at("k", 0, 10, 12345); /* a site that does not exist */
    agg_kernel(agg, &k);
    Profile *p = agg_to_profile(agg, NULL);
    cr_expect_eq(p->ops[0].site, -1);
    profile_free(p);
}

Test(aggregate, kernel_names_are_bounded) {
    size_t n = PROFILE_MAX_STRING * 2;
    char *name = malloc(n + 1);
    memset(name, 'a', n);
    name[n] = '\0';
    AggKernel k = kernel_at(name, 0, 1, -1);
    agg_kernel(agg, &k);
    free(name);
    Profile *p = agg_to_profile(agg, NULL);
    cr_expect_lt(strlen(p->kernels[0].name), PROFILE_MAX_STRING);
    profile_free(p);
}

Test(aggregate, many_distinct_kernels_are_capped_and_counted) {
    char name[32];
    for (int i = 0; i < 9000; i++) {
        snprintf(name, sizeof name, "k%d", i);
        AggKernel k = kernel_at(name, (uint64_t)i * 10, (uint64_t)i * 10 + 5, -1);
        agg_kernel(agg, &k);
    }
    Profile *p = agg_to_profile(agg, NULL);
    cr_expect_leq(p->kernel_count, PROFILE_MAX_KERNELS);
    cr_expect_eq(p->kernel_count + p->dropped_kernels, 9000);
    cr_expect_gt(p->dropped_kernels, 0);
    cr_expect_eq(p->timelines[0].busy_ns, 9000 * 5, "dropped kernels still count as busy time");
    profile_free(p);
}

Test(aggregate, the_profile_it_builds_is_a_valid_part) {
    int site = agg_site(agg, "train.py", 12, "step");
    ProfFrame frames[] = {{"/proj/bin/app", 0x1234}, {"/proj/bin/app", 0x1300}};
    int native = agg_native_site(agg, frames, 2);
    cr_expect_geq(native, 0);
    AggKernel k = kernel_at("k", 0, 10, site);
    agg_kernel(agg, &k);
    AggKernel k2 = kernel_at("k", 20, 30, native);
    agg_kernel(agg, &k2);
    ProfProcess proc = {.pid = 42, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 1000};
    Profile *p = agg_to_profile(agg, &proc);
    p->name = strdup("t");
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T00:00:00Z");
    p->tool = strdup("advise test");
    char *err = NULL;
    char *json = profile_to_json(p, PROFILE_PART, &err);
    cr_assert_not_null(json, "%s", err ? err : "");
    Profile *back = profile_from_json(json, strlen(json), PROFILE_PART, &err);
    cr_assert_not_null(back, "%s", err ? err : "");
    cr_expect_eq(back->site_count, 2);
    cr_expect_eq(back->sites[native].frame_count, 2);
    cr_expect_eq(back->sites[native].frames[1].address, 0x1300);
    cr_expect_eq(back->processes[0].pid, 42);
    profile_free(back);
    free(json);
    profile_free(p);
}

/* Many processes' parts together can exceed the caps of one file: the
 * cheapest kernels and their launches go, counted as dropped. */
Test(aggregate, merged_profiles_are_trimmed_to_the_caps) {
    Profile *all = NULL;
    char name[32];
    for (int part = 0; part < 3; part++) {
        Aggregator *a = agg_new();
        for (int i = 0; i < 8000; i++) {
            snprintf(name, sizeof name, "p%d_k%d", part, i);
            AggKernel k = kernel_at(name, (uint64_t)i * 100, (uint64_t)i * 100 + 1 + (uint64_t)i % 50, -1);
            agg_kernel(a, &k);
        }
        Profile *p = agg_to_profile(a, NULL);
        agg_free(a);
        if (!all) all = p;
        else {
            cr_assert(profile_append(all, p));
            profile_free(p);
        }
    }
    cr_assert_eq(all->kernel_count, 24000);
    cr_assert(profile_trim_to_caps(all));
    cr_expect_eq(all->kernel_count, PROFILE_MAX_KERNELS);
    cr_expect_eq(all->dropped_kernels, 24000 - PROFILE_MAX_KERNELS);
    cr_expect_eq(all->op_count + all->dropped_ops, 24000);
    for (size_t i = 0; i < all->op_count; i++) cr_assert_lt((size_t)all->ops[i].kernel, all->kernel_count);
    uint64_t smallest_kept = UINT64_MAX;
    for (size_t i = 0; i < all->kernel_count; i++)
        if (all->kernels[i].stats.total_ns < smallest_kept) smallest_kept = all->kernels[i].stats.total_ns;
    /* totals are 1..50 ns, 480 kernels each: the 4,000 dropped are all 1..8 ns and 160 of 9 ns */
    cr_expect_eq(smallest_kept, 9, "the cheapest were dropped first");
    all->name = strdup("t");
    all->source = strdup("cupti");
    all->created = strdup("2026-11-30T00:00:00Z");
    all->tool = strdup("advise test");
    char *err = NULL;
    char *json = profile_to_json(all, PROFILE_FINAL, &err);
    cr_expect_not_null(json, "the trimmed profile is writable: %s", err ? err : "");
    free(json);
    free(err);
    profile_free(all);
}

/* Line metrics beyond the cap: the lines that moved least memory go, and
 * the profile stays writable. */
Test(aggregate, line_metrics_are_trimmed_to_the_cap) {
    Profile *p = profile_new();
    int file = profile_add_file(p, "k.cu");
    size_t n = PROFILE_MAX_LINE_METRICS + 50;
    p->line_metrics = calloc(n, sizeof *p->line_metrics);
    cr_assert_not_null(p->line_metrics);
    for (size_t i = 0; i < n; i++) {
        p->line_metrics[i] = (ProfLineMetrics){.kernel = strdup("k(int)"), .file = file, .line = (uint32_t)i + 1,
                                               .launches = 1, .global_sectors = i + 1, .global_sectors_ideal = 1};
        cr_assert_not_null(p->line_metrics[i].kernel);
    }
    p->line_metric_count = n;
    cr_assert(profile_trim_to_caps(p));
    cr_expect_eq(p->line_metric_count, PROFILE_MAX_LINE_METRICS);
    cr_expect_eq(p->line_metrics[0].line, 51, "the 50 lines with the fewest sectors went first");
    p->name = strdup("t");
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T00:00:00Z");
    p->tool = strdup("advise test");
    char *err = NULL;
    char *json = profile_to_json(p, PROFILE_FINAL, &err);
    cr_expect_not_null(json, "the trimmed profile is writable: %s", err ? err : "");
    free(json);
    free(err);
    profile_free(p);
}
