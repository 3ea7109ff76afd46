/* Memory in profiles (`advise profile --memory`): the part a PyTorch process
 * writes (profiler/memory_part.c) read into the model, written and read
 * back, and the memory rules PR015-PR018 on it, at the lines of
 * tests/fixtures/memory/train_leak.py. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/edits.h"
#include "profiler/aggregate.h"
#include "profiler/memory_part.h"
#include "profiler/profile_json.h"
#include "rules/engine/engine.h"
#include "tests/cli_harness.h"
#include "tests/evidence_text.h"

#define SRC "tests/fixtures/memory/train_leak.py"
#define GiB (1ull << 30)
#define MiB (1ull << 20)

enum { LINE_FORWARD = 12, LINE_MODEL = 19, LINE_LOSS = 20, LINE_BACKWARD = 22, LINE_APPEND = 24 };

/* a profile of one process (pid 100) with a kernel launched from the loop, and the memory part added */
static Profile *profile_with(const char *part) {
    Aggregator *agg = agg_new();
    cr_assert_not_null(agg);
    ProfDevice dev = {.id = 0, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9, .memory_bytes = 140 * GiB};
    agg_device(agg, &dev);
    int site = agg_site(agg, SRC, LINE_BACKWARD, "train");
    AggKernel k = {.device = 0, .grid = {64, 1, 1}, .block = {256, 1, 1}, .name = "gemm", .start_ns = 1000,
                   .end_ns = 2000000, .site = site};
    agg_kernel(agg, &k);
    ProfProcess proc = {.pid = 100, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 10000000000ull};
    Profile *p = agg_to_profile(agg, &proc);
    agg_free(agg);
    cr_assert_not_null(p);
    cr_assert(profile_set_labels(p, "memory", "cupti", "advise test"));
    char *error = NULL;
    cr_assert(profile_add_memory_part(p, part, strlen(part), &error), "%s", error ? error : "");
    return p;
}

/* a part: one device, peak 10 GiB allocated at 2 s, plus what the test adds */
static char *part_text(const char *lines, const char *extra, uint64_t max_reserved) {
    static char buf[8192];
    snprintf(buf, sizeof buf,
             "{\"format\":\"advise-memory-part\",\"version\":1,\"pid\":100,\"devices\":[{\"device\":0,"
             "\"entries\":5000,\"window_complete\":true,\"max_allocated\":%llu,\"max_reserved\":%llu,"
             "\"peak\":{\"time_ns\":2000000000,\"allocated\":%llu,\"reserved\":%llu},"
             "\"samples\":[[0,0,0],[1000,%llu,%llu]],\"steps\":{\"count\":40,\"in_window\":32%s},\"lines\":[%s]%s}]}",
             (unsigned long long)(10 * GiB), (unsigned long long)max_reserved, (unsigned long long)(10 * GiB),
             (unsigned long long)(12 * GiB), (unsigned long long)(10 * GiB), (unsigned long long)(12 * GiB),
             ",\"bytes_per_step\":104857600", lines, extra ? extra : "");
    return buf;
}

#define PEAK_LINES                                                                                                  \
    "{\"kind\":\"peak\",\"bytes\":6442450944,\"count\":0,\"file\":\"" SRC "\",\"line\":12,\"function\":\"forward\"}," \
    "{\"kind\":\"peak\",\"bytes\":3221225472,\"count\":0,\"file\":\"" SRC "\",\"line\":19,\"function\":\"train\"},"   \
    "{\"kind\":\"peak\",\"bytes\":536870912,\"count\":0,\"file\":\"" SRC "\",\"line\":20,\"function\":\"train\"},"    \
    "{\"kind\":\"peak\",\"bytes\":1073741824,\"count\":0}"

typedef struct {
    char *text;
    Document *doc;
    FindingList findings;
} Checked;

