/* The advise command line, run as a user runs it: exit codes, output
 * formats, --fix and --diff, configuration, and bad input. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "tests/cli_harness.h"
#include "server/workspace/source_file.h"

/* PY003 flags the empty_cache(); PY004 offers a safe fix for the .cuda() */
static const char *const FLAGGED =
    "import torch\n"
    "\n"
    "def run(loader):\n"
    "    for x in loader:\n"
    "        torch.cuda.empty_cache()\n";

static const char *const FIXABLE =
    "import torch\n"
    "\n"
    "buf = torch.zeros(3, 4).cuda()\n";

static const char *const CLEAN =
    "import torch\n"
    "\n"
    "def add(a, b):\n"
    "    return a + b\n";

static char *make_file(const char *dir, const char *name, const char *text) {
    char *p = path_in(dir, name);
    write_text(p, text);
    return p;
}

Test(cli, exit_code_0_on_clean_code) {
    char *dir = temp_dir();
    char *f = make_file(dir, "clean.py", CLEAN);
    RunResult r = run_advise("check", "--no-config", f);
    cr_expect_eq(r.status, 0, "stdout: %s\nstderr: %s", r.out, r.err);
    cr_expect(strstr(r.out, "No findings in 1 file") != NULL, "%s", r.out);
    run_result_free(&r);
}

Test(cli, exit_code_1_and_text_format_on_findings) {
    char *dir = temp_dir();
    char *f = make_file(dir, "loop.py", FLAGGED);
    RunResult r = run_advise("check", "--no-config", f);
    cr_expect_eq(r.status, 1, "stderr: %s", r.err);
    char want[512];
    snprintf(want, sizeof want, "%s:5:9: PY003 [sync-in-hot-loop] ", f);
    cr_expect(strstr(r.out, want) != NULL, "missing '%s' in:\n%s", want, r.out);
    /* the source line, then a caret line under the call */
    cr_expect(strstr(r.out, "\n            torch.cuda.empty_cache()\n            ^^^^^^^^^^^^^^^^^^^^^^^^\n") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "Found 1 finding in 1 file (1 warning)") != NULL, "%s", r.out);
    run_result_free(&r);
}

Test(cli, fail_on_controls_the_exit_code) {
    char *dir = temp_dir();
    char *f = make_file(dir, "loop.py", FLAGGED);
    RunResult r = run_advise("check", "--no-config", "--fail-on", "error", f);
    cr_expect_eq(r.status, 0);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--fail-on", "never", f);
    cr_expect_eq(r.status, 0);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--severity", "PY003=error", "--fail-on", "error", f);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.out, "1 error") != NULL, "%s", r.out);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--fail-on", "loud", f);
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
}

Test(cli, select_and_ignore) {
    char *dir = temp_dir();
    char *f = make_file(dir, "loop.py", FLAGGED);
    RunResult r = run_advise("check", "--no-config", "--ignore", "sync-in-hot-loop", f);
    cr_expect_eq(r.status, 0, "%s", r.out);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--select", "PY004", f);
    cr_expect_eq(r.status, 0, "%s", r.out);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--select", "PY", f);
    cr_expect_eq(r.status, 1, "%s", r.out);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--select", "PY999", f);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "unknown rule selector 'PY999'") != NULL, "%s", r.err);
    run_result_free(&r);
}

Test(cli, usage_errors_exit_2) {
    RunResult r = run_advise("check", "--no-such-option");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--no-such-option") != NULL, "%s", r.err);
    run_result_free(&r);
    r = run_advise("frobnicate");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
    r = run_advise("check", "--format", "xml", ".");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
    r = run_advise("check", "--fix", "--diff", ".");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
}

/* The refused option is named, not the word before it: a letter inside a
 * group of short options, or the long option itself. */
