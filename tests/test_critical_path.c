/* The critical path of the aggregator (FORMAT.md `critical_ns`): which GPU
 * work lay on it, from launch times and the host's waits, and the host wait
 * list it relies on. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/aggregate.h"
#include "profiler/host_waits.h"
#include "profiler/profile_json.h"

static Aggregator *agg;

static void setup(void) {
    agg = agg_new();
    cr_assert_not_null(agg);
    agg_track_critical_path(agg);
}

static void teardown(void) {
    agg_free(agg);
}

TestSuite(critical_path, .init = setup, .fini = teardown);

static void launch(const char *name, int site, uint64_t launch_ns, uint64_t start, uint64_t end) {
    AggKernel k = {.device = 0, .name = name, .grid = {1, 1, 1}, .block = {128, 1, 1}, .start_ns = start,
                   .end_ns = end, .launch_ns = launch_ns, .site = site};
    agg_kernel(agg, &k);
}

/* The profile so far, with what a written profile must have. */
static Profile *built(Aggregator *from) {
    ProfProcess proc = {.pid = 42, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 1000000000};
    Profile *p = agg_to_profile(from, &proc);
    cr_assert_not_null(p);
    p->name = strdup("t");
    p->source = strdup("cupti");
    p->created = strdup("2026-12-03T00:00:00Z");
    p->tool = strdup("advise test");
    return p;
}

static const ProfKernel *kernel_named(const Profile *p, const char *name) {
    for (size_t i = 0; i < p->kernel_count; i++)
        if (strcmp(p->kernels[i].name, name) == 0) return &p->kernels[i];
    cr_assert_fail("no kernel %s", name);
    return NULL;
}

static const ProfOp *launch_op(const Profile *p, int site) {
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == PROF_OP_LAUNCH && p->ops[i].site == site) return &p->ops[i];
    cr_assert_fail("no launch at site %d", site);
    return NULL;
}

/* The host asks for each kernel after the GPU finished the one before: the
 * GPU waits for the host each time, and a faster kernel would only wait
 * longer. Only the last one, still open when the run ends, counts. */
Test(critical_path, work_the_host_paces_is_not_on_it) {
    int site = agg_site(agg, "train.py", 10, "step");
    for (uint64_t i = 0; i < 10; i++) {
        uint64_t t = 1000000 + i * 10000;
        launch("small", site, t, t + 5000, t + 6000);
    }
    Profile *p = built(agg);
    const ProfKernel *k = kernel_named(p, "small");
    cr_expect(k->critical.known);
    cr_expect_eq(k->stats.total_ns, 10000);
    cr_expect_eq(k->critical.ns, 1000, "only the open chain's last kernel: %llu", (unsigned long long)k->critical.ns);
    cr_expect(launch_op(p, site)->critical.known);
    cr_expect_eq(launch_op(p, site)->critical.ns, 1000);
    profile_free(p);
}

/* Kernels queued behind each other, and the host waiting for them in a
 * synchronization: every one of them delayed the host. */
Test(critical_path, work_the_host_waits_for_is_on_it) {
    int site = agg_site(agg, "train.py", 20, "step");
    for (uint64_t step = 0; step < 3; step++) {
        uint64_t t = 1000000 + step * 100000;
        /* four kernels launched 1 us apart, each 10 us long: a queue */
        for (uint64_t i = 0; i < 4; i++) launch("gemm", site, t + i * 1000, t + 5000 + i * 10000, t + 15000 + i * 10000);
        agg_host_wait(agg, t + 4000, t + 46000); /* loss.item(): until the last kernel ended at t + 45000 */
    }
    Profile *p = built(agg);
    const ProfKernel *k = kernel_named(p, "gemm");
    cr_expect_eq(k->stats.total_ns, 120000);
    cr_expect_eq(k->critical.ns, 120000);
    profile_free(p);
}

