/* `advise check` with profiles merged: --profile FILE|DIR on the bundled
 * samples and their H200 profiles (text and JSON), the default
 * `[profile] dir`, --no-profile, `[profile] cold`, a stale profile, and the
 * usage errors. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "tests/cli_harness.h"

#define H200 "tests/fixtures/profiles/h200/"

static void copy_file(const char *from, const char *to) {
    char *text = harness_slurp(from);
    write_text(to, text);
    free(text);
}

Test(check_profile, text_on_the_pipeline_sample, .timeout = 120) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--fail-on", "never", "--profile",
                                H200 "pipeline.json", "samples/cuda/pipeline.cu");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "advise: merging profile " H200
                            "pipeline.json (recorded 2026-11-30 15:19 UTC on NVIDIA H200)\n"),
              "%s", r.err);
    cr_expect(strstr(r.out, "samples/cuda/pipeline.cu:105:15: CU006"), "%s", r.out);
    cr_expect(strstr(r.out, "    = measured: this copy moved 16.8 MB in 16 copies from pageable memory at 48.5 GB/s "
                            "(346 \xC2\xB5s); pinned memory would take about 360 \xC2\xB5s"),
              "%s", r.out);
    cr_expect(strstr(r.out, "    = measured: this copy moved 16.8 MB in 16 copies into pageable memory"), "%s", r.out);
    cr_expect(strstr(r.out, "    = measured: this line allocated 16 times: 1.53 ms of host time"), "%s", r.out);
    cr_expect(strstr(r.out, "    = est. gain 1.43 ms (program): allocating once instead of 16 times"), "%s", r.out);
    run_result_free(&r);

    r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--fail-on", "never", "--no-profile",
                      "samples/cuda/pipeline.cu");
    cr_expect_null(strstr(r.out, "= measured: this"), "--no-profile merges nothing:\n%s", r.out);
    cr_expect_null(strstr(r.err, "merging"), "%s", r.err);
    run_result_free(&r);
}

static json_t *finding_at(json_t *doc, const char *code, int line) {
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(doc, "findings"), i, f) {
        json_t *start = json_object_get(json_object_get(f, "range"), "start");
        if (strcmp(json_string_value(json_object_get(f, "code")), code) == 0 &&
            json_integer_value(json_object_get(start, "line")) == line)
            return f;
    }
    return NULL;
}

Test(check_profile, json_on_the_training_sample) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--format", "json", "--fail-on", "never",
                                "--profile", H200 "train_classifier.json", "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    json_error_t error;
    json_t *doc = json_loads(r.out, 0, &error);
    cr_assert(doc, "%s\n%s", error.text, r.out);
    json_t *item = finding_at(doc, "PY001", 111);
    cr_assert(item, "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(doc, "format_version")), 2);
    cr_expect_eq(json_integer_value(json_object_get(doc, "version")), 2, "the format version's first name");
    json_t *evidence = json_object_get(item, "evidence");
    cr_assert_eq(json_array_size(evidence), 1, "%s", r.out);
    /* an item: its kind, its words, its template and its figures as numbers */
    json_t *first = json_array_get(evidence, 0);
    cr_expect_str_eq(json_string_value(json_object_get(first, "kind")), "measured");
    cr_expect_str_eq(json_string_value(json_object_get(first, "text")),
                     "this `loss.item()` ran 100 times and waited 6.93 \xC2\xB5s each on average (693 \xC2\xB5s, "
                     "<0.1% of the run)");
    cr_expect_str_eq(json_string_value(json_object_get(first, "template")),
                     "this `loss.item()` ran {0} times and waited {1} each on average ({2}, {3} of the run)");
    json_t *values = json_object_get(first, "values");
    cr_assert_eq(json_array_size(values), 4, "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(values, 0), "value")), 100);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(values, 0), "unit")), "count");
    double each = json_real_value(json_object_get(json_array_get(values, 1), "value"));
    cr_expect(each > 6.9e-6 && each < 6.96e-6, "%g", each);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(values, 1), "unit")), "s");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(values, 3), "unit")), "ratio");
    cr_expect(json_is_null(json_object_get(item, "gain")), "no gain is claimed for a sync's wait");
    item = finding_at(doc, "PY005", 104);
    cr_assert(item);
    cr_expect(strstr(json_string_value(json_object_get(json_array_get(json_object_get(item, "evidence"), 0), "text")),
                     "this copy moved 6.55 MB in 100 copies from pageable memory"));
    /* a gain's model is an item of kind "model" */
    item = finding_at(doc, "PY008", 96);
    cr_assert(item, "%s", r.out);
    json_t *model = json_object_get(json_object_get(item, "gain"), "model");
    cr_expect_str_eq(json_string_value(json_object_get(model, "kind")), "model");
    cr_expect(strstr(json_string_value(json_object_get(model, "text")), "x (1 - 0.38)"), "%s", r.out);
    item = finding_at(doc, "PY010", 63);
    cr_assert(item);
    cr_expect_eq(json_array_size(json_object_get(item, "evidence")), 0);
    cr_expect(json_is_null(json_object_get(item, "gain")));
    json_decref(doc);
    run_result_free(&r);
}

