/* `advise check --write-baseline FILE` and `--baseline FILE`: the file is
 * sorted and byte-stable; a later run reports only findings the baseline
 * does not hold and counts the known and the fixed ones (fixed only in files
 * it checked and that parsed cleanly); fingerprints survive lines inserted
 * above and a rename, and two identical findings of a file differ; SARIF,
 * JSON, GitHub and GitLab show the counts; --diff-base combines; a corrupt
 * or hostile baseline is a clear error (exit 2), never a crash. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "server/render/baseline.h"
#include "tests/cli_harness.h"

#define LOOP(name)                \
    "def " name "(loader):\n"    \
    "    for " name "_x in loader:\n"       \
    "        torch.cuda.empty_cache()  # " name "\n"
#define SAME_LOOP(name)           \
    "def " name "(loader):\n"    \
    "    for x in loader:\n"       \
    "        torch.cuda.empty_cache()\n"

static void put(const char *dir, const char *name, const char *text) { write_text(path_in(dir, name), text); }

/* advise check --no-config --no-profile ARGS in dir */
#define check_in(dir, ...) run_advise_at(dir, "check", "--no-config", "--no-profile", __VA_ARGS__)

static json_t *parse_out(RunResult *r) {
    json_error_t err;
    json_t *doc = json_loads(r->out, 0, &err);
    cr_assert(doc != NULL, "not JSON (status %d, %s): %s\nstderr: %s", r->status, err.text, r->out, r->err);
    return doc;
}

static json_int_t baseline_count(json_t *doc, const char *key) {
    return json_integer_value(json_object_get(json_object_get(json_object_get(doc, "summary"), "baseline"), key));
}

/* a project root of its own (advise.toml), so that paths are relative to it */
static char *project(void) {
    char *dir = temp_dir();
    put(dir, "advise.toml", "");
    return dir;
}

Test(baseline, written_sorted_one_a_line_and_byte_stable) {
    char *dir = project();
    put(dir, "b.py", "import torch\n\n" LOOP("one") LOOP("two"));
    put(dir, "a.py", "import torch\n\n" LOOP("three"));
    RunResult r = check_in(dir, "--write-baseline", "base.json", ".");
    cr_expect_eq(r.status, 0, "recording accepts today's findings: %s", r.err);
    cr_expect(strstr(r.out, "Recorded 3 findings in base.json.") != NULL, "%s", r.out);
    run_result_free(&r);
    char *first = harness_slurp(path_in(dir, "base.json"));
    r = check_in(dir, "--write-baseline", "base.json", ".");
    run_result_free(&r);
    char *second = harness_slurp(path_in(dir, "base.json"));
    cr_expect_str_eq(first, second, "two writes of the same findings give the same bytes");

    json_t *doc = json_loads(first, 0, NULL);
    cr_assert(doc);
    cr_expect_eq(json_integer_value(json_object_get(doc, "version")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "fingerprint")), "adviseFinding/v1");
    json_t *findings = json_object_get(doc, "findings");
    cr_assert_eq(json_array_size(findings), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(findings, i);
        cr_expect_str_eq(json_string_value(json_object_get(e, "rule")), "PY003");
        cr_expect_eq(strlen(json_string_value(json_object_get(e, "fingerprint"))), 64);
        cr_expect(json_integer_value(json_object_get(e, "line")) > 0);
        cr_expect(json_string_value(json_object_get(e, "message")) != NULL);
        if (i == 0) continue;
        json_t *p = json_array_get(findings, i - 1);
        int c = strcmp(json_string_value(json_object_get(p, "path")), json_string_value(json_object_get(e, "path")));
        if (!c)
            c = strcmp(json_string_value(json_object_get(p, "fingerprint")),
                       json_string_value(json_object_get(e, "fingerprint")));
        cr_expect(c < 0, "sorted by path, rule, fingerprint");
    }
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(findings, 0), "path")), "a.py",
                     "relative to the project root");
    /* one finding a line: the file's lines are the header, 3 entries and the closing lines */
    size_t lines = 0;
    for (const char *p = first; *p; p++) lines += *p == '\n';
    cr_expect_eq(lines, 5 + 3 + 2, "%s", first);
    json_decref(doc);
    free(first);
    free(second);
}