static Checked check_path(Profile *p, const char *rel, const char *select) {
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

static Checked check(Profile *p) { return check_path(p, SRC, "PR015,PR016,PR017,PR018"); }

static void checked_free(Checked *c) {
    finding_list_free(&c->findings);
    document_free(c->doc);
    free(c->text);
}

static const Finding *at(const Checked *c, const char *code, uint32_t line) {
    for (size_t i = 0; i < c->findings.count; i++) {
        const Finding *f = &c->findings.items[i];
        if (strcmp(f->code, code) == 0 && document_line_of(c->doc, f->range.start) + 1 == line) return f;
    }
    return NULL;
}

static size_t count_of(const Checked *c, const char *code) {
    size_t n = 0;
    for (size_t i = 0; i < c->findings.count; i++) n += strcmp(c->findings.items[i].code, code) == 0;
    return n;
}

static bool has_evidence(const Finding *f, const char *needle) {
    for (size_t i = 0; f && i < f->evidence_count; i++)
        if (strstr(ev(&f->evidence[i]), needle)) return true;
    return false;
}

/* a finding's evidence, for failure messages */
static const char *evidence_of(const Finding *f) {
    static char buf[4096];
    buf[0] = '\0';
    for (size_t i = 0; f && i < f->evidence_count; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "\n  - %s", ev(&f->evidence[i]));
    }
    return buf;
}

/* ---- the part and the format ------------------------------------------------------ */

Test(memory_part, is_read_written_and_read_back) {
    Profile *p = profile_with(part_text(PEAK_LINES, NULL, 12 * GiB));
    cr_assert_eq(p->memory_count, 1);
    cr_assert_eq(p->memory_line_count, 4);
    cr_assert_eq(p->memories[0].peak_allocated, 10 * GiB);
    cr_assert_eq(p->memories[0].bytes_per_step, 100 * (int64_t)MiB);
    cr_assert_eq(p->memories[0].sample_count, 2);
    cr_assert_eq(p->memory_lines[3].site, -1, "a line outside the project has no site");
    char *error = NULL;
    char *text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_assert_not_null(text, "%s", error ? error : "");
    Profile *back = profile_from_json(text, strlen(text), PROFILE_FINAL, &error);
    cr_assert_not_null(back, "%s", error ? error : "");
    cr_assert_eq(back->memory_count, 1);
    cr_assert_eq(back->memory_line_count, 4);
    cr_assert_eq(back->memories[0].max_reserved, 12 * GiB);
    cr_assert_eq(back->memories[0].samples[1].allocated, 10 * GiB);
    const ProfSite *s = &back->sites[back->memory_lines[0].site];
    cr_assert_str_eq(back->files[s->file].path, SRC);
    cr_assert_eq(s->line, LINE_FORWARD);
    free(text);
    profile_free(back);
    profile_free(p);
}

/* where a peak line's memory was freed, and what a variable carried into the next step */
Test(memory_part, freed_and_kept_lines_survive_the_round_trip) {
    Profile *p = profile_with(part_text(
        "{\"kind\":\"peak\",\"bytes\":6442450944,\"count\":0,\"file\":\"" SRC "\",\"line\":12,\"function\":\"forward\","
        "\"freed\":{\"file\":\"" SRC "\",\"line\":19,\"function\":\"train\",\"bytes\":4294967296}},"
        "{\"kind\":\"kept\",\"bytes\":2147483648,\"count\":3,\"file\":\"" SRC "\",\"line\":19,\"function\":\"train\"}",
        NULL, 12 * GiB));
    char *error = NULL;
    char *text = profile_to_json(p, PROFILE_FINAL, &error);
    cr_assert_not_null(text, "%s", error ? error : "");
    Profile *back = profile_from_json(text, strlen(text), PROFILE_FINAL, &error);
    cr_assert_not_null(back, "%s", error ? error : "");
    cr_assert_eq(back->memory_line_count, 2);
    const ProfMemLine *peak = &back->memory_lines[0], *kept = &back->memory_lines[1];
    cr_assert_eq(peak->kind, PROF_MEM_LINE_PEAK);
    cr_assert_eq(peak->freed_bytes, 4 * GiB);
    cr_assert_eq(back->sites[peak->freed_site].line, LINE_MODEL);
    cr_assert_eq(back->sites[peak->site].line, LINE_FORWARD);
    cr_assert_eq(kept->kind, PROF_MEM_LINE_KEPT);
    cr_assert_eq(kept->bytes, 2 * GiB);
    cr_assert_eq(kept->count, 3);
    cr_assert_eq(back->sites[kept->site].line, LINE_MODEL, "a kept line sits at the line that freed it");
    cr_assert_eq(kept->freed_bytes, 0);
    free(text);
    profile_free(back);
    profile_free(p);
}

