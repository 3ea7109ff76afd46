/* Protocol transcripts for `advise server`: each file tests/lsp/NAME.jsonrpc is
 * one Criterion test. The runner starts the real binary (`advise server`)
 * with pipes, sends what the transcript sends and checks what comes back.
 *
 * Transcript format (tests/lsp/README.md says the same, with examples)
 * ------------------------------------------------------------------
 * One directive a line. Blank lines and lines starting with `#` are
 * comments. A line starting with a space or a tab continues the previous
 * directive (joined with one space), so long JSON can be spread out.
 *
 * Sending (client -> server):
 *   -> {json}            one message, framed with a Content-Length header.
 *                        The text is sent as written (after placeholders are
 *                        expanded), so it may be deliberately invalid JSON.
 *   -> RAW text          raw bytes, no framing; escapes \r \n \t \\ \xHH.
 *   -> BODY text         text with the escapes of RAW, framed with its length
 *                        (bodies that are not UTF-8, for instance).
 *   -> SPLIT a,b,.. {json}
 *                        one framed message written in pieces cut at byte
 *                        offsets a, b, ... of the framed bytes, with a pause
 *                        of 100 ms between pieces (a partial read test).
 *   ->+ {json}  /  ->+ RAW text
 *                        held back, then written together with the next `->`
 *                        in a single write() (several messages in one read).
 *   -> CLOSE             close the server's stdin (end of stream).
 *
 * Expecting (server -> client); each waits at most the timeout (30 s, 90 s
 * in sanitizer builds, or ADVISE_TRANSCRIPT_TIMEOUT seconds), so a hung
 * server fails the test:
 *   <- {pattern}         the next message must match the pattern, where
 *                        window/logMessage notifications are passed over
 *                        (unless the pattern itself is a window/logMessage).
 *   <-~ {pattern}        the first message that matches; every message
 *                        before it is passed over (order-independent waits).
 *   <- @name {pattern}   (also `<-~ @name`) keeps the matched message under
 *                        `name` for `$(name:path)` below.
 *   <-& {pattern}        consecutive `<-&` lines form a group: the next
 *                        messages (window/logMessage passed over) must match
 *                        the group's patterns, in any order (for messages
 *                        from different threads whose order is not fixed).
 *                        `@name` works here too.
 *   <- silence MS        no message other than window/logMessage arrives for
 *                        MS milliseconds (for "nothing is sent" checks only).
 *   <- exit N            the server exits with status N; only
 *                        window/logMessage may come before the end of output
 *                        (`<-~ exit N`: any message may).
 *   <- within MS {pattern}  (also `<-~ within MS`, and `<-& within MS`,
 *                        which bounds the whole group) as without, but the
 *                        message must come within MS milliseconds (times
 *                        timeout / 30 s: 3x in sanitizer builds).
 *   <- within MS exit N  the server exits with status N within MS
 *                        milliseconds, scaled the same way.
 *   -- sleep MS          pause (only where a delay is the point).
 *   -- copy SRC DST      copies a file (written beside DST, then renamed into
 *                        place; DST's folder made when missing).
 *   -- remove PATH       deletes a file.
 *
 * A pattern matches a message when it is a subset of it:
 *   - objects: every key of the pattern is in the message with a matching
 *     value; the value "$ABSENT" means the key must not be there;
 *   - arrays: same length, element by element; an array whose first element
 *     is "$CONTAINS" instead needs each further element to match some
 *     element of the message's array;
 *   - "$ANY" matches any value; "$HAS:text" matches a string containing
 *     text ("$HAS:a$HAS:b": a, and b somewhere after it); numbers compare
 *     by value; everything else must be equal.
 *
 * Placeholders, expanded in `->` and `<-` lines before anything else:
 *   $ROOT            the repository root (absolute, no trailing slash)
 *   $TMP             a fresh temporary folder for this transcript: the server's
 *                    working directory, with XDG_CACHE_HOME=$TMP/cache
 *   $FILE(path)      the text of a file under $ROOT, escaped for a JSON string
 *   $FILLER(n)       n lines of 64 bytes each ("# filler ...\n"), escaped for
 *                    a JSON string: builds multi-megabyte documents
 *   $REPEAT(n)text$END
 *                    text (as written, placeholders in it are not expanded)
 *                    n times: large documents that take long to analyse
 *   $(path)          the JSON value at path (keys and array indexes joined by
 *                    dots, e.g. `id`, `params.diagnostics.0`) in the last
 *                    message an expectation matched
 *   $(name:path)     the same in the message kept as `@name`
 * Any other `$` is left alone ("$/cancelRequest", "$ANY").
 *
 * At the end of a transcript without `<- exit`, the server's stdin is
 * closed and the process is killed if it has not ended within a second.
 * A server killed by a signal or reporting a sanitizer error fails the test.
 *
 * Environment: ADVISE_TRANSCRIPT=text runs only the transcripts whose file
 * name contains text; ADVISE_TRANSCRIPT_TIMEOUT=seconds changes the timeout;
 * ADVISE_TRANSCRIPT_BINARY=path runs another build of advise (a sanitizer
 * build, say) instead of the one next to the tests. */