Test(cli, a_refused_option_is_named) {
    static const struct { const char *arg, *said; } cases[] = {
        {"-qj2", "unknown or incomplete option '-q' (in '-qj2')"},
        {"-jz", "-j wants a positive number of files to analyse at once, not 'z'"},
        {"-hz", NULL}, /* help comes first */
        {"-z", "unknown or incomplete option '-z'\n"},
        {"--quiet=1", "unknown or incomplete option '--quiet=1'"},
        {"--bogus", "unknown or incomplete option '--bogus'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        RunResult r = run_advise("check", "--no-config", cases[i].arg, ".");
        if (cases[i].said) {
            cr_expect_eq(r.status, 2, "%s", cases[i].arg);
            cr_expect(strstr(r.err, cases[i].said), "%s: %s", cases[i].arg, r.err);
            cr_expect_not(strstr(r.err, "'check'"), "%s: %s", cases[i].arg, r.err);
        } else {
            cr_expect_eq(r.status, 0, "%s", cases[i].arg);
        }
        run_result_free(&r);
    }
    RunResult r = run_advise("report", "-xo", "out.html", ".");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise report: unknown or incomplete option '-x' (in '-xo')"), "%s", r.err);
    run_result_free(&r);
}

Test(cli, json_format_is_complete) {
    char *dir = temp_dir();
    char *f = make_file(dir, "loop.py", FLAGGED);
    RunResult r = run_advise("check", "--no-config", "--format", "json", f);
    cr_expect_eq(r.status, 1);
    json_error_t err;
    json_t *doc = json_loads(r.out, 0, &err);
    cr_assert(doc != NULL, "invalid JSON: %s\n%s", err.text, r.out);
    cr_expect_eq(json_integer_value(json_object_get(doc, "format_version")), 2, "evidence items are typed");
    cr_expect_eq(json_integer_value(json_object_get(doc, "version")), 2, "format_version's first name");
    json_t *findings = json_object_get(doc, "findings");
    cr_assert_eq(json_array_size(findings), 1);
    json_t *f0 = json_array_get(findings, 0);
    cr_expect_str_eq(json_string_value(json_object_get(f0, "code")), "PY003");
    cr_expect_str_eq(json_string_value(json_object_get(f0, "name")), "sync-in-hot-loop");
    cr_expect_str_eq(json_string_value(json_object_get(f0, "severity")), "warning");
    cr_expect_str_eq(json_string_value(json_object_get(f0, "path")), f);
    json_t *start = json_object_get(json_object_get(f0, "range"), "start");
    cr_expect_eq(json_integer_value(json_object_get(start, "line")), 5);
    cr_expect_eq(json_integer_value(json_object_get(start, "column")), 9);
    cr_expect(json_is_null(json_object_get(f0, "gain")));
    cr_expect(json_is_array(json_object_get(f0, "fixes")));
    const char *advice = json_string_value(json_object_get(f0, "advice"));
    cr_expect(advice && strstr(advice, "drop the per-iteration synchronize"), "the rule's advice: %s", r.out);
    json_t *summary = json_object_get(doc, "summary");
    cr_expect_eq(json_integer_value(json_object_get(summary, "findings")), 1);
    cr_expect_eq(json_integer_value(json_object_get(summary, "files_checked")), 1);
    json_decref(doc);
    run_result_free(&r);
}

Test(cli, fix_writes_atomically_and_keeps_mode) {
    char *dir = temp_dir();
    char *f = make_file(dir, "buf.py", FIXABLE);
    chmod(f, 0640);
    struct stat before;
    stat(f, &before);
    RunResult r = run_advise("check", "--no-config", "--fix", f);
    cr_expect_eq(r.status, 0, "stdout: %s\nstderr: %s", r.out, r.err);
    char *text = harness_slurp(f);
    cr_expect(strstr(text, "torch.zeros(3, 4, device=\"cuda\")") != NULL, "%s", text);
    cr_expect(strstr(text, ".cuda()") == NULL, "%s", text);
    struct stat after;
    stat(f, &after);
    cr_expect_neq(before.st_ino, after.st_ino, "written in place instead of renamed over");
    cr_expect_eq(after.st_mode & 0777, 0640);
    /* no temporary file left behind */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1", dir);
    cr_expect_eq(system(cmd), 0, "temporary files left in %s", dir);
    free(text);
    run_result_free(&r);
}

Test(cli, fix_refuses_a_file_that_changed) {
    char *dir = temp_dir();
    char *f = make_file(dir, "buf.py", FIXABLE);
    SourceFile src;
    char *error = NULL;
    cr_assert(source_file_read(f, 1 << 20, &src, &error));
    write_text(f, "# edited by someone else\n");
    cr_expect(!source_file_replace(f, &src, "replacement\n", 12, &error));
    cr_expect(error && strstr(error, "changed since advise read it"), "%s", error ? error : "(none)");
    char *text = harness_slurp(f);
    cr_expect_str_eq(text, "# edited by someone else\n");
    free(text);
    free(error);
    source_file_free(&src);
}

/* A file that grew while advise analysed it changed: the message says so,
 * not that it is over max-file-size. */
Test(cli, fix_calls_a_file_that_grew_changed) {
    char *dir = temp_dir();
    char *f = make_file(dir, "buf.py", FIXABLE);
    SourceFile src;
    char *error = NULL;
    cr_assert(source_file_read(f, 1 << 20, &src, &error));
    char *grown = malloc(200000);
    memset(grown, '#', 199999);
    grown[199999] = '\0';
    write_text(f, grown);
    cr_expect(!source_file_replace(f, &src, "replacement\n", 12, &error));
    cr_expect(error && strstr(error, "changed since advise read it"), "%s", error ? error : "(none)");
    cr_expect(error && !strstr(error, "max-file-size"), "%s", error ? error : "(none)");
    free(grown);
    free(error);
    source_file_free(&src);
}

/* Through a symbolic link --fix writes the target; the link stays a link. */
Test(cli, fix_through_a_symlink_writes_its_target) {
    char *dir = temp_dir();
    char *f = make_file(dir, "buf.py", FIXABLE);
    char *link = path_in(dir, "link.py");
    cr_assert_eq(symlink("buf.py", link), 0);
    RunResult r = run_advise("check", "--no-config", "--fix", link);
    cr_expect_eq(r.status, 0, "stdout: %s\nstderr: %s", r.out, r.err);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the link was replaced by a copy");
    char *text = harness_slurp(f);
    cr_expect(strstr(text, "device=\"cuda\"") != NULL, "the target was not fixed: %s", text);
    free(text);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 2", dir);
    cr_expect_eq(system(cmd), 0, "temporary files left in %s", dir);
    run_result_free(&r);
}

/* Refused, never split or forced: a file with two hard links, a read-only file. */
Test(cli, fix_refuses_hard_links_and_read_only_files) {
    char *dir = temp_dir();
    char *f = make_file(dir, "buf.py", FIXABLE);
    char *other = path_in(dir, "other.py");
    cr_assert_eq(link(f, other), 0);
    RunResult r = run_advise("check", "--no-config", "--fix", f);
    cr_expect_neq(r.status, 0);
    cr_expect(strstr(r.err, "the file has 2 hard links"), "%s", r.err);
    char *text = harness_slurp(f);
    cr_expect_str_eq(text, FIXABLE);
    free(text);
    run_result_free(&r);
    unlink(other);

    chmod(f, 0444);
    r = run_advise("check", "--no-config", "--fix", f);
    cr_expect_neq(r.status, 0);
    cr_expect(strstr(r.err, "not written: the file is read-only"), "%s", r.err);
    text = harness_slurp(f);
    cr_expect_str_eq(text, FIXABLE);
    free(text);
    struct stat st;
    stat(f, &st);
    cr_expect_eq(st.st_mode & 0777, 0444);
    run_result_free(&r);
}

/* The fixed file keeps its owner and group (checked where the test may
 * give a file away: as root). */
Test(cli, fix_keeps_the_owner) {
    if (geteuid() != 0) cr_skip_test("only root can give a file to another user");
    char *dir = temp_dir();
    char *f = make_file(dir, "buf.py", FIXABLE);
    cr_assert_eq(chown(f, 65534, 65534), 0);
    RunResult r = run_advise("check", "--no-config", "--fix", f);
    cr_expect_eq(r.status, 0, "%s", r.err);
    struct stat st;
    stat(f, &st);
    cr_expect_eq(st.st_uid, 65534);
    cr_expect_eq(st.st_gid, 65534);
    char *text = harness_slurp(f);
    cr_expect(strstr(text, "device=\"cuda\"") != NULL, "%s", text);
    free(text);
    run_result_free(&r);
}

Test(cli, diff_prints_a_patch_and_writes_nothing) {
    char *dir = temp_dir();
    char *f = make_file(dir, "buf.py", FIXABLE);
    RunResult r = run_advise("check", "--no-config", "--diff", f);
    cr_expect(strstr(r.out, "-buf = torch.zeros(3, 4).cuda()\n+buf = torch.zeros(3, 4, device=\"cuda\")\n") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "@@ -1,3 +1,3 @@") != NULL, "%s", r.out);
    char *text = harness_slurp(f);
    cr_expect_str_eq(text, FIXABLE);
    free(text);
    /* the patch applies with patch(1) and gives what --fix writes */
    char *patch = path_in(dir, "fix.patch");
    write_text(patch, r.out);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "patch -s %s %s", f, patch);
    cr_expect_eq(system(cmd), 0);
    text = harness_slurp(f);
    cr_expect(strstr(text, "device=\"cuda\"") != NULL, "%s", text);
    free(text);
    run_result_free(&r);
}

