#include "server/lsp/jsonrpc.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "analysis/base/growable.h"
#include "analysis/finding.h"
#include "analysis/base/text_format.h"

#define MAX_HEADER 8192

struct JsonRpcReader {
    int fd;
    char *buf;
    size_t len, cap, pos; /* unread bytes are buf[pos..len) */
    bool eof;
};

JsonRpcReader *jsonrpc_reader_new(int fd) {
    JsonRpcReader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->fd = fd;
    r->cap = 64 * 1024;
    r->buf = malloc(r->cap);
    if (!r->buf) {
        free(r);
        return NULL;
    }
    return r;
}

void jsonrpc_reader_free(JsonRpcReader *r) {
    if (!r) return;
    free(r->buf);
    free(r);
}

/* reads more bytes; false at EOF or error */
static bool fill(JsonRpcReader *r, size_t want) {
    if (r->pos > 0 && r->pos == r->len) r->pos = r->len = 0;
    if (r->pos > r->cap / 2) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    while (r->len - r->pos < want) {
        if (!array_reserve(&r->buf, r->len, &r->cap, 1, 64 * 1024)) return false; /* doubles when full */
        ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            r->eof = true;
            return false;
        }
        r->len += (size_t)n;
    }
    return true;
}

/* the header block ends with an empty line; returns its length including it, 0 when incomplete */
static size_t header_end(const JsonRpcReader *r) {
    const char *p = r->buf + r->pos;
    size_t n = r->len - r->pos;
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] == '\n' && p[i + 1] == '\n') return i + 2;
        if (i + 3 < n && p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n') return i + 4;
    }
    return 0;
}

/* After a bad header: skip to the next "Content-Length:" at or after
 * buf[pos + from]. Frames follow each other without a line break (a body
 * need not end with one), so the name is looked for anywhere, not only at
 * the start of a line. When it is not there, only a tail that may be the
 * start of the name split across reads is kept. */
static void resynchronise(JsonRpcReader *r, size_t from) {
    static const char name[] = "Content-Length:";
    const size_t name_len = sizeof name - 1;
    const char *p = r->buf + r->pos;
    size_t n = r->len - r->pos;
    for (size_t i = from; i < n; i++) {
        size_t m = n - i < name_len ? n - i : name_len;
        if (strncasecmp(p + i, name, m) == 0) { /* whole name, or a prefix of it at the end */
            r->pos += i;
            return;
        }
    }
    r->pos = r->len; /* nothing useful buffered */
}

