#define _GNU_SOURCE
#include "profiler/driver/profile_run.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/base/growable.h"
#include "profiler/native_resolve.h"
#include "profiler/profile.h"
#include "profiler/profile_json.h"
#include "profiler/profile_store.h"
#include "profiler/driver/profile_run_internal.h"

#include "advise_version.h" /* ADVISE_VERSION: project(VERSION) in CMakeLists.txt */

#define INJECT_LIB "libadvise_inject.so"

void profile_run_usage(FILE *out, const char *program) {
    fprintf(out,
            "usage: %s [-o FILE] [--name NAME] [--profile-dir DIR] [--source-metrics[=N]]\n"
            "          [--source-metrics-kernel TEXT] [--memory[=native]] [--steps N]\n"
            "          -- COMMAND [ARGS...]\n"
            "\n"
            "Runs COMMAND (and the processes it starts) with advise's CUDA profiler and\n"
            "writes one profile: kernels, copies, syncs and allocations with the source\n"
            "line that caused each. The command's output and exit code pass through.\n"
            "\n"
            "  -o FILE            write the profile to FILE\n"
            "  --name NAME        name of the run (default: from the command)\n"
            "  --profile-dir DIR  folder for profiles (default: [profile] dir in\n"
            "                     advise.toml, else .advise/profiles under the project)\n"
            "  --source-metrics[=N]\n"
            "                     then measure memory traffic per CUDA source line of the\n"
            "                     hottest kernels built with -lineinfo (global sectors\n"
            "                     against the coalesced ideal, shared-memory bank\n"
            "                     conflicts, local-memory spills). CUPTI measures one\n"
            "                     kernel per run, so the command runs again once per\n"
            "                     kernel: at most N more runs (default 3), hottest first\n"
            "  --source-metrics-kernel TEXT\n"
            "                     measure only kernels whose name contains TEXT (implies\n"
            "                     --source-metrics)\n"
            "  --memory           also record device memory: memory over time and what\n"
            "                     was live at the peak by the line that allocated it; in\n"
            "                     PyTorch programs by tensor, with growth from step to\n"
            "                     step and the failing allocation of an out-of-memory\n"
            "                     error; in other programs cudaMalloc and friends\n"
            "  --memory=native    the same, with the C++ frames of each allocation's stack\n"
            "                     too, so that tensors a C++ extension of the project\n"
            "                     allocates land on its own lines (costlier to record)\n"
            "  --steps N          record only the first N optimizer steps of each process\n"
            "                     (PyTorch's torch.optim), then detach the profiler, so\n"
            "                     that the rest of a long run goes at full speed; the\n"
            "                     profile covers those steps (not with --memory)\n",
            program);
}

/* Fewer recorded steps than this get a warning (they are still recorded). */
#define FEW_STEPS 100

/* --steps N: a count of optimizer steps, 1 to a billion */
static bool parse_steps(const char *value, unsigned long *steps) {
    char *end = NULL;
    errno = 0;
    unsigned long n = value[0] >= '0' && value[0] <= '9' ? strtoul(value, &end, 10) : 0;
    if (!value[0] || !end || *end || errno || n < 1 || n > 1000000000ul) {
        fprintf(stderr, "advise: --steps needs a number of optimizer steps from 1 to 1000000000%s%s%s\n",
                value[0] ? " (got '" : "", value, value[0] ? "')" : "");
        return false;
    }
    *steps = n;
    return true;
}

