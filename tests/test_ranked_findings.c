/* Findings across files ranked by what they cost (server/render/ranked_findings.c):
 * the samples with their H200 profiles, one profile, and no profile; a gain
 * measured in one file that another file's finding would repeat. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "server/render/ranked_findings.h"

#define SAMPLES ADVISE_SOURCE_DIR "/samples"

Test(ranked_findings, samples_with_their_profiles, .timeout = 300) {
    char *error = NULL;
    ProfileSet *set = profile_set_load(SAMPLES "/profiles", &error);
    cr_assert(set, "%s", error);
    Config cfg;
    config_init(&cfg);
    /* the static findings ranked by their measured cost; the profile rules'
     * own findings (PR*) are tested in test_profile_rules.c */
    string_list_add(&cfg.ignore, "PR");
    const char *paths[] = {SAMPLES};
    RankedFindings r;
    cr_assert(ranked_findings_collect_set(paths, 1, ADVISE_SOURCE_DIR, &cfg, set, NULL, NULL, &r, &error), "%s", error);
    cr_expect_eq(r.files_checked, 11);
    cr_expect_eq(r.count, 42);
    for (size_t i = 1; i < r.count; i++)
        cr_expect(r.items[i - 1].cost_seconds >= r.items[i].cost_seconds, "sorted by cost at %zu", i);
    const RankedFinding *top = &r.items[0];
    cr_expect_str_eq(top->path, "samples/python/benchmark_matmul.py");
    /* float32 matmuls on CUDA cores: 0.95 s of FFMA GEMMs, about 0.78 s of it saved with TF32 on the H200 */
    cr_expect_eq(top->line, 49);
    cr_expect_str_eq(top->finding.code, "PY009");
    cr_expect(top->finding.gain.present && top->cost_seconds == top->finding.gain.seconds);
    bool sync_ranked = false; /* a sync's wait has no gain: it ranks by the measured wait */
    for (size_t i = 0; i < r.count; i++)
        if (strcmp(r.items[i].finding.code, "PY003") == 0 && r.items[i].line == 103)
            sync_ranked = !r.items[i].finding.gain.present && r.items[i].cost_seconds > 0.08;
    cr_expect(sync_ranked, "PY003 at benchmark_matmul.py:103 ranked by its 84.6 ms wait");
    cr_expect_not(top->stale);
    bool found = false;
    for (size_t i = 0; i < r.count; i++)
        if (strcmp(r.items[i].path, "samples/cuda/transpose.cu") == 0 && r.items[i].line == 83) {
            found = true;
            cr_expect_eq(r.items[i].column, 9);
            cr_expect_eq(r.items[i].end_line, 83);
            cr_expect(r.items[i].finding.evidence_count > 0);
        }
    cr_expect(found, "CU004 in transpose.cu");
    ranked_findings_free(&r);
    profile_set_free(set);
    config_free(&cfg);
}

