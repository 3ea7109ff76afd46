/* `advise check -j N` and `advise report -j N`: the same bytes on stdout
 * and stderr, the same exit status and the same files written whatever N
 * is, over a project with Python and CUDA files that have findings, fixes,
 * a parse failure, an unreadable file, Python facts that cross files and
 * CUDA headers found by the header search; the usage errors of -j; the
 * progress line, only on a terminal. */
#include <criterion/criterion.h>
#include <pty.h>
#include <poll.h>

#include "tests/cli_harness.h"

static void write_in(const char *dir, const char *name, const char *text) { write_text(path_in(dir, name), text); }

/* A project (it has .git) holding copies of samples and fixtures, and files
 * of its own. */
static char *project(void) {
    char *dir = temp_dir();
    char command[4096];
    snprintf(command, sizeof command,
             "set -e; cd '%s'; mkdir -p .git py cu model k1 k2 k3 include;"
             "cp '%s'/samples/python/*.py py/;"
             "cp '%s'/tests/fixtures/python/PY001.py '%s'/tests/fixtures/python/PY004.py py/;"
             "cp '%s'/samples/cuda/transpose.cu '%s'/tests/fixtures/cuda/CU009.cu '%s'/tests/fixtures/cuda/CU010.cu "
             "'%s'/tests/fixtures/cuda/CU011.cu cu/",
             dir, ADVISE_SOURCE_DIR, ADVISE_SOURCE_DIR, ADVISE_SOURCE_DIR, ADVISE_SOURCE_DIR, ADVISE_SOURCE_DIR,
             ADVISE_SOURCE_DIR, ADVISE_SOURCE_DIR);
    RunResult r = harness_run_shell(command);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_result_free(&r);
    /* facts across files: the device and the model come from other modules */
    write_in(dir, "model/__init__.py", "");
    write_in(dir, "model/config.py", "import torch\ndevice = torch.device('cuda')\n");
    write_in(dir, "model/net.py",
             "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.fc = torch.nn.Linear(512, 512)\n\n    def forward(self, x):\n        return self.fc(x)\n");
    write_in(dir, "model/train.py",
             "import torch\nfrom model.config import device\nfrom model.net import Net\n\n"
             "def train(loader):\n    net = Net().to(device)\n    for x in loader:\n"
             "        loss = net(x.to(device)).sum()\n        print(loss.item())\n        torch.cuda.empty_cache()\n");
    /* headers the search finds in include/ (no compile database): the first file learns the folder */
    write_in(dir, "include/check.h",
             "#pragma once\n#include <cuda_runtime.h>\n#define CHECK(x) do { cudaError_t e_ = (x); (void)e_; } while (0)\n");
    const char *kernel =
        "#include \"check.h\"\n"
        "__global__ void scale(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }\n"
        "int main() {\n"
        "    float *d; CHECK(cudaMalloc(&d, 4096));\n"
        "    for (int s = 0; s < 10; s++) { scale<<<4, 256>>>(d, 1024); cudaDeviceSynchronize(); }\n"
        "    cudaFree(d);\n"
        "}\n";
    write_in(dir, "k1/one.cu", kernel);
    write_in(dir, "k2/two.cu", kernel);
    write_in(dir, "k3/three.cu", kernel);
    write_in(dir, "k3/four.cu", kernel);
    write_in(dir, "py/broken.py", "import torch\ndef f(:\n    torch.cuda.synchronize()\n");
    write_in(dir, "py/binary.py", "abc\x01\x02");
    FILE *f = fopen(path_in(dir, "py/binary.py"), "ab");
    fputc('\0', f);
    fclose(f);
    return dir;
}

