/* `advise check --diff-base REF` in scratch git repositories made by each
 * test: findings on added, changed and moved lines are reported, the rest
 * are not; renames with and without edits, untracked and deleted files,
 * staged and unstaged changes, names with spaces and accents, a file git
 * takes as binary; a bad revision, a folder outside any repository, a file
 * outside the repository and a missing git are clear errors (exit 2); the
 * exit status and the summary follow the findings reported; fingerprints
 * are those of a full run. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "tests/cli_harness.h"

/* PY003 (warning) flags the empty_cache() in each loop, on the third line.
 * Every line names the function, so that git's alignment of lines is not
 * in doubt (an added block that repeats a line next to it may be shown
 * shifted onto that line, as any line diff would). */
#define LOOP(name)                \
    "def " name "(loader):\n"    \
    "    for " name "_x in loader:\n"       \
    "        torch.cuda.empty_cache()  # " name "\n"
/* the same without names: two of these in a file are identical findings */
#define SAME_LOOP(name)           \
    "def " name "(loader):\n"    \
    "    for x in loader:\n"       \
    "        torch.cuda.empty_cache()\n"

/* a scratch repository with git configured from nothing: the test's
 * environment (inherited by advise and its git) has no system or user config */
static char *new_repo(void) {
    char *base = temp_dir();
    char *home = path_in(base, "home"), *repo = path_in(base, "repo");
    mkdir(home, 0755);
    mkdir(repo, 0755);
    setenv("HOME", home, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_AUTHOR_DATE", "2026-12-01T00:00:00Z", 1);
    setenv("GIT_COMMITTER_DATE", "2026-12-01T00:00:00Z", 1);
    return repo;
}

/* runs a shell command in dir; it must succeed */
static void sh(const char *dir, const char *command) {
    char line[8192];
    snprintf(line, sizeof line, "cd '%s' && %s", dir, command);
    RunResult r = harness_run_shell(line);
    cr_assert_eq(r.status, 0, "%s\nstdout: %s\nstderr: %s", command, r.out, r.err);
    run_result_free(&r);
}

static void git(const char *dir, const char *args) {
    char command[4096];
    snprintf(command, sizeof command, "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main %s",
             args);
    sh(dir, command);
}

static void commit_all(const char *repo) {
    git(repo, "add -A");
    git(repo, "commit -q -m snapshot");
}

static void put(const char *repo, const char *name, const char *text) { write_text(path_in(repo, name), text); }

/* `advise check --no-config --no-profile --format json --diff-base REF ARGS... .` parsed */
static json_t *check_json(const char *repo, const char *ref, int *status) {
    RunResult r = run_advise_at(repo, "check", "--no-config", "--no-profile", "--format", "json", "--diff-base", ref,
                                ".");
    *status = r.status;
    json_error_t err;
    json_t *doc = json_loads(r.out, 0, &err);
    cr_assert(doc != NULL, "not JSON (status %d): %s\nstderr: %s", r.status, r.out, r.err);
    run_result_free(&r);
    return doc;
}

static json_t *summary_of(json_t *doc) { return json_object_get(doc, "summary"); }
static json_int_t summary_int(json_t *doc, const char *key) {
    return json_integer_value(json_object_get(summary_of(doc), key));
}
static json_int_t diff_int(json_t *doc, const char *key) {
    return json_integer_value(json_object_get(json_object_get(summary_of(doc), "diff_base"), key));
}

/* "path:line" of each finding, sorted as reported, joined by spaces */
static char *places(json_t *doc) {
    static char buf[4096];
    buf[0] = '\0';
    json_t *findings = json_object_get(doc, "findings");
    for (size_t i = 0; i < json_array_size(findings); i++) {
        json_t *f = json_array_get(findings, i);
        const char *path = json_string_value(json_object_get(f, "path"));
        if (strncmp(path, "./", 2) == 0) path += 2;
        json_int_t line = json_integer_value(
            json_object_get(json_object_get(json_object_get(f, "range"), "start"), "line"));
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s:%lld", i ? " " : "", path, (long long)line);
    }
    return buf;
}

Test(diff_base, added_and_changed_lines_only) {
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, "a.py", "import torch\n\n" LOOP("one") "\n" LOOP("two"));
    commit_all(repo);
    /* line 5 changed (a comment added), a third loop added at the end */
    put(repo, "a.py",
        "import torch\n\n" LOOP("one") "\n"
        "def two(loader):\n"
        "    for two_x in loader:\n"
        "        torch.cuda.empty_cache()  # two, changed\n"
        "\n" LOOP("three"));
    int status;
    json_t *doc = check_json(repo, "HEAD", &status);
    cr_expect_str_eq(places(doc), "a.py:9 a.py:13");
    cr_expect_eq(status, 1, "the reported warnings decide the exit status");
    cr_expect_eq(summary_int(doc, "findings"), 2);
    cr_expect_eq(summary_int(doc, "warning"), 2);
    cr_expect_eq(diff_int(doc, "outside_changes"), 1);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(summary_of(doc), "diff_base"), "ref")), "HEAD");
    json_decref(doc);
}

