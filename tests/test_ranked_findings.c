/* Findings across files ranked by what they cost (server/render/ranked_findings.c):
 * the samples with their H200 profiles, one profile, and no profile. */
#include <criterion/criterion.h>

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
