/* `advise profile` on a machine without a GPU: the command's output and exit
 * code pass through, the user is told in one line why nothing was recorded,
 * and -- with a stand-in libcuda.so.1 and a command that writes the parts the
 * injection library would write -- the parts are merged, cleaned and written
 * as one profile. The injection library itself is exercised on the H200 by
 * tests/gpu/profile_samples.sh. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profiler/aggregate.h"
#include "tests/cli_harness.h"
#include "profiler/profile_json.h"

static char project[] = "/tmp/advise-profile-test-XXXXXX";
static char fake_driver[512];

static void sh(const char *fmt, const char *a, const char *b) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void setup(void) {
    cr_assert_not_null(mkdtemp(project));
    char path[600];
    snprintf(path, sizeof path, "%s/.git", project);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/train.py", project);
    FILE *f = fopen(path, "w");
    fputs("import torch\nx = torch.ones(4).cuda()\nprint(x.sum().item())\n", f);
    fclose(f);
    /* an empty shared object standing in for the NVIDIA driver */
    snprintf(fake_driver, sizeof fake_driver, "%s/driver", project);
    mkdir(fake_driver, 0755);
    snprintf(path, sizeof path, "%s/fake.c", fake_driver);
    f = fopen(path, "w");
    fputs("int advise_fake_driver;\n", f);
    fclose(f);
    sh("cc -shared -fPIC -o %s/libcuda.so.1 %s/fake.c", fake_driver, fake_driver);
}

static void teardown(void) {
    sh("rm -rf %s%s", project, "");
}

TestSuite(profile_cli, .init = setup, .fini = teardown);

/* Runs `advise profile ARGS` in the project with the environment given. */
static RunResult run_profile(const char *env, const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && env %s %s profile %s", project, env, ADVISE_BINARY, args);
    return harness_run_shell(cmd);
}

Test(profile_cli, without_a_driver_the_command_runs_untouched_and_keeps_its_exit_code) {
    /* any readable file stands for the injection library, so that the test
     * reaches the driver check on machines built without CUPTI too */
    char env[1024];
    snprintf(env, sizeof env, "-u CUDA_INJECTION64_PATH LD_LIBRARY_PATH=/nonexistent ADVISE_INJECT_LIB=%s/fake.c",
             fake_driver);
    RunResult r = run_profile(env, "-- sh -c 'echo out-line; echo err-line >&2; exit 7'");
    cr_expect_eq(r.status, 7);
    cr_expect_str_eq(r.out, "out-line\n");
    cr_expect(strstr(r.err, "err-line\n"), "%s", r.err);
    cr_expect(strstr(r.err, "advise: no NVIDIA driver found"), "%s", r.err);
    struct stat st;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/.advise/profiles", project);
    cr_expect_neq(stat(dir, &st), 0, "no profile folder is made when nothing was recorded");
    run_result_free(&r);
}

Test(profile_cli, another_injection_is_respected) {
    RunResult r = run_profile("CUDA_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so", "-- true");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.err, "CUDA_INJECTION64_PATH is already set"), "%s", r.err);
    run_result_free(&r);
}

Test(profile_cli, a_missing_command_is_reported) {
    RunResult r = run_profile("", "-- advise-no-such-command-xyz");
    cr_expect_eq(r.status, 127);
    cr_expect(strstr(r.err, "cannot run 'advise-no-such-command-xyz'"), "%s", r.err);
    run_result_free(&r);
    r = run_profile("", "");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "no command to profile"), "%s", r.err);
    run_result_free(&r);
}