/* advise ARGS in dir, with -j jobs put first */
static RunResult advise_jobs(const char *dir, const char *jobs, const char *const *args) {
    const char *argv[32];
    size_t n = 0;
    argv[n++] = args[0];
    argv[n++] = "-j";
    argv[n++] = jobs;
    for (size_t i = 1; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    return run_advise_in(dir, argv);
}

static void expect_same(const RunResult *a, const RunResult *b, const char *what) {
    cr_expect_eq(a->status, b->status, "%s: exit status", what);
    cr_expect(strcmp(a->out, b->out) == 0, "%s: stdout differs between -j 1 and -j 4", what);
    cr_expect(strcmp(a->err, b->err) == 0, "%s: stderr differs between -j 1 and -j 4:\n%s\n---\n%s", what, a->err,
              b->err);
}

static void expect_same_output(const char *format) {
    char *dir = project();
    const char *args[] = {"check", "--no-config", "--format", format, ".", NULL};
    RunResult one = advise_jobs(dir, "1", args), four = advise_jobs(dir, "4", args);
    cr_expect_eq(one.status, 2, "the unreadable file makes it 2: %s", one.err);
    /* findings of both languages, and the files that could not be (wholly) checked */
    cr_expect(strstr(one.out, "CU0") && strstr(one.out, "PY0"), "%s", one.out);
    cr_expect(strstr(one.out, "binary.py") || strstr(one.err, "binary.py"), "%s", one.err);
    cr_expect(strstr(one.out, "broken.py") || strstr(one.err, "broken.py"), "%s", one.err);
    cr_expect(!strstr(one.out, "three.cu:1:") && !strstr(one.err, "three.cu:1:"),
              "check.h is found for every file: %s", one.err);
    expect_same(&one, &four, format);
    run_result_free(&one);
    run_result_free(&four);
}

Test(check_jobs, text, .timeout = 300) { expect_same_output("text"); }
Test(check_jobs, json, .timeout = 300) { expect_same_output("json"); }
Test(check_jobs, sarif, .timeout = 300) { expect_same_output("sarif"); }
Test(check_jobs, github, .timeout = 300) { expect_same_output("github"); }
Test(check_jobs, gitlab, .timeout = 300) { expect_same_output("gitlab"); }

Test(check_jobs, diff_and_output_file, .timeout = 300) {
    char *dir = project();
    const char *diff[] = {"check", "--no-config", "--diff", "--unsafe-fixes", ".", NULL};
    RunResult one = advise_jobs(dir, "1", diff), four = advise_jobs(dir, "4", diff);
    cr_expect(strstr(one.out, "--- a/") && strstr(one.out, "+++ b/"), "a patch: %s", one.out);
    expect_same(&one, &four, "--diff");
    run_result_free(&one);
    run_result_free(&four);
    char *out1 = path_in(dir, "one.sarif"), *out4 = path_in(dir, "four.sarif");
    const char *o1[] = {"check", "--no-config", "--format", "sarif", "-o", out1, "py", "cu", "k1", "k2", NULL};
    const char *o4[] = {"check", "--no-config", "--format", "sarif", "-o", out4, "py", "cu", "k1", "k2", NULL};
    one = advise_jobs(dir, "1", o1);
    four = advise_jobs(dir, "4", o4);
    expect_same(&one, &four, "-o");
    char *a = harness_slurp(out1), *b = harness_slurp(out4);
    cr_expect(strstr(a, "\"results\"") != NULL, "%s", a);
    cr_expect_str_eq(a, b, "the files -o wrote");
    free(a);
    free(b);
    run_result_free(&one);
    run_result_free(&four);
}

/* A baseline's matching (first come, first served) and the CUDA files skipped
 * for want of the toolkit are counted on the main thread, in the files' order. */
Test(check_jobs, baseline_and_a_runner_without_cuda, .timeout = 300) {
    char *dir = project();
    char *baseline = path_in(dir, "baseline.json");
    const char *record[] = {"check", "--no-config", "--write-baseline", baseline, "py", NULL};
    RunResult r = advise_jobs(dir, "4", record);
    cr_assert_eq(r.status, 2, "py/binary.py cannot be checked: %s", r.err);
    struct stat st;
    cr_assert(stat(baseline, &st) == 0 && st.st_size > 0, "the baseline is written all the same");
    run_result_free(&r);
    char *empty = path_in(dir, "no-toolkit");
    mkdir(empty, 0755);
    setenv("CUDA_PATH", empty, 1);
    for (int f = 0; f < 2; f++) {
        const char *format = f ? "sarif" : "json";
        const char *args[] = {"check", "--no-config", "--format", format, "--baseline", baseline, ".", NULL};
        RunResult one = advise_jobs(dir, "1", args), four = advise_jobs(dir, "4", args);
        cr_expect(strstr(one.err, "CUDA file"), "the skip is said: %s", one.err);
        cr_expect(strstr(one.out, f ? "cuda-toolkit-missing" : "\"cuda_skipped\""), "%s", one.out);
        cr_expect(strstr(one.out, f ? "\"unchanged\"" : "\"known\""), "the baseline's counts: %s", one.out);
        expect_same(&one, &four, format);
        run_result_free(&one);
        run_result_free(&four);
    }
    unsetenv("CUDA_PATH");
}

/* every file of dir (but .git), with its contents */
static char *tree_contents(const char *dir) {
    char command[2048];
    snprintf(command, sizeof command,
             "cd '%s' && find . -path ./.git -prune -o -type f -print | LC_ALL=C sort | xargs sha256sum", dir);
    RunResult r = harness_run_shell(command);
    free(r.err);
    return remember(r.out);
}

Test(check_jobs, fix_writes_the_same_files, .timeout = 300) {
    char *a = project(), *b = project();
    char *before = tree_contents(a);
    cr_assert_str_eq(before, tree_contents(b));
    const char *fix[] = {"check", "--no-config", "--fix", "--unsafe-fixes", "--format", "json", ".", NULL};
    RunResult one = advise_jobs(a, "1", fix), four = advise_jobs(b, "4", fix);
    expect_same(&one, &four, "--fix");
    char *after_a = tree_contents(a), *after_b = tree_contents(b);
    cr_expect(strcmp(before, after_a) != 0, "--fix wrote files");
    cr_expect_str_eq(after_a, after_b, "the files --fix wrote");
    run_result_free(&one);
    run_result_free(&four);
}

Test(check_jobs, stdin_is_one_file_whatever_n, .timeout = 300) {
    char *dir = project();
    char command[4096];
    snprintf(command, sizeof command,
             "cd '%s' && '%s' check --no-config -j %%s --stdin-filename model/train.py - < model/train.py", dir,
             ADVISE_BINARY);
    char c1[4200], c4[4200];
    snprintf(c1, sizeof c1, command, "1");
    snprintf(c4, sizeof c4, command, "4");
    RunResult one = harness_run_shell(c1), four = harness_run_shell(c4);
    cr_expect(strstr(one.out, "model/train.py:") != NULL, "%s%s", one.out, one.err);
    expect_same(&one, &four, "stdin");
    run_result_free(&one);
    run_result_free(&four);
}

Test(check_jobs, report_is_the_same, .timeout = 300) {
    char *dir = project();
    const char *args[] = {"report", "--no-config", ".", NULL};
    RunResult one = advise_jobs(dir, "1", args), four = advise_jobs(dir, "4", args);
    cr_expect_eq(one.status, 0, "%s", one.err);
    cr_expect(strstr(one.out, "CU0") && strstr(one.out, "PY0"), "%s", one.out);
    expect_same(&one, &four, "report");
    run_result_free(&one);
    run_result_free(&four);
}

Test(check_jobs, usage_errors) {
    char *dir = temp_dir();
    write_in(dir, "a.py", "import torch\n");
    const char *bad[] = {"0", "-3", "abc", "", "2x", "99999999999999999999", NULL};
    for (size_t i = 0; bad[i]; i++) {
        RunResult r = run_advise_at(dir, "check", "-j", bad[i], "a.py");
        cr_expect_eq(r.status, 2, "-j '%s'", bad[i]);
        cr_expect_str_eq(r.out, "", "-j '%s' checks nothing", bad[i]);
        char want[256];
        snprintf(want, sizeof want, "advise check: -j wants a positive number of files to analyse at once, not '%s'",
                 bad[i]);
        cr_expect(strstr(r.err, want) != NULL, "-j '%s': %s", bad[i], r.err);
        run_result_free(&r);
    }
    RunResult r = run_advise_at(dir, "check", "--jobs=0", "a.py");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "not '0'") != NULL, "%s", r.err);
    run_result_free(&r);
    r = run_advise_at(dir, "check", "a.py", "-j");
    cr_expect_eq(r.status, 2, "-j without a number");
    run_result_free(&r);
    r = run_advise_at(dir, "report", "-j", "none", "a.py");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise report: -j wants a positive number") != NULL, "%s", r.err);
    run_result_free(&r);
    r = run_advise_at(dir, "check", "--help");
    cr_expect(strstr(r.out, "-j, --jobs N") != NULL, "%s", r.out);
    run_result_free(&r);
}

