/* Device memory from CUPTI's memory activity (profiler/mem_trace.h): synthetic
 * allocation and release records, as records.c hands them over, turned into
 * the profile's memory entry and lines; the entry's "source" in the format;
 * and the parent keeping PyTorch's entry where a process has both
 * (profiler/driver/memory_run.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/driver/profile_run_internal.h"
#include "profiler/mem_trace.h"
#include "profiler/profile_check.h"
#include "profiler/profile_json.h"

#define MiB (1ull << 20)

static Profile *with_sites(int n) {
    Profile *p = profile_new();
    cr_assert_not_null(p);
    ProfProcess proc = {.pid = 42, .rank = -1, .local_rank = -1, .world_size = -1};
    p->processes = calloc(1, sizeof *p->processes);
    cr_assert_not_null(p->processes);
    p->processes[0] = proc;
    p->process_count = 1;
    int f = profile_add_file(p, "alloc.cu");
    cr_assert_geq(f, 0);
    for (int i = 0; i < n; i++) cr_assert_eq(profile_add_site(p, f, (uint32_t)(10 + i), "main"), i);
    return p;
}

static const ProfMemLine *line_of(const Profile *p, int memory, ProfMemLineKind kind, int site) {
    for (size_t i = 0; i < p->memory_line_count; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        if (l->memory == memory && l->kind == kind && l->site == site) return l;
    }
    return NULL;
}

static size_t lines_of_kind(const Profile *p, int memory, ProfMemLineKind kind) {
    size_t n = 0;
    for (size_t i = 0; i < p->memory_line_count; i++)
        n += p->memory_lines[i].memory == memory && p->memory_lines[i].kind == kind;
    return n;
}

/* weights kept (site 0), a per-step buffer (site 1) allocated and freed,
 * a scratch buffer (site 2): the peak is 400 at t=20 with sites 1 and 0 live */
Test(mem_trace, peak_and_the_lines_live_at_it) {
    MemTrace *t = mem_trace_new();
    mem_trace_alloc(t, 0, 0x1000, 100, 1010, 0);
    mem_trace_alloc(t, 0, 0x2000, 300, 1020, 1);
    mem_trace_release(t, 0, 0x2000, 300, 1030);
    mem_trace_alloc(t, 0, 0x3000, 50, 1040, 2);
    mem_trace_alloc(t, 0, 0x2000, 200, 1050, 1); /* the address again, after its release */
    mem_trace_release(t, 0, 0x3000, 50, 1060);
    Profile *p = with_sites(3);
    cr_assert(mem_trace_to_profile(t, p, 0));
    cr_assert_eq(p->memory_count, 1);
    const ProfMemory *m = &p->memories[0];
    cr_expect_eq(m->source, PROF_MEM_SOURCE_CUPTI);
    cr_expect_eq(m->process, 0);
    cr_expect_eq(m->device, 0);
    cr_expect_eq(m->events, 6);
    cr_expect(m->window_complete);
    cr_expect_eq(m->peak_allocated, 400);
    cr_expect_eq(m->peak_reserved, 400);
    cr_expect_eq(m->max_allocated, 400);
    cr_expect_eq(m->max_reserved, 400);
    cr_expect_eq(m->peak_time_ns, 10); /* from the first event */
    cr_expect_eq(m->steps, 0);
    cr_expect_not(m->oom);
    /* every event is a sample while there are few */
    cr_assert_eq(m->sample_count, 6);
    const uint64_t want[6][2] = {{0, 100}, {10, 400}, {20, 100}, {30, 150}, {40, 350}, {50, 300}};
    for (size_t i = 0; i < 6; i++) {
        cr_expect_eq(m->samples[i].time_ns, want[i][0], "sample %zu", i);
        cr_expect_eq(m->samples[i].allocated, want[i][1], "sample %zu", i);
        cr_expect_eq(m->samples[i].reserved, want[i][1], "sample %zu", i);
    }
    /* live at the peak: 300 from site 1, 100 from site 0, nothing from 2 */
    cr_expect_eq(lines_of_kind(p, 0, PROF_MEM_LINE_PEAK), 2);
    const ProfMemLine *peak1 = line_of(p, 0, PROF_MEM_LINE_PEAK, 1), *peak0 = line_of(p, 0, PROF_MEM_LINE_PEAK, 0);
    cr_assert(peak1 && peak0);
    cr_expect_eq(peak1->bytes, 300);
    cr_expect_eq(peak0->bytes, 100);
    cr_expect_eq(peak1->count, 0);
    cr_expect_lt(peak1 - p->memory_lines, peak0 - p->memory_lines, "largest first");
    /* allocated per line over the run */
    const ProfMemLine *a1 = line_of(p, 0, PROF_MEM_LINE_ALLOCS, 1), *a0 = line_of(p, 0, PROF_MEM_LINE_ALLOCS, 0),
                      *a2 = line_of(p, 0, PROF_MEM_LINE_ALLOCS, 2);
    cr_assert(a1 && a0 && a2);
    cr_expect_eq(a1->bytes, 500);
    cr_expect_eq(a1->count, 2);
    cr_expect_eq(a0->bytes, 100);
    cr_expect_eq(a0->count, 1);
    cr_expect_eq(a2->bytes, 50);
    cr_expect_eq(a2->count, 1);
    cr_expect_eq(p->memory_line_count, 5);
    cr_expect_eq(mem_trace_unknown_releases(t), 0);
    profile_free(p);
    mem_trace_free(t);
}