Test(cli, bad_inputs_are_reported_and_the_rest_is_checked) {
    char *dir = temp_dir();
    char *good = make_file(dir, "good.py", FLAGGED);
    char *binary = path_in(dir, "binary.py");
    FILE *fb = fopen(binary, "wb");
    fwrite("x = 1\0\1\2", 1, 9, fb);
    fclose(fb);
    char *bad_utf8 = make_file(dir, "latin1.py", "name = \"caf\xe9\"\n");
    char *broken = make_file(dir, "broken.py", "def f(:\n    pass\n");
    char *big = make_file(dir, "big.py", "x = 1\n# padding padding padding padding padding padding padding padding padding\n"
                                         "# padding padding padding padding padding padding padding padding padding\n");
    char *fifo = path_in(dir, "pipe.py");
    mkfifo(fifo, 0600);
    RunResult r = run_advise("check", "--no-config", "--max-file-size", "120", good, binary, bad_utf8, broken, big,
                             fifo, "/no/such/file.py");
    cr_expect_eq(r.status, 2, "stdout: %s\nstderr: %s", r.out, r.err);
    cr_expect(strstr(r.err, "binary file") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "invalid UTF-8 at line 1, column 12") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "broken.py:1:7: syntax error") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "over the") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "not a regular file") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "No such file or directory") != NULL, "%s", r.err);
    /* the good file was still checked */
    cr_expect(strstr(r.out, "PY003") != NULL, "%s", r.out);
    run_result_free(&r);
}