/* Writes a part as one profiled process would. */
static void write_part(const char *dir, long pid, bool with_error) {
    Aggregator *agg = agg_new();
    ProfDevice dev = {.id = 0, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9};
    agg_device(agg, &dev);
    int site = agg_site(agg, "train.py", 2, "<module>");
    ProfFrame lost[] = {{"/nonexistent/app", 0x1000}};
    int native = agg_native_site(agg, lost, 1);
    AggKernel k = {.name = "_Z9transposePfPKfii", .grid = {64, 64, 1}, .block = {32, 8, 1}, .registers = 16,
                   .start_ns = 1000, .end_ns = 3000, .site = site};
    agg_kernel(agg, &k);
    k.start_ns = 5000;
    k.end_ns = 6000;
    k.site = native;
    agg_kernel(agg, &k);
    AggCopy c = {.copy = PROF_COPY_DTOH, .src = PROF_MEM_DEVICE, .dst = PROF_MEM_PAGEABLE, .bytes = 16,
                 .start_ns = 7000, .end_ns = 7100, .site = site};
    agg_memcpy(agg, &c);
    ProfProcess proc = {.pid = pid, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 10000,
                        .error = with_error ? "CUPTI dropped 3 activity records" : NULL};
    Profile *p = agg_to_profile(agg, &proc);
    p->name = strdup("part");
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T00:00:00Z");
    p->tool = strdup("advise test");
    char path[700], *err = NULL;
    snprintf(path, sizeof path, "%s/part-%ld.json", dir, pid);
    cr_assert(profile_write_file(p, PROFILE_PART, path, &err), "%s", err ? err : "");
    profile_free(p);
    agg_free(agg);
}

Test(profile_cli, parts_of_two_processes_become_one_profile) {
    char staged[600];
    snprintf(staged, sizeof staged, "%s/staged", project);
    mkdir(staged, 0755);
    write_part(staged, 101, false);
    write_part(staged, 102, true);
    char env[1400];
    snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s ADVISE_INJECT_LIB=%s/libcuda.so.1", fake_driver, fake_driver);
    char args[1400];
    snprintf(args, sizeof args,
             "--name demo -- sh -c 'cp %s/part-*.json \"$ADVISE_PROFILE_PARTS_DIR\"/ && "
             "test -n \"$CUDA_INJECTION64_PATH\" && echo ran'",
             staged);
    RunResult r = run_profile(env, args);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "ran\n");
    cr_expect(strstr(r.err, "advise: CUPTI dropped 3 activity records"), "%s", r.err);
    cr_expect(strstr(r.err, "advise: profile written to .advise/profiles/demo-"), "%s", r.err);

    char find[800];
    snprintf(find, sizeof find, "ls %s/.advise/profiles/demo-*.json", project);
    RunResult ls = harness_run_shell(find);
    cr_assert_eq(ls.status, 0);
    ls.out[strcspn(ls.out, "\n")] = '\0';
    char *err = NULL;
    Profile *p = profile_read_file(ls.out, PROFILE_FINAL, &err);
    cr_assert_not_null(p, "%s", err ? err : "");
    cr_expect_eq(p->process_count, 2);
    cr_expect_str_eq(p->name, "demo");
    cr_expect_str_eq(p->source, "cupti");
    cr_expect_eq(p->file_count, 1);
    cr_expect_str_eq(p->files[0].path, "train.py");
    cr_assert_not_null(p->files[0].sha256, "the file's content hash is recorded");
    cr_expect_eq(strlen(p->files[0].sha256), 64);
    cr_expect_eq(p->site_count, 1, "the unresolvable native site is dropped");
    bool demangled = false;
    for (size_t i = 0; i < p->kernel_count; i++)
        demangled |= strcmp(p->kernels[i].name, "transpose(float*, float const*, int, int)") == 0;
    cr_expect(demangled, "kernel names are demangled (%s)", p->kernels[0].name);
    size_t unattributed = 0;
    for (size_t i = 0; i < p->op_count; i++) unattributed += p->ops[i].site == -1;
    cr_expect_eq(unattributed, 2, "one launch per process lost its site");
    profile_free(p);
    free(err);
    run_result_free(&ls);
    run_result_free(&r);
}