int profile_run_parse(int argc, char **argv, ProfileRun *run, const char **profile_dir_option) {
    memset(run, 0, sizeof *run);
    *profile_dir_option = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            profile_run_usage(stdout, "advise profile");
            return -1;
        }
        const char **target = NULL;
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) target = &run->output;
        else if (strcmp(a, "--name") == 0) target = &run->name;
        else if (strcmp(a, "--profile-dir") == 0) target = profile_dir_option;
        if (target) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "advise: %s needs a value\n", a);
                return 2;
            }
            *target = argv[++i];
            continue;
        }
        if (strcmp(a, "--memory") == 0 || strcmp(a, "--memory=python") == 0) {
            run->memory = true;
            continue;
        }
        if (strcmp(a, "--memory=native") == 0) {
            run->memory = run->memory_native = true;
            continue;
        }
        if (strncmp(a, "--memory=", 9) == 0) {
            fprintf(stderr, "advise: --memory=%s: the stacks to record are python (the default) or native\n", a + 9);
            return 2;
        }
        if (strcmp(a, "--steps") == 0 || strncmp(a, "--steps=", 8) == 0) {
            const char *value = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : "";
            if (!parse_steps(value, &run->steps)) return 2;
            continue;
        }
        if (strcmp(a, "--source-metrics") == 0) {
            run->source_metrics_runs = SOURCE_METRICS_DEFAULT_RUNS;
            continue;
        }
        if (strncmp(a, "--source-metrics=", 17) == 0) {
            char *end;
            long n = strtol(a + 17, &end, 10);
            if (!a[17] || *end || n < 1 || n > 100) {
                fprintf(stderr, "advise: --source-metrics=N needs a number of runs from 1 to 100\n");
                return 2;
            }
            run->source_metrics_runs = (int)n;
            continue;
        }
        if (strcmp(a, "--source-metrics-kernel") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "advise: %s needs a value\n", a);
                return 2;
            }
            run->source_metrics_kernel = argv[++i];
            continue;
        }
        if (a[0] == '-') {
            fprintf(stderr, "advise: unknown option '%s' (put the command after --)\n", a);
            return 2;
        }
        break;
    }
    if (i >= argc) {
        fprintf(stderr, "advise: no command to profile\n");
        profile_run_usage(stderr, "advise profile");
        return 2;
    }
    if (run->steps && (run->source_metrics_runs || run->source_metrics_kernel)) {
        fprintf(stderr, "advise: --steps and --source-metrics cannot be combined: each --source-metrics re-run "
                        "measures one kernel over the whole command\n");
        return 2;
    }
    if (run->steps && run->memory) {
        fprintf(stderr, "advise: --steps and --memory cannot be combined: memory over time and its peak need the "
                        "whole run recorded\n");
        return 2;
    }
    /* the benchmarks' switches that turn the Python hook off also turn off the step count --steps needs */
    const char *sites = getenv("ADVISE_PROFILE_SITES"), *hook = getenv("ADVISE_PROFILE_PYTHON_HOOK");
    bool no_sites = sites && strcmp(sites, "0") == 0, no_hook = hook && strcmp(hook, "off") == 0;
    if (run->steps && (no_sites || no_hook)) {
        fprintf(stderr, "advise: --steps counts optimizer steps with the Python hook, which %s turns off: unset it, "
                        "or profile the whole run without --steps\n",
                no_sites ? "ADVISE_PROFILE_SITES=0" : "ADVISE_PROFILE_PYTHON_HOOK=off");
        return 2;
    }
    /* a run's first steps may not look like its steady ones: a small GPT's first 20 kept its GPU 85% busy,
     * its steady steps 49% (bench/RESULTS.md, "--steps measured") */
    if (run->steps && run->steps < FEW_STEPS)
        fprintf(stderr,
                "advise: --steps %lu records few steps: a run's first steps may not look like the rest (warm-up, "
                "caches, clocks); a few hundred (--steps 300) give figures that hold for the run\n",
                run->steps);
    run->command = argv + i;
    if (run->source_metrics_kernel && run->source_metrics_runs == 0) run->source_metrics_runs = SOURCE_METRICS_DEFAULT_RUNS;
    return 0;
}

/* ---- finding the injection library: beside the running binary, or in
 * ../lib/advise/ for an installed advise; ADVISE_INJECT_LIB overrides. */
static char *find_injection(void) {
    const char *env = getenv("ADVISE_INJECT_LIB");
    if (env && *env) return access(env, R_OK) == 0 ? realpath(env, NULL) : NULL;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = '\0';
    const char *candidates[] = {"%s/" INJECT_LIB, "%s/../lib/advise/" INJECT_LIB};
    for (size_t c = 0; c < 2; c++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, candidates[c], exe);
        if (access(path, R_OK) == 0) return realpath(path, NULL);
    }
    return NULL;
}

static bool driver_present(void) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) return false;
    dlclose(h);
    return true;
}

/* ---- running the command */
static volatile pid_t child_pid;

static void forward_signal(int sig) {
    if (child_pid > 0) kill(child_pid, sig);
}