/* A long kernel with small ones queued behind it, then the GPU runs dry
 * and waits for the host (a data loader, Python): none of that chain was on
 * the critical path. The next chain ends in a synchronization: all of it was. */
Test(critical_path, a_chain_counts_by_how_it_ends) {
    int a = agg_site(agg, "train.py", 30, "forward");
    int b = agg_site(agg, "train.py", 31, "forward");
    launch("long", a, 0 + 1000, 2000, 50000);
    launch("short", b, 3000, 50500, 51500);  /* queued behind "long" */
    launch("short", b, 4000, 52000, 53000);
    /* idle from 53000 to 200000: the host was busy elsewhere, not waiting */
    launch("long", a, 200000, 205000, 250000);
    launch("short", b, 201000, 250500, 251500);
    agg_host_wait(agg, 202000, 252000); /* a synchronization that returned once the queue drained */
    launch("short", b, 260000, 262000, 263000); /* the next step: ends the second chain */
    launch("tail", b, 300000, 302000, 302500);    /* after an idle gap, open at the end */
    Profile *p = built(agg);
    cr_expect_eq(kernel_named(p, "long")->critical.ns, 45000, "the second long kernel only");
    cr_expect_eq(kernel_named(p, "short")->critical.ns, 1000, "the one queued behind the second long kernel");
    cr_expect_eq(kernel_named(p, "tail")->critical.ns, 500);
    cr_expect_eq(launch_op(p, a)->critical.ns, 45000);
    profile_free(p);
}

/* Work whose launch time is unknown: its chain breaks at any idle time. */
Test(critical_path, unknown_launch_times_break_chains_at_idle_time) {
    int site = agg_site(agg, "train.py", 40, "step");
    launch("k", site, 0, 1000, 2000);
    launch("k", site, 0, 2000, 3000);   /* back to back: the same chain */
    launch("k", site, 0, 9000, 10000);  /* after idle time: a new one; the first ends with no host wait */
    Profile *p = built(agg);
    cr_expect_eq(kernel_named(p, "k")->critical.ns, 1000);
    profile_free(p);
}

/* Copies are operations with a critical time too; syncs are not. */
Test(critical_path, copies_have_one_and_syncs_do_not) {
    int site = agg_site(agg, "train.py", 50, "step");
    AggCopy c = {.device = 0, .copy = PROF_COPY_HTOD, .src = PROF_MEM_PINNED, .dst = PROF_MEM_DEVICE, .bytes = 4096,
                 .start_ns = 1000, .end_ns = 3000, .launch_ns = 500, .site = site};
    agg_memcpy(agg, &c);
    agg_host_wait(agg, 600, 3100);
    c.start_ns = 10000, c.end_ns = 12000, c.launch_ns = 9000;
    agg_memcpy(agg, &c); /* the GPU waited for it: ends the first chain, which the host waited for */
    agg_sync(agg, PROF_SYNC_STREAM, 2500, site);
    Profile *p = built(agg);
    for (size_t i = 0; i < p->op_count; i++) {
        if (p->ops[i].kind == PROF_OP_MEMCPY) {
            cr_expect(p->ops[i].critical.known);
            cr_expect_eq(p->ops[i].critical.ns, 4000, "both copies: the host waited for the first, the second is open");
        } else {
            cr_expect_not(p->ops[i].critical.known);
        }
    }
    profile_free(p);
}

/* Without launch times (imported traces) nothing is known. */
Test(critical_path, untracked_runs_leave_it_unknown) {
    Aggregator *plain = agg_new();
    int site = agg_site(plain, "train.py", 60, "step");
    AggKernel k = {.device = 0, .name = "k", .grid = {1, 1, 1}, .block = {1, 1, 1}, .start_ns = 10, .end_ns = 20,
                   .site = site};
    agg_kernel(plain, &k);
    Profile *p = built(plain);
    cr_expect_not(p->kernels[0].critical.known);
    cr_expect_not(p->ops[0].critical.known);
    char *text = profile_to_json(p, PROFILE_FINAL, NULL);
    cr_expect_null(strstr(text, "critical_ns"), "an unknown critical time is not written");
    free(text);
    profile_free(p);
    agg_free(plain);
}

