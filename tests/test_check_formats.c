/* `advise check` for pull-request checks: --format sarif, github and gitlab,
 * -o FILE, and stdin (-) with --stdin-filename, run as a CI job runs them. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "rules/rule.h"
#include "server/render/check_pr_output.h"
#include "tests/cli_harness.h"

/* PY003 (warning) flags the empty_cache() in the loop */
#define LOOP(name)                   \
    "def " name "(loader):\n"       \
    "    for x in loader:\n"          \
    "        torch.cuda.empty_cache()\n"

static const char *const FLAGGED = "import torch\n\n" LOOP("run");

static char *make_file(const char *dir, const char *name, const char *text) {
    char *p = path_in(dir, name);
    write_text(p, text);
    return p;
}

/* `advise check --no-config --format FORMAT NAME` in dir, its stdout parsed */
static json_t *check_json(const char *dir, const char *format, const char *name) {
    RunResult r = run_advise_at(dir, "check", "--no-config", "--format", format, name);
    cr_assert(r.status == 0 || r.status == 1, "status %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    json_error_t err;
    json_t *doc = json_loads(r.out, 0, &err);
    cr_assert(doc != NULL, "not JSON (%s): %s", err.text, r.out);
    run_result_free(&r);
    return doc;
}

static json_t *sarif_results(json_t *doc) {
    return json_object_get(json_array_get(json_object_get(doc, "runs"), 0), "results");
}

static const char *fingerprint_of(json_t *result) {
    return json_string_value(json_object_get(json_object_get(result, "partialFingerprints"), "adviseFinding/v1"));
}

static json_int_t region_field(json_t *result, const char *field) {
    json_t *loc = json_array_get(json_object_get(result, "locations"), 0);
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(loc, "physicalLocation"), "region"), field));
}

Test(sarif, structure_rules_and_results) {
    char *dir = temp_dir();
    make_file(dir, "loop.py", FLAGGED);
    json_t *doc = check_json(dir, "sarif", "loop.py");
    cr_expect_str_eq(json_string_value(json_object_get(doc, "version")), "2.1.0");
    json_t *runs = json_object_get(doc, "runs");
    cr_assert_eq(json_array_size(runs), 1);
    json_t *run = json_array_get(runs, 0);
    json_t *driver = json_object_get(json_object_get(run, "tool"), "driver");
    cr_expect_str_eq(json_string_value(json_object_get(driver, "name")), "advise");
    cr_expect(json_string_value(json_object_get(driver, "version")) != NULL);
    size_t rule_count;
    const Rule *const *rules = rules_all(&rule_count);
    json_t *sarif_rules = json_object_get(driver, "rules");
    cr_assert_eq(json_array_size(sarif_rules), rule_count, "every rule of the registry");
    for (size_t i = 0; i < rule_count; i++) {
        json_t *r = json_array_get(sarif_rules, i);
        cr_expect_str_eq(json_string_value(json_object_get(r, "id")), rules[i]->code);
        cr_expect_str_eq(json_string_value(json_object_get(r, "name")), rules[i]->name);
        cr_expect_str_eq(json_string_value(json_object_get(json_object_get(r, "shortDescription"), "text")),
                         rules[i]->summary);
        cr_expect(json_string_value(json_object_get(json_object_get(r, "fullDescription"), "text")) != NULL);
        const char *md = json_string_value(json_object_get(json_object_get(r, "help"), "markdown"));
        cr_expect(md && strstr(md, rules[i]->code), "help.markdown of %s", rules[i]->code);
        const char *level =
            json_string_value(json_object_get(json_object_get(r, "defaultConfiguration"), "level"));
        cr_expect(level && (strcmp(level, rules[i]->severity == SEVERITY_ERROR     ? "error"
                                          : rules[i]->severity == SEVERITY_WARNING ? "warning"
                                                                                   : "note") == 0));
        json_t *tags = json_object_get(json_object_get(r, "properties"), "tags");
        /* correctness or performance, then the languages, then profile for rules that need one */
        cr_expect_str_eq(json_string_value(json_array_get(tags, 0)), rules[i]->correctness ? "correctness" : "performance");
        if (strcmp(rules[i]->code, "CU001") == 0 || strcmp(rules[i]->code, "PY002") == 0 ||
            strcmp(rules[i]->code, "CU011") == 0)
            cr_expect(rules[i]->correctness, "%s is about wrong results", rules[i]->code);
        if (strcmp(rules[i]->code, "PY001") == 0) cr_expect(!rules[i]->correctness);
    }
    json_t *results = sarif_results(doc);
    cr_assert_eq(json_array_size(results), 1, "%s", json_dumps(results, 0));
    json_t *res = json_array_get(results, 0);
    cr_expect_str_eq(json_string_value(json_object_get(res, "ruleId")), "PY003");
    cr_expect_str_eq(json_string_value(json_object_get(res, "level")), "warning");
    json_int_t index = json_integer_value(json_object_get(res, "ruleIndex"));
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(sarif_rules, (size_t)index), "id")), "PY003");
    json_t *loc = json_object_get(json_array_get(json_object_get(res, "locations"), 0), "physicalLocation");
    json_t *artifact = json_object_get(loc, "artifactLocation");
    cr_expect_str_eq(json_string_value(json_object_get(artifact, "uri")), "loop.py");
    cr_expect_str_eq(json_string_value(json_object_get(artifact, "uriBaseId")), "%SRCROOT%");
    cr_expect_eq(region_field(res, "startLine"), 5);
    cr_expect_eq(region_field(res, "startColumn"), 9);
    cr_expect_eq(region_field(res, "endLine"), 5);
    cr_expect(region_field(res, "endColumn") > 9);
    const char *fp = fingerprint_of(res);
    cr_expect(fp && strlen(fp) == 64, "fingerprint %s", fp ? fp : "(none)");
    const char *advice = json_string_value(json_object_get(json_object_get(res, "properties"), "advice"));
    cr_expect(advice && strstr(advice, "drop the per-iteration synchronize"), "the rule's advice: %s",
              advice ? advice : "(none)");
    const char *base = json_string_value(json_object_get(
        json_object_get(json_object_get(run, "originalUriBaseIds"), "%SRCROOT%"), "uri"));
    cr_assert(base != NULL);
    cr_expect(strncmp(base, "file:///", 8) == 0 && base[strlen(base) - 1] == '/', "%s", base);
    json_t *invocation = json_array_get(json_object_get(run, "invocations"), 0);
    cr_expect(json_is_true(json_object_get(invocation, "executionSuccessful")));
    json_decref(doc);
}