Test(profile_cli, a_cupti_failure_is_one_clear_line_and_no_profile) {
    char staged[600];
    snprintf(staged, sizeof staged, "%s/staged", project);
    mkdir(staged, 0755);
    Aggregator *agg = agg_new();
    ProfProcess proc = {.pid = 7, .rank = -1, .local_rank = -1, .world_size = -1,
                        .error = "CUPTI is already in use by another profiler (torch.profiler, Nsight Systems or "
                                 "Nsight Compute); nothing was recorded"};
    Profile *p = agg_to_profile(agg, &proc);
    p->name = strdup("x");
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T00:00:00Z");
    p->tool = strdup("advise test");
    char path[700], *err = NULL;
    snprintf(path, sizeof path, "%s/part-7.json", staged);
    cr_assert(profile_write_file(p, PROFILE_PART, path, &err), "%s", err ? err : "");
    profile_free(p);
    agg_free(agg);

    char env[1400], args[1400];
    snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s ADVISE_INJECT_LIB=%s/libcuda.so.1", fake_driver, fake_driver);
    snprintf(args, sizeof args, "-- sh -c 'cp %s/part-7.json \"$ADVISE_PROFILE_PARTS_DIR\"/; exit 3'", staged);
    RunResult r = run_profile(env, args);
    cr_expect_eq(r.status, 3);
    cr_expect(strstr(r.err, "advise: CUPTI is already in use by another profiler"), "%s", r.err);
    cr_expect_null(strstr(r.err, "profile written"), "%s", r.err);
    run_result_free(&r);
}

/* --source-metrics: a part as the injection library writes it in its
 * source-metrics mode: no activity, the line metrics of one kernel. */
static void write_metrics_part(const char *dir, long pid, const char *kernel) {
    cr_assert_lt(strlen(dir), 600);
    Aggregator *agg = agg_new();
    ProfProcess proc = {.pid = pid, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 10000};
    Profile *p = agg_to_profile(agg, &proc);
    p->name = strdup("part");
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T00:00:00Z");
    p->tool = strdup("advise test");
    ProfLineMetrics m = {.kernel = (char *)kernel, .file = profile_add_file(p, "kernel.cu"), .line = 7,
                         .launches = 1, .instructions = 4096, .global_sectors = 18874368,
                         .global_sectors_ideal = 4194304};
    cr_assert_geq(profile_add_line_metrics(p, &m), 0);
    char path[800], *err = NULL;
    snprintf(path, sizeof path, "%s/part-%ld.json", dir, pid);
    cr_assert(profile_write_file(p, PROFILE_PART, path, &err), "%s", err ? err : "");
    profile_free(p);
    agg_free(agg);
}

Test(profile_cli, source_metrics_rerun_the_command_per_kernel_and_keep_the_lines) {
    char staged[600];
    snprintf(staged, sizeof staged, "%s/staged", project);
    mkdir(staged, 0755);
    char path[700];
    snprintf(path, sizeof path, "%s/kernel.cu", project);
    FILE *f = fopen(path, "w");
    fputs("// a kernel\n", f);
    fclose(f);
    /* the profiled run: transpose launched from kernel.cu (native code) */
    Aggregator *agg = agg_new();
    ProfDevice dev = {.id = 0, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9};
    agg_device(agg, &dev);
    int site = agg_site(agg, "kernel.cu", 20, "main");
    AggKernel k = {.name = "_Z9transposePfPKfii", .grid = {64, 64, 1}, .block = {32, 8, 1}, .registers = 16,
                   .start_ns = 1000, .end_ns = 3000, .site = site};
    agg_kernel(agg, &k);
    ProfProcess proc = {.pid = 11, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 10000};
    Profile *p = agg_to_profile(agg, &proc);
    p->name = strdup("part");
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T00:00:00Z");
    p->tool = strdup("advise test");
    char *err = NULL;
    snprintf(path, sizeof path, "%s/part-11.json", staged);
    cr_assert(profile_write_file(p, PROFILE_PART, path, &err), "%s", err ? err : "");
    profile_free(p);
    agg_free(agg);
    mkdir(strcat(strcpy(path, staged), "/m"), 0755);
    write_metrics_part(path, 12, "_Z9transposePfPKfii");

    /* the command copies the part that matches its mode, and counts its runs */
    char env[1400], args[2400];
    snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s ADVISE_INJECT_LIB=%s/libcuda.so.1", fake_driver, fake_driver);
    snprintf(args, sizeof args,
             "--source-metrics=5 -o out.json -- sh -c 'echo \"${ADVISE_SOURCE_METRICS_KERNEL:-plain}\" >> runs.txt; "
             "if [ -n \"$ADVISE_SOURCE_METRICS_KERNEL\" ]; then cp %s/m/part-12.json \"$ADVISE_PROFILE_PARTS_DIR\"/; "
             "else cp %s/part-11.json \"$ADVISE_PROFILE_PARTS_DIR\"/; fi'",
             staged, staged);
    RunResult r = run_profile(env, args);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "CUPTI measures one kernel per run, so the command runs 1 more time"), "%s", r.err);
    cr_expect(strstr(r.err, "source metrics 1/1: transpose(float*, float const*, int, int) (100.0% of GPU time)"),
              "%s", r.err);
    cr_expect(strstr(r.err, "source metrics 1/1: 1 source line measured"), "%s", r.err);

    char runs_path[700];
    snprintf(runs_path, sizeof runs_path, "%s/runs.txt", project);
    FILE *runs = fopen(runs_path, "r");
    cr_assert_not_null(runs);
    char runs_text[256] = "";
    size_t n = fread(runs_text, 1, sizeof runs_text - 1, runs);
    runs_text[n] = '\0';
    fclose(runs);
    cr_expect_str_eq(runs_text, "plain\n_Z9transposePfPKfii\n", "one plain run, then one per kernel (mangled)");

    snprintf(path, sizeof path, "%s/out.json", project);
    Profile *out = profile_read_file(path, PROFILE_FINAL, &err);
    cr_assert_not_null(out, "%s", err ? err : "");
    cr_assert_eq(out->line_metric_count, 1);
    const ProfLineMetrics *m = &out->line_metrics[0];
    cr_expect_str_eq(m->kernel, "transpose(float*, float const*, int, int)", "demangled like the kernels");
    cr_expect_str_eq(out->files[m->file].path, "kernel.cu");
    cr_expect_not_null(out->files[m->file].sha256, "the measured file's content hash is recorded");
    cr_expect_eq(m->line, 7);
    cr_expect_eq(m->global_sectors, 18874368);
    cr_expect_eq(m->global_sectors_ideal, 4194304);
    cr_expect_eq(out->process_count, 1, "the re-runs add lines, not processes");
    profile_free(out);
    free(err);
    run_result_free(&r);
}

