/* Benchmark: `advise check` throughput in lines per second.
 *
 *   build/bench-check [--advise BIN] [--runs N] [--only python|parallel] [FOLDER...]
 *
 * Without folders it measures two Python corpora with one process: the
 * Python standard library of this machine (natural code, few PyTorch
 * constructs), and a PyTorch-dense corpus made of the bundled samples and
 * rule fixtures copied until it holds at least 100,000 lines. Then a mixed
 * tree (the CUDA and Python samples and fixtures copied until it holds at
 * least 100 .cu files and 20,000 lines of Python) is checked side by side,
 * round after round, as it was checked before -j and the precompiled CUDA
 * prefix (-j 1, ADVISE_CUDA_PCH=0), with the prefix on one thread, and with
 * -j 2 and -j N (every core). Each is run N times (default 3) by the real
 * binary, end to end (walk, read, parse, all rules, text output to
 * /dev/null); the median wall time is reported. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef ADVISE_SOURCE_DIR
#define ADVISE_SOURCE_DIR "."
#endif

static bool ends_with(const char *name, const char *suffix) {
    size_t a = strlen(name), b = strlen(suffix);
    return a >= b && strcmp(name + a - b, suffix) == 0;
}

/* Files whose names end with suffix (".py", ".cu") under dir: count, lines, bytes. */
static void count_files(const char *dir, const char *suffix, size_t *files, size_t *lines, size_t *bytes) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (strcmp(e->d_name, "__pycache__") && strcmp(e->d_name, "site-packages"))
                count_files(path, suffix, files, lines, bytes);
            continue;
        }
        if (!S_ISREG(st.st_mode) || !ends_with(e->d_name, suffix)) continue;
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        int c;
        while ((c = getc(f)) != EOF) {
            if (c == '\n') (*lines)++;
            (*bytes)++;
        }
        fclose(f);
        (*files)++;
    }
    closedir(d);
}