Test(memory_part, a_bad_part_is_refused_whole) {
    static const char *bad[] = {
        "[]",
        "{\"format\":\"something-else\",\"pid\":100,\"devices\":[]}",
        "{\"format\":\"advise-memory-part\",\"pid\":7,\"devices\":[]}", /* no such process */
        "{\"format\":\"advise-memory-part\",\"pid\":100,\"devices\":[],\"error\":\"could not record\"}",
        "{\"format\":\"advise-memory-part\",\"pid\":100,\"devices\":[{\"device\":0}]}",
        "{\"format\":\"advise-memory-part\",\"pid\":100,\"devices\":[{\"device\":0,\"entries\":1,\"max_allocated\":1,"
        "\"max_reserved\":1,\"peak\":{\"time_ns\":0,\"allocated\":1,\"reserved\":1},\"steps\":{\"count\":0,"
        "\"in_window\":0},\"samples\":[[5,1,1],[2,1,1]],\"lines\":[]}]}", /* time goes back */
        "{\"format\":\"advise-memory-part\",\"pid\":100,\"devices\":[{\"device\":0,\"entries\":1,\"max_allocated\":1,"
        "\"max_reserved\":1,\"peak\":{\"time_ns\":0,\"allocated\":1,\"reserved\":1},\"steps\":{\"count\":0,"
        "\"in_window\":0},\"samples\":[],\"lines\":[{\"kind\":\"peak\",\"bytes\":1,\"count\":0,\"file\":\"../etc/x\","
        "\"line\":1}]}]}", /* a path outside the project */
        "{\"format\":\"advise-memory-part\",\"pid\":100,\"devices\":[{\"device\":0,\"entries\":1,\"max_allocated\":1,"
        "\"max_reserved\":1,\"peak\":{\"time_ns\":0,\"allocated\":1,\"reserved\":1},\"steps\":{\"count\":0,"
        "\"in_window\":0},\"samples\":[],\"lines\":[{\"kind\":\"peak\",\"bytes\":10,\"count\":0,\"freed\":{\"file\":"
        "\"a.py\",\"line\":1,\"bytes\":11}}]}]}", /* freed more than the line held */
        "{\"format\":\"advise-memory-part\",\"pid\":100,\"devices\":[{\"device\":0,\"entries\":1,\"max_allocated\":1,"
        "\"max_reserved\":1,\"peak\":{\"time_ns\":0,\"allocated\":1,\"reserved\":1},\"steps\":{\"count\":0,"
        "\"in_window\":0},\"samples\":[],\"lines\":[{\"kind\":\"allocs\",\"bytes\":10,\"count\":1,\"freed\":{\"file\":"
        "\"a.py\",\"line\":1,\"bytes\":5}}]}]}", /* freed on a line that is not a peak line */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Profile *p = profile_with(part_text("", NULL, 12 * GiB));
        size_t memories = p->memory_count, lines = p->memory_line_count;
        char *error = NULL;
        cr_assert_not(profile_add_memory_part(p, bad[i], strlen(bad[i]), &error), "accepted: %s", bad[i]);
        cr_assert_not_null(error);
        cr_assert_eq(p->memory_count, memories, "%s", bad[i]);
        cr_assert_eq(p->memory_line_count, lines, "%s", bad[i]);
        free(error);
        profile_free(p);
    }
}

/* ---- the rules -------------------------------------------------------------------- */