Test(diff_base, nothing_changed_exits_clean_and_checks_nothing) {
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, "a.py", "import torch\n\n" LOOP("one"));
    put(repo, "b.py", "import torch\n\n" LOOP("two"));
    commit_all(repo);
    int status;
    json_t *doc = check_json(repo, "HEAD", &status);
    cr_expect_eq(status, 0, "findings on unchanged lines do not fail the run");
    cr_expect_eq(summary_int(doc, "findings"), 0);
    cr_expect_eq(summary_int(doc, "files_checked"), 0);
    cr_expect_eq(diff_int(doc, "files_unchanged"), 2);
    json_decref(doc);
    RunResult r = run_advise_at(repo, "check", "--no-config", "--no-profile", "--diff-base", "HEAD", ".");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "Only lines changed since HEAD: 0 findings on other lines left out, 2 unchanged files "
                            "not checked.") != NULL,
              "%s", r.out);
    run_result_free(&r);
}

Test(diff_base, moved_lines_count_as_changed) {
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, "a.py", "import torch\n\n" LOOP("one") "\n" LOOP("two") "\n" LOOP("three"));
    commit_all(repo);
    /* "one" cut from the top and pasted at the bottom */
    put(repo, "a.py", "import torch\n\n" LOOP("two") "\n" LOOP("three") "\n" LOOP("one"));
    int status;
    json_t *doc = check_json(repo, "HEAD", &status);
    cr_expect_str_eq(places(doc), "a.py:13", "git shows moved lines as added");
    json_decref(doc);
}

Test(diff_base, staged_unstaged_and_untracked) {
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, ".gitignore", "ignored.py\n");
    put(repo, "a.py", "import torch\n\n" LOOP("one"));
    put(repo, "b.py", "import torch\n\n" LOOP("two"));
    commit_all(repo);
    put(repo, "a.py", "import torch\n\n" LOOP("one") LOOP("staged"));
    git(repo, "add a.py");
    put(repo, "b.py", "import torch\n\n" LOOP("two") LOOP("unstaged"));
    put(repo, "new.py", "import torch\n\n" LOOP("untracked"));
    put(repo, "ignored.py", "import torch\n\n" LOOP("ignored"));
    RunResult r = run_advise_at(repo, "check", "--no-config", "--no-profile", "--format", "json", "--diff-base",
                                "HEAD", ".", "ignored.py");
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert(doc, "%s", r.err);
    cr_expect_str_eq(places(doc), "a.py:8 b.py:8 new.py:5",
                     "staged and unstaged lines, every line of an untracked file; not the ignored file");
    json_decref(doc);
    run_result_free(&r);
}