/* A file that does not parse cleanly is reported once, its findings cover
 * what parsed, its fixes are neither applied nor promised, and its findings
 * (not the parse) decide the exit status, unless --error-on-parse-failure. */
Test(cli, parse_failures_are_reported_but_do_not_fail_the_run) {
    char *dir = temp_dir();
    char *broken = make_file(dir, "broken.py", "import torch\ndef f(:\n    pass\nbuf = torch.zeros(3).cuda()\n");
    char *clean = make_file(dir, "clean.py", "import torch\ndef f(x):\n    return x\n");
    RunResult r = run_advise("check", "--no-config", "--fail-on", "error", broken, clean);
    cr_expect_eq(r.status, 0, "stdout: %s\nstderr: %s", r.out, r.err);
    cr_expect(strstr(r.err, "broken.py:2:7: syntax error; findings cover the parts that parsed") != NULL, "%s", r.err);
    cr_expect(strstr(r.out, "PY004") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "fixable with --fix") == NULL, "the fix there is not applied, so not promised: %s", r.out);
    cr_expect(strstr(r.out, "1 file did not parse cleanly: its findings cover what parsed, and 1 fix there is not "
                            "applied by --fix.") != NULL,
              "%s", r.out);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--fail-on", "error", "--error-on-parse-failure", broken, clean);
    cr_expect_eq(r.status, 2, "stdout: %s\nstderr: %s", r.out, r.err);
    run_result_free(&r);
    r = run_advise("check", "--no-config", "--format", "json", broken);
    json_error_t je;
    json_t *doc = json_loads(r.out, 0, &je);
    cr_assert_not_null(doc, "%s", r.out);
    json_t *failure = json_array_get(json_object_get(doc, "parse_failures"), 0);
    cr_expect_eq(json_integer_value(json_object_get(failure, "line")), 2);
    cr_expect_eq(json_integer_value(json_object_get(failure, "column")), 7);
    cr_expect_eq(json_array_size(json_object_get(doc, "errors")), 0);
    json_t *summary = json_object_get(doc, "summary");
    cr_expect_eq(json_integer_value(json_object_get(summary, "parse_failures")), 1);
    cr_expect_eq(json_integer_value(json_object_get(summary, "fixes_withheld")), 1);
    cr_expect_eq(json_integer_value(json_object_get(summary, "fixable")), 0);
    json_decref(doc);
    run_result_free(&r);
}