Test(memory_rules, the_lines_holding_most_at_the_peak) {
    Checked c = check(profile_with(part_text(PEAK_LINES, NULL, 12 * GiB)));
    const Finding *fwd = at(&c, "PR015", LINE_FORWARD), *model = at(&c, "PR015", LINE_MODEL);
    cr_assert_not_null(fwd);
    cr_assert_not_null(model);
    cr_assert_null(at(&c, "PR015", LINE_LOSS), "512 MiB is 5%% of the peak: below the threshold");
    cr_assert_eq(fwd->severity, SEVERITY_WARNING, "60%% of the peak");
    cr_assert(strstr(fwd->message, "6.44 GB") && strstr(fwd->message, "60%"), "%s", fwd->message);
    cr_assert(has_evidence(fwd, "activation checkpointing"));
    cr_assert(has_evidence(model, "halving the micro-batch"));
    cr_assert(has_evidence(model, "1.61 GB"), "half of 3 GiB:%s", evidence_of(model));
    cr_assert_eq(c.findings.count, 2, "no growth, fragmentation or OOM in this part");
    checked_free(&c);
}

Test(memory_rules, a_peak_holder_names_the_line_that_kept_it_alive) {
    Checked c = check(profile_with(part_text(
        "{\"kind\":\"peak\",\"bytes\":6442450944,\"count\":0,\"file\":\"" SRC "\",\"line\":12,\"function\":\"forward\","
        "\"freed\":{\"file\":\"" SRC "\",\"line\":24,\"function\":\"train\",\"bytes\":4294967296}}",
        NULL, 12 * GiB)));
    const Finding *f = at(&c, "PR015", LINE_FORWARD);
    cr_assert_not_null(f);
    cr_assert(has_evidence(f, "4.29 GB of it was freed after the peak at " SRC ":24, which kept it alive until then"),
              "%s", evidence_of(f));
    checked_free(&c);
}

Test(memory_rules, the_fix_follows_what_the_line_holds) {
    Checked c = check(profile_with(part_text(
        "{\"kind\":\"peak\",\"bytes\":4294967296,\"count\":0,\"file\":\"" SRC "\",\"line\":23,\"function\":\"train\"}",
        NULL, 12 * GiB)));
    const Finding *f = at(&c, "PR015", 23);
    cr_assert_not_null(f, "opt.step()");
    cr_assert(has_evidence(f, "optimizer state") && has_evidence(f, "3.22 GB"), "3/4 of 4 GiB:%s", evidence_of(f));
    checked_free(&c);
}

Test(memory_rules, growth_per_step_at_the_allocating_line) {
    Checked c = check(profile_with(part_text(
        "{\"kind\":\"growth\",\"bytes\":104857600,\"count\":32,\"file\":\"" SRC "\",\"line\":12,\"function\":\"forward\"},"
        "{\"kind\":\"growth\",\"bytes\":1000,\"count\":32,\"file\":\"" SRC "\",\"line\":20,\"function\":\"train\"},"
        "{\"kind\":\"growth\",\"bytes\":104857600,\"count\":3,\"file\":\"" SRC "\",\"line\":19,\"function\":\"train\"}",
        NULL, 12 * GiB)));
    const Finding *f = at(&c, "PR016", LINE_FORWARD);
    cr_assert_not_null(f);
    cr_assert(strstr(f->message, "105 MB per optimizer step"), "%s", f->message);
    cr_assert(has_evidence(f, "more steps at this rate"));
    cr_assert(has_evidence(f, "3.36 GB"), "100 MiB x 32 steps:%s", evidence_of(f));
    cr_assert_eq(count_of(&c, "PR016"), 1, "1000 bytes per step, and 3 steps, are below the thresholds");
    checked_free(&c);
}

Test(memory_rules, fragmentation_once_at_the_top_holder) {
    Checked c = check(profile_with(part_text(PEAK_LINES, NULL, 16 * GiB)));
    cr_assert_eq(count_of(&c, "PR017"), 1);
    const Finding *f = at(&c, "PR017", LINE_FORWARD);
    cr_assert_not_null(f);
    cr_assert(strstr(f->message, "expandable_segments"));
    checked_free(&c);
    Checked quiet = check(profile_with(part_text(PEAK_LINES, NULL, 12 * GiB)));
    cr_assert_eq(count_of(&quiet, "PR017"), 0, "2 GiB over 10 GiB is 20%%: not reported");
    checked_free(&quiet);
}

