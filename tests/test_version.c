/* The version is written in one place, project(advise VERSION ...) in
 * CMakeLists.txt (cmake/advise_version.h.in carries it into the code).
 * These tests read it from CMakeLists.txt itself and check every place
 * advise prints or embeds it: `advise --version`, the JSON output's tool,
 * the profile `advise import` writes, the HTML report's footer, the
 * language server's serverInfo and the cache folder of its rule pages. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <time.h>

#include "tests/cli_harness.h"

/* "0.1.0" from `project(advise VERSION 0.1.0 ...)` */
static char *cmake_version(void) {
    char *text = harness_slurp(ADVISE_SOURCE_DIR "/CMakeLists.txt");
    const char *p = strstr(text, "project(advise VERSION ");
    cr_assert(p, "CMakeLists.txt has no `project(advise VERSION ...)`");
    p += strlen("project(advise VERSION ");
    size_t n = strspn(p, "0123456789.");
    cr_assert(n > 0, "no version after project(advise VERSION");
    char *version = strndup(p, n);
    free(text);
    return remember(version);
}

Test(version, advise_version_prints_the_cmake_project_version) {
    const char *version = cmake_version();
    char expected[64];
    snprintf(expected, sizeof expected, "advise %s\n", version);
    static const char *const spellings[] = {"--version", "version"};
    for (size_t i = 0; i < 2; i++) {
        RunResult r = run_advise(spellings[i]);
        cr_expect_eq(r.status, 0);
        cr_expect_str_eq(r.out, expected, "advise %s", spellings[i]);
        run_result_free(&r);
    }
}

Test(version, json_output_names_the_cmake_project_version) {
    const char *version = cmake_version();
    char *dir = temp_dir();
    char *file = path_in(dir, "a.py");
    write_text(file, "import torch\nx = torch.zeros(3).cuda()\n");
    RunResult r = run_advise("check", "--no-config", "--no-profile", "--format", "json", file);
    json_error_t err;
    json_t *doc = json_loads(r.out, 0, &err);
    cr_assert(doc, "not JSON: %s\n%s", err.text, r.out);
    json_t *tool = json_object_get(doc, "tool");
    cr_expect_str_eq(json_string_value(json_object_get(tool, "name")), "advise");
    cr_expect_str_eq(json_string_value(json_object_get(tool, "version")), version);
    json_decref(doc);
    run_result_free(&r);
}

Test(version, imported_profile_names_the_cmake_project_version) {
    const char *version = cmake_version();
    char *dir = temp_dir();
    char *out = path_in(dir, "imported.json");
    RunResult r = run_advise("import", ADVISE_SOURCE_DIR "/tests/fixtures/traces/syncs.json", "-o", out);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_result_free(&r);
    json_error_t err;
    json_t *profile = json_load_file(out, 0, &err);
    cr_assert(profile, "%s", err.text);
    char expected[64];
    snprintf(expected, sizeof expected, "advise %s", version);
    cr_expect_str_eq(json_string_value(json_object_get(profile, "tool")), expected);
    json_decref(profile);
}

Test(version, html_report_names_the_cmake_project_version) {
    const char *version = cmake_version();
    char *dir = temp_dir();
    char *file = path_in(dir, "a.py");
    write_text(file, "import torch\n");
    RunResult r = run_advise("report", "--no-config", "--no-profile", "--format", "html", "-o", "-", file);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char expected[64];
    snprintf(expected, sizeof expected, "Written by advise %s.", version);
    cr_expect(strstr(r.out, expected), "the footer should say \"%s\"", expected);
    run_result_free(&r);
}

/* ---- the language server --------------------------------------------------------- */

typedef struct {
    pid_t pid;
    int in, out; /* the server's stdin (we write), stdout (we read) */
    char buf[(1 << 16) + 1]; /* buf[len] is always '\0' */
    size_t len;
} Server;

