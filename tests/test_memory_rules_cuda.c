/* PR015 (memory-peak-holder) in CUDA C++ files, on memory recorded through
 * CUPTI (cudaMalloc and friends, profiler/mem_trace.h): the H200 profile of
 * bench/memory/cuda_alloc.cu (tests/fixtures/profiles/memory/cuda_alloc_h200.json,
 * known sizes: 64 MiB kept from line 34, 256 MiB and 32 MiB per step from
 * lines 38 and 39, peak 352 MiB), and a synthetic one; Python files keep
 * reading PyTorch's entries only. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/mem_trace.h"
#include "profiler/profile_json.h"
#include "rules/engine/engine.h"
#include "tests/cli_harness.h"
#include "tests/evidence_text.h"

#define CU "bench/memory/cuda_alloc.cu"
#define MiB (1ull << 20)

typedef struct {
    char *text;
    Document *doc;
    FindingList findings;
} Checked;

/* Runs the rules of select on the file rel with profile p (the view takes p and frees it). */
static Checked check_rules(Profile *p, const char *rel, const char *select) {
    Checked c = {0};
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ADVISE_SOURCE_DIR, rel);
    c.text = harness_slurp(path);
    c.doc = document_new(path, language_for_path(path), c.text, strlen(c.text));
    cr_assert_not_null(c.doc);
    ProfileView *v = profile_view_new(p, "memory.json");
    cr_assert_not_null(v);
    Config cfg;
    config_init(&cfg);
    cr_assert(string_list_add_csv(&cfg.select, select));
    finding_list_init(&c.findings);
    char *error = NULL;
    cr_assert(engine_check(c.doc, NULL, &cfg, &c.findings, NULL, &error), "%s", error ? error : "");
    cr_assert(engine_merge_profile(c.doc, rel, v, &cfg, &c.findings));
    config_free(&cfg);
    profile_view_free(v);
    return c;
}

static Checked check_path(Profile *p, const char *rel) { return check_rules(p, rel, "PR015"); }

static void checked_free(Checked *c) {
    finding_list_free(&c->findings);
    document_free(c->doc);
    free(c->text);
}

static const Finding *at(const Checked *c, uint32_t line) {
    for (size_t i = 0; i < c->findings.count; i++) {
        const Finding *f = &c->findings.items[i];
        if (strcmp(f->code, "PR015") == 0 && document_line_of(c->doc, f->range.start) + 1 == line) return f;
    }
    return NULL;
}

static bool has_evidence(const Finding *f, const char *needle) {
    for (size_t i = 0; f && i < f->evidence_count; i++)
        if (strstr(ev(&f->evidence[i]), needle)) return true;
    return false;
}

static const char *evidence_of(const Finding *f) {
    static char buf[4096];
    buf[0] = '\0';
    for (size_t i = 0; f && i < f->evidence_count; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "\n  - %s", ev(&f->evidence[i]));
    }
    return buf;
}

static Profile *h200_profile(void) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/memory/cuda_alloc_h200.json",
                                   PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error ? error : "");
    return p;
}

Test(memory_rules_cuda, the_h200_recording_of_cuda_alloc) {
    Profile *p = h200_profile();
    cr_assert_eq(p->memory_count, 1);
    cr_assert_eq(p->memories[0].source, PROF_MEM_SOURCE_CUPTI);
    cr_assert_eq(p->memories[0].peak_allocated, 352 * MiB);
    Checked c = check_path(p, CU);
    const Finding *act = at(&c, 38), *weights = at(&c, 34);
    cr_assert_not_null(act, "256 MiB of 352 at the peak");
    cr_assert_not_null(weights, "64 MiB of 352 at the peak: 18%%, and 64 MiB");
    cr_assert_null(at(&c, 39), "32 MiB: under 64 MiB");
    cr_assert_null(at(&c, 48), "not live at the peak");
    cr_assert_eq(c.findings.count, 2);
    cr_expect_eq(act->severity, SEVERITY_WARNING, "73%% of the peak");
    cr_expect_eq(weights->severity, SEVERITY_INFO, "18%% of the peak");
    cr_expect(strstr(act->message, "device buffers allocated here hold 268 MB at the memory peak (73% of the 369 MB "
                                   "allocated, 260 µs into the run)"),
              "%s", act->message);
    cr_expect(strstr(weights->message, "hold 67.1 MB") && strstr(weights->message, "(18%"), "%s", weights->message);
    cr_expect(has_evidence(act, "live at the peak from this line: 268 MB") && has_evidence(act, "cudaMalloc"),
              "%s", evidence_of(act));
    /* in the loop: chunks (half) and a pool; outside: free it earlier (all of it) */
    cr_expect(has_evidence(act, "two chunks") && has_evidence(act, "134 MB") && has_evidence(act, "cudaMallocAsync"),
              "%s", evidence_of(act));
    cr_expect(has_evidence(weights, "cudaFree it") && has_evidence(weights, "67.1 MB"), "%s", evidence_of(weights));
    cr_expect_not(has_evidence(act, "torch"), "no PyTorch advice in CUDA:%s", evidence_of(act));
    checked_free(&c); /* the view took p */
}