Test(sarif, fixes_are_artifact_changes) {
    char *dir = temp_dir();
    make_file(dir, "fix.py", "import torch\n\nbuf = torch.zeros(3, 4).cuda()\n"); /* PY004: a safe fix */
    json_t *doc = check_json(dir, "sarif", "fix.py");
    json_t *results = sarif_results(doc);
    bool found = false;
    for (size_t i = 0; i < json_array_size(results); i++) {
        json_t *fix = json_array_get(json_object_get(json_array_get(results, i), "fixes"), 0);
        if (!fix) continue;
        found = true;
        cr_expect(json_string_value(json_object_get(json_object_get(fix, "description"), "text")) != NULL);
        json_t *change = json_array_get(json_object_get(fix, "artifactChanges"), 0);
        cr_expect_str_eq(json_string_value(json_object_get(json_object_get(change, "artifactLocation"), "uri")),
                         "fix.py");
        json_t *rep = json_array_get(json_object_get(change, "replacements"), 0);
        cr_expect(json_integer_value(json_object_get(json_object_get(rep, "deletedRegion"), "startLine")) == 3);
        cr_expect(json_is_string(json_object_get(json_object_get(rep, "insertedContent"), "text")));
    }
    cr_expect(found, "a result with fixes: %s", json_dumps(results, 0));
    json_decref(doc);
}

Test(sarif, fingerprint_stable_when_lines_are_inserted_above) {
    char *dir = temp_dir();
    make_file(dir, "a.py", FLAGGED);
    json_t *before = check_json(dir, "sarif", "a.py");
    make_file(dir, "a.py", "# a comment\n\nimport os\n" "import torch\n\n" LOOP("run"));
    json_t *after = check_json(dir, "sarif", "a.py");
    json_t *r1 = json_array_get(sarif_results(before), 0), *r2 = json_array_get(sarif_results(after), 0);
    cr_assert(r1 && r2);
    cr_expect_eq(region_field(r2, "startLine"), region_field(r1, "startLine") + 3);
    cr_expect_str_eq(fingerprint_of(r1), fingerprint_of(r2));
    json_decref(before);
    json_decref(after);
}