Test(baseline, new_known_and_fixed) {
    char *dir = project();
    put(dir, "a.py", "import torch\n\n" LOOP("one") LOOP("two") LOOP("three"));
    put(dir, "b.py", "import torch\n\n" LOOP("four"));
    RunResult r = check_in(dir, "--write-baseline", "base.json", ".");
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_result_free(&r);
    /* "two" fixed, "five" new, lines inserted above */
    put(dir, "a.py", "import torch\n# a comment\n\n\n" LOOP("one") LOOP("three") LOOP("five"));

    r = check_in(dir, "--baseline", "base.json", "--format", "json", "a.py");
    cr_expect_eq(r.status, 1, "the new warning fails the run");
    json_t *doc = parse_out(&r);
    json_t *findings = json_object_get(doc, "findings");
    cr_assert_eq(json_array_size(findings), 1);
    cr_expect(strstr(json_string_value(json_object_get(json_array_get(findings, 0), "message")), "empty_cache"));
    cr_expect_eq(baseline_count(doc, "new"), 1);
    cr_expect_eq(baseline_count(doc, "known"), 2);
    cr_expect_eq(baseline_count(doc, "fixed"), 1, "b.py was not checked: its finding is neither known nor fixed");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(doc, "summary"), "findings")), 1);
    json_decref(doc);
    run_result_free(&r);

    r = check_in(dir, "--baseline", "base.json", ".");
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.out, "Found 1 finding in 2 files (1 warning). Baseline: 3 known findings left out, 1 fixed.") !=
                  NULL,
              "%s", r.out);
    run_result_free(&r);

    /* nothing new: exit 0 although known warnings remain */
    put(dir, "a.py", "import torch\n\n" LOOP("one") LOOP("three"));
    r = check_in(dir, "--baseline", "base.json", ".");
    cr_expect_eq(r.status, 0, "%s", r.out);
    run_result_free(&r);
}

Test(baseline, fixed_counts_only_files_that_parsed_cleanly) {
    char *dir = project();
    put(dir, "a.py", "import torch\n\n" LOOP("one") LOOP("two"));
    RunResult r = check_in(dir, "--write-baseline", "base.json", ".");
    run_result_free(&r);
    put(dir, "a.py", "import torch\n\n" LOOP("one") "def broken(:\n");
    r = check_in(dir, "--baseline", "base.json", "--format", "json", ".");
    json_t *doc = parse_out(&r);
    cr_expect_eq(baseline_count(doc, "fixed"), 0, "a file checked in part cannot show a finding is gone");
    json_decref(doc);
    run_result_free(&r);
}

Test(baseline, survives_lines_inserted_above_and_a_rename) {
    char *dir = project();
    put(dir, "a.py", "import torch\n\n" LOOP("one") LOOP("two"));
    RunResult r = check_in(dir, "--write-baseline", "base.json", ".");
    run_result_free(&r);
    unlink(path_in(dir, "a.py"));
    put(dir, "renamed.py", "import torch\nimport os\n\n\n" LOOP("one") "\n\n" LOOP("two"));
    r = check_in(dir, "--baseline", "base.json", "--format", "json", ".");
    cr_expect_eq(r.status, 0, "%s", r.out);
    json_t *doc = parse_out(&r);
    cr_expect_eq(baseline_count(doc, "new"), 0);
    cr_expect_eq(baseline_count(doc, "known"), 2, "the entries of a file that is gone match a renamed file");
    cr_expect_eq(baseline_count(doc, "fixed"), 0);
    json_decref(doc);
    run_result_free(&r);
}

Test(baseline, identical_findings_of_a_file_differ) {
    char *dir = project();
    put(dir, "a.py", "import torch\n\n" SAME_LOOP("one") SAME_LOOP("two"));
    RunResult r = check_in(dir, "--write-baseline", "base.json", ".");
    run_result_free(&r);
    Baseline b;
    char *error = NULL;
    cr_assert(baseline_read(path_in(dir, "base.json"), &b, &error), "%s", error);
    cr_assert_eq(b.count, 2);
    cr_expect_str_neq(b.items[0].fingerprint, b.items[1].fingerprint);
    baseline_free(&b);
    put(dir, "a.py", "import torch\n\n" SAME_LOOP("one") SAME_LOOP("two") SAME_LOOP("three"));
    r = check_in(dir, "--baseline", "base.json", "--format", "json", ".");
    json_t *doc = parse_out(&r);
    cr_expect_eq(baseline_count(doc, "new"), 1, "a third identical finding is new");
    cr_expect_eq(baseline_count(doc, "known"), 2);
    json_decref(doc);
    run_result_free(&r);
}