/* The same kind of entry from PyTorch (source torch) says nothing in a .cu
 * file: its lines are Python's. And a CUPTI entry at a Python file's line
 * does not change what PR015 says there (Python reads PyTorch's entries). */
Test(memory_rules_cuda, each_language_reads_its_own_source) {
    Profile *p = h200_profile();
    p->memories[0].source = PROF_MEM_SOURCE_TORCH;
    Checked c = check_path(p, CU);
    cr_expect_eq(c.findings.count, 0);
    checked_free(&c); /* the view took p */

    p = h200_profile();
    int f = profile_add_file(p, "tests/fixtures/memory/train_leak.py");
    int site = profile_add_site(p, f, 19, "train");
    cr_assert_geq(site, 0);
    for (size_t i = 0; i < p->memory_line_count; i++) p->memory_lines[i].site = site;
    c = check_path(p, "tests/fixtures/memory/train_leak.py");
    cr_expect_eq(c.findings.count, 0);
    checked_free(&c); /* the view took p */
}

/* A synthetic trace straight from mem_trace: one buffer outside loops (line
 * 34) holding 90% of the peak. */
Test(memory_rules_cuda, a_buffer_allocated_once) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/memory/cuda_alloc_h200.json",
                                   PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error ? error : "");
    /* replace the recorded memory by a trace built here */
    for (size_t i = 0; i < p->memory_count; i++) free(p->memories[i].samples);
    p->memory_count = p->memory_line_count = 0;
    int file = profile_add_file(p, CU);
    int weights = profile_add_site(p, file, 34, "main"), act = profile_add_site(p, file, 38, "main");
    MemTrace *t = mem_trace_new();
    mem_trace_alloc(t, 0, 0x100000, 900 * MiB, 1000, weights);
    mem_trace_alloc(t, 0, 0x200000, 100 * MiB, 2000, act);
    mem_trace_release(t, 0, 0x200000, 100 * MiB, 3000);
    cr_assert(mem_trace_to_profile(t, p, 0));
    mem_trace_free(t);
    Checked c = check_path(p, CU);
    const Finding *w = at(&c, 34), *a = at(&c, 38);
    cr_assert_not_null(w);
    cr_assert_not_null(a, "100 MiB is 10%% of the peak");
    cr_expect(strstr(w->message, "944 MB at the memory peak (90% of the 1.05 GB allocated, 1.00 µs into the run)"), "%s",
              w->message);
    cr_expect(has_evidence(w, "up to 944 MB"), "%s", evidence_of(w));
    checked_free(&c); /* the view took p */
}

/* PR018 in a CUDA file: a cudaMalloc that failed for lack of memory, with the
 * device buffers live then (mem_trace_oom); the device's free memory is not
 * claimed. */
