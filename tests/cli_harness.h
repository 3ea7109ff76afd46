/* Runs the real advise binary for CLI tests and captures its output. */
#ifndef ADVISE_CLI_HARNESS_H
#define ADVISE_CLI_HARNESS_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/temp_tree.h"

typedef struct {
    int status; /* exit code, or -1 when it died of a signal */
    char *out;
    char *err;
} RunResult;

static inline char *harness_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* Runs exec_child(arg) in a child with stdin from /dev/null and captures
 * its stdout and stderr; exec_child must exec or _exit. */
static inline RunResult harness_capture(void (*exec_child)(const void *), const void *arg) {
    char out_path[] = "/tmp/advise-test-out-XXXXXX", err_path[] = "/tmp/advise-test-err-XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        int null_fd = open("/dev/null", O_RDONLY);
        dup2(null_fd, 0);
        exec_child(arg);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(out_fd);
    close(err_fd);
    RunResult r = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, harness_slurp(out_path), harness_slurp(err_path)};
    unlink(out_path);
    unlink(err_path);
    return r;
}

typedef struct {
    const char *cwd;
    const char *const *args;
} AdviseInvocation;

static inline void harness_exec_advise(const void *arg) {
    const AdviseInvocation *inv = arg;
    if (inv->cwd && chdir(inv->cwd) != 0) _exit(127);
    const char *argv[64];
    size_t n = 0;
    argv[n++] = ADVISE_BINARY;
    for (size_t i = 0; inv->args[i] && n < 63; i++) argv[n++] = inv->args[i];
    argv[n] = NULL;
    execv(ADVISE_BINARY, (char *const *)argv);
}

/* argv: NULL-terminated, without the program; cwd may be NULL */
static inline RunResult run_advise_in(const char *cwd, const char *const *args) {
    AdviseInvocation inv = {cwd, args};
    return harness_capture(harness_exec_advise, &inv);
}

static inline void harness_exec_shell(const void *command) {
    execl("/bin/sh", "sh", "-c", (const char *)command, (char *)NULL);
}

/* Runs a shell command line (stdin from /dev/null) and captures its output. */
static inline RunResult harness_run_shell(const char *command) {
    return harness_capture(harness_exec_shell, command);
}

#define run_advise(...) run_advise_in(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define run_advise_at(cwd, ...) run_advise_in(cwd, (const char *const[]){__VA_ARGS__, NULL})

static inline void run_result_free(RunResult *r) {
    free(r->out);
    free(r->err);
}

static inline void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, strlen(text), f);
    fclose(f);
}

/* Paths live until the test process ends: kept reachable here so that the
 * leak checker reports only the code under test. */
static char *harness_paths[256];
static size_t harness_path_count;

static inline char *remember(char *p) {
    if (harness_path_count < sizeof harness_paths / sizeof *harness_paths) harness_paths[harness_path_count++] = p;
    return p;
}

/* a fresh temporary folder, removed when the test process exits */
static inline char *temp_dir(void) {
    return temp_tree("advise-test");
}

static inline char *path_in(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return remember(p);
}

#endif