/* A crash in one file's analysis (forced through the test hook) is reported
 * with the file's path, every other file's findings are still printed, and
 * the run exits 2. Sanitizer builds run analyses unguarded. */
Test(cli, a_crash_in_one_file_leaves_the_others_checked) {
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("the crash guard is off in sanitizer builds");
#endif
    char *dir = temp_dir();
    make_file(dir, "a.py", FIXABLE);
    make_file(dir, "b.py", FIXABLE);
    make_file(dir, "c.py", FIXABLE);
    setenv("ADVISE_DEBUG_CRASH", "b.py", 1);
    RunResult r = run_advise_at(dir, "check", "--no-config", ".");
    unsetenv("ADVISE_DEBUG_CRASH");
    cr_expect_eq(r.status, 2, "stdout: %s\nstderr: %s", r.out, r.err);
    cr_expect(strstr(r.out, "./a.py:3:7: PY004") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "./c.py:3:7: PY004") != NULL, "%s", r.out);
    cr_expect(strstr(r.err, "./b.py: advise crashed while analysing this file (segmentation fault)") != NULL, "%s",
              r.err);
    run_result_free(&r);
}

Test(cli, folders_are_walked_and_gitignore_respected) {
    char *dir = temp_dir();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/.git %s/pkg/sub %s/build %s/__pycache__", dir, dir, dir, dir);
    cr_assert_eq(system(cmd), 0);
    char *a = path_in(dir, "pkg/sub/a.py");
    write_text(a, FLAGGED);
    char *b = path_in(dir, "build/b.py");
    write_text(b, FLAGGED);
    char *c = path_in(dir, "__pycache__/c.py");
    write_text(c, FLAGGED);
    char *d = path_in(dir, "pkg/skip_me.py");
    write_text(d, FLAGGED);
    char *notes = path_in(dir, "pkg/notes.txt");
    write_text(notes, "torch.cuda.empty_cache()\n");
    char *gi = path_in(dir, ".gitignore");
    write_text(gi, "# build output\nbuild/\n*skip*.py\n");
    RunResult r = run_advise_at(dir, "check", "--no-config", ".");
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "./pkg/sub/a.py:5:9: PY003") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "b.py") == NULL, "%s", r.out);
    cr_expect(strstr(r.out, "c.py") == NULL, "%s", r.out);
    cr_expect(strstr(r.out, "skip_me") == NULL, "%s", r.out);
    cr_expect(strstr(r.out, "in 1 file") != NULL, "%s", r.out);
    run_result_free(&r);
    /* a file named explicitly is checked even when ignored */
    r = run_advise_at(dir, "check", "--no-config", "pkg/skip_me.py");
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    run_result_free(&r);
}