#define _GNU_SOURCE /* nftw, strndup */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRANSCRIPT_DIR ADVISE_SOURCE_DIR "/tests/lsp"

/* seconds an expectation waits; sanitizer builds (the server is built the
 * same way as this test, or, under ThreadSanitizer, which Criterion cannot
 * run in, this runner is built without it: ADVISE_SERVER_SANITIZED) run
 * several times slower */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(ADVISE_SERVER_SANITIZED)
#define DEFAULT_TIMEOUT 90.0
#else
#define DEFAULT_TIMEOUT 30.0
#endif

/* ---- growing byte buffers --------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static void buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    b->data = realloc(b->data, cap);
    b->cap = cap;
}

static void buf_add(Buf *b, const char *p, size_t n) {
    buf_reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void buf_str(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* appends s escaped for the inside of a JSON string */
static void buf_json_escaped(Buf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': buf_str(b, "\\\""); break;
        case '\\': buf_str(b, "\\\\"); break;
        case '\n': buf_str(b, "\\n"); break;
        case '\r': buf_str(b, "\\r"); break;
        case '\t': buf_str(b, "\\t"); break;
        default:
            if (c < 0x20) buf_printf(b, "\\u%04x", c);
            else buf_add(b, (const char *)&c, 1);
        }
    }
}

/* ---- one run of a transcript ---------------------------------------------------- */

typedef struct {
    const char *file; /* the transcript's name, for messages */
    int line;         /* the directive being played */
    pid_t pid;
    int to_server, from_server;
    char err_path[96];
    char tmp[64];
    Buf in;            /* bytes read from the server, not yet parsed */
    bool eof;
    bool reaped;
    int status;
    json_t *last;      /* the last matched message */
    json_t *saved;     /* name -> message */
    Buf held;          /* `->+` bytes */
    Buf log;           /* the traffic, for failure reports */
    double timeout;
} Session;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* keeps what went over the pipes for a failure report (CR and LF of headers shown as escapes) */
static void log_traffic(Session *s, const char *arrow, const char *text, size_t n, bool escape) {
    const size_t keep = 3000;
    buf_printf(&s->log, "%s ", arrow);
    for (size_t i = 0; i < n && i < keep; i++) {
        unsigned char c = (unsigned char)text[i];
        if (escape && c == '\r') buf_str(&s->log, "\\r");
        else if (escape && c == '\n') buf_str(&s->log, "\\n");
        else if (escape && (c < 0x20 || c >= 0x7f)) buf_printf(&s->log, "\\x%02x", c);
        else buf_add(&s->log, (const char *)&c, 1);
    }
    if (n > keep) buf_printf(&s->log, "... (%zu bytes)", n);
    buf_str(&s->log, "\n");
}

static char *read_all(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    Buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
    fclose(f);
    if (!b.data) buf_add(&b, "", 0);
    if (length) *length = b.len;
    return b.data;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void session_stop(Session *s) {
    if (s->to_server >= 0) close(s->to_server);
    s->to_server = -1;
    if (!s->reaped && s->pid > 0) {
        double end = now_s() + 1.0;
        while (now_s() < end) {
            if (waitpid(s->pid, &s->status, WNOHANG) == s->pid) {
                s->reaped = true;
                break;
            }
            sleep_ms(5);
        }
        if (!s->reaped) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &s->status, 0);
            s->reaped = true;
        }
    }
    if (s->from_server >= 0) close(s->from_server);
    s->from_server = -1;
}