/* A release of an address never seen (allocated before recording) neither
 * lowers live memory below what was seen nor touches a line; an address
 * allocated twice without its release in between counts once. */
/* A cudaMalloc fails at t=1025 (the call's callback sees it at once); the
 * records around it arrive later, in buffers: what was live then is taken
 * when the first record after it arrives. Only the first failure counts. */
Test(mem_trace, an_out_of_memory_error_with_what_was_live) {
    MemTrace *t = mem_trace_new();
    mem_trace_alloc(t, 0, 0x1000, 100, 1010, 0);
    mem_trace_oom(t, 0, 5000, 1025, 2);           /* before the record of 0x2000 arrives */
    mem_trace_alloc(t, 0, 0x2000, 300, 1020, 1);   /* before the failure */
    mem_trace_oom(t, 0, 9999, 1026, 1);            /* a second failure: not kept */
    mem_trace_release(t, 0, 0x1000, 100, 1030);    /* after it: the state then is taken first */
    mem_trace_alloc(t, 0, 0x3000, 50, 1040, 0);
    Profile *p = with_sites(3);
    cr_assert(mem_trace_to_profile(t, p, 0));
    const ProfMemory *m = &p->memories[0];
    cr_assert(m->oom);
    cr_expect_eq(m->oom_bytes, 5000);
    cr_expect_eq(m->oom_site, 2);
    cr_expect_eq(m->oom_time_ns, 15);
    cr_expect_eq(m->oom_allocated, 400);
    cr_expect_eq(m->oom_device_free, 0, "not known from a callback");
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_OOM, 0)->bytes, 100);
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_OOM, 1)->bytes, 300);
    cr_expect_null(line_of(p, 0, PROF_MEM_LINE_OOM, 2), "the failing line held nothing");
    profile_free(p);
    mem_trace_free(t);

    /* a failure as the last thing: taken at the end */
    t = mem_trace_new();
    mem_trace_alloc(t, 0, 0x1000, 100, 1010, 0);
    mem_trace_oom(t, 0, 5000, 1500, 0);
    p = with_sites(1);
    cr_assert(mem_trace_to_profile(t, p, 0));
    cr_expect(p->memories[0].oom);
    cr_expect_eq(p->memories[0].oom_allocated, 100);
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_OOM, 0)->bytes, 100);
    profile_free(p);
    mem_trace_free(t);
}

Test(mem_trace, releases_of_unknown_addresses) {
    MemTrace *t = mem_trace_new();
    mem_trace_release(t, 0, 0xdead, 4096, 5);
    mem_trace_alloc(t, 0, 0x1000, 64, 10, 0);
    mem_trace_release(t, 0, 0xbeef, 1000, 20);
    mem_trace_alloc(t, 0, 0x1000, 32, 30, 1); /* the release of the first was lost */
    Profile *p = with_sites(2);
    cr_assert(mem_trace_to_profile(t, p, 0));
    const ProfMemory *m = &p->memories[0];
    cr_expect_eq(mem_trace_unknown_releases(t), 2);
    cr_expect_eq(m->peak_allocated, 64);
    cr_expect_eq(m->events, 4);
    cr_assert_eq(m->sample_count, 4);
    cr_expect_eq(m->samples[0].allocated, 0);
    cr_expect_eq(m->samples[1].allocated, 64);
    cr_expect_eq(m->samples[2].allocated, 64);
    cr_expect_eq(m->samples[3].allocated, 32);
    const ProfMemLine *peak = line_of(p, 0, PROF_MEM_LINE_PEAK, 0);
    cr_assert_not_null(peak);
    cr_expect_eq(peak->bytes, 64);
    cr_expect_null(line_of(p, 0, PROF_MEM_LINE_PEAK, 1));
    profile_free(p);
    mem_trace_free(t);
}