static void count_tree(const char *dir, size_t *files, size_t *lines, size_t *bytes) {
    count_files(dir, ".py", files, lines, bytes);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* advise check over dir, -j jobs (0: advise's default), with ADVISE_CUDA_PCH=pch (NULL: unset); wall seconds or -1 */
static double run_check(const char *advise, const char *dir, const char *jobs, const char *pch) {
    fflush(stdout);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        if (pch) setenv("ADVISE_CUDA_PCH", pch, 1);
        else unsetenv("ADVISE_CUDA_PCH");
        if (jobs)
            execl(advise, advise, "check", "--no-config", "--quiet", "--fail-on", "never", "-j", jobs, dir, (char *)NULL);
        else
            execl(advise, advise, "check", "--no-config", "--quiet", "--fail-on", "never", dir, (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    double t = now() - t0;
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2)) return -1;
    return t;
}

static double run_once(const char *advise, const char *dir) { return run_check(advise, dir, NULL, NULL); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(const char *advise, const char *label, const char *dir, int runs) {
    size_t files = 0, lines = 0, bytes = 0;
    count_tree(dir, &files, &lines, &bytes);
    if (!files) {
        printf("%-28s (no .py files under %s)\n", label, dir);
        return;
    }
    double times[32];
    if (runs > 32) runs = 32;
    for (int i = 0; i < runs; i++) {
        times[i] = run_once(advise, dir);
        if (times[i] < 0) {
            printf("%-28s advise failed on %s\n", label, dir);
            return;
        }
    }
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    double median = times[runs / 2];
    printf("%-28s %7zu files %9zu lines %7.1f MB %8.3f s %12.0f lines/s\n", label, files, lines, bytes / 1e6, median,
           lines / median);
}

static int make_torch_corpus(const char *dest, size_t min_lines) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dest, dest);
    if (system(cmd) != 0) return -1;
    size_t lines = 0;
    for (int copy = 0; lines < min_lines && copy < 10000; copy++) {
        snprintf(cmd, sizeof cmd,
                 "mkdir -p %s/c%04d && { cp %s/samples/python/*.py %s/tests/fixtures/python/*.py %s/c%04d/ 2>/dev/null; true; }",
                 dest, copy, ADVISE_SOURCE_DIR, ADVISE_SOURCE_DIR, dest, copy);
        if (system(cmd) != 0) return -1;
        size_t files = 0, bytes = 0;
        lines = 0;
        count_tree(dest, &files, &lines, &bytes);
        if (lines == 0) return -1;
    }
    return 0;
}

/* The CUDA and Python samples and fixtures, copied into c0000/, c0001/, ...
 * until the tree holds min_cu .cu files and min_py_lines lines of Python. */
static int make_mixed_corpus(const char *dest, size_t min_cu, size_t min_py_lines) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dest, dest);
    if (system(cmd) != 0) return -1;
    size_t cu = 0, py_lines = 0;
    for (int copy = 0; (cu < min_cu || py_lines < min_py_lines) && copy < 1000; copy++) {
        const char *s = ADVISE_SOURCE_DIR;
        snprintf(cmd, sizeof cmd,
                 "mkdir -p %s/c%04d/cuda %s/c%04d/python && "
                 "{ cp %s/samples/cuda/*.cu %s/tests/fixtures/cuda/*.cu %s/c%04d/cuda/ 2>/dev/null; "
                 "for d in merge native profile; do for f in %s/tests/fixtures/$d/*.cu; do "
                 "[ -f \"$f\" ] && cp \"$f\" %s/c%04d/cuda/$d-$(basename \"$f\"); done; done; "
                 "cp %s/samples/python/*.py %s/tests/fixtures/python/*.py %s/c%04d/python/ 2>/dev/null; true; }",
                 dest, copy, dest, copy, s, s, dest, copy, s, dest, copy, s, s, dest, copy);
        if (system(cmd) != 0) return -1;
        size_t files = 0, bytes = 0, lines = 0;
        cu = 0;
        count_files(dest, ".cu", &cu, &lines, &bytes);
        py_lines = 0;
        count_files(dest, ".py", &files, &py_lines, &bytes);
        if (cu == 0 || py_lines == 0) return -1;
    }
    return 0;
}

typedef struct {
    const char *label;
    const char *jobs;
    const char *pch; /* ADVISE_CUDA_PCH */
    double times[32];
} Setting;

/* The mixed tree checked as before -j and the precompiled prefix, and with
 * them, one setting after another in each round (the machine's other work
 * falls on all of them alike). */
static void measure_parallel(const char *advise, const char *dir, int runs) {
    size_t cu_files = 0, cu_lines = 0, py_files = 0, py_lines = 0, bytes = 0;
    count_files(dir, ".cu", &cu_files, &cu_lines, &bytes);
    count_files(dir, ".py", &py_files, &py_lines, &bytes);
    size_t lines = cu_lines + py_lines;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char all[32];
    snprintf(all, sizeof all, "%ld", cores);
    Setting settings[] = {
        {"-j 1, no precompiled prefix (before)", "1", "0", {0}},
        {"-j 1, precompiled CUDA prefix", "1", "1", {0}},
        {"-j 2, precompiled CUDA prefix", "2", "1", {0}},
        {"-j N (every core), precompiled CUDA prefix", all, "1", {0}},
    };
    size_t count = cores == 2 ? 3 : 4; /* -j N is -j 2 here */
    if (runs > 32) runs = 32;
    double load[3] = {0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = load[1] = load[2] = 0;
        fclose(la);
    }
    printf("\nmixed tree %s: %zu .cu files (%zu lines), %zu .py files (%zu lines); median of %d rounds\n", dir,
           cu_files, cu_lines, py_files, py_lines, runs);
    printf("load average at the start: %.2f %.2f %.2f (other work on the machine slows every setting)\n", load[0],
           load[1], load[2]);
    for (int r = 0; r < runs; r++)
        for (size_t k = 0; k < count; k++) {
            settings[k].times[r] = run_check(advise, dir, settings[k].jobs, settings[k].pch);
            if (settings[k].times[r] < 0) {
                printf("%s: advise failed on %s\n", settings[k].label, dir);
                return;
            }
        }
    printf("%-46s %10s %10s %9s  %s\n", "setting", "time", "lines/s", "speed-up", "(each run, s)");
    double before = 0;
    for (size_t k = 0; k < count; k++) {
        qsort(settings[k].times, (size_t)runs, sizeof *settings[k].times, cmp_double);
        double median = settings[k].times[runs / 2];
        if (k == 0) before = median;
        char label[96];
        snprintf(label, sizeof label, "%s%s", settings[k].label, k == 2 && cores == 2 ? " (every core)" : "");
        printf("%-46s %8.2f s %10.0f %8.2fx  (", label, median, lines / median, before / median);
        for (int r = 0; r < runs; r++) printf("%s%.2f", r ? " " : "", settings[k].times[r]);
        printf(")\n");
    }
    double two = settings[2].times[runs / 2];
    printf("goal: -j 2 at least 3x the figure before: %s (%.2fx)\n", before / two >= 3 ? "met" : "MISSED", before / two);
    la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) == 3)
            printf("load average at the end: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
        fclose(la);
    }
}