const char *profile_tmp_dir(void) {
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

bool parts_dir_create(const char *prefix, char *out, size_t size) {
    if (snprintf(out, size, "%s/%s-XXXXXX", profile_tmp_dir(), prefix) >= (int)size) {
        errno = ENAMETOOLONG;
        return false;
    }
    return mkdtemp(out) != NULL;
}

double seconds_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

int run_child(char **command, const char *inject, const char *parts, const char *root,
              const char *metrics_kernel) {
    struct sigaction ignore = {.sa_handler = SIG_IGN}, forward = {.sa_handler = forward_signal};
    struct sigaction old_int, old_quit, old_term, old_hup;
    sigemptyset(&ignore.sa_mask);
    sigemptyset(&forward.sa_mask);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "advise: cannot start '%s': %s\n", command[0], strerror(errno));
        return 127;
    }
    if (pid == 0) {
        if (inject) {
            setenv("CUDA_INJECTION64_PATH", inject, 1);
            setenv("ADVISE_PROFILE_PARTS_DIR", parts, 1);
            setenv("ADVISE_PROJECT_ROOT", root, 1);
            if (metrics_kernel) setenv("ADVISE_SOURCE_METRICS_KERNEL", metrics_kernel, 1);
            else unsetenv("ADVISE_SOURCE_METRICS_KERNEL");
        }
        execvp(command[0], command);
        int e = errno;
        fprintf(stderr, "advise: cannot run '%s': %s\n", command[0], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    /* Like a shell: ^C and ^\ go to the child (same process group); we stay
     * to write the profile. TERM and HUP sent to us are passed on. */
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    sigaction(SIGTERM, &forward, &old_term);
    sigaction(SIGHUP, &forward, &old_hup);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    child_pid = 0;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

/* ---- after the run */
static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads and merges every part; prints each process's error once. */
Profile *merge_parts(const char *parts_dir) {
    DIR *d = opendir(parts_dir);
    if (!d) return NULL;
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "part-", 5) != 0) continue;
        if (!array_reserve(&names, count, &cap, sizeof *names, 8)) break;
        names[count++] = strdup(e->d_name);
    }
    closedir(d);
    if (count) qsort(names, count, sizeof *names, cmp_str); /* names is NULL when there is none */
    Profile *merged = NULL;
    for (size_t i = 0; i < count; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", parts_dir, names[i]);
        char *err = NULL;
        Profile *part = names[i] ? profile_read_file(path, PROFILE_PART, &err) : NULL;
        if (!part) {
            fprintf(stderr, "advise: skipping the profile of one process (%s): %s\n", names[i] ? names[i] : "?",
                    err ? err : "out of memory");
        } else if (!merged) {
            merged = part;
            part = NULL;
        } else if (!profile_append(merged, part)) {
            fprintf(stderr, "advise: out of memory while merging process profiles\n");
        }
        profile_free(part);
        free(err);
        unlink(path);
        free(names[i]);
    }
    free(names);
    rmdir(parts_dir);
    return merged;
}

static void report_process_errors(const Profile *p) {
    for (size_t i = 0; i < p->process_count; i++) {
        const char *err = profile_process_error_first(p, i);
        if (err) fprintf(stderr, "advise: %s\n", err);
    }
}

/* Two native sites of a memory (CUPTI's, from cudaMalloc's stacks) may
 * resolve to one line: their memory lines of a kind become one (a memory's
 * lines never repeat a site), bytes and counts added. Few lines (64 of each
 * kind per memory): a quadratic pass is enough. */
static void merge_memory_lines(Profile *p) {
    size_t kept = 0;
    for (size_t i = 0; i < p->memory_line_count; i++) {
        ProfMemLine *l = &p->memory_lines[i];
        bool cupti = l->memory >= 0 && (size_t)l->memory < p->memory_count &&
                     p->memories[l->memory].source == PROF_MEM_SOURCE_CUPTI;
        size_t k = cupti ? 0 : kept;
        while (k < kept && !(p->memory_lines[k].memory == l->memory && p->memory_lines[k].kind == l->kind &&
                             p->memory_lines[k].site == l->site))
            k++;
        if (k < kept) {
            p->memory_lines[k].bytes = prof_add_u64(p->memory_lines[k].bytes, l->bytes);
            p->memory_lines[k].count = prof_add_u64(p->memory_lines[k].count, l->count);
        } else {
            p->memory_lines[kept++] = *l;
        }
    }
    p->memory_line_count = kept;
}

/* Replaces every unresolved native site by the line it resolves to (or drops
 * it) and re-indexes the operations, gaps and memory lines that point at sites. */