/* "advise: 3/25 files" somewhere in s */
static bool has_progress(const char *s) {
    for (const char *p = s; (p = strstr(p, "advise: ")); p += 8) {
        const char *q = p + 8;
        size_t digits = strspn(q, "0123456789");
        if (!digits || q[digits] != '/') continue;
        q += digits + 1;
        digits = strspn(q, "0123456789");
        if (digits && strncmp(q + digits, " files", 6) == 0) return true;
    }
    return false;
}

/* stderr a terminal (stdout to a file): "advise: N/M files", rewritten in
 * place and cleared at the end; not a terminal: no progress at all. */
Test(check_jobs, progress_line_only_on_a_terminal, .timeout = 300) {
    char *dir = project();
    char *out_path = path_in(dir, "stdout.txt");
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    cr_assert(pid >= 0, "forkpty");
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(127);
        FILE *out = fopen(out_path, "w");
        if (!out) _exit(127);
        dup2(fileno(out), 1);
        execl(ADVISE_BINARY, ADVISE_BINARY, "check", "--no-config", "-j", "2", ".", (char *)NULL);
        _exit(127);
    }
    char *err = calloc(1, 1 << 20);
    size_t len = 0;
    for (;;) {
        struct pollfd p = {master, POLLIN, 0};
        if (poll(&p, 1, 120000) <= 0) break;
        ssize_t n = read(master, err + len, (1 << 20) - 1 - len);
        if (n <= 0) break;
        len += (size_t)n;
    }
    int status;
    waitpid(pid, &status, 0);
    close(master);
    cr_expect(has_progress(err), "a progress line: %s", err);
    char *last = NULL;
    for (char *p = err; (p = strstr(p, "\r\033[K")); p += 4) last = p;
    cr_expect(last != NULL, "rewritten in place: %s", err);
    cr_expect(last && !has_progress(last), "cleared at the end: %s", last ? last : "");
    char *out = harness_slurp(out_path);
    cr_expect(strstr(out, "PY0") != NULL && !strstr(out, "\r"), "stdout holds the findings alone");
    free(out);
    free(err);
    RunResult plain = run_advise_at(dir, "check", "--no-config", "-j", "2", ".");
    cr_expect(!strstr(plain.err, "\r") && !has_progress(plain.err), "no progress off a terminal: %s", plain.err);
    run_result_free(&plain);
}