Test(critical_path, round_trips_through_json) {
    int site = agg_site(agg, "train.py", 70, "step");
    launch("k", site, 100, 1000, 4000);
    agg_host_wait(agg, 200, 4100);
    launch("k", site, 5000, 6000, 7000);
    Profile *p = built(agg);
    char *text = profile_to_json(p, PROFILE_FINAL, NULL);
    cr_assert_not_null(text);
    char *error = NULL;
    Profile *back = profile_from_json(text, strlen(text), PROFILE_FINAL, &error);
    cr_assert_not_null(back, "%s", error ? error : "");
    cr_expect(back->kernels[0].critical.known);
    cr_expect_eq(back->kernels[0].critical.ns, 4000);
    cr_expect_eq(back->ops[0].critical.ns, 4000);
    free(text);
    profile_free(back);
    profile_free(p);
}

/* A profile that claims more critical time than the work took, or a
 * critical time on a synchronization, is refused with its place named. */
Test(critical_path, the_reader_refuses_impossible_figures) {
    int site = agg_site(agg, "train.py", 80, "step");
    launch("k", site, 100, 1000, 4000);
    agg_sync(agg, PROF_SYNC_STREAM, 100, site);
    Profile *p = built(agg);
    p->kernels[0].critical.ns = 3001;
    char *error = NULL;
    char *text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_expect_null(text);
    cr_expect(error && strstr(error, "kernels[0].critical_ns"), "%s", error ? error : "(none)");
    free(error);
    p->kernels[0].critical.ns = 3000;
    for (size_t i = 0; i < p->op_count; i++)
        if (p->ops[i].kind == PROF_OP_SYNC) p->ops[i].critical = (CriticalTime){true, 0};
    error = NULL;
    text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_expect_null(text);
    cr_expect(error && strstr(error, "only launches, copies and memsets"), "%s", error ? error : "(none)");
    free(error);
    /* the reader: a file that claims more than the work took */
    for (size_t i = 0; i < p->op_count; i++) p->ops[i].critical.known = p->ops[i].kind != PROF_OP_SYNC;
    text = profile_to_json(p, PROFILE_FINAL, NULL);
    cr_assert_not_null(text);
    char *at = strstr(text, "\"critical_ns\":3000");
    cr_assert_not_null(at, "%s", text);
    memcpy(at + strlen("\"critical_ns\":"), "9000", 4);
    error = NULL;
    Profile *back = profile_from_json(text, strlen(text), PROFILE_FINAL, &error);
    cr_expect_null(back);
    cr_expect(error && strstr(error, "critical_ns: 9000 is more than stats.total_ns (3000)"), "%s", error ? error : "(none)");
    free(error);
    profile_free(back);
    free(text);
    profile_free(p);
}

Test(critical_path, host_waits_answer_in_and_out_of_order) {
    HostWaits w;
    host_waits_init(&w);
    host_waits_add(&w, 100, 200);
    host_waits_add(&w, 500, 600);
    host_waits_add(&w, 300, 400); /* arrives late: another thread's */
    cr_expect(host_waits_at(&w, 0, 150));
    cr_expect_not(host_waits_at(&w, 0, 250));
    cr_expect(host_waits_at(&w, 0, 350));
    cr_expect(host_waits_at(&w, 0, 600));
    cr_expect_not(host_waits_at(&w, 0, 700));
    /* another device asks from the start with its own cursor */
    cr_expect(host_waits_at(&w, 1, 120));
    /* a wait added behind a cursor is still seen */
    host_waits_add(&w, 650, 800);
    cr_expect(host_waits_at(&w, 0, 700));
    cr_expect_not(host_waits_at(&w, HOST_WAITS_CURSORS, 700), "no such cursor");
    host_waits_free(&w);
}