Test(sarif, fingerprint_stable_when_the_file_is_renamed) {
    char *dir = temp_dir();
    make_file(dir, "old_name.py", FLAGGED);
    make_file(dir, "new_name.py", FLAGGED);
    json_t *a = check_json(dir, "sarif", "old_name.py"), *b = check_json(dir, "sarif", "new_name.py");
    json_t *r1 = json_array_get(sarif_results(a), 0), *r2 = json_array_get(sarif_results(b), 0);
    cr_assert(r1 && r2);
    cr_expect_str_eq(fingerprint_of(r1), fingerprint_of(r2));
    json_decref(a);
    json_decref(b);
}

Test(sarif, identical_findings_in_one_file_differ) {
    char *dir = temp_dir();
    make_file(dir, "twice.py", "import torch\n\n" LOOP("one") "\n" LOOP("two"));
    json_t *doc = check_json(dir, "sarif", "twice.py");
    json_t *results = sarif_results(doc);
    cr_assert_eq(json_array_size(results), 2, "%s", json_dumps(results, 0));
    cr_expect_str_neq(fingerprint_of(json_array_get(results, 0)), fingerprint_of(json_array_get(results, 1)));
    json_decref(doc);
}

Test(sarif, columns_count_utf16_code_units) {
    char *dir = temp_dir();
    /* "é" is one UTF-16 unit, the emoji two (a surrogate pair): 8 + 11 units before the call */
    make_file(dir, "wide.py",
              "import torch\n\ndef run(loader):\n    for x in loader:\n"
              "        s = \"\xc3\xa9\xf0\x9f\x98\x80\"; torch.cuda.empty_cache()\n");
    json_t *doc = check_json(dir, "sarif", "wide.py");
    json_t *res = json_array_get(sarif_results(doc), 0);
    cr_assert(res, "%s", json_dumps(doc, 0));
    cr_expect_eq(region_field(res, "startLine"), 5);
    cr_expect_eq(region_field(res, "startColumn"), 20, "got %lld", (long long)region_field(res, "startColumn"));
    json_decref(doc);
}

Test(github, escaping_of_data_and_properties) {
    char *data = github_escape("50% done\r\nnext: a, b", false);
    cr_expect_str_eq(data, "50%25 done%0D%0Anext: a, b");
    char *prop = github_escape("50% done\r\nnext: a, b", true);
    cr_expect_str_eq(prop, "50%25 done%0D%0Anext%3A a%2C b");
    free(data);
    free(prop);
    char *dir = temp_dir();
    make_file(dir, "a,b:c.py", FLAGGED);
    RunResult r = run_advise_at(dir, "check", "--no-config", "--format", "github", "a,b:c.py");
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "::warning file=a%2Cb%3Ac.py,line=5,col=9,endLine=5,") == r.out, "%s", r.out);
    cr_expect(strstr(r.out, ",title=PY003 sync-in-hot-loop::") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "%0Awhat to do: drop the per-iteration synchronize") != NULL, "the advice: %s", r.out);
    cr_expect(strchr(r.out, '\n') == r.out + strlen(r.out) - 1, "one line: %s", r.out);
    run_result_free(&r);
}

Test(github, annotations_capped_with_a_closing_notice_and_summary) {
    char *dir = temp_dir();
    char text[4096] = "import torch\n\n";
    for (int i = 0; i < 12; i++) {
        char fn[16];
        snprintf(fn, sizeof fn, "f%d", i);
        char block[256];
        snprintf(block, sizeof block, LOOP("%s") "\n", fn);
        strcat(text, block);
    }
    make_file(dir, "many.py", text);
    char *summary = path_in(dir, "summary.md");
    char command[1024];
    snprintf(command, sizeof command, "cd '%s' && GITHUB_STEP_SUMMARY='%s' '%s' check --no-config --format github many.py",
             dir, summary, ADVISE_BINARY);
    RunResult r = harness_run_shell(command);
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    size_t warnings = 0, notices = 0;
    for (const char *p = r.out; (p = strstr(p, "::warning ")); p++) warnings++;
    for (const char *p = r.out; (p = strstr(p, "::notice ")); p++) notices++;
    cr_expect_eq(warnings, GITHUB_ANNOTATION_CAP, "%s", r.out);
    cr_expect_eq(notices, 1, "%s", r.out);
    cr_expect(strstr(r.out, "::notice title=advise::2 more findings not annotated") != NULL, "%s", r.out);
    char *md = harness_slurp(summary);
    cr_expect(strstr(md, "## advise check") != NULL, "%s", md);
    cr_expect(strstr(md, "12 findings in 1 file") != NULL, "%s", md);
    cr_expect(strstr(md, "2 findings were not annotated") != NULL, "%s", md);
    cr_expect(strstr(md, "| 1 | `PY003` sync-in-hot-loop | `many.py:5` | warning |") != NULL, "%s", md);
    free(md);
    run_result_free(&r);
}