/* 100,000 events: at most 4096 samples, time never goes back, and the one
 * spike of the run (a 1 GiB allocation freed at once) is still there. */
Test(mem_trace, downsampling_keeps_the_peak) {
    MemTrace *t = mem_trace_new();
    uint64_t time = 1000000;
    mem_trace_alloc(t, 3, 0x10, 8 * MiB, time, 0);
    for (uint64_t i = 0; i < 50000; i++) {
        time += 100;
        mem_trace_alloc(t, 3, 0x100000 + i * 0x1000, (i % 97 + 1) * MiB, time, 1);
        if (i == 31337) {
            mem_trace_alloc(t, 3, 0x7000000000, 1024 * MiB, time + 1, 2);
            mem_trace_release(t, 3, 0x7000000000, 1024 * MiB, time + 2);
        }
        time += 100;
        mem_trace_release(t, 3, 0x100000 + i * 0x1000, 0, time);
        time -= 150; /* the next allocation's record comes a little out of order: it counts at the last time */
    }
    Profile *p = with_sites(3);
    cr_assert(mem_trace_to_profile(t, p, 0));
    const ProfMemory *m = &p->memories[0];
    cr_expect_eq(m->device, 3);
    cr_expect_eq(m->events, 100003);
    uint64_t want_peak = 8 * MiB + (31337 % 97 + 1) * MiB + 1024 * MiB;
    cr_expect_eq(m->peak_allocated, want_peak);
    cr_assert_leq(m->sample_count, PROFILE_MAX_MEMORY_SAMPLES);
    cr_assert_geq(m->sample_count, PROFILE_MAX_MEMORY_SAMPLES / 2);
    uint64_t highest = 0;
    for (size_t i = 0; i < m->sample_count; i++) {
        if (i) cr_assert_geq(m->samples[i].time_ns, m->samples[i - 1].time_ns, "sample %zu", i);
        if (m->samples[i].allocated > highest) highest = m->samples[i].allocated;
        cr_assert_eq(m->samples[i].allocated, m->samples[i].reserved);
    }
    cr_expect_eq(highest, want_peak);
    /* live at the peak: the spike, the weights, the step's buffer */
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_PEAK, 2)->bytes, 1024 * MiB);
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_PEAK, 1)->bytes, (31337 % 97 + 1) * MiB);
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_PEAK, 0)->bytes, 8 * MiB);
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_ALLOCS, 1)->count, 50000);
    profile_free(p);
    mem_trace_free(t);
}

/* Bounded: at most 64 lines of each kind (the largest), and beyond
 * MEM_TRACE_MAX_LIVE live allocations new ones count in the totals, not by
 * line; releasing them lowers the total again. */