Test(ranked_findings, one_profile_and_none) {
    char *error = NULL;
    ProfileView *v = profile_view_load(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/h200/train_classifier.json", &error);
    cr_assert(v, "%s", error);
    Config cfg;
    config_init(&cfg);
    string_list_add(&cfg.ignore, "PR"); /* static findings only, as above */
    const char *paths[] = {SAMPLES "/python/train_classifier.py"};
    RankedFindings r;
    cr_assert(ranked_findings_collect(paths, 1, ADVISE_SOURCE_DIR, &cfg, v, NULL, &r, &error), "%s", error);
    cr_assert_eq(r.count, 8);
    /* the unfused Adam first: 8.04 ms of foreach kernels, 5.70 ms of it the gain */
    cr_expect_str_eq(r.items[0].finding.code, "PY008");
    cr_expect_eq(r.items[0].line, 96);
    /* the batch copies have no gain (64 KiB and 2 KiB copies are staged whole
     * before their DMA: pinned would be no faster on the GPU) and rank by what
     * their lines measured (copy and wait): 104's 1.41 ms before the .item()
     * wait, 105's after it; then the Swish, whose gain counts its backward
     * pass too (0.41 ms) */
    cr_expect_str_eq(r.items[1].finding.code, "PY005");
    cr_expect_eq(r.items[1].line, 104);
    cr_expect_str_eq(r.items[2].finding.code, "PY001", "then the .item() wait");
    cr_expect_eq(r.items[2].line, 111);
    cr_expect_str_eq(r.items[3].finding.code, "PY005");
    cr_expect_eq(r.items[3].line, 105);
    cr_expect_str_eq(r.items[4].finding.code, "PY007");
    cr_expect_eq(r.items[4].line, 51);
    ranked_findings_free(&r);

    cr_assert(ranked_findings_collect(paths, 1, ADVISE_SOURCE_DIR, &cfg, NULL, NULL, &r, &error), "%s", error);
    cr_assert_eq(r.count, 8);
    for (size_t i = 0; i < r.count; i++) cr_expect_eq(r.items[i].cost_seconds, 0);
    cr_expect_eq(r.items[0].finding.severity, SEVERITY_WARNING, "then by severity");
    cr_expect_eq(r.items[r.count - 1].finding.severity, SEVERITY_INFO);
    ranked_findings_free(&r);

    const char *missing[] = {"/nonexistent/advise-file.py"};
    cr_expect_not(ranked_findings_collect(missing, 1, ADVISE_SOURCE_DIR, &cfg, v, NULL, &r, &error));
    cr_expect(error && strstr(error, "no file could be read"), "%s", error);
    free(error);
    profile_view_free(v);
    config_free(&cfg);
}

/* PR019 in one file repeats PY009's program-wide gain measured in another: the
 * ranked list keeps PY009's; without that gain, PR019 stays */
static RankedFinding item(const char *path, const char *code, double gain_seconds, const char *scope) {
    RankedFinding r = {.path = strdup(path), .line = 1, .column = 1, .cost_seconds = gain_seconds};
    r.finding.code = code;
    r.finding.gain.present = gain_seconds > 0;
    r.finding.gain.seconds = gain_seconds;
    r.finding.gain.scope = scope;
    return r;
}

Test(ranked_findings, a_gain_measured_in_another_file_is_not_counted_twice) {
    RankedFindings r = {0};
    r.items = calloc(4, sizeof *r.items);
    cr_assert_not_null(r.items);
    r.items[r.count++] = item("model.py", "PR019", 0.9, "program");
    r.items[r.count++] = item("train.py", "PY009", 1.2, "program");
    r.items[r.count++] = item("train.py", "PY001", 0.1, "program");
    ranked_findings_sort(&r);
    cr_assert_eq(r.count, 2);
    cr_expect_str_eq(r.items[0].finding.code, "PY009");
    cr_expect_str_eq(r.items[1].finding.code, "PY001");
    ranked_findings_free(&r);

    r.items = calloc(4, sizeof *r.items);
    cr_assert_not_null(r.items);
    r.items[r.count++] = item("model.py", "PR019", 0.9, "program");
    r.items[r.count++] = item("train.py", "PY009", 0, NULL); /* no profile measured it */
    ranked_findings_sort(&r);
    cr_assert_eq(r.count, 2, "PY009 without a measured gain leaves PR019 its own");
    cr_expect_str_eq(r.items[0].finding.code, "PR019");
    ranked_findings_free(&r);
}

/* "What to do first" leaves out gains under 1% of the largest: 9 µs beside
 * 1.5 s is not what to do first (the report of a recorded VAE listed PR019's
 * 9.10 µs fourth); they stay in the ranked list */
Test(ranked_findings, what_to_do_first_leaves_out_negligible_gains) {
    RankedFindings r = {0};
    r.items = calloc(5, sizeof *r.items);
    cr_assert_not_null(r.items);
    r.items[r.count++] = item("main.py", "PR019", 9.1e-6, "program");
    r.items[r.count++] = item("main.py", "PY014", 1.5, "program");
    r.items[r.count++] = item("main.py", "PY008", 0.014, "program"); /* 0.93% of 1.5 s */
    r.items[r.count++] = item("main.py", "PR002", 0.02, "program"); /* 1.3% */
    r.items[r.count++] = item("main.py", "PY001", 0, NULL);
    ranked_findings_sort(&r);
    RankedFirst first;
    ranked_findings_first(&r, &first);
    cr_assert_eq(first.first_count, 2);
    cr_expect_str_eq(r.items[first.first[0]].finding.code, "PY014");
    cr_expect_str_eq(r.items[first.first[1]].finding.code, "PR002");
    cr_expect_eq(r.count, 5, "the ranked list keeps them all");
    ranked_findings_free(&r);
}