/* RFC 7230 token characters, what a header field name is made of */
static bool field_name_char(char c) {
    return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

ReadStatus jsonrpc_read(JsonRpcReader *r, char **body, size_t *length, char **error) {
    *body = NULL;
    *error = NULL;
    for (;;) {
        size_t hlen = header_end(r);
        if (!hlen) {
            if (r->len - r->pos > MAX_HEADER) {
                *error = format_string("header longer than %d bytes without an empty line", MAX_HEADER);
                resynchronise(r, 1);
                if (r->pos == r->len) r->pos = r->len = 0;
                return READ_BAD_FRAME;
            }
            size_t before = r->len - r->pos;
            if (!fill(r, before + 1)) {
                if (r->eof && r->len - r->pos == 0) return READ_EOF;
                if (r->eof) {
                    r->pos = r->len;
                    return READ_EOF; /* a truncated header at the end: nothing to answer */
                }
                return READ_IO_ERROR;
            }
            continue;
        }
        /* parse the header fields */
        const char *p = r->buf + r->pos;
        long long content_length = -1;
        bool bad = false;
        size_t i = 0;
        while (i < hlen) {
            size_t eol = i;
            while (eol < hlen && p[eol] != '\n') eol++;
            size_t line_end = eol > i && p[eol - 1] == '\r' ? eol - 1 : eol;
            if (line_end > i) {
                const char *colon = memchr(p + i, ':', line_end - i);
                bool name_ok = colon && colon > p + i;
                for (const char *c = p + i; name_ok && c < colon; c++) name_ok = field_name_char(*c);
                if (!name_ok) {
                    bad = true; /* not a header field: junk, or the body of an earlier bad frame */
                } else if ((size_t)(colon - (p + i)) == 14 && strncasecmp(p + i, "Content-Length", 14) == 0) {
                    const char *v = colon + 1;
                    while (v < p + line_end && (*v == ' ' || *v == '\t')) v++;
                    long long value = 0;
                    bool digits = false;
                    while (v < p + line_end && isdigit((unsigned char)*v)) {
                        value = value * 10 + (*v++ - '0');
                        digits = true;
                        if (value > (long long)JSONRPC_MAX_MESSAGE * 4) break;
                    }
                    while (v < p + line_end && (*v == ' ' || *v == '\t')) v++;
                    if (!digits || v != p + line_end) bad = true;
                    else content_length = value;
                }
                /* other fields (Content-Type) are accepted and ignored */
            }
            i = eol + 1;
        }
        if (bad || content_length < 0) {
            *error = format_string(content_length < 0 && !bad ? "message header without Content-Length"
                                                              : "malformed message header");
            /* the next frame may start inside this block (after junk without a blank line of its own) */
            resynchronise(r, 1);
            return READ_BAD_FRAME;
        }
        r->pos += hlen;
        if ((unsigned long long)content_length > JSONRPC_MAX_MESSAGE) {
            /* skip the body without keeping it */
            unsigned long long left = (unsigned long long)content_length;
            while (left > 0) {
                size_t have = r->len - r->pos;
                if (!have && !fill(r, 1)) break;
                have = r->len - r->pos;
                size_t take = have < left ? have : (size_t)left;
                r->pos += take;
                left -= take;
            }
            *error = format_string("message of %lld bytes is over the %u MiB limit", content_length,
                                   JSONRPC_MAX_MESSAGE / (1024 * 1024));
            return READ_BAD_FRAME;
        }
        size_t need = (size_t)content_length;
        if (r->len - r->pos < need && !fill(r, need)) return r->eof ? READ_EOF : READ_IO_ERROR;
        char *out = malloc(need + 1);
        if (!out) return READ_IO_ERROR;
        memcpy(out, r->buf + r->pos, need);
        out[need] = '\0';
        r->pos += need;
        *body = out;
        *length = need;
        return READ_MESSAGE;
    }
}

static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static int output_fd = 1;

void jsonrpc_set_output(int fd) { output_fd = fd; }

static bool write_all(const char *p, size_t n) {
    while (n) {
        ssize_t w = write(output_fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

bool jsonrpc_send_text(const char *text, size_t n) {
    char header[64];
    int h = snprintf(header, sizeof header, "Content-Length: %zu\r\n\r\n", n);
    pthread_mutex_lock(&write_lock);
    bool ok = write_all(header, (size_t)h) && write_all(text, n);
    pthread_mutex_unlock(&write_lock);
    return ok;
}

bool jsonrpc_send(json_t *message) {
    if (!message) return false;
    if (!json_object_get(message, "jsonrpc")) json_object_set_new(message, "jsonrpc", json_string("2.0"));
    char *text = json_dumps(message, JSON_COMPACT);
    json_decref(message);
    if (!text) return false;
    bool ok = jsonrpc_send_text(text, strlen(text));
    free(text);
    return ok;
}

bool jsonrpc_send_result(json_t *id, json_t *result) {
    return jsonrpc_send(json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                                  "result", result ? result : json_null()));
}

bool jsonrpc_send_error(json_t *id, int code, const char *message) {
    return jsonrpc_send(json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
                                  "code", code, "message", message));
}

bool jsonrpc_send_notification(const char *method, json_t *params) {
    return jsonrpc_send(json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method,
                                  "params", params ? params : json_object()));
}
