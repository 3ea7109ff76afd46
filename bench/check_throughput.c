/* Benchmark: `advise check` throughput in lines per second.
 *
 *   build/bench-check [--advise BIN] [--runs N] [FOLDER...]
 *
 * Without folders it measures two corpora: the Python standard library of
 * this machine (natural code, few PyTorch constructs), and a PyTorch-dense
 * corpus made of the bundled samples and rule fixtures copied until it holds
 * at least 100,000 lines. Each corpus is checked N times (default 3) by the
 * real binary, end to end (walk, read, parse, all rules, text output to
 * /dev/null); the median wall time is reported. */
#include <dirent.h>
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

static void count_tree(const char *dir, size_t *files, size_t *lines, size_t *bytes) {
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
            if (strcmp(e->d_name, "__pycache__") && strcmp(e->d_name, "site-packages")) count_tree(path, files, lines, bytes);
            continue;
        }
        size_t n = strlen(e->d_name);
        if (!S_ISREG(st.st_mode) || n < 3 || strcmp(e->d_name + n - 3, ".py")) continue;
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

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double run_once(const char *advise, const char *dir) {
    fflush(stdout);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execl(advise, advise, "check", "--no-config", "--quiet", "--fail-on", "never", dir, (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    double t = now() - t0;
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2)) return -1;
    return t;
}

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

int main(int argc, char **argv) {
    const char *advise = ADVISE_BINARY;
    int runs = 3, first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--advise") == 0 && first + 1 < argc) advise = argv[++first];
        else if (strcmp(argv[first], "--runs") == 0 && first + 1 < argc) runs = atoi(argv[++first]);
        else {
            fprintf(stderr, "usage: bench-check [--advise BIN] [--runs N] [FOLDER...]\n");
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    char host[256] = "?";
    gethostname(host, sizeof host);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("advise check throughput (single process; %ld cores on this machine; median of %d runs)\n", cores, runs);
    printf("%-28s %13s %15s %10s %10s %18s\n", "corpus", "files", "lines", "size", "time", "throughput");
    if (first < argc) {
        for (int i = first; i < argc; i++) measure(advise, argv[i], argv[i], runs);
        return 0;
    }
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
    return 0;
}