Test(diff_base, renames_with_and_without_edits) {
    char *repo = new_repo();
    git(repo, "init -q");
    const char *body = "import torch\n\n" LOOP("one") "\n" LOOP("two") "\n" LOOP("three") "\n" LOOP("four");
    put(repo, "same.py", body);
    put(repo, "edited.py", body);
    commit_all(repo);
    git(repo, "mv same.py same_renamed.py");
    git(repo, "mv edited.py edited_renamed.py");
    put(repo, "edited_renamed.py", "import torch\n\n" LOOP("one") "\n" LOOP("two") "\n" LOOP("three") "\n" LOOP("four")
                                       LOOP("five"));
    int status;
    json_t *doc = check_json(repo, "HEAD", &status);
    cr_expect_str_eq(places(doc), "edited_renamed.py:20", "a rename is no change; only the edited lines count");
    cr_expect_eq(diff_int(doc, "files_unchanged"), 1);
    json_decref(doc);
}

Test(diff_base, deleted_files_and_paths_with_spaces_and_accents) {
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, "gone.py", "import torch\n\n" LOOP("gone"));
    put(repo, "sp ace \xc3\xa9.py", "import torch\n\n" LOOP("one"));
    commit_all(repo);
    unlink(path_in(repo, "gone.py"));
    put(repo, "sp ace \xc3\xa9.py", "import torch\n\n" LOOP("one") LOOP("two"));
    int status;
    json_t *doc = check_json(repo, "HEAD", &status);
    cr_expect_str_eq(places(doc), "sp ace \xc3\xa9.py:8");
    cr_expect_eq(summary_int(doc, "errors"), 0);
    json_decref(doc);
}

Test(diff_base, a_file_git_takes_as_binary_counts_whole) {
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, ".gitattributes", "bin.py binary\n");
    put(repo, "bin.py", "import torch\n\n" LOOP("one"));
    commit_all(repo);
    put(repo, "bin.py", "import torch\n\n" LOOP("one") LOOP("two"));
    int status;
    json_t *doc = check_json(repo, "HEAD", &status);
    cr_expect_str_eq(places(doc), "bin.py:5 bin.py:8", "no hunks to read: every line counts");
    json_decref(doc);
}

Test(diff_base, fingerprints_are_those_of_a_full_run) {
    /* two identical findings: the first unchanged, the second added; the one
     * reported keeps the fingerprint a full run gives it (its occurrence index is 1) */
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, "a.py", "import torch\n\n" SAME_LOOP("one"));
    commit_all(repo);
    put(repo, "a.py", "import torch\n\n" SAME_LOOP("one") SAME_LOOP("two"));
    RunResult full = run_advise_at(repo, "check", "--no-config", "--no-profile", "--format", "sarif", "a.py");
    RunResult part = run_advise_at(repo, "check", "--no-config", "--no-profile", "--format", "sarif", "--diff-base",
                                   "HEAD", "a.py");
    json_t *f = json_loads(full.out, 0, NULL), *p = json_loads(part.out, 0, NULL);
    cr_assert(f && p, "%s %s", full.err, part.err);
    json_t *fr = json_object_get(json_array_get(json_object_get(f, "runs"), 0), "results");
    json_t *pr = json_object_get(json_array_get(json_object_get(p, "runs"), 0), "results");
    cr_assert_eq(json_array_size(fr), 2);
    cr_assert_eq(json_array_size(pr), 1);
#define FP(r) json_string_value(json_object_get(json_object_get(r, "partialFingerprints"), "adviseFinding/v1"))
    cr_expect_str_eq(FP(json_array_get(pr, 0)), FP(json_array_get(fr, 1)));
    cr_expect_str_neq(FP(json_array_get(fr, 0)), FP(json_array_get(fr, 1)));
    json_t *props = json_object_get(json_array_get(json_object_get(p, "runs"), 0), "properties");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(props, "diffBase"), "outsideChanges")), 1);
    json_decref(f);
    json_decref(p);
    run_result_free(&full);
    run_result_free(&part);
}