Test(baseline, sarif_github_and_gitlab_show_it) {
    char *dir = project();
    put(dir, "a.py", "import torch\n\n" LOOP("one") LOOP("two"));
    RunResult r = check_in(dir, "--write-baseline", "base.json", ".");
    run_result_free(&r);
    put(dir, "a.py", "import torch\n\n" LOOP("one") LOOP("three"));

    r = check_in(dir, "--baseline", "base.json", "--format", "sarif", ".");
    json_t *doc = parse_out(&r);
    json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
    json_t *results = json_object_get(run, "results");
    cr_assert_eq(json_array_size(results), 1);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(results, 0), "baselineState")), "new");
    json_t *counts = json_object_get(json_object_get(run, "properties"), "baseline");
    cr_expect_eq(json_integer_value(json_object_get(counts, "new")), 1);
    cr_expect_eq(json_integer_value(json_object_get(counts, "unchanged")), 1);
    cr_expect_eq(json_integer_value(json_object_get(counts, "absent")), 1);
    json_decref(doc);
    run_result_free(&r);

    r = check_in(dir, "--baseline", "base.json", "--format", "gitlab", ".");
    doc = parse_out(&r);
    cr_expect_eq(json_array_size(doc), 1);
    cr_expect(strstr(r.err, "baseline: 1 new, 1 known (left out), 1 fixed") != NULL, "%s", r.err);
    json_decref(doc);
    run_result_free(&r);

    char *summary = path_in(dir, "step-summary.md");
    setenv("GITHUB_STEP_SUMMARY", summary, 1);
    r = check_in(dir, "--baseline", "base.json", "--format", "github", ".");
    cr_expect_eq(r.status, 1);
    size_t annotations = 0;
    for (const char *p = r.out; (p = strstr(p, "::warning ")); p++) annotations++;
    cr_expect_eq(annotations, 1, "%s", r.out);
    char *md = harness_slurp(summary);
    cr_expect(strstr(md, "baseline: 1 new, 1 known (left out), 1 fixed") != NULL, "%s", md);
    free(md);
    run_result_free(&r);
}

Test(baseline, combines_with_diff_base) {
    char *base = temp_dir();
    char *home = path_in(base, "home"), *repo = path_in(base, "repo");
    mkdir(home, 0755);
    mkdir(repo, 0755);
    setenv("HOME", home, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    put(repo, "a.py", "import torch\n\n" LOOP("one") "\n" LOOP("two"));
    char command[4096];
    snprintf(command, sizeof command,
             "cd '%s' && git init -q && git add a.py && git -c user.name=t -c user.email=t@example.com commit -q -m 1",
             repo);
    RunResult g = harness_run_shell(command);
    cr_assert_eq(g.status, 0, "%s", g.err);
    run_result_free(&g);
    RunResult r = check_in(repo, "--write-baseline", "base.json", "a.py");
    run_result_free(&r);
    /* "one" moved below "two" (changed lines for git, known to the baseline), "three" added */
    put(repo, "a.py", "import torch\n\n" LOOP("two") "\n" LOOP("one") "\n" LOOP("three"));
    r = check_in(repo, "--diff-base", "HEAD", "--baseline", "base.json", "--format", "json", "a.py");
    json_t *doc = parse_out(&r);
    json_t *findings = json_object_get(doc, "findings");
    cr_assert_eq(json_array_size(findings), 1);
    cr_expect(strstr(json_string_value(json_object_get(json_array_get(findings, 0), "message")), "empty_cache"));
    cr_expect_eq(json_integer_value(json_object_get(
                     json_object_get(json_object_get(json_array_get(findings, 0), "range"), "start"), "line")),
                 13);
    cr_expect_eq(baseline_count(doc, "new"), 1);
    cr_expect_eq(baseline_count(doc, "known"), 1, "the moved one");
    cr_expect_eq(json_integer_value(json_object_get(
                     json_object_get(json_object_get(doc, "summary"), "diff_base"), "outside_changes")),
                 1, "the unchanged one");
    json_decref(doc);
    run_result_free(&r);
}

/* ---- usage and hostile files ---- */

Test(baseline, refused_with_write_baseline_and_fixes) {
    RunResult r = run_advise("check", "--no-config", "--baseline", "a.json", "--write-baseline", "b.json", ".");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "exclude each other") != NULL, "%s", r.err);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--baseline", "a.json", "--diff", ".");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
}

