/* Sampled tracing (profiler/inject/trace_sampling.c) against a stand-in for
 * CUPTI's activity switches: windows turn device activity off and on, and
 * the first CUDA graph launch turns it on for good (CUPTI gives a graph's
 * kernels that were in flight when tracing went off end times from when it
 * came back on). Built only where cupti.h is found. */
#include <criterion/criterion.h>
#include <cupti.h>
#include <stdlib.h>

#include "profiler/inject/inject.h"

static int enables, disables;
static bool kernels_on = true;

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        enables++;
        kernels_on = true;
    }
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        disables++;
        kernels_on = false;
    }
    return CUPTI_SUCCESS;
}

/* n ordinary launches; returns how many of them were traced */
static int launch(int n) {
    int traced_count = 0;
    for (int i = 0; i < n; i++) {
        bool traced = false;
        uint32_t tag = trace_sampling_on_launch(false, &traced);
        cr_assert_eq(traced, kernels_on, "a launch is traced exactly when kernel activity is on");
        cr_assert(traced || tag == 0, "an untraced launch carries no window tag");
        traced_count += traced;
    }
    return traced_count;
}

/* Each test runs in its own process (Criterion), so the module's state starts fresh. */
Test(trace_sampling, windows_toggle_tracing_after_the_prefix) {
    setenv("ADVISE_PROFILE_TRACE", "sample:8:64", 1);
    trace_sampling_start(true, true, true);
    cr_assert_eq(launch(64), 64, "the prefix is traced in full");
    int traced = launch(20000);
    cr_assert_gt(disables, 5, "the windows turned tracing off (%d times)", disables);
    cr_assert_gt(traced, 20000 / 8 / 2, "about one launch in 8 is traced (%d of 20000)", traced);
    cr_assert_lt(traced, 20000 / 8 * 2, "about one launch in 8 is traced (%d of 20000)", traced);
    cr_assert_eq(trace_sampling_weight(1), 8, "a sampled window's record stands for 8");
}

Test(trace_sampling, a_graph_launch_ends_the_sampling) {
    setenv("ADVISE_PROFILE_TRACE", "sample:8:64", 1);
    trace_sampling_start(true, true, true);
    launch(64);
    /* run on until a window has turned tracing off */
    for (int i = 0; i < 100000 && kernels_on; i++) launch(1);
    cr_assert_not(kernels_on, "sampling turned kernel tracing off before the graph");
    int disables_before = disables;

    bool traced = false;
    uint32_t tag = trace_sampling_on_launch(true, &traced);
    cr_assert(traced, "the graph launch itself is traced");
    cr_assert(kernels_on, "kernel activity is back on for the graph's kernels");
    cr_assert_neq(tag, 0, "not the prefix's tag: a gap across the sampled stretch would join them");
    cr_assert_eq(trace_sampling_weight(tag), 1, "a record traced in full stands for itself");
    for (int i = 0; i < 1000; i++) {
        bool later_traced = false;
        cr_assert_eq(trace_sampling_on_launch(false, &later_traced), tag, "one tag from the graph on");
    }

    cr_assert_eq(launch(50000), 50000, "every later launch is traced");
    cr_assert_eq(disables, disables_before, "tracing is never turned off again");
    trace_sampling_on_launch(true, &traced);
    cr_assert(traced, "later graph launches are traced too");
}

Test(trace_sampling, a_graph_inside_a_traced_window_keeps_tracing_on) {
    setenv("ADVISE_PROFILE_TRACE", "sample:8:64", 1);
    trace_sampling_start(true, true, true);
    launch(64);
    for (int i = 0; i < 100000 && kernels_on; i++) launch(1);
    for (int i = 0; i < 100000 && !kernels_on; i++) launch(1); /* the next traced window */
    cr_assert(kernels_on);
    int disables_before = disables;
    bool traced = false;
    uint32_t window_tag = trace_sampling_on_launch(false, &traced);
    cr_assert(traced && window_tag != 0);
    cr_assert_eq(trace_sampling_weight(window_tag), 8, "a sampled window's record stands for 8");
    uint32_t tag = trace_sampling_on_launch(true, &traced);
    cr_assert(traced);
    cr_assert_neq(tag, window_tag, "the graph's records leave the sampled window");
    cr_assert_eq(trace_sampling_weight(tag), 1, "and stand for themselves");
    cr_assert_eq(launch(50000), 50000, "every later launch is traced");
    cr_assert_eq(disables, disables_before, "tracing is never turned off again");
}

Test(trace_sampling, the_dormant_alternation_keeps_graphs_traced) {
    setenv("ADVISE_PROFILE_TRACE", "sample:8:64", 1);
    trace_sampling_start(true, true, true);
    launch(64);
    trace_sampling_set_dormant(true);
    cr_assert_not(kernels_on, "dormant: nothing traced");
    trace_sampling_set_dormant(false);
    cr_assert(kernels_on, "awake again inside the prefix: traced");
    bool traced = false;
    trace_sampling_on_launch(true, &traced);
    int disables_before = disables;
    trace_sampling_set_dormant(true);
    cr_assert(kernels_on, "after a graph launch, a dormant block still traces");
    cr_assert_eq(disables, disables_before);
    trace_sampling_set_dormant(false);
    cr_assert(kernels_on);
}

Test(trace_sampling, tracing_everything_ignores_graphs) {
    setenv("ADVISE_PROFILE_TRACE", "all", 1);
    trace_sampling_start(true, true, true);
    bool traced = false;
    cr_assert_eq(trace_sampling_on_launch(true, &traced), 0);
    cr_assert(traced);
    cr_assert_eq(launch(1000), 1000);
    cr_assert_eq(disables, 0);
    cr_assert_eq(enables, 0, "nothing to switch: tracing was never off");
}