static void server_start(Server *s, const char *cache) {
    int to[2], from[2];
    cr_assert(pipe(to) == 0 && pipe(from) == 0);
    s->pid = fork();
    if (s->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        int null_fd = open("/dev/null", O_WRONLY);
        dup2(null_fd, 2);
        close(to[1]);
        close(from[0]);
        setenv("XDG_CACHE_HOME", cache, 1);
        execl(ADVISE_BINARY, ADVISE_BINARY, "server", (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    s->in = to[1];
    s->out = from[0];
    s->len = 0;
    s->buf[0] = '\0';
}

static void server_send(Server *s, json_t *msg) {
    char *body = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    char header[64];
    int n = snprintf(header, sizeof header, "Content-Length: %zu\r\n\r\n", strlen(body));
    cr_assert(write(s->in, header, (size_t)n) == n);
    cr_assert(write(s->in, body, strlen(body)) == (ssize_t)strlen(body));
    free(body);
}

/* the next message, or NULL after 30 s */
static json_t *server_receive(Server *s) {
    time_t deadline = time(NULL) + 30;
    for (;;) {
        char *end = memmem(s->buf, s->len, "\r\n\r\n", 4);
        if (end) {
            const char *cl = strcasestr(s->buf, "Content-Length:");
            cr_assert(cl && cl < end, "a frame without Content-Length");
            size_t body_len = strtoul(cl + 15, NULL, 10), head = (size_t)(end + 4 - s->buf);
            if (s->len >= head + body_len) {
                json_t *msg = json_loadb(s->buf + head, body_len, 0, NULL);
                memmove(s->buf, s->buf + head + body_len, s->len - head - body_len);
                s->len -= head + body_len;
                s->buf[s->len] = '\0';
                cr_assert(msg, "the server sent a body that is not JSON");
                return msg;
            }
        }
        if (time(NULL) > deadline) return NULL;
        struct pollfd p = {s->out, POLLIN, 0};
        if (poll(&p, 1, 1000) <= 0) continue;
        cr_assert(s->len < sizeof s->buf - 1, "a message over 64 KiB");
        ssize_t got = read(s->out, s->buf + s->len, sizeof s->buf - 1 - s->len);
        if (got <= 0) return NULL;
        s->len += (size_t)got;
        s->buf[s->len] = '\0';
    }
}

/* the first message with this method (or, with method NULL, the answer to id) */
static json_t *server_wait(Server *s, const char *method, int id) {
    for (json_t *msg; (msg = server_receive(s));) {
        const char *m = json_string_value(json_object_get(msg, "method"));
        if (method ? m && strcmp(m, method) == 0
                   : !m && json_integer_value(json_object_get(msg, "id")) == id)
            return msg;
        json_decref(msg);
    }
    return NULL;
}

static void server_stop(Server *s) {
    close(s->in);
    close(s->out);
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
}

Test(version, language_server_reports_the_cmake_project_version, .timeout = 120) {
    const char *version = cmake_version();
    char *dir = temp_dir();
    char *cache = path_in(dir, "cache");
    Server s;
    server_start(&s, cache);
    server_send(&s, json_pack("{s:s,s:i,s:s,s:{s:n,s:n,s:{}}}", "jsonrpc", "2.0", "id", 1, "method", "initialize",
                              "params", "processId", "rootUri", "capabilities"));
    json_t *init = server_wait(&s, NULL, 1);
    cr_assert(init, "no answer to initialize");
    json_t *info = json_object_get(json_object_get(init, "result"), "serverInfo");
    cr_expect_str_eq(json_string_value(json_object_get(info, "name")), "advise");
    cr_expect_str_eq(json_string_value(json_object_get(info, "version")), version);
    json_decref(init);

    /* a diagnostic links to the rule's page in the repository's docs/ (generated from this version's registry) */
    server_send(&s, json_pack("{s:s,s:s,s:{}}", "jsonrpc", "2.0", "method", "initialized", "params"));
    server_send(&s, json_pack("{s:s,s:s,s:{s:{s:s,s:s,s:i,s:s}}}", "jsonrpc", "2.0", "method",
                              "textDocument/didOpen", "params", "textDocument", "uri", "file:///w/a.py",
                              "languageId", "python", "version", 1, "text",
                              "import torch\nx = torch.zeros(3).cuda()\n"));
    json_t *published = server_wait(&s, "textDocument/publishDiagnostics", 0);
    cr_assert(published, "no diagnostics published");
    json_t *first = json_array_get(json_object_get(json_object_get(published, "params"), "diagnostics"), 0);
    const char *href = json_string_value(json_object_get(json_object_get(first, "codeDescription"), "href"));
    char expected[1024];
    snprintf(expected, sizeof expected, "file://%s/docs/rules/PY004.md", ADVISE_SOURCE_DIR);
    cr_expect_str_eq(href ? href : "(none)", expected);
    json_decref(published);
    server_stop(&s);
}