static void session_free(Session *s) {
    session_stop(s);
    if (s->err_path[0]) unlink(s->err_path);
    if (s->tmp[0]) nftw(s->tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    json_decref(s->last);
    json_decref(s->saved);
    free(s->in.data);
    free(s->held.data);
    free(s->log.data);
}

/* reports a failure with the traffic so far and the server's stderr, then ends the test */
static void fail(Session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void fail(Session *s, const char *fmt, ...) {
    char what[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    session_stop(s);
    char *err = read_all(s->err_path, NULL);
    fprintf(stderr, "\n==== %s:%d: %s\n---- traffic (-> sent, <- received):\n%s---- server stderr:\n%s====\n",
            s->file, s->line, what, s->log.data ? s->log.data : "", err ? err : "");
    free(err);
    char msg[4400];
    snprintf(msg, sizeof msg, "%s:%d: %s", s->file, s->line, what);
    session_free(s);
    cr_assert_fail("%s", msg);
    abort(); /* not reached */
}

static void session_start(Session *s, const char *file) {
    memset(s, 0, sizeof *s);
    s->file = file;
    s->to_server = s->from_server = -1;
    s->saved = json_object();
    const char *t = getenv("ADVISE_TRANSCRIPT_TIMEOUT");
    s->timeout = t && atof(t) > 0 ? atof(t) : DEFAULT_TIMEOUT;
    snprintf(s->tmp, sizeof s->tmp, "/tmp/advise-lsp-XXXXXX");
    if (!mkdtemp(s->tmp)) fail(s, "cannot make a temporary folder");
    snprintf(s->err_path, sizeof s->err_path, "%s.stderr", s->tmp);
    int err_fd = open(s->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int in_pipe[2], out_pipe[2];
    if (err_fd < 0 || pipe(in_pipe) != 0 || pipe(out_pipe) != 0) fail(s, "cannot make pipes");
    signal(SIGPIPE, SIG_IGN);
    s->pid = fork();
    if (s->pid == 0) {
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        dup2(err_fd, 2);
        close(in_pipe[0]), close(in_pipe[1]), close(out_pipe[0]), close(out_pipe[1]), close(err_fd);
        if (chdir(s->tmp) != 0) _exit(127);
        /* the rule documentation the diagnostics link to goes to $TMP/cache, not the user's cache */
        char cache[96];
        snprintf(cache, sizeof cache, "%s/cache", s->tmp);
        setenv("XDG_CACHE_HOME", cache, 1);
        /* the crash guard's test hook: analysing a file of this name crashes on purpose */
        setenv("ADVISE_DEBUG_CRASH", "advise_debug_crash.py", 1);
        const char *binary = getenv("ADVISE_TRANSCRIPT_BINARY");
        if (!binary || !*binary) binary = ADVISE_BINARY;
        execl(binary, binary, "server", (char *)NULL);
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    close(err_fd);
    s->to_server = in_pipe[1];
    s->from_server = out_pipe[0];
    fcntl(s->to_server, F_SETFL, fcntl(s->to_server, F_GETFL) | O_NONBLOCK);
    fcntl(s->from_server, F_SETFL, fcntl(s->from_server, F_GETFL) | O_NONBLOCK);
}

/* reads what the server has written; waits at most until deadline; false on timeout */
static bool pump(Session *s, double deadline, bool want_write) {
    struct pollfd fds[2] = {{s->from_server, POLLIN, 0}, {s->to_server, POLLOUT, 0}};
    int nfds = want_write ? 2 : 1;
    if (s->eof) fds[0].fd = -1;
    double left = deadline - now_s();
    if (left < 0) left = 0;
    int r = poll(fds, (nfds_t)nfds, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) return true;
    if (r <= 0) return false;
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        char chunk[65536];
        ssize_t n = read(s->from_server, chunk, sizeof chunk);
        if (n > 0) buf_add(&s->in, chunk, (size_t)n);
        else if (n == 0 || (errno != EAGAIN && errno != EINTR)) s->eof = true;
    }
    return true;
}

/* writes all bytes, reading the server's output meanwhile so neither side blocks */
static void send_bytes(Session *s, const char *p, size_t n) {
    if (s->to_server < 0) fail(s, "the server's stdin is already closed");
    double deadline = now_s() + s->timeout;
    while (n > 0) {
        ssize_t w = write(s->to_server, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            fail(s, "cannot write to the server (%s): it has probably exited", strerror(errno));
        if (now_s() > deadline) fail(s, "the server stopped reading its input");
        pump(s, deadline, true);
    }
}

/* the next complete message, or NULL at the end of output or after the deadline */
static json_t *next_message(Session *s, double deadline) {
    for (;;) {
        char *end = s->in.len ? strstr(s->in.data, "\r\n\r\n") : NULL;
        if (end) {
            size_t header_len = (size_t)(end - s->in.data) + 4;
            long long length = -1;
            if (strncmp(s->in.data, "Content-Length: ", 16) == 0) length = atoll(s->in.data + 16);
            if (length < 0 || strstr(s->in.data, "\r\n") != end)
                fail(s, "the server wrote a malformed header: %.*s", (int)header_len, s->in.data);
            if (s->in.len >= header_len + (size_t)length) {
                json_error_t err;
                json_t *msg = json_loadb(s->in.data + header_len, (size_t)length, 0, &err);
                log_traffic(s, "<-", s->in.data + header_len, (size_t)length, false);
                if (!msg) fail(s, "the server wrote invalid JSON: %s", err.text);
                size_t used = header_len + (size_t)length;
                memmove(s->in.data, s->in.data + used, s->in.len - used + 1);
                s->in.len -= used;
                return msg;
            }
        }
        if (s->eof) {
            if (s->in.len) fail(s, "the server's output ends inside a message");
            return NULL;
        }
        if (now_s() > deadline) return NULL;
        pump(s, deadline, false);
    }
}

/* ---- placeholders ------------------------------------------------------------------ */

static json_t *json_at(json_t *v, const char *path) {
    char key[256];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key) return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        if (json_is_array(v)) {
            char *endp;
            long i = strtol(key, &endp, 10);
            v = *endp || n == 0 ? NULL : json_array_get(v, (size_t)i);
        } else {
            v = json_object_get(v, key);
        }
        path += n + (path[n] == '.');
    }
    return v;
}

/* the argument of NAME(...) at p (which points after the name); NULL when unclosed */
static char *paren_arg(const char *p, const char **after) {
    if (*p != '(') return NULL;
    const char *close = strchr(p, ')');
    if (!close) return NULL;
    *after = close + 1;
    return strndup(p + 1, (size_t)(close - p - 1));
}

static char *expand(Session *s, const char *text) {
    Buf out = {0};
    buf_add(&out, "", 0);
    const char *p = text;
    while (*p) {
        const char *dollar = strchr(p, '$');
        if (!dollar) {
            buf_str(&out, p);
            break;
        }
        buf_add(&out, p, (size_t)(dollar - p));
        p = dollar;
        const char *after;
        char *arg;
        if (strncmp(p, "$ROOT", 5) == 0) {
            buf_str(&out, ADVISE_SOURCE_DIR);
            p += 5;
        } else if (strncmp(p, "$TMP", 4) == 0) {
            buf_str(&out, s->tmp);
            p += 4;
        } else if (strncmp(p, "$FILE(", 6) == 0 && (arg = paren_arg(p + 5, &after))) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", ADVISE_SOURCE_DIR, arg);
            size_t n;
            char *content = read_all(path, &n);
            if (!content) fail(s, "cannot read %s", path);
            buf_json_escaped(&out, content, n);
            free(content);
            free(arg);
            p = after;
        } else if (strncmp(p, "$FILLER(", 8) == 0 && (arg = paren_arg(p + 7, &after))) {
            long lines = atol(arg);
            for (long i = 0; i < lines; i++) /* 63 characters and a newline */
                buf_printf(&out, "# filler line %08ld: nothing here but bytes to frame, parse.\\n", i);
            free(arg);
            p = after;
        } else if (strncmp(p, "$REPEAT(", 8) == 0 && (arg = paren_arg(p + 7, &after))) {
            const char *end = strstr(after, "$END");
            if (!end) fail(s, "$REPEAT(%s) without $END", arg);
            long times = atol(arg);
            for (long i = 0; i < times; i++) buf_add(&out, after, (size_t)(end - after));
            free(arg);
            p = end + 4;
        } else if (strncmp(p, "$(", 2) == 0 && (arg = paren_arg(p + 1, &after))) {
            char *colon = strchr(arg, ':');
            json_t *base = s->last;
            const char *path = arg;
            if (colon) {
                *colon = '\0';
                base = json_object_get(s->saved, arg);
                if (!base) fail(s, "no message was kept as @%s", arg);
                path = colon + 1;
            }
            json_t *v = json_at(base, path);
            if (!v) fail(s, "$(%s%s%s): nothing at that path", colon ? arg : "", colon ? ":" : "", path);
            char *dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            buf_str(&out, dump);
            free(dump);
            free(arg);
            p = after;
        } else {
            buf_add(&out, "$", 1);
            p++;
        }
    }
    return out.data;
}

/* ---- matching ------------------------------------------------------------------------ */

/* true when actual matches pattern; otherwise why (with the path) in *why */
static bool match(json_t *pattern, json_t *actual, const char *path, Buf *why) {
    if (json_is_string(pattern)) {
        const char *p = json_string_value(pattern);
        if (strcmp(p, "$ANY") == 0) return true;
        if (strncmp(p, "$HAS:", 5) == 0) {
            /* "$HAS:a$HAS:b": contains a, and b after it */
            const char *at = json_is_string(actual) ? json_string_value(actual) : NULL;
            for (const char *part = p + 5; at && part;) {
                const char *next = strstr(part, "$HAS:");
                size_t n = next ? (size_t)(next - part) : strlen(part);
                char *want = strndup(part, n);
                const char *hit = strstr(at, want);
                free(want);
                at = hit ? hit + n : NULL;
                part = next ? next + 5 : NULL;
            }
            if (at) return true;
            buf_printf(why, "%s: expected a string containing \"%s\"", path, p + 5);
            return false;
        }
    }
    if (json_is_object(pattern)) {
        if (!json_is_object(actual)) {
            buf_printf(why, "%s: expected an object", path);
            return false;
        }
        const char *key;
        json_t *value;
        json_object_foreach(pattern, key, value) {
            char sub[1024];
            snprintf(sub, sizeof sub, "%s.%s", path, key);
            json_t *got = json_object_get(actual, key);
            if (json_is_string(value) && strcmp(json_string_value(value), "$ABSENT") == 0) {
                if (got) {
                    buf_printf(why, "%s: expected no such key", sub);
                    return false;
                }
                continue;
            }
            if (!got) {
                buf_printf(why, "%s: missing", sub);
                return false;
            }
            if (!match(value, got, sub, why)) return false;
        }
        return true;
    }
    if (json_is_array(pattern)) {
        if (!json_is_array(actual)) {
            buf_printf(why, "%s: expected an array", path);
            return false;
        }
        json_t *first = json_array_get(pattern, 0);
        bool contains = json_is_string(first) && strcmp(json_string_value(first), "$CONTAINS") == 0;
        if (contains) {
            for (size_t i = 1; i < json_array_size(pattern); i++) {
                bool found = false;
                for (size_t k = 0; k < json_array_size(actual) && !found; k++) {
                    Buf ignored = {0};
                    found = match(json_array_get(pattern, i), json_array_get(actual, k), path, &ignored);
                    free(ignored.data);
                }
                if (!found) {
                    char *want = json_dumps(json_array_get(pattern, i), JSON_COMPACT | JSON_ENCODE_ANY);
                    buf_printf(why, "%s: no element matches %s", path, want);
                    free(want);
                    return false;
                }
            }
            return true;
        }
        if (json_array_size(pattern) != json_array_size(actual)) {
            buf_printf(why, "%s: expected %zu elements, got %zu", path, json_array_size(pattern),
                       json_array_size(actual));
            return false;
        }
        for (size_t i = 0; i < json_array_size(pattern); i++) {
            char sub[1024];
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (!match(json_array_get(pattern, i), json_array_get(actual, i), sub, why)) return false;
        }
        return true;
    }
    if (json_is_number(pattern) && json_is_number(actual) &&
        json_number_value(pattern) == json_number_value(actual))
        return true;
    if (json_equal(pattern, actual)) return true;
    char *want = json_dumps(pattern, JSON_COMPACT | JSON_ENCODE_ANY);
    char *got = actual ? json_dumps(actual, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("nothing");
    buf_printf(why, "%s: expected %s, got %.300s", path, want, got);
    free(want);
    free(got);
    return false;
}

static bool is_log_message(json_t *msg) {
    const char *m = json_string_value(json_object_get(msg, "method"));
    return m && strcmp(m, "window/logMessage") == 0 && !json_object_get(msg, "id");
}

/* ---- directives ------------------------------------------------------------------------ */

/* decodes the escapes of a RAW line */
static void unescape_raw(Session *s, const char *text, Buf *out) {
    for (const char *p = text; *p; p++) {
        if (*p != '\\') {
            buf_add(out, p, 1);
            continue;
        }
        p++;
        char c;
        switch (*p) {
        case 'r': c = '\r'; break;
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case '\\': c = '\\'; break;
        case 'x': {
            char hexd[3] = {p[1], p[2], 0};
            char *endp;
            c = (char)strtol(hexd, &endp, 16);
            if (*endp || !p[1] || !p[2]) fail(s, "bad \\x escape in RAW");
            p += 2;
            break;
        }
        default: fail(s, "unknown escape \\%c in RAW", *p ? *p : '0');
        }
        buf_add(out, &c, 1);
    }
}

static void frame(Buf *out, const char *body) {
    buf_printf(out, "Content-Length: %zu\r\n\r\n", strlen(body));
    buf_str(out, body);
}

static void do_send(Session *s, const char *arg, bool hold) {
    Buf bytes = {0};
    buf_add(&bytes, "", 0);
    if (strcmp(arg, "CLOSE") == 0) {
        if (hold) fail(s, "->+ CLOSE makes no sense");
        if (s->held.len) send_bytes(s, s->held.data, s->held.len);
        s->held.len = 0;
        log_traffic(s, "->", "(end of input)", 14, false);
        close(s->to_server);
        s->to_server = -1;
        free(bytes.data);
        return;
    }
    long cuts[32];
    int cut_count = 0;
    char *expanded;
    if (strncmp(arg, "RAW ", 4) == 0) {
        expanded = expand(s, arg + 4);
        unescape_raw(s, expanded, &bytes);
    } else if (strncmp(arg, "BODY ", 5) == 0) {
        expanded = expand(s, arg + 5);
        Buf body = {0};
        buf_add(&body, "", 0);
        unescape_raw(s, expanded, &body);
        buf_printf(&bytes, "Content-Length: %zu\r\n\r\n", body.len);
        buf_add(&bytes, body.data, body.len);
        free(body.data);
    } else {
        const char *body = arg;
        if (strncmp(arg, "SPLIT ", 6) == 0) {
            const char *p = arg + 6;
            while (*p && *p != ' ' && cut_count < 32) {
                cuts[cut_count++] = strtol(p, (char **)&p, 10);
                if (*p == ',') p++;
            }
            if (hold) fail(s, "->+ SPLIT makes no sense");
            body = p + (*p == ' ');
        }
        expanded = expand(s, body);
        frame(&bytes, expanded);
    }
    log_traffic(s, hold ? "->+" : "->", bytes.data, bytes.len, true);
    free(expanded);
    if (hold) {
        buf_add(&s->held, bytes.data, bytes.len);
    } else if (cut_count) {
        long from = 0;
        for (int i = 0; i <= cut_count; i++) {
            long to = i < cut_count ? cuts[i] : (long)bytes.len;
            if (to < from || to > (long)bytes.len) fail(s, "SPLIT offsets must grow and stay inside the message");
            send_bytes(s, bytes.data + from, (size_t)(to - from));
            from = to;
            if (i < cut_count) sleep_ms(100);
        }
    } else {
        buf_add(&s->held, bytes.data, bytes.len);
        send_bytes(s, s->held.data, s->held.len);
        s->held.len = 0;
    }
    free(bytes.data);
}

/* limit: seconds the server has to end (the timeout, or a `within`) */
static void expect_exit(Session *s, int code, bool skip_unmatched, double limit) {
    if (s->held.len) fail(s, "bytes held with ->+ were never sent");
    double deadline = now_s() + limit;
    json_t *msg;
    while ((msg = next_message(s, deadline))) {
        bool log = is_log_message(msg);
        json_decref(msg);
        if (!log && !skip_unmatched) fail(s, "expected the server to exit, but it sent another message");
    }
    if (!s->eof) fail(s, "the server did not exit within %.1f s", limit);
    while (!s->reaped) {
        pid_t r = waitpid(s->pid, &s->status, WNOHANG);
        if (r == s->pid) s->reaped = true;
        else if (now_s() > deadline) fail(s, "the server closed its output but did not exit");
        else sleep_ms(5);
    }
    if (!WIFEXITED(s->status)) fail(s, "the server died of signal %d", WTERMSIG(s->status));
    if (WEXITSTATUS(s->status) != code)
        fail(s, "the server exited with status %d, expected %d", WEXITSTATUS(s->status), code);
}

static void expect_silence(Session *s, long ms) {
    double deadline = now_s() + ms / 1000.0;
    json_t *msg;
    while ((msg = next_message(s, deadline))) {
        bool log = is_log_message(msg);
        json_decref(msg);
        if (!log) fail(s, "expected no message for %ld ms", ms);
    }
}

/* a pattern line: optional `@name`, then JSON */
typedef struct {
    char name[64];
    json_t *pattern;
} Expectation;

static Expectation parse_expectation(Session *s, const char *arg) {
    Expectation e = {"", NULL};
    if (arg[0] == '@') {
        size_t n = strcspn(arg + 1, " ");
        if (n == 0 || n >= sizeof e.name) fail(s, "bad @name");
        memcpy(e.name, arg + 1, n);
        e.name[n] = '\0';
        arg += 1 + n;
        while (*arg == ' ') arg++;
    }
    char *expanded = expand(s, arg);
    json_error_t err;
    e.pattern = json_loads(expanded, 0, &err);
    free(expanded);
    if (!e.pattern) fail(s, "the pattern is not JSON: %s (column %d)", err.text, err.column);
    return e;
}

/* `-- copy SRC DST`: DST written beside itself and renamed into place (as a
 * profiler finishing a profile would), its folder made when missing */
static void do_copy(Session *s, const char *arg) {
    char *expanded = expand(s, arg);
    char *space = strchr(expanded, ' ');
    if (!space) fail(s, "-- copy wants SRC DST");
    *space = '\0';
    const char *src = expanded, *dst = space + 1;
    size_t n = 0;
    char *data = read_all(src, &n);
    if (!data) fail(s, "-- copy: cannot read %s", src);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", dst);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0755);
    }
    char part[4200];
    snprintf(part, sizeof part, "%s.part", dst);
    FILE *f = fopen(part, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0 || rename(part, dst) != 0)
        fail(s, "-- copy: cannot write %s", dst);
    free(data);
    free(expanded);
}

static void do_remove(Session *s, const char *arg) {
    char *path = expand(s, arg);
    if (unlink(path) != 0) fail(s, "-- remove: %s: %s", path, strerror(errno));
    free(path);
}

static void matched(Session *s, Expectation *e, json_t *msg) {
    json_decref(s->last);
    s->last = msg;
    if (e->name[0]) json_object_set(s->saved, e->name, msg);
}

/* `within MS ` before a pattern: a deadline of its own, scaled as the
 * timeout is for slower builds; lowers *limit (seconds) */
static const char *parse_within(Session *s, const char *arg, double *limit) {
    if (strncmp(arg, "within ", 7) != 0) return arg;
    char *rest;
    long ms = strtol(arg + 7, &rest, 10);
    if (ms <= 0 || *rest != ' ') fail(s, "`within` wants milliseconds and a pattern");
    double own = (double)ms / 1000.0 * s->timeout / 30.0;
    if (own < *limit) *limit = own;
    return rest + 1;
}

static void do_expect(Session *s, const char *arg, bool skip_unmatched) {
    if (s->held.len) fail(s, "bytes held with ->+ were never sent before an expectation");
    double limit = s->timeout;
    arg = parse_within(s, arg, &limit);
    if (strncmp(arg, "exit ", 5) == 0) {
        expect_exit(s, atoi(arg + 5), skip_unmatched, limit);
        return;
    }
    if (strncmp(arg, "silence ", 8) == 0) {
        if (limit < s->timeout) fail(s, "`within` does not go with silence");
        expect_silence(s, atol(arg + 8));
        return;
    }
    Expectation e = parse_expectation(s, arg);
    bool pattern_is_log = is_log_message(e.pattern);
    double deadline = now_s() + limit;
    Buf why = {0};
    for (;;) {
        json_t *msg = next_message(s, deadline);
        if (!msg) {
            char *want = json_dumps(e.pattern, JSON_COMPACT);
            fail(s, "%s (%.1f s) while waiting for %.2000s%s%.1000s", s->eof ? "the server's output ended" : "timed out",
                 limit, want,
                 why.len ? "; the last message passed over: " : "", why.len ? why.data : "");
        }
        why.len = 0;
        if (match(e.pattern, msg, "$", &why)) {
            matched(s, &e, msg);
            break;
        }
        bool log = is_log_message(msg); /* before the message is freed */
        json_decref(msg);
        if (skip_unmatched || (!pattern_is_log && log)) continue;
        fail(s, "the next message does not match: %s", why.data);
    }
    free(why.data);
    json_decref(e.pattern);
}

/* `<-&` lines: the next messages match these patterns in some order */
static void do_expect_group(Session *s, const char *const *args, size_t count) {
    if (s->held.len) fail(s, "bytes held with ->+ were never sent before an expectation");
    Expectation group[32];
    bool done[32] = {false};
    if (count > 32) fail(s, "more than 32 lines in a <-& group");
    double limit = s->timeout;
    for (size_t i = 0; i < count; i++) group[i] = parse_expectation(s, parse_within(s, args[i], &limit));
    double deadline = now_s() + limit;
    for (size_t left = count; left > 0;) {
        json_t *msg = next_message(s, deadline);
        if (!msg) fail(s, "%s (%.1f s) while waiting for %zu more message(s) of a <-& group",
                       s->eof ? "the server's output ended" : "timed out", limit, left);
        size_t hit = count;
        for (size_t i = 0; i < count && hit == count; i++) {
            Buf why = {0};
            if (!done[i] && match(group[i].pattern, msg, "$", &why)) hit = i;
            free(why.data);
        }
        if (hit == count) {
            bool log = is_log_message(msg);
            json_decref(msg);
            if (log) continue;
            fail(s, "a message matches none of the <-& patterns still open");
        }
        done[hit] = true;
        matched(s, &group[hit], msg);
        left--;
    }
    for (size_t i = 0; i < count; i++) json_decref(group[i].pattern);
}

/* ---- the transcript file ----------------------------------------------------------------- */

typedef struct {
    int line;
    char *text;
} Directive;

static Directive *parse_file(const char *path, size_t *count) {
    size_t n;
    char *content = read_all(path, &n);
    cr_assert(content != NULL, "cannot read %s", path);
    Directive *out = NULL;
    size_t cap = 0, used = 0;
    int line_no = 0;
    for (char *line = content; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        line_no++;
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = '\0';
        if ((line[0] == ' ' || line[0] == '\t') && len) {
            cr_assert(used > 0, "%s:%d: a continuation line with nothing to continue", path, line_no);
            char *t = line;
            while (*t == ' ' || *t == '\t') t++;
            Directive *d = &out[used - 1];
            size_t old = strlen(d->text);
            d->text = realloc(d->text, old + strlen(t) + 2);
            d->text[old] = ' ';
            strcpy(d->text + old + 1, t);
        } else if (len && line[0] != '#') {
            if (used == cap) {
                cap = cap ? cap * 2 : 32;
                out = realloc(out, cap * sizeof *out);
            }
            out[used++] = (Directive){line_no, strdup(line)};
        }
        line = nl ? nl + 1 : NULL;
    }
    free(content);
    *count = used;
    return out;
}

static void play(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TRANSCRIPT_DIR, name);
    size_t count;
    Directive *directives = parse_file(path, &count);
    /* `-- env NAME=VALUE` lines give the server its environment (they are read before it starts) */
    char *env_set[8];
    size_t env_count = 0;
    for (size_t i = 0; i < count; i++)
        if (strncmp(directives[i].text, "-- env ", 7) == 0 && env_count < 8) {
            char *assignment = strdup(directives[i].text + 7);
            char *eq = strchr(assignment, '=');
            cr_assert(eq != NULL, "%s:%d: -- env needs NAME=VALUE", name, directives[i].line);
            *eq = '\0';
            setenv(assignment, eq + 1, 1);
            env_set[env_count++] = assignment;
        }
    Session s;
    session_start(&s, name);
    for (size_t i = 0; i < env_count; i++) { /* the server has it; the next transcript must not */
        unsetenv(env_set[i]);
        free(env_set[i]);
    }
    const char *stderr_wanted[8];
    int stderr_wanted_line[8];
    size_t stderr_wanted_count = 0;
    for (size_t i = 0; i < count; i++) {
        const char *t = directives[i].text;
        s.line = directives[i].line;
        if (strncmp(t, "-- env ", 7) == 0) continue;
        if (strncmp(t, "-- stderr-has ", 14) == 0) {
            if (stderr_wanted_count == 8) fail(&s, "more than 8 -- stderr-has lines");
            stderr_wanted_line[stderr_wanted_count] = s.line;
            stderr_wanted[stderr_wanted_count++] = t + 14;
            continue;
        }
        if (strncmp(t, "->+ ", 4) == 0) do_send(&s, t + 4, true);
        else if (strncmp(t, "-> ", 3) == 0) do_send(&s, t + 3, false);
        else if (strncmp(t, "<-& ", 4) == 0) {
            const char *group[32];
            size_t n = 0;
            int first_line = s.line;
            while (i < count && strncmp(directives[i].text, "<-& ", 4) == 0 && n < 32)
                group[n++] = directives[i++].text + 4;
            i--;
            s.line = first_line;
            do_expect_group(&s, group, n);
        } else if (strncmp(t, "<-~ ", 4) == 0) do_expect(&s, t + 4, true);
        else if (strncmp(t, "<- ", 3) == 0) do_expect(&s, t + 3, false);
        else if (strncmp(t, "-- sleep ", 9) == 0) sleep_ms(atol(t + 9));
        else if (strncmp(t, "-- copy ", 8) == 0) do_copy(&s, t + 8);
        else if (strncmp(t, "-- remove ", 10) == 0) do_remove(&s, t + 10);
        else fail(&s, "unknown directive: %.40s", t);
    }
    if (s.held.len) fail(&s, "bytes held with ->+ were never sent");
    session_stop(&s);
    if (WIFSIGNALED(s.status) && WTERMSIG(s.status) != SIGKILL)
        fail(&s, "the server died of signal %d", WTERMSIG(s.status));
    char *err = read_all(s.err_path, NULL);
    bool sanitizer = err && strstr(err, "Sanitizer");
    for (size_t i = 0; i < stderr_wanted_count && !sanitizer; i++)
        if (!err || !strstr(err, stderr_wanted[i])) {
            free(err);
            s.line = stderr_wanted_line[i];
            fail(&s, "the server's stderr lacks \"%s\"", stderr_wanted[i]);
        }
    free(err);
    if (sanitizer) fail(&s, "the server reported a sanitizer error");
    for (size_t i = 0; i < count; i++) free(directives[i].text);
    free(directives);
    session_free(&s);
}

/* ---- one Criterion test per transcript ------------------------------------------------------ */

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void free_names(struct criterion_test_params *params) {
    char **names = params->params;
    for (size_t i = 0; i < params->length; i++) cr_free(names[i]);
    cr_free(names);
}

ParameterizedTestParameters(lsp, transcript) {
    DIR *dir = opendir(TRANSCRIPT_DIR);
    const char *only = getenv("ADVISE_TRANSCRIPT");
    size_t count = 0, cap = 64;
    char **names = cr_malloc(cap * sizeof *names);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        size_t n = strlen(e->d_name);
        if (n < 9 || strcmp(e->d_name + n - 8, ".jsonrpc") != 0) continue;
        if (only && *only && !strstr(e->d_name, only)) continue;
        if (count == cap) {
            cap *= 2;
            names = cr_realloc(names, cap * sizeof *names);
        }
        names[count] = cr_malloc(n + 1);
        memcpy(names[count++], e->d_name, n + 1);
    }
    if (dir) closedir(dir);
    qsort(names, count, sizeof *names, by_name);
    return cr_make_param_array(char *, names, count, free_names);
}

ParameterizedTest(char **name, lsp, transcript, .timeout = 180) {
    cr_log_info("transcript %s", *name);
#if defined(__SANITIZE_ADDRESS__)
    /* sanitizer builds run analyses unguarded, so that the sanitizer sees the fault */
    if (strstr(*name, "crash_guard")) cr_skip_test("the crash guard is off in sanitizer builds");
#endif
    play(*name);
}

/* the runner itself must find the transcripts */
Test(lsp, transcripts_exist) {
    DIR *dir = opendir(TRANSCRIPT_DIR);
    cr_assert(dir != NULL, "no folder %s", TRANSCRIPT_DIR);
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        size_t n = strlen(e->d_name);
        count += n > 8 && strcmp(e->d_name + n - 8, ".jsonrpc") == 0;
    }
    closedir(dir);
    cr_assert_gt(count, 10, "only %zu transcripts in %s", count, TRANSCRIPT_DIR);
}