static void resolve_native_sites(Profile *p, const char *root) {
    bool any = false;
    for (size_t i = 0; i < p->site_count; i++) any |= p->sites[i].frame_count > 0;
    if (!any) return;
    NativeResolver *resolver = native_resolver_new(root);
    size_t old_count = p->site_count;
    int *map = malloc(old_count * sizeof *map);
    if (!map) {
        native_resolver_free(resolver);
        return;
    }
    for (size_t i = 0; i < old_count; i++) {
        map[i] = (int)i;
        if (!p->sites[i].frame_count) continue;
        map[i] = -1;
        char *file = NULL, *function = NULL;
        uint32_t line = 0;
        if (resolver && native_resolve(resolver, p->sites[i].frames, p->sites[i].frame_count, &file, &line,
                                       &function) &&
            profile_path_ok(file)) {
            int f = profile_add_file(p, file);
            if (f >= 0) map[i] = profile_add_site(p, f, line, function);
        }
        free(file);
        free(function);
    }
    native_resolver_free(resolver);
    /* keep resolved and source sites, in order; new index for each */
    int *final = malloc(p->site_count * sizeof *final);
    if (!final) {
        free(map);
        return;
    }
    size_t kept = 0;
    for (size_t i = 0; i < p->site_count; i++) {
        ProfSite *s = &p->sites[i];
        if (s->frame_count) {
            for (size_t f = 0; f < s->frame_count; f++) free(s->frames[f].module);
            free(s->frames);
            free(s->function);
            final[i] = -1;
            continue;
        }
        final[i] = (int)kept;
        p->sites[kept++] = *s;
    }
    p->site_count = kept;
#define REMAP(x) ((x) = (x) < 0 || (size_t)(x) >= old_count || map[(x)] < 0 ? -1 : final[map[(x)]])
    for (size_t i = 0; i < p->op_count; i++) REMAP(p->ops[i].site);
    for (size_t i = 0; i < p->gap_count; i++) {
        REMAP(p->gaps[i].before_site);
        REMAP(p->gaps[i].after_site);
    }
    for (size_t i = 0; i < p->memory_count; i++) REMAP(p->memories[i].oom_site);
    for (size_t i = 0; i < p->memory_line_count; i++) {
        REMAP(p->memory_lines[i].site);
        if (p->memory_lines[i].freed_bytes) REMAP(p->memory_lines[i].freed_site);
    }
#undef REMAP
    free(final);
    free(map);
    merge_memory_lines(p);
}

static void demangle_name(char **name) {
    char *d = native_demangle(*name);
    if (!d) return;
    if (strlen(d) >= PROFILE_MAX_STRING) d[PROFILE_MAX_STRING - 1] = '\0';
    free(*name);
    *name = d;
}

static void demangle_kernels(Profile *p) {
    for (size_t i = 0; i < p->kernel_count; i++) demangle_name(&p->kernels[i].name);
    for (size_t i = 0; i < p->line_metric_count; i++) demangle_name(&p->line_metrics[i].kernel);
}

/* "python train.py" -> "train"; "pytest -q tests" -> "pytest"; "./bin/app" -> "app" */
static char *default_name(char **command) {
    const char *pick = command[0];
    const char *base = strrchr(pick, '/');
    base = base ? base + 1 : pick;
    if (strncmp(base, "python", 6) == 0) {
        for (size_t i = 1; command[i]; i++) {
            if (command[i][0] == '-') {
                if (strcmp(command[i], "-m") == 0 && command[i + 1]) {
                    pick = command[i + 1];
                    break;
                }
                continue;
            }
            pick = command[i];
            break;
        }
        base = strrchr(pick, '/');
        base = base ? base + 1 : pick;
    }
    char *name = strdup(base);
    if (name) {
        char *dot = strrchr(name, '.');
        if (dot && dot != name) *dot = '\0';
    }
    return name;
}

static void describe(const Profile *p, const char *path) {
    uint64_t launches = 0, copies = 0;
    for (size_t i = 0; i < p->op_count; i++) {
        if (p->ops[i].kind == PROF_OP_LAUNCH) launches += p->ops[i].stats.count;
        if (p->ops[i].kind == PROF_OP_MEMCPY) copies += p->ops[i].stats.count;
    }
    uint64_t span = 0, busy = 0;
    for (size_t i = 0; i < p->timeline_count; i++) {
        span += p->timelines[i].span_ns;
        busy += p->timelines[i].busy_ns;
    }
    fprintf(stderr,
            "advise: profile written to %s (%llu kernel launches, %llu copies, %zu call sites; GPU busy %.0f%% "
            "of %.3f s)\n",
            profile_store_display(path), (unsigned long long)launches, (unsigned long long)copies, p->site_count,
            span ? 100.0 * (double)busy / (double)span : 0.0, (double)span / 1e9);
}

static bool set_metadata(Profile *p, const ProfileRun *run) {
    char *name = run->name ? strdup(run->name) : default_name(run->command);
    bool labelled = name && profile_set_labels(p, name, "cupti", "advise " ADVISE_VERSION);
    free(name);
    if (!labelled) return false;
    for (size_t i = 0; i < p->command_count; i++) free(p->command[i]);
    free(p->command);
    p->command_count = 0;
    size_t n = 0;
    while (run->command[n] && n < PROFILE_MAX_COMMAND_ARGS) n++;
    p->command = calloc(n ? n : 1, sizeof *p->command);
    if (!p->name || !p->source || !p->created || !p->tool || !p->command) return false;
    for (size_t i = 0; i < n; i++) {
        const char *arg = run->command[i];
        p->command[i] = strndup(arg, PROFILE_MAX_STRING - 1);
        if (!p->command[i]) return false;
        p->command_count++;
    }
    return true;
}