Test(memory_rules, out_of_memory_at_the_failing_line_with_what_was_alive) {
    Checked c = check(profile_with(part_text(
        "{\"kind\":\"oom\",\"bytes\":8589934592,\"count\":0,\"file\":\"" SRC "\",\"line\":12,\"function\":\"forward\"}",
        ",\"oom\":{\"time_ns\":5,\"bytes\":4294967296,\"device_free\":1073741824,\"allocated\":9663676416,"
        "\"file\":\"" SRC "\",\"line\":22,\"function\":\"train\"}",
        12 * GiB)));
    const Finding *f = at(&c, "PR018", LINE_BACKWARD);
    cr_assert_not_null(f);
    cr_assert(strstr(f->message, "4.29 GB") && strstr(f->message, SRC ":12"), "%s", f->message);
    cr_assert(has_evidence(f, "alive then from " SRC ":12"));
    checked_free(&c);
}

/* ---- memory evidence on static findings ------------------------------------------- */

#define PY010_SRC "tests/fixtures/python/PY010.py"

Test(memory_evidence, an_evaluation_loop_without_no_grad_shows_what_it_keeps) {
    Profile *p = profile_with(part_text(
        "{\"kind\":\"peak\",\"bytes\":2147483648,\"count\":0,\"file\":\"" PY010_SRC "\",\"line\":20},"
        "{\"kind\":\"allocs\",\"bytes\":53687091200,\"count\":500,\"file\":\"" PY010_SRC "\",\"line\":20},"
        "{\"kind\":\"peak\",\"bytes\":1073741824,\"count\":0,\"file\":\"" PY010_SRC "\",\"line\":90}",
        NULL, 12 * GiB));
    Checked c = check_path(p, PY010_SRC, "PY010");
    const Finding *f = at(&c, "PY010", 20);
    cr_assert_not_null(f);
    cr_assert(has_evidence(f, "live at the memory peak: 2.15 GB (20%") && has_evidence(f, "500 device allocations"),
              "%s", evidence_of(f));
    const Finding *other = at(&c, "PY010", 35);
    cr_assert_not_null(other);
    cr_assert_not(has_evidence(other, "memory peak"), "no memory at its lines:%s", evidence_of(other));
    checked_free(&c);
}

/* a real out-of-memory error on the H200 (2026-12-02): bench/memory/train.py --model act --batch 32768
 * --cap-gib 2, profiled with --memory; the failing line is the residual add of Block.forward */
Test(memory_rules, a_real_out_of_memory_error) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/memory/oom_h200.json", PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error ? error : "");
    Checked c = check_path(p, "bench/memory/train.py", "PR018");
    const Finding *f = at(&c, "PR018", 37);
    cr_assert_not_null(f);
    cr_assert(strstr(f->message, "an allocation of 134 MB failed here") && strstr(f->message, "process's own") &&
                  strstr(f->message, "bench/memory/train.py:86"),
              "%s", f->message);
    checked_free(&c);
}

/* ---- PR020: a loop variable that keeps the previous step's output alive ----------- */

#define KEPT_SRC "tests/fixtures/memory/kept_alive.py"
#define KEPT(line) \
    "{\"kind\":\"kept\",\"bytes\":1073741824,\"count\":2,\"file\":\"" KEPT_SRC "\",\"line\":" #line ",\"function\":\"f\"}"

/* the fixed text of a finding's one fix */
static char *fixed_text(const Checked *c, const Finding *f) {
    cr_assert_eq(f->fix_count, 1);
    cr_assert(f->fixes[0].safe);
    size_t length = 0;
    char *out = edits_apply(c->text, strlen(c->text), f->fixes[0].edits, f->fixes[0].edit_count, &length);
    cr_assert_not_null(out);
    return out;
}