Test(gitlab, code_quality_shape_and_sarif_fingerprint) {
    char *dir = temp_dir();
    make_file(dir, "loop.py", FLAGGED);
    json_t *doc = check_json(dir, "gitlab", "loop.py");
    cr_assert(json_is_array(doc));
    cr_assert_eq(json_array_size(doc), 1);
    json_t *issue = json_array_get(doc, 0);
    cr_expect(strstr(json_string_value(json_object_get(issue, "description")), "PY003") != NULL);
    cr_expect_str_eq(json_string_value(json_object_get(issue, "check_name")), "PY003");
    cr_expect_str_eq(json_string_value(json_object_get(issue, "severity")), "major");
    json_t *location = json_object_get(issue, "location");
    cr_expect_str_eq(json_string_value(json_object_get(location, "path")), "loop.py");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(location, "lines"), "begin")), 5);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(location, "lines"), "end")), 5);
    json_t *sarif = check_json(dir, "sarif", "loop.py");
    cr_expect_str_eq(json_string_value(json_object_get(issue, "fingerprint")),
                     fingerprint_of(json_array_get(sarif_results(sarif), 0)));
    json_decref(sarif);
    json_decref(doc);
}

Test(output, o_writes_the_file_and_nothing_to_stdout) {
    char *dir = temp_dir();
    make_file(dir, "loop.py", FLAGGED);
    RunResult r = run_advise_at(dir, "check", "--no-config", "--format", "sarif", "-o", "out/../report.sarif",
                                "loop.py");
    cr_expect_eq(r.status, 2, "out/ does not exist: %s%s", r.out, r.err);
    run_result_free(&r);
    r = run_advise_at(dir, "check", "--no-config", "--format", "sarif", "--output", "report.sarif", "loop.py");
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect_str_eq(r.out, "");
    char *text = harness_slurp(path_in(dir, "report.sarif"));
    json_t *doc = json_loads(text, 0, NULL);
    cr_assert(doc != NULL, "%s", text);
    cr_expect_eq(json_array_size(sarif_results(doc)), 1);
    json_decref(doc);
    free(text);
    run_result_free(&r);
}

Test(output, stdin_checked_as_stdin_filename) {
    char *dir = temp_dir();
    make_file(dir, "source.txt", FLAGGED);
    char command[1024];
    snprintf(command, sizeof command,
             "cd '%s' && '%s' check --no-config --format gitlab --stdin-filename pkg/train.py - < source.txt", dir,
             ADVISE_BINARY);
    RunResult r = harness_run_shell(command);
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert(doc != NULL, "%s", r.out);
    json_t *location = json_object_get(json_array_get(doc, 0), "location");
    cr_expect_str_eq(json_string_value(json_object_get(location, "path")), "pkg/train.py");
    json_decref(doc);
    run_result_free(&r);
    /* without a name there is no language to check it as */
    r = run_advise_at(dir, "check", "--no-config", "-");
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "--stdin-filename") != NULL, "%s", r.err);
    run_result_free(&r);
}

/* ---- a runner without the CUDA toolkit --------------------------------------------------- */

static const char *const KERNEL_CU = "__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n"
                                     "void run(float *d) { k<<<1, 32>>>(d); }\n";

/* Runs `advise check --no-config ARGS...` in dir with CUDA_PATH pointing at a folder without the toolkit. */
static RunResult check_without_cuda(const char *dir, const char *const *args, size_t n) {
    char *empty = path_in(dir, "no-toolkit");
    mkdir(empty, 0755);
    setenv("CUDA_PATH", empty, 1);
    const char *argv[16] = {"check", "--no-config", "--no-profile"};
    size_t k = 3;
    for (size_t i = 0; i < n && k < 15; i++) argv[k++] = args[i];
    argv[k] = NULL;
    RunResult r = run_advise_in(dir, argv);
    unsetenv("CUDA_PATH");
    return r;
}

