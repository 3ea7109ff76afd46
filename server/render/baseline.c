#include "server/render/baseline.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "analysis/base/atomic_file.h"
#include "analysis/base/growable.h"
#include "analysis/base/read_bounded.h"
#include "analysis/base/text_format.h"

#define FINGERPRINT_NAME "adviseFinding/v1"
#define MAX_FIELD 16384 /* bytes of a path, rule or message */

bool baseline_add(Baseline *b, const char *path, const char *rule, const char *fingerprint, long long line,
                  const char *message) {
    if (!array_reserve(&b->items, b->count, &b->cap, sizeof *b->items, 64)) return false;
    BaselineEntry *e = &b->items[b->count];
    *e = (BaselineEntry){.path = strdup(path), .rule = strdup(rule), .message = strdup(message ? message : ""),
                         .line = line};
    snprintf(e->fingerprint, sizeof e->fingerprint, "%s", fingerprint);
    if (!e->path || !e->rule || !e->message) {
        free(e->path);
        free(e->rule);
        free(e->message);
        return false;
    }
    b->count++;
    return true;
}

void baseline_free(Baseline *b) {
    for (size_t i = 0; i < b->count; i++) {
        free(b->items[i].path);
        free(b->items[i].rule);
        free(b->items[i].message);
    }
    free(b->items);
    *b = (Baseline){0};
}

static int entry_order(const void *pa, const void *pb) {
    const BaselineEntry *a = pa, *b = pb;
    int c = strcmp(a->path, b->path);
    if (!c) c = strcmp(a->rule, b->rule);
    if (!c) c = strcmp(a->fingerprint, b->fingerprint);
    if (!c && a->line != b->line) c = a->line < b->line ? -1 : 1;
    if (!c) c = strcmp(a->message, b->message);
    return c;
}

void baseline_sort(Baseline *b) {
    if (b->count > 1) qsort(b->items, b->count, sizeof *b->items, entry_order);
}

/* ---- reading ---------------------------------------------------------------------- */

static char *read_bounded(const char *file, size_t *len, char **error) {
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        *error = format_string("cannot read it: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        *error = strdup("not a regular file");
        return NULL;
    }
    char *buf = NULL;
    bool too_large = false;
    bool ok = read_fd_bounded(fd, BASELINE_MAX_BYTES, &buf, len, &too_large);
    int saved = errno;
    close(fd);
    if (!ok) {
        *error = saved == ENOMEM ? strdup("out of memory") : format_string("read error: %s", strerror(saved));
        return NULL;
    }
    if (too_large) {
        free(buf);
        *error = format_string("over %u MiB: too large for a baseline", BASELINE_MAX_BYTES >> 20);
        return NULL;
    }
    return buf;
}

/* a string field: present, a string without NUL, not over MAX_FIELD */
static const char *string_field(json_t *entry, const char *key, bool required, char **why) {
    json_t *v = json_object_get(entry, key);
    if (!v && !required) return "";
    if (!json_is_string(v)) {
        *why = format_string("\"%s\" is %s, not a string", key, v ? "of another type" : "missing");
        return NULL;
    }
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (strlen(s) != n || n > MAX_FIELD || (required && n == 0)) {
        *why = format_string("\"%s\" is empty, too long or holds a NUL", key);
        return NULL;
    }
    return s;
}

static bool is_fingerprint(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return false;
    return n == SHA256_HEX_CHARS;
}

static bool read_entry(Baseline *b, json_t *entry, char **why) {
    if (!json_is_object(entry)) {
        *why = strdup("not an object");
        return false;
    }
    const char *path = string_field(entry, "path", true, why);
    const char *rule = path ? string_field(entry, "rule", true, why) : NULL;
    const char *print = rule ? string_field(entry, "fingerprint", true, why) : NULL;
    const char *message = print ? string_field(entry, "message", false, why) : NULL;
    if (!message) return false;
    if (!is_fingerprint(print)) {
        *why = strdup("\"fingerprint\" is not 64 lowercase hex digits");
        return false;
    }
    json_t *line = json_object_get(entry, "line");
    if (line && (!json_is_integer(line) || json_integer_value(line) < 0)) {
        *why = strdup("\"line\" is not a line number");
        return false;
    }
    if (!baseline_add(b, path, rule, print, line ? (long long)json_integer_value(line) : 0, message)) {
        *why = strdup("out of memory");
        return false;
    }
    return true;
}

bool baseline_read(const char *file, Baseline *out, char **error) {
    *out = (Baseline){0};
    char *why = NULL;
    size_t len = 0;
    char *text = read_bounded(file, &len, &why);
    json_t *doc = NULL;
    if (text) {
        json_error_t problem;
        doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &problem);
        if (!doc) why = format_string("not JSON (line %d: %s)", problem.line, problem.text);
        free(text);
    }
    json_t *version = doc ? json_object_get(doc, "version") : NULL;
    json_t *findings = doc ? json_object_get(doc, "findings") : NULL;
    json_t *name = doc ? json_object_get(doc, "fingerprint") : NULL;
    if (doc && !why) {
        if (!json_is_object(doc)) why = strdup("not a JSON object");
        else if (!json_is_integer(version))
            why = strdup("no \"version\": not a baseline written by advise check --write-baseline");
        else if (json_integer_value(version) != BASELINE_VERSION)
            why = format_string("version %lld, which this advise does not read (it reads %d)",
                                (long long)json_integer_value(version), BASELINE_VERSION);
        else if (name && (!json_is_string(name) || strcmp(json_string_value(name), FINGERPRINT_NAME) != 0))
            why = strdup("its fingerprints are not " FINGERPRINT_NAME);
        else if (!json_is_array(findings)) why = strdup("no \"findings\" array");
        else if (json_array_size(findings) > BASELINE_MAX_ENTRIES)
            why = format_string("over %u findings", BASELINE_MAX_ENTRIES);
    }
    for (size_t i = 0; doc && !why && i < json_array_size(findings); i++) {
        char *entry_why = NULL;
        if (!read_entry(out, json_array_get(findings, i), &entry_why)) {
            why = format_string("finding %zu: %s", i + 1, entry_why ? entry_why : "unreadable");
            free(entry_why);
        }
    }
    json_decref(doc);
    if (why) {
        baseline_free(out);
        *error = format_string("%s: %s", file, why);
        free(why);
        return false;
    }
    return true;
}

/* ---- writing --------------------------------------------------------------------- */

static bool write_entries(FILE *out, const void *arg) {
    const Baseline *b = arg;
    fprintf(out, "{\n  \"version\": %d,\n  \"tool\": \"advise\",\n  \"fingerprint\": \"%s\",\n  \"findings\": [",
            BASELINE_VERSION, FINGERPRINT_NAME);
    for (size_t i = 0; i < b->count; i++) {
        const BaselineEntry *e = &b->items[i];
        json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:s}", "path", e->path, "rule", e->rule, "fingerprint",
                              e->fingerprint, "line", (json_int_t)e->line, "message", e->message);
        char *text = j ? json_dumps(j, 0) : NULL;
        json_decref(j);
        if (!text) {
            errno = ENOMEM;
            return false;
        }
        fprintf(out, "%s\n    %s", i ? "," : "", text);
        free(text);
    }
    fputs(b->count ? "\n  ]\n}\n" : "]\n}\n", out);
    return !ferror(out);
}

bool baseline_write(const char *file, Baseline *b, char **error) {
    baseline_sort(b);
    return atomic_file_write(file, write_entries, b, error);
}