/* The two Python corpora, with advise's default -j. */
static void measure_python(const char *advise, int runs) {
    printf("(Python, advise's default -j; median of %d runs)\n", runs);
    printf("%-28s %13s %15s %10s %10s %18s\n", "corpus", "files", "lines", "size", "time", "throughput");
    FILE *p = popen("python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"stdlib\"])' 2>/dev/null", "r");
    char stdlib[4096] = "";
    if (p) {
        if (fgets(stdlib, sizeof stdlib, p)) stdlib[strcspn(stdlib, "\n")] = '\0';
        pclose(p);
    }
    if (stdlib[0]) measure(advise, "python stdlib", stdlib, runs);
    else printf("%-28s (python3 not found)\n", "python stdlib");
    const char *corpus = "/tmp/advise-bench-torch-corpus";
    if (make_torch_corpus(corpus, 100000) == 0) measure(advise, "pytorch-dense (generated)", corpus, runs);
}

int main(int argc, char **argv) {
    const char *advise = ADVISE_BINARY;
    int runs = 3, first = 1;
    const char *only = NULL;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--advise") == 0 && first + 1 < argc) advise = argv[++first];
        else if (strcmp(argv[first], "--runs") == 0 && first + 1 < argc) runs = atoi(argv[++first]);
        else if (strcmp(argv[first], "--only") == 0 && first + 1 < argc) only = argv[++first];
        else {
            fprintf(stderr, "usage: bench-check [--advise BIN] [--runs N] [--only python|parallel] [FOLDER...]\n");
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char model[256] = "?";
    FILE *cpu = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (cpu && fgets(line, sizeof line, cpu))
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (cpu) fclose(cpu);
    time_t t = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    printf("advise check throughput: %s, %s, %ld cores; %s\n", advise, model, cores, date);
    if (first < argc) {
        printf("(single process; median of %d runs)\n", runs);
        printf("%-28s %13s %15s %10s %10s %18s\n", "corpus", "files", "lines", "size", "time", "throughput");
        for (int i = first; i < argc; i++) measure(advise, argv[i], argv[i], runs);
        return 0;
    }
    bool python = !only || strcmp(only, "python") == 0, parallel = !only || strcmp(only, "parallel") == 0;
    if (python) measure_python(advise, runs);
    const char *mixed = "/tmp/advise-bench-mixed-corpus";
    if (parallel && make_mixed_corpus(mixed, 100, 20000) == 0) measure_parallel(advise, mixed, runs);
    else if (parallel) printf("could not build the mixed tree in %s\n", mixed);
    return 0;
}