Test(cli, config_file_is_found_and_applied) {
    char *dir = temp_dir();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/src", dir);
    cr_assert_eq(system(cmd), 0);
    char *f = path_in(dir, "src/loop.py");
    write_text(f, FLAGGED);
    char *cfg = path_in(dir, "advise.toml");
    write_text(cfg, "[check]\nfail-on = \"error\"\n\n[severity]\nsync-in-hot-loop = \"hint\"\n");
    char *src = path_in(dir, "src");
    RunResult r = run_advise_at(src, "check", "loop.py");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "1 hint") != NULL, "%s", r.out);
    run_result_free(&r);
    /* the command line wins over the file */
    r = run_advise_at(src, "check", "--fail-on", "hint", "loop.py");
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    run_result_free(&r);
    /* a broken config is a clear error */
    write_text(cfg, "[check]\nselekt = [\"PY\"]\n");
    r = run_advise_at(src, "check", "loop.py");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise.toml:2: unknown key") != NULL, "%s", r.err);
    run_result_free(&r);
}

Test(cli, suppression_comments_silence_findings) {
    char *dir = temp_dir();
    char *f = make_file(dir, "loop.py",
                        "import torch\n"
                        "\n"
                        "def run(loader):\n"
                        "    for x in loader:\n"
                        "        torch.cuda.empty_cache()  # advise: ignore[PY003]\n");
    RunResult r = run_advise("check", "--no-config", f);
    cr_expect_eq(r.status, 0, "%s", r.out);
    cr_expect(strstr(r.out, "1 suppressed") != NULL, "%s", r.out);
    run_result_free(&r);
}

Test(cli, rules_and_rule_commands) {
    RunResult r = run_advise("rules");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "PY003  sync-in-hot-loop") != NULL, "%s", r.out);
    run_result_free(&r);
    r = run_advise("rule", "sync-in-hot-loop");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "# PY003 sync-in-hot-loop") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "## Why is this slow?") != NULL, "%s", r.out);
    run_result_free(&r);
    r = run_advise("rule", "NOPE");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
}

Test(cli, add_sync_fix_is_guarded_in_files_with_a_cpu_fallback) {
    char *dir = temp_dir();
    char *f = make_file(dir, "bench.py",
                        "import time\n"
                        "import torch\n"
                        "\n"
                        "device = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
                        "model = torch.nn.Linear(8, 8).to(device)\n"
                        "x = torch.randn(4, 8, device=device)\n"
                        "t0 = time.perf_counter()\n"
                        "for _ in range(10):\n"
                        "    y = model(x)\n"
                        "print(time.perf_counter() - t0)\n");
    RunResult r = run_advise("check", "--no-config", "--select", "PY002", "--fix", f);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    char *text = harness_slurp(f);
    cr_expect(strstr(text, "    y = model(x)\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"
                           "print(time.perf_counter() - t0)\n") != NULL,
              "%s", text);
    free(text);
    run_result_free(&r);
}

Test(cli, a_module_too_wide_for_the_parser_is_skipped_with_a_message) {
    char *dir = temp_dir();
    char *f = path_in(dir, "wide.py");
    FILE *out = fopen(f, "w");
    for (int i = 0; i < 70000; i++) fputs("# filler\n", out);
    fclose(out);
    RunResult r = run_advise("check", "--no-config", f);
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "top-level lines") != NULL, "%s", r.err);
    run_result_free(&r);
}