/* a project in a temporary folder: advise.toml, the training sample and its
 * profile in the configured profile folder */
static char *project(const char *toml) {
    char *dir = temp_dir();
    write_text(path_in(dir, "advise.toml"), toml);
    mkdir(path_in(dir, "samples"), 0755);
    mkdir(path_in(dir, "samples/python"), 0755);
    mkdir(path_in(dir, "profiles"), 0755);
    copy_file(ADVISE_SOURCE_DIR "/samples/python/train_classifier.py",
              path_in(dir, "samples/python/train_classifier.py"));
    copy_file(ADVISE_SOURCE_DIR "/" H200 "train_classifier.json", path_in(dir, "profiles/train_classifier.json"));
    return dir;
}

Test(check_profile, the_configured_folder_by_default) {
    char *dir = project("[profile]\ndir = \"profiles\"\n");
    RunResult r = run_advise_at(dir, "check", "--fail-on", "never", "samples/python/train_classifier.py");
    cr_expect(strstr(r.err, "advise: merging profile profiles/train_classifier.json (recorded 2026-11-30 15:19 UTC "
                            "on NVIDIA H200)"),
              "%s", r.err);
    cr_expect(strstr(r.out, "= measured: this `loss.item()` ran 100 times"), "%s", r.out);
    run_result_free(&r);

    r = run_advise_at(dir, "check", "--fail-on", "never", "--no-profile", "samples/python/train_classifier.py");
    cr_expect_null(strstr(r.out, "= measured: this"), "%s", r.out);
    run_result_free(&r);

    /* the file changed since it was profiled */
    FILE *f = fopen(path_in(dir, "samples/python/train_classifier.py"), "a");
    fputs("# edited after profiling\n", f);
    fclose(f);
    r = run_advise_at(dir, "check", "--fail-on", "never", "samples/python/train_classifier.py");
    cr_expect(strstr(r.out, "    = caveat: (profile is older than this file: figures from 2026-11-30 15:19 UTC)"),
              "%s", r.out);
    run_result_free(&r);
}

Test(check_profile, no_folder_no_merge) {
    char *dir = project("[check]\nfail-on = \"never\"\n"); /* default folder .advise/profiles: absent */
    RunResult r = run_advise_at(dir, "check", "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_null(strstr(r.err, "merging"), "%s", r.err);
    cr_expect_null(strstr(r.out, "= measured: this"), "%s", r.out);
    run_result_free(&r);
}

/* the profile without its content hash: figures are taken as they are */
static void drop_hash(const char *profile) {
    char *text = harness_slurp(profile);
    char *hash = strstr(text, "\"sha256\":\"");
    cr_assert(hash);
    char *end = strchr(hash + 10, '"');
    size_t head = (size_t)(hash - text);
    char *out = malloc(strlen(text) + 8);
    memcpy(out, text, head);
    sprintf(out + head, "\"sha256\":null%s", end + 1);
    write_text(profile, out);
    free(out);
    free(text);
}

Test(check_profile, cold_code_from_the_config) {
    char *dir = project("[profile]\ndir = \"profiles\"\ncold = \"hide\"\n");
    drop_hash(path_in(dir, "profiles/train_classifier.json"));
    /* a function the profile never saw, with a sync in its GPU loop */
    FILE *f = fopen(path_in(dir, "samples/python/train_classifier.py"), "a");
    fputs("\n\ndef never_called(model, xs):\n    for x in xs:\n        model(x.cuda()).sum().backward()\n"
          "        torch.cuda.synchronize()\n",
          f);
    fclose(f);
    RunResult r = run_advise_at(dir, "check", "--fail-on", "never", "--no-source", "--select", "PY003",
                                "samples/python/train_classifier.py");
    cr_expect(strstr(r.out, "Found 1 finding in 1 file"), "the one in never_called() is hidden:\n%s", r.out);
    cr_expect(strstr(r.out, "train_classifier.py:117:9: PY003"), "%s", r.out);
    run_result_free(&r);

    r = run_advise_at(dir, "check", "--fail-on", "never", "--no-source", "--select", "PY003", "--no-profile",
                      "samples/python/train_classifier.py");
    cr_expect(strstr(r.out, "Found 2 findings"), "%s", r.out);
    run_result_free(&r);

    write_text(path_in(dir, "advise.toml"), "[profile]\ndir = \"profiles\"\n"); /* cold = "hint", the default */
    r = run_advise_at(dir, "check", "--fail-on", "never", "--no-source", "--select", "PY003",
                      "samples/python/train_classifier.py");
    cr_expect(strstr(r.out, "1 warning, 1 hint"), "%s", r.out);
    cr_expect(strstr(r.out, "= measured: the profile measured no GPU work in `never_called`: cold code"), "%s",
              r.out);
    run_result_free(&r);
}

Test(check_profile, usage_errors) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--profile", "/nonexistent/p.json",
                                "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise check: --profile: /nonexistent/p.json:"), "%s", r.err);
    run_result_free(&r);

    r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--profile", H200 "pipeline.json", "--no-profile",
                      "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "exclude each other"), "%s", r.err);
    run_result_free(&r);

    r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-config", "--fail-on", "never", "--profile",
                      H200 "pipeline.json", "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.err, "the profile mentions none of the checked files"), "%s", r.err);
    run_result_free(&r);
}