Test(mem_trace, bounds) {
    MemTrace *t = mem_trace_new();
    for (int s = 0; s < 100; s++) mem_trace_alloc(t, 0, 0x1000 + (uint64_t)s * 16, (uint64_t)(s + 1) * 10, 10, s);
    Profile *p = with_sites(100);
    cr_assert(mem_trace_to_profile(t, p, 0));
    cr_expect_eq(lines_of_kind(p, 0, PROF_MEM_LINE_PEAK), MEM_TRACE_MAX_LINES);
    cr_expect_eq(lines_of_kind(p, 0, PROF_MEM_LINE_ALLOCS), MEM_TRACE_MAX_LINES);
    cr_expect_eq(p->memory_lines[0].site, 99); /* the largest first */
    cr_expect_eq(p->memory_lines[0].bytes, 1000);
    cr_expect_null(line_of(p, 0, PROF_MEM_LINE_PEAK, 35)); /* the 36th smallest is out */
    cr_expect_not_null(line_of(p, 0, PROF_MEM_LINE_PEAK, 36));
    profile_free(p);
    mem_trace_free(t);

    t = mem_trace_new();
    uint64_t n = MEM_TRACE_MAX_LIVE + 10;
    for (uint64_t i = 0; i < n; i++) mem_trace_alloc(t, 1, 0x10000 + i * 0x100, 2, i, (int)(i % 2));
    for (uint64_t i = 0; i < n; i++) mem_trace_release(t, 1, 0x10000 + i * 0x100, 2, n + i);
    mem_trace_alloc(t, 1, 0x1, 4 * n, 3 * n, 0); /* the new peak: exactly this when everything was released */
    p = with_sites(2);
    cr_assert(mem_trace_to_profile(t, p, 0));
    const ProfMemory *m = &p->memories[0];
    cr_expect_eq(m->peak_allocated, 4 * n);
    cr_expect_leq(m->sample_count, PROFILE_MAX_MEMORY_SAMPLES);
    cr_expect_eq(mem_trace_unknown_releases(t), 10);
    /* at the peak only the last allocation is live */
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_PEAK, 0)->bytes, 4 * n);
    cr_expect_null(line_of(p, 0, PROF_MEM_LINE_PEAK, 1));
    /* allocations are counted by line, tracked or not */
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_ALLOCS, 0)->count + line_of(p, 0, PROF_MEM_LINE_ALLOCS, 1)->count, n + 1);
    cr_expect_eq(line_of(p, 0, PROF_MEM_LINE_ALLOCS, 1)->bytes, n); /* the n/2 odd ones, of 2 bytes (n is even) */
    profile_free(p);
    mem_trace_free(t);
}

Test(mem_trace, one_entry_per_device) {
    MemTrace *t = mem_trace_new();
    mem_trace_alloc(t, 1, 0x1000, 10, 5, 0);
    mem_trace_alloc(t, 0, 0x1000, 20, 6, 0); /* the same address on another device */
    mem_trace_release(t, 1, 0x1000, 10, 7);
    Profile *p = with_sites(1);
    cr_assert(mem_trace_to_profile(t, p, 0));
    cr_assert_eq(p->memory_count, 2);
    cr_expect_eq(p->memories[0].device, 1);
    cr_expect_eq(p->memories[0].peak_allocated, 10);
    cr_expect_eq(p->memories[1].device, 0);
    cr_expect_eq(p->memories[1].peak_allocated, 20);
    cr_expect_eq(line_of(p, 1, PROF_MEM_LINE_PEAK, 0)->bytes, 20);
    profile_free(p);
    mem_trace_free(t);
}

/* ---- the format ----------------------------------------------------------------------------- */

static Profile *cupti_profile(void) {
    MemTrace *t = mem_trace_new();
    mem_trace_alloc(t, 0, 0x1000, 64 * MiB, 100, 0);
    mem_trace_alloc(t, 0, 0x2000, 256 * MiB, 200, 1);
    mem_trace_release(t, 0, 0x2000, 256 * MiB, 300);
    Profile *p = with_sites(2);
    cr_assert(mem_trace_to_profile(t, p, 0));
    mem_trace_free(t);
    cr_assert(profile_set_labels(p, "final", "cupti", "advise test"));
    return p;
}