Test(baseline, corrupt_files_are_clear_errors) {
    char *dir = project();
    put(dir, "a.py", "import torch\n\n" LOOP("one"));
    const char *bad[] = {
        "",
        "[]",
        "{\"findings\": []}",
        "{\"version\": 2, \"findings\": []}",
        "{\"version\": 1}",
        "{\"version\": 1, \"fingerprint\": \"other/v9\", \"findings\": []}",
        "{\"version\": 1, \"findings\": [1]}",
        "{\"version\": 1, \"findings\": [{\"path\": \"a.py\", \"rule\": \"PY003\", \"fingerprint\": \"xyz\"}]}",
        "{\"version\": 1, \"findings\": [{\"path\": \"a\\u0000.py\", \"rule\": \"PY003\", \"fingerprint\": "
        "\"0000000000000000000000000000000000000000000000000000000000000000\"}]}",
        "{\"version\": 1, \"findings\": [{\"path\": \"a.py\", \"rule\": \"PY003\", \"fingerprint\": "
        "\"0000000000000000000000000000000000000000000000000000000000000000\", \"line\": -4}]}",
        "{\"version\": 1, \"version\": 1, \"findings\": []}",
        "{\"version\": 1, \"findings\": [",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        put(dir, "bad.json", bad[i]);
        RunResult r = check_in(dir, "--baseline", "bad.json", ".");
        cr_expect_eq(r.status, 2, "case %zu: %s", i, r.err);
        cr_expect(strstr(r.err, "advise check: --baseline: bad.json: ") != NULL, "case %zu: %s", i, r.err);
        run_result_free(&r);
    }
    /* deep nesting */
    char *deep = malloc(200001);
    memset(deep, '[', 100000);
    memset(deep + 100000, ']', 100000);
    deep[200000] = '\0';
    put(dir, "bad.json", deep);
    free(deep);
    RunResult r = check_in(dir, "--baseline", "bad.json", ".");
    cr_expect_eq(r.status, 2, "%s", r.err);
    run_result_free(&r);
    /* a folder, and a file over the size bound (sparse: nothing is written) */
    r = check_in(dir, "--baseline", dir, ".");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
    char *big = path_in(dir, "big.json");
    FILE *f = fopen(big, "w");
    cr_assert(f && ftruncate(fileno(f), (off_t)BASELINE_MAX_BYTES + 1) == 0);
    fclose(f);
    r = check_in(dir, "--baseline", "big.json", ".");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "too large") != NULL, "%s", r.err);
    run_result_free(&r);
}

Test(baseline, mutated_files_never_crash_the_reader) {
    char *dir = project();
    put(dir, "a.py", "import torch\n\n" LOOP("one") LOOP("two"));
    RunResult r = check_in(dir, "--write-baseline", "base.json", ".");
    run_result_free(&r);
    char *good = harness_slurp(path_in(dir, "base.json"));
    size_t n = strlen(good);
    char *path = path_in(dir, "m.json");
    srand(11);
    for (int round = 0; round < 2000; round++) {
        char *buf = malloc(n + 1);
        memcpy(buf, good, n + 1);
        for (int k = 1 + rand() % 4; k > 0; k--) buf[(size_t)rand() % n] = (char)(rand() % 256);
        FILE *f = fopen(path, "wb");
        fwrite(buf, 1, (size_t)rand() % (n + 1), f);
        fclose(f);
        free(buf);
        Baseline b;
        char *error = NULL;
        if (baseline_read(path, &b, &error)) baseline_free(&b);
        else cr_assert(error != NULL);
        free(error);
    }
    free(good);
}