Test(memory_rules_cuda, a_failed_cudamalloc) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/memory/cuda_alloc_h200.json",
                                   PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error ? error : "");
    for (size_t i = 0; i < p->memory_count; i++) free(p->memories[i].samples);
    p->memory_count = p->memory_line_count = 0;
    int file = profile_add_file(p, CU);
    int weights = profile_add_site(p, file, 34, "main"), act = profile_add_site(p, file, 38, "main");
    MemTrace *t = mem_trace_new();
    mem_trace_alloc(t, 0, 0x100000, 900 * MiB, 1000, weights);
    mem_trace_oom(t, 0, 200000 * MiB, 2000, act);
    cr_assert(mem_trace_to_profile(t, p, 0));
    mem_trace_free(t);
    Checked c = check_rules(p, CU, "PR018");
    cr_assert_eq(c.findings.count, 1);
    const Finding *f = &c.findings.items[0];
    cr_expect_eq(document_line_of(c.doc, f->range.start) + 1, 38);
    cr_expect(strstr(f->message, "an allocation of 210 GB failed here (out of memory); 944 MB of device buffers was "
                                 "allocated, most of it from " CU ":34 (944 MB)"),
              "%s", f->message);
    cr_expect_null(strstr(f->message, "free on the device"), "%s", f->message);
    checked_free(&c);
}

/* advise report on it: the memory section says where the figures come from,
 * and PR015 is among the findings */
Test(memory_rules_cuda, the_report_of_cuda_alloc, .timeout = 120) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile",
                                "tests/fixtures/profiles/memory/cuda_alloc_h200.json", CU);
    cr_expect_eq(r.status, 0, "%s", r.err);
    const char *section = strstr(r.out, "\nDevice memory of GPU 0 (process 539), from cudaMalloc and friends (CUPTI):\n"
                                        "  peak       369 MB allocated, 369 MB reserved then, 260 µs into the recorded "
                                        "window\n"
                                        "  the run    most allocated 369 MB, most reserved 369 MB (live device "
                                        "allocations over the run)\n"
                                        "  window     the whole run (36 allocator events)\n");
    cr_expect_not_null(section, "%s", r.out);
    cr_expect(strstr(r.out, "  held at the peak, the lines holding the most:\n"
                            "       268 MB    73%  bench/memory/cuda_alloc.cu:38\n"
                            "      67.1 MB    18%  bench/memory/cuda_alloc.cu:34\n"
                            "      33.6 MB   9.1%  bench/memory/cuda_alloc.cu:39\n"),
              "%s", r.out);
    cr_expect_null(strstr(r.out, "PyTorch"), "%s", r.out);
    cr_expect(strstr(r.out, "bench/memory/cuda_alloc.cu:38:9  PR015 memory-peak-holder\n"), "%s", r.out);
    run_result_free(&r);
}

/* The H200 recording of bench/memory/cuda_oom.cu (2026-12-03): its 1 TiB
 * cudaMalloc at line 27 failed while the 1 GiB buffer of line 25 was live.
 * PR018 names both, as the program's known sizes say; PR015 keeps the
 * buffer of line 25, the whole peak. */
Test(memory_rules_cuda, the_h200_recording_of_a_native_out_of_memory) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/memory/cuda_oom_h200.json",
                                   PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error ? error : "");
    cr_assert_eq(p->memory_count, 1);
    cr_assert(p->memories[0].oom);
    cr_expect_eq(p->memories[0].oom_bytes, 1024ull << 30);
    cr_expect_eq(p->memories[0].oom_allocated, 1ull << 30);
    Checked c = check_rules(p, "bench/memory/cuda_oom.cu", "PR015,PR018");
    const Finding *oom = NULL, *holder = NULL;
    for (size_t i = 0; i < c.findings.count; i++) {
        const Finding *f = &c.findings.items[i];
        uint32_t line = (uint32_t)document_line_of(c.doc, f->range.start) + 1;
        if (strcmp(f->code, "PR018") == 0 && line == 27) oom = f;
        if (strcmp(f->code, "PR015") == 0 && line == 25) holder = f;
    }
    cr_assert_eq(c.findings.count, 2, "PR018 at line 27 and PR015 at line 25, nothing else");
    cr_assert_not_null(oom);
    cr_assert_not_null(holder);
    cr_expect(strstr(oom->message, "an allocation of 1.10 TB failed here (out of memory); 1.07 GB of device buffers "
                                   "was allocated, most of it from bench/memory/cuda_oom.cu:25 (1.07 GB)"),
              "%s", oom->message);
    cr_expect(has_evidence(oom, "alive then from bench/memory/cuda_oom.cu:25: 1.07 GB"), "%s", evidence_of(oom));
    cr_expect(strstr(holder->message, "hold 1.07 GB at the memory peak (100%"), "%s", holder->message);
    checked_free(&c);
}