static bool has_activity(const Profile *p) {
    return p->op_count > 0 || p->kernel_count > 0 || p->api_count > 0;
}

int profile_run(const ProfileRun *run) {
    char *inject = NULL;
    const char *existing = getenv("CUDA_INJECTION64_PATH");
    if (existing && *existing) {
        fprintf(stderr,
                "advise: CUDA_INJECTION64_PATH is already set (%s): another profiler is attached, so the "
                "command runs without advise's profiler\n",
                existing);
    } else if (!(inject = find_injection())) {
        fprintf(stderr,
                "advise: the profiler library " INJECT_LIB " was not found beside advise (set "
                "ADVISE_INJECT_LIB); the command runs without profiling\n");
    } else if (!driver_present()) {
        fprintf(stderr,
                "advise: no NVIDIA driver found (libcuda.so.1 cannot be loaded); the command runs without "
                "profiling\n");
        free(inject);
        inject = NULL;
    }
    char parts[PATH_MAX] = "";
    if (inject && !parts_dir_create("advise-profile", parts, sizeof parts)) {
        fprintf(stderr, "advise: cannot create a folder for the profile in %s: %s; the command runs without "
                        "profiling\n", profile_tmp_dir(), strerror(errno));
        free(inject);
        inject = NULL;
    }
    bool memory = inject && run->memory && memory_recording_start(inject, run->memory_native);
    /* --steps reaches the injection library (inject/recording_window.c);
     * one left in the caller's environment must not */
    char steps[32];
    snprintf(steps, sizeof steps, "%lu", run->steps);
    if (run->steps) setenv(STEPS_ENV, steps, 1);
    else unsetenv(STEPS_ENV);
    struct timespec started;
    clock_gettime(CLOCK_MONOTONIC, &started);
    int status = run_child(run->command, inject, parts, run->root, NULL);
    unsetenv(STEPS_ENV); /* the --source-metrics re-runs record no steps */
    double seconds = seconds_since(&started);
    if (memory) { /* the --source-metrics re-runs do not record it */
        unsetenv(MEMORY_ENV);
        unsetenv(MEMORY_STACKS_ENV);
    }
    if (!inject) return status;

    MemoryParts memory_parts = memory_parts_take(parts);
    Profile *p = merge_parts(parts);
    if (p && memory) memory_parts_add(p, &memory_parts);
    memory_parts_free(&memory_parts);
    if (!p) {
        free(inject);
        if (status != 127 && status != 126)
            fprintf(stderr,
                    "advise: no CUDA activity was recorded: the command never initialised CUDA, or no GPU is "
                    "visible to it; no profile written\n");
        return status;
    }
    report_process_errors(p);
    if (!has_activity(p)) {
        bool explained = false;
        for (size_t i = 0; i < p->process_count; i++) explained |= p->processes[i].error != NULL;
        if (!explained)
            fprintf(stderr, "advise: the command initialised CUDA but ran no GPU work; no profile written\n");
        profile_free(p);
        free(inject);
        return status;
    }
    resolve_native_sites(p, run->root);
    if (run->source_metrics_runs > 0 && status >= 128) {
        /* interrupted (^C) or killed: the user does not want it run again */
        fprintf(stderr, "advise: source metrics: the command was stopped (status %d); it is not run again\n", status);
    } else if (run->source_metrics_runs > 0) {
        source_metrics_collect(p, run, inject, seconds);
    }
    free(inject);
    if (!profile_trim_to_caps(p)) fprintf(stderr, "advise: out of memory while bounding the profile\n");
    demangle_kernels(p);
    profile_hash_files(p, run->root);
    char *err = NULL;
    char *path = NULL;
    if (!set_metadata(p, run)) {
        err = strdup("out of memory");
    } else if (run->output) {
        path = strdup(run->output);
    } else {
        path = profile_store_reserve(run->profile_dir, p->name, &err);
    }
    if (path && profile_write_file(p, PROFILE_FINAL, path, &err)) {
        describe(p, path);
    } else {
        fprintf(stderr, "advise: could not write the profile: %s\n", err ? err : "out of memory");
        if (path && !run->output) unlink(path); /* the empty reserved file */
        /* the command's exit status still stands: the profile is a by-product */
    }
    free(err);
    free(path);
    profile_free(p);
    return status;
}