Test(profile_cli, source_metrics_option_errors) {
    RunResult r = run_profile("", "--source-metrics=0 -- true");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--source-metrics=N needs a number of runs from 1 to 100"), "%s", r.err);
    run_result_free(&r);
    r = run_profile("", "--source-metrics=x -- true");
    cr_expect_eq(r.status, 2);
    run_result_free(&r);
    r = run_profile("", "--source-metrics-kernel");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--source-metrics-kernel needs a value"), "%s", r.err);
    run_result_free(&r);
}

/* --memory tells the recorder where it is; --memory=native also asks it for C++ frames */
Test(profile_cli, memory_options_reach_the_recorder) {
    sh("mkdir -p %s/advise-python && touch %s/advise-python/advise_memory.py", fake_driver, fake_driver);
    char env[1400];
    snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s ADVISE_INJECT_LIB=%s/libcuda.so.1 ADVISE_PROFILE_MEMORY_STACKS=stale",
             fake_driver, fake_driver);
    static const struct {
        const char *option, *stacks;
    } cases[] = {{"--memory", "[]"}, {"--memory=python", "[]"}, {"--memory=native", "[all]"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[400];
        snprintf(args, sizeof args,
                 "%s -- sh -c 'echo \"[$ADVISE_PROFILE_MEMORY_STACKS]\"; test -n \"$ADVISE_PROFILE_MEMORY\"'",
                 cases[i].option);
        RunResult r = run_profile(env, args);
        cr_expect_eq(r.status, 0, "%s: %s", cases[i].option, r.err);
        cr_expect(strncmp(r.out, cases[i].stacks, strlen(cases[i].stacks)) == 0, "%s: %s", cases[i].option, r.out);
        run_result_free(&r);
    }
    RunResult r = run_profile("", "--memory=all -- true");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--memory=all: the stacks to record are python (the default) or native"), "%s", r.err);
    run_result_free(&r);
}

/* --steps N reaches the recorder; a stale ADVISE_PROFILE_STEPS in the caller's environment does not */
Test(profile_cli, steps_reach_the_recorder) {
    char env[1400];
    snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s ADVISE_INJECT_LIB=%s/libcuda.so.1 ADVISE_PROFILE_STEPS=77", fake_driver,
             fake_driver);
    static const struct {
        const char *option, *seen;
    } cases[] = {{"--steps 200", "[200]"}, {"--steps=5", "[5]"}, {"", "[]"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[400];
        snprintf(args, sizeof args, "%s -- sh -c 'echo \"[$ADVISE_PROFILE_STEPS]\"'", cases[i].option);
        RunResult r = run_profile(env, args);
        cr_expect_eq(r.status, 0, "%s: %s", cases[i].option, r.err);
        cr_expect(strncmp(r.out, cases[i].seen, strlen(cases[i].seen)) == 0, "'%s': %s", cases[i].option, r.out);
        run_result_free(&r);
    }
}