Test(mem_trace_format, round_trip_keeps_the_source) {
    Profile *p = cupti_profile();
    char *error = NULL;
    char *text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_assert_not_null(text, "%s", error ? error : "");
    cr_expect_not_null(strstr(text, "\"device\":0,\"source\":\"cupti\",\"events\":3,"), "%s", text);
    Profile *back = profile_from_json(text, strlen(text), PROFILE_FINAL, &error);
    cr_assert_not_null(back, "%s", error ? error : "");
    cr_assert_eq(back->memory_count, 1);
    cr_expect_eq(back->memories[0].source, PROF_MEM_SOURCE_CUPTI);
    cr_expect_eq(back->memories[0].peak_allocated, 320 * MiB);
    cr_expect_eq(back->memories[0].sample_count, 3);
    cr_expect_eq(back->memory_line_count, 4);
    char *again = profile_to_json(back, PROFILE_FINAL, &error);
    cr_expect_str_eq(again, text);

    /* a profile written before "source": PyTorch's */
    char *old = strdup(text);
    char *at = strstr(old, "\"device\":0,\"source\":\"cupti\",") + strlen("\"device\":0,");
    memmove(at, at + strlen("\"source\":\"cupti\","), strlen(at + strlen("\"source\":\"cupti\",")) + 1);
    Profile *legacy = profile_from_json(old, strlen(old), PROFILE_FINAL, &error);
    cr_assert_not_null(legacy, "%s", error ? error : "");
    cr_expect_eq(legacy->memories[0].source, PROF_MEM_SOURCE_TORCH);

    /* an unknown source is refused */
    char *bad = strdup(text);
    memcpy(strstr(bad, "\"cupti\",\"events\""), "\"nvml!\"", 7);
    Profile *refused = profile_from_json(bad, strlen(bad), PROFILE_FINAL, &error);
    cr_expect_null(refused);
    cr_expect(error && strstr(error, "memory[0].source: must be one of \"torch\", \"cupti\""), "%s",
              error ? error : "(none)");
    free(error);
    profile_free(refused);
    free(bad);
    profile_free(legacy);
    free(old);
    free(again);
    profile_free(back);
    free(text);
    profile_free(p);
}

/* ---- PyTorch's entry first ----------------------------------------------------------------- */

/* A process with CUPTI entries on devices 0 and 1 and a PyTorch memory part
 * for device 0: PyTorch's entry replaces CUPTI's on device 0, device 1
 * keeps CUPTI's, with its lines pointing at the right entry. */
Test(mem_trace_parts, torch_entries_win_for_their_device) {
    MemTrace *t = mem_trace_new();
    mem_trace_alloc(t, 0, 0x1000, 2 * MiB, 100, 0);
    mem_trace_alloc(t, 1, 0x1000, 6 * MiB, 100, 1);
    Profile *p = with_sites(2);
    cr_assert(mem_trace_to_profile(t, p, 0));
    mem_trace_free(t);
    cr_assert_eq(p->memory_count, 2);
    cr_assert(profile_set_labels(p, "final", "cupti", "advise test"));
    const char *part =
        "{\"format\":\"advise-memory-part\",\"pid\":42,\"devices\":[{\"device\":0,\"entries\":7,"
        "\"max_allocated\":1000,\"max_reserved\":2097152,\"peak\":{\"time_ns\":5,\"allocated\":900,"
        "\"reserved\":2097152},\"steps\":{\"count\":0,\"in_window\":0},\"window_complete\":true,"
        "\"samples\":[[0,900,2097152]],\"lines\":[{\"kind\":\"peak\",\"bytes\":900,\"count\":0,"
        "\"file\":\"train.py\",\"line\":3}]}]}";
    char *text = strdup(part);
    char *name = strdup("memory-42.json");
    size_t length = strlen(part);
    MemoryParts parts = {.names = &name, .texts = &text, .lengths = &length, .count = 1};
    memory_parts_add(p, &parts);
    cr_assert_eq(p->memory_count, 2);
    cr_expect_eq(p->memories[0].source, PROF_MEM_SOURCE_TORCH);
    cr_expect_eq(p->memories[0].device, 0);
    cr_expect_eq(p->memories[0].peak_allocated, 900);
    cr_expect_eq(p->memories[1].source, PROF_MEM_SOURCE_CUPTI);
    cr_expect_eq(p->memories[1].device, 1);
    cr_expect_eq(p->memories[1].peak_allocated, 6 * MiB);
    /* the torch line, then device 1's peak and allocs lines; device 0's CUPTI lines are gone */
    cr_assert_eq(p->memory_line_count, 3);
    cr_expect_eq(p->memory_lines[0].memory, 0);
    cr_expect_eq(p->memory_lines[0].bytes, 900);
    cr_expect_eq(p->memory_lines[1].memory, 1);
    cr_expect_eq(p->memory_lines[1].site, 1);
    cr_expect_eq(p->memory_lines[1].bytes, 6 * MiB);
    cr_expect_eq(p->memory_lines[2].memory, 1);
    cr_expect_eq(p->memory_lines[2].kind, PROF_MEM_LINE_ALLOCS);
    char *error = NULL;
    cr_expect(profile_check(p, PROFILE_FINAL, &error), "%s", error ? error : "");
    free(error);
    free(text);
    free(name);
    profile_free(p);
}