Test(diff_base, related_locations_on_changed_lines_count) {
    /* PY002: the clock read after GPU work without a synchronize; the
     * finding sits on that read (line 14), the read that starts the
     * measurement (line 11) is its related location. Only line 11 changes. */
#define BENCH(start)                                                                                  \
    "import time\nimport torch\nimport torch.nn as nn\n\n"                                               \
    "device = torch.device(\"cuda\")\nmodel = nn.Linear(8, 8).to(device)\n\n\n"                          \
    "def bench(x):\n    torch.cuda.synchronize()\n    t0 = " start "\n    for _ in range(10):\n"          \
    "        model(x)\n    elapsed = time.perf_counter() - t0\n    return elapsed\n"
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, "t.py", BENCH("0.0"));
    commit_all(repo);
    put(repo, "t.py", BENCH("time.perf_counter()"));
    int status;
    json_t *doc = check_json(repo, "HEAD", &status);
    cr_expect_str_eq(places(doc), "t.py:14", "the change touches its related location: reported");
    json_t *f = json_array_get(json_object_get(doc, "findings"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(f, "code")), "PY002");
    json_decref(doc);
    /* a change elsewhere in the function touches neither */
    commit_all(repo);
    put(repo, "t.py", "# a comment\n" BENCH("time.perf_counter()"));
    doc = check_json(repo, "HEAD", &status);
    cr_expect_str_eq(places(doc), "");
    json_decref(doc);
#undef BENCH
}

/* ---- errors ---- */

Test(diff_base, a_bad_revision_is_a_clear_error) {
    char *repo = new_repo();
    git(repo, "init -q");
    put(repo, "a.py", "import torch\n");
    commit_all(repo);
    RunResult r = run_advise_at(repo, "check", "--no-config", "--diff-base", "no-such-branch", ".");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "'no-such-branch' is not a commit") != NULL, "%s", r.err);
    run_result_free(&r);
    r = run_advise_at(repo, "check", "--no-config", "--diff-base", "--upload-pack=x", ".");
    cr_expect_eq(r.status, 2, "a revision never becomes an option of git");
    run_result_free(&r);
}

Test(diff_base, outside_a_repository_and_outside_the_repository) {
    char *dir = temp_dir();
    write_text(path_in(dir, "a.py"), "import torch\n");
    char *repo = new_repo();
    setenv("GIT_CEILING_DIRECTORIES", dir, 1); /* git looks no higher than the temporary folder */
    RunResult r = run_advise_at(dir, "check", "--no-config", "--diff-base", "HEAD", ".");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "is not in a git repository") != NULL, "%s", r.err);
    run_result_free(&r);

    git(repo, "init -q");
    put(repo, "a.py", "import torch\n\n" LOOP("one"));
    commit_all(repo);
    r = run_advise_at(repo, "check", "--no-config", "--no-profile", "--diff-base", "HEAD", ".", path_in(dir, "a.py"));
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "outside the git repository") != NULL, "%s", r.err);
    run_result_free(&r);
}

Test(diff_base, git_missing) {
    char *repo = new_repo();
    char *empty = temp_dir();
    setenv("PATH", empty, 1);
    RunResult r = run_advise_at(repo, "check", "--no-config", "--diff-base", "HEAD", ".");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "git was not found") != NULL, "%s", r.err);
    run_result_free(&r);
}

Test(diff_base, refused_with_stdin_and_fixes) {
    RunResult r = run_advise("check", "--no-config", "--diff-base", "HEAD", "--stdin-filename", "a.py", "-");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "stdin") != NULL, "%s", r.err);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--diff-base", "HEAD", "--fix", ".");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--diff-base", "HEAD", "--write-baseline", "x.json", ".");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
}

Test(diff_base, help_names_it) {
    RunResult r = run_advise("check", "--help");
    cr_expect(strstr(r.out, "--diff-base REF") && strstr(r.out, "--baseline FILE") &&
              strstr(r.out, "--write-baseline FILE"));
    run_result_free(&r);
}