/* --fix merges the profile first: a fix it withholds (PY006's SDPA on a
 * float32 decode loop, measured 2.3x slower) is not applied, in any pass;
 * the other fixes are. Without the profile the SDPA fix is applied. */
Test(check_profile, fix_leaves_out_what_the_profile_withholds, .timeout = 120) {
    char root[] = "/tmp/advise-fix-profile-XXXXXX";
    cr_assert_not_null(mkdtemp(root));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/samples/python %s/samples/profiles", root, root);
    cr_assert_eq(system(cmd), 0);
    char from[1024], to[1024];
    const char *files[] = {"advise.toml", "samples/python/generate_text.py", "samples/profiles/generate_text.json"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(from, sizeof from, "%s/%s", ADVISE_SOURCE_DIR, files[i]);
        snprintf(to, sizeof to, "%s/%s", root, files[i]);
        copy_file(from, to);
    }
    RunResult r = run_advise_at(root, "check", "--fail-on", "never", "--fix", "--unsafe-fixes",
                                "samples/python/generate_text.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    snprintf(to, sizeof to, "%s/samples/python/generate_text.py", root);
    char *fixed = harness_slurp(to);
    cr_expect(strstr(fixed, "F.gelu(x, approximate=\"tanh\")"), "the other fixes are applied:\n%s", fixed);
    cr_expect(strstr(fixed, "out = weights @ v"), "the attention stays as written");
    cr_expect_null(strstr(fixed, "scaled_dot_product_attention(q, k, v"), "SDPA is withheld");
    free(fixed);
    run_result_free(&r);

    snprintf(from, sizeof from, "%s/samples/python/generate_text.py", ADVISE_SOURCE_DIR);
    copy_file(from, to);
    r = run_advise_at(root, "check", "--fail-on", "never", "--no-profile", "--fix", "--unsafe-fixes",
                      "samples/python/generate_text.py");
    fixed = harness_slurp(to);
    cr_expect(strstr(fixed, "scaled_dot_product_attention(q, k, v"), "without the profile the fix is applied");
    free(fixed);
    run_result_free(&r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_expect_eq(system(cmd), 0);
}

/* After --fix, the figures follow the code: the fixes insert a line above
 * `running_loss += loss.item()` (line 111), and its measured figures are
 * reported at line 112, fresh (no "older than this file" caveat), because
 * the text before the fixes was what the profile measured. */
Test(check_profile, figures_follow_the_lines_through_fixes, .timeout = 120) {
    char *dir = project("[profile]\ndir = \"profiles\"\n");
    RunResult r = run_advise_at(dir, "check", "--fail-on", "never", "--fix", "--unsafe-fixes",
                                "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    const char *at = strstr(r.out, "samples/python/train_classifier.py:112:29: PY001");
    cr_expect(at, "PY001 moved down with its line:\n%s", r.out);
    cr_expect(at && strstr(at, "= measured: this `loss.item()` ran 100 times"), "%s", r.out);
    cr_expect_null(strstr(r.out, "profile is older than this file"), "%s", r.out);
    run_result_free(&r);
    /* a second check sees a file that differs from the profiled one: stale, as before */
    r = run_advise_at(dir, "check", "--fail-on", "never", "samples/python/train_classifier.py");
    cr_expect(strstr(r.out, "profile is older than this file"), "%s", r.out);
    run_result_free(&r);
}

/* --quiet drops the summary and the note on what was merged, never a warning:
 * a profile skipped as unreadable, or one that mentions none of the files. */
Test(check_profile, quiet_keeps_the_warnings) {
    char *dir = project("[profile]\ndir = \"profiles\"\n");
    write_text(path_in(dir, "profiles/broken.json"), "{ not a profile");
    RunResult r = run_advise_at(dir, "check", "--quiet", "--fail-on", "never", "samples/python/train_classifier.py");
    cr_expect(strstr(r.err, "advise: skipped profile "), "%s", r.err);
    cr_expect(strstr(r.err, "broken.json"), "%s", r.err);
    cr_expect_null(strstr(r.err, "advise: merging"), "the merge note is not a warning: %s", r.err);
    cr_expect_null(strstr(r.out, "Found "), "no summary line: %s", r.out);
    run_result_free(&r);

    write_text(path_in(dir, "other.py"), "import torch\n");
    r = run_advise_at(dir, "check", "--quiet", "--profile", "profiles/train_classifier.json", "other.py");
    cr_expect(strstr(r.err, "advise: the profile mentions none of the checked files; nothing was merged"), "%s",
              r.err);
    run_result_free(&r);
}