Test(no_cuda, cuda_files_skipped_once_and_the_run_stays_green) {
    char *dir = temp_dir();
    make_file(dir, "a.cu", KERNEL_CU);
    make_file(dir, "b.cu", KERNEL_CU);
    make_file(dir, "loop.py", FLAGGED);
    const char *args[] = {"--fail-on", "never", "."};
    RunResult r = check_without_cuda(dir, args, 3);
    cr_expect_eq(r.status, 0, "%s", r.err);
    /* one line on stderr for both files, naming the reason */
    cr_expect(strstr(r.err, "advise: skipped 2 CUDA files: CUDA_PATH is "), "%s", r.err);
    cr_expect(strstr(r.err, "no-toolkit, which has no include/cuda_runtime.h"), "%s", r.err);
    cr_expect_null(strstr(strstr(r.err, "skipped 2") + 1, "skipped"), "said once: %s", r.err);
    cr_expect_null(strstr(r.out, "a.cu"), "no finding or parse failure for a.cu: %s", r.out);
    cr_expect(strstr(r.out, "PY003"), "the Python file is still checked: %s", r.out);
    cr_expect(strstr(r.out, "in 1 file (") && strstr(r.out, "2 CUDA files not analysed: no CUDA toolkit"), "%s", r.out);
    run_result_free(&r);
}

Test(no_cuda, require_cuda_makes_it_an_error) {
    char *dir = temp_dir();
    make_file(dir, "a.cu", KERNEL_CU);
    const char *args[] = {"--require-cuda", "a.cu"};
    RunResult r = check_without_cuda(dir, args, 2);
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "advise: could not analyse 1 CUDA file: CUDA_PATH is "), "%s", r.err);
    cr_expect_null(strstr(r.err, "--require-cuda makes"), "%s", r.err);
    run_result_free(&r);
}

Test(no_cuda, one_notice_in_sarif_json_and_github) {
    char *dir = temp_dir();
    make_file(dir, "a.cu", KERNEL_CU);
    make_file(dir, "b.cuh", KERNEL_CU);
    const char *sarif_args[] = {"--format", "sarif", "."};
    RunResult r = check_without_cuda(dir, sarif_args, 3);
    cr_expect_eq(r.status, 0, "%s", r.err);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "%s", r.out);
    json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
    json_t *notes = json_object_get(json_array_get(json_object_get(run, "invocations"), 0), "toolExecutionNotifications");
    cr_assert_eq(json_array_size(notes), 1, "one notification for both files");
    json_t *note = json_array_get(notes, 0);
    cr_expect_str_eq(json_string_value(json_object_get(note, "level")), "warning");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(note, "descriptor"), "id")), "cuda-toolkit-missing");
    cr_expect(strstr(json_string_value(json_object_get(json_object_get(note, "message"), "text")),
                     "2 CUDA files not analysed: CUDA_PATH is "));
    cr_expect_eq(json_array_size(sarif_results(doc)), 0);
    json_decref(doc);
    run_result_free(&r);

    const char *json_args[] = {"--format", "json", "."};
    r = check_without_cuda(dir, json_args, 3);
    doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "%s", r.out);
    json_t *skipped = json_object_get(json_object_get(doc, "summary"), "cuda_skipped");
    cr_expect_eq(json_integer_value(json_object_get(skipped, "files")), 2);
    cr_expect(strstr(json_string_value(json_object_get(skipped, "reason")), "no include/cuda_runtime.h"));
    cr_expect_eq(json_array_size(json_object_get(doc, "parse_failures")), 0);
    json_decref(doc);
    run_result_free(&r);

    const char *github_args[] = {"--format", "github", "."};
    r = check_without_cuda(dir, github_args, 3);
    cr_expect(strstr(r.out, "::warning title=advise: CUDA files not analysed::2 CUDA files not analysed: CUDA_PATH is "),
              "%s", r.out);
    run_result_free(&r);
}

Test(no_cuda, a_configured_toolkit_path_without_the_toolkit_is_named) {
    char *dir = temp_dir();
    make_file(dir, "a.cu", KERNEL_CU);
    make_file(dir, "advise.toml", "[cuda]\ncuda-path = \"/nowhere/cuda\"\n");
    RunResult r = run_advise_at(dir, "check", "--no-profile", "a.cu");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "skipped 1 CUDA file: the CUDA toolkit configured in advise.toml ([cuda] cuda-path = "
                            "\"/nowhere/cuda\") has no include/cuda_runtime.h"),
              "%s", r.err);
    run_result_free(&r);
}