/* fewer than a hundred steps are recorded, with a warning that they may not stand for the run */
Test(profile_cli, few_steps_are_warned_of) {
    char env[1400];
    snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s ADVISE_INJECT_LIB=%s/libcuda.so.1", fake_driver, fake_driver);
    static const struct {
        const char *option;
        bool warned;
    } cases[] = {{"--steps 20", true}, {"--steps=99", true}, {"--steps 100", false}, {"--steps 300", false}, {"", false}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[400];
        snprintf(args, sizeof args, "%s -- true", cases[i].option);
        RunResult r = run_profile(env, args);
        cr_expect_eq(r.status, 0, "%s: %s", cases[i].option, r.err);
        cr_expect_eq(strstr(r.err, "records few steps: a run's first steps may not look like the rest") != NULL,
                     cases[i].warned, "'%s': %s", cases[i].option, r.err);
        run_result_free(&r);
    }
}

Test(profile_cli, steps_are_a_positive_count_and_not_with_memory) {
    static const char *const bad[] = {"--steps 0 -- true", "--steps -- true", "--steps=x -- true", "--steps=-3 -- true",
                                      "--steps 12abc -- true", "--steps"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        RunResult r = run_profile("", bad[i]);
        cr_expect_eq(r.status, 2, "%s", bad[i]);
        cr_expect(strstr(r.err, "--steps needs a number of optimizer steps from 1 to 1000000000"), "%s: %s", bad[i],
                  r.err);
        run_result_free(&r);
    }
    RunResult r = run_profile("", "--steps 10 --memory -- true");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--steps and --memory cannot be combined"), "%s", r.err);
    run_result_free(&r);
    r = run_profile("", "--source-metrics --steps 10 -- true");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--steps and --source-metrics cannot be combined"), "%s", r.err);
    run_result_free(&r);
    /* the benchmarks' switches that leave no step count */
    r = run_profile("ADVISE_PROFILE_SITES=0", "--steps 10 -- true");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--steps counts optimizer steps with the Python hook, which ADVISE_PROFILE_SITES=0 turns off"),
              "%s", r.err);
    run_result_free(&r);
    r = run_profile("ADVISE_PROFILE_PYTHON_HOOK=off", "--steps=3 -- true");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "which ADVISE_PROFILE_PYTHON_HOOK=off turns off"), "%s", r.err);
    run_result_free(&r);
}

Test(profile_cli, source_metrics_do_not_rerun_a_stopped_command) {
    char staged[600];
    snprintf(staged, sizeof staged, "%s/staged", project);
    mkdir(staged, 0755);
    write_part(staged, 21, false);
    char env[1400], args[1400];
    snprintf(env, sizeof env, "LD_LIBRARY_PATH=%s ADVISE_INJECT_LIB=%s/libcuda.so.1", fake_driver, fake_driver);
    /* the command copies its part, counts its runs and dies of SIGINT, as after ^C */
    snprintf(args, sizeof args,
             "--source-metrics -o out.json -- sh -c 'echo run >> runs.txt; cp %s/part-21.json "
             "\"$ADVISE_PROFILE_PARTS_DIR\"/; kill -INT $$'",
             staged);
    RunResult r = run_profile(env, args);
    cr_expect_eq(r.status, 130, "%s", r.err);
    cr_expect(strstr(r.err, "source metrics: the command was stopped (status 130); it is not run again"), "%s", r.err);
    char path[700];
    snprintf(path, sizeof path, "%s/runs.txt", project);
    char *runs = harness_slurp(path);
    cr_expect_str_eq(runs, "run\n", "one run only");
    free(runs);
    snprintf(path, sizeof path, "%s/out.json", project);
    cr_expect_eq(access(path, R_OK), 0, "what was measured is still written");
    run_result_free(&r);
}