Test(memory_rules, a_variable_that_keeps_the_last_output_until_it_is_rebound) {
    Profile *p = profile_with(part_text(KEPT(7) "," KEPT(17) "," KEPT(27) "," KEPT(35) "," KEPT(44) "," KEPT(51) ","
                                        KEPT(60) "," KEPT(71) "," KEPT(69), NULL, 12 * GiB));
    Checked c = check_path(p, KEPT_SRC, "PR020");
    const Finding *plain = at(&c, "PR020", 7), *with = at(&c, "PR020", 17), *late = at(&c, "PR020", 69);
    cr_assert_not_null(plain);
    cr_assert_not_null(with, "a tuple target inside `with autocast()`");
    cr_assert_not_null(late, "out's last read is the loss, before zero_grad");
    cr_assert_eq(count_of(&c, "PR020"), 3,
                 "silent for a carried hidden state, an output read after the loop or in the next epoch, a "
                 "binding under an if, a read from a lambda, and a line that binds nothing");
    cr_assert(strstr(plain->message, "out keeps the previous step's tensors alive") &&
                  strstr(plain->message, "1.07 GB") && strstr(plain->message, "10%") &&
                  strstr(plain->message, "del out after line 8"),
              "%s", plain->message);
    cr_assert_eq(plain->severity, SEVERITY_INFO, "10%% of the peak");
    cr_assert(has_evidence(plain, "1.07 GB (2 tensors)") && has_evidence(plain, "the peak falls by up to 1.07 GB"),
              "%s", evidence_of(plain));
    char *fixed = fixed_text(&c, plain);
    cr_assert(strstr(fixed, "        loss = F.cross_entropy(out, y)  # the last read of out\n        del out\n"
                            "        opt.zero_grad()\n"),
              "%s", fixed);
    free(fixed);
    fixed = fixed_text(&c, with);
    cr_assert(strstr(fixed, "+ aux.mean()\n            del logits, aux\n        loss.backward()"), "%s", fixed);
    cr_assert(strstr(with->message, "del logits, aux after line 18"), "%s", with->message);
    free(fixed);
    checked_free(&c);
}

/* the H200 (2026-12-03): bench/memory/probe.py --variant before --batch 16384, profiled with --memory. The
 * previous step's features (16384 x 8192 floats) were alive at the peak; following the advice lowered the
 * peak by exactly that, 536,870,912 bytes (bench/RESULTS.md) */
Test(memory_rules, a_real_run_keeps_the_previous_features) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/memory/probe_h200.json", PROFILE_FINAL,
                                   &error);
    cr_assert_not_null(p, "%s", error ? error : "");
    Checked c = check_path(p, "bench/memory/probe.py", "PR020");
    cr_assert_eq(count_of(&c, "PR020"), 1, "feats; logits (65.5 MB, 1.8%% of the peak) is below the threshold");
    const Finding *f = at(&c, "PR020", 35);
    cr_assert_not_null(f);
    cr_assert(strstr(f->message, "feats keeps the previous step's tensors alive") && strstr(f->message, "537 MB") &&
                  strstr(f->message, "del feats after line 36"),
              "%s", f->message);
    char *fixed = fixed_text(&c, f);
    cr_assert(strstr(fixed, "        logits = head(feats)\n        del feats\n        loss = "), "%s", fixed);
    free(fixed);
    checked_free(&c);
}

Test(memory_rules, kept_memory_below_the_thresholds_is_not_reported) {
    /* 256 MiB is 2.5% of the 10 GiB peak */
    Profile *p = profile_with(part_text(
        "{\"kind\":\"kept\",\"bytes\":268435456,\"count\":1,\"file\":\"" KEPT_SRC "\",\"line\":7,\"function\":\"train\"}",
        NULL, 12 * GiB));
    Checked c = check_path(p, KEPT_SRC, "PR020");
    cr_assert_eq(count_of(&c, "PR020"), 0);
    checked_free(&c);
}
