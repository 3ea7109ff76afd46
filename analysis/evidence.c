/* Evidence items (evidence.h): building a template from printf text with
 * "{}" placeholders, copying, and rendering it with the unit formatters. */
#include "analysis/evidence.h"
#include "analysis/base/growable.h"
#include "analysis/finding.h"
#include "analysis/base/text_format.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *evidence_kind_name(EvidenceKind kind) {
    switch (kind) {
    case EVIDENCE_NOTE: return "note";
    case EVIDENCE_MEASURED: return "measured";
    case EVIDENCE_MODEL: return "model";
    case EVIDENCE_CAVEAT: return "caveat";
    }
    return "note";
}

Evidence evidence_new(EvidenceKind kind) { return (Evidence){.kind = kind}; }

/* fmt with each "{}" replaced by the byte mark; *holes counts them */
static char *marked(const char *fmt, char mark, size_t *holes) {
    size_t n = strlen(fmt), o = 0;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    *holes = 0;
    for (size_t i = 0; i < n; i++) {
        if (fmt[i] == '{' && fmt[i + 1] == '}') {
            out[o++] = mark;
            i++;
            ++*holes;
        } else {
            out[o++] = fmt[i];
        }
    }
    out[o] = '\0';
    return out;
}


/* A growing string. */
typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} Buf;

static void put(Buf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (!array_reserve_n(&b->s, b->len, n + 1, &b->cap, 1, 64)) { /* + 1: the NUL */
        b->failed = true;
        return;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void put_str(Buf *b, const char *s) { put(b, s, strlen(s)); }

/* The text is printed twice, the placeholders marked \x01 the first time
 * and \x02 the second: where the two differ is a placeholder, whatever the
 * arguments hold. */
bool evidence_vappend(Evidence *e, const Quantity *values, size_t count, const char *fmt, va_list ap) {
    char *first = NULL, *second = NULL;
    size_t holes = 0;
    if (count == 0) {
        first = format_string_v(fmt, ap);
    } else {
        char *fa = marked(fmt, '\x01', &holes), *fb = marked(fmt, '\x02', &holes);
        va_list again;
        va_copy(again, ap);
        if (fa && fb) {
            first = format_string_v(fa, ap);
            second = format_string_v(fb, again);
        }
        va_end(again);
        free(fa);
        free(fb);
        assert(holes == count && "each figure needs its {} and each {} its figure");
    }
    Quantity *grown = count ? realloc(e->values, (e->value_count + count) * sizeof *grown) : e->values;
    bool ok = first && (count == 0 || (second && strlen(first) == strlen(second))) && (grown || !count);
    if (grown) e->values = grown;
    Buf b = {0};
    if (ok) put_str(&b, e->text ? e->text : "");
    size_t next = e->value_count;
    for (size_t i = 0; ok && first[i]; i++) {
        if (second && first[i] == '\x01' && second[i] == '\x02') {
            char hole[32];
            snprintf(hole, sizeof hole, "{%zu}", next++);
            put_str(&b, hole);
        } else if (first[i] == '{' || first[i] == '}') {
            put(&b, first[i] == '{' ? "{{" : "}}", 2);
        } else {
            put(&b, first + i, 1);
        }
    }
    free(first);
    free(second);
    if (!ok || b.failed) {
        free(b.s);
        return false;
    }
    if (!b.s) put_str(&b, ""); /* an empty append still makes the item */
    if (b.failed) return false;
    free(e->text);
    e->text = b.s;
    if (count) memcpy(e->values + e->value_count, values, count * sizeof *values);
    e->value_count += count;
    return true;
}

bool evidence_append(Evidence *e, const Quantity *values, size_t count, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool ok = evidence_vappend(e, values, count, fmt, ap);
    va_end(ap);
    return ok;
}

bool evidence_copy(Evidence *to, const Evidence *from) {
    *to = evidence_new(from->kind);
    if (!from->text) return true;
    to->text = strdup(from->text);
    to->values = from->value_count ? malloc(from->value_count * sizeof *to->values) : NULL;
    if (!to->text || (from->value_count && !to->values)) {
        evidence_free(to);
        return false;
    }
    if (from->value_count) memcpy(to->values, from->values, from->value_count * sizeof *to->values);
    to->value_count = from->value_count;
    return true;
}

void evidence_free(Evidence *e) {
    free(e->text);
    free(e->values);
    *e = evidence_new(e->kind);
}

char *evidence_render(const Evidence *e) {
    Buf b = {0};
    put_str(&b, "");
    const char *t = e->text ? e->text : "";
    while (*t) {
        if ((t[0] == '{' && t[1] == '{') || (t[0] == '}' && t[1] == '}')) {
            put(&b, t, 1);
            t += 2;
            continue;
        }
        if (t[0] == '{' && t[1] >= '0' && t[1] <= '9') {
            char *end;
            unsigned long k = strtoul(t + 1, &end, 10);
            if (*end == '}') {
                char figure[UNITS_BUF];
                put_str(&b, k < e->value_count ? units_format(e->values[k], figure, sizeof figure) : "?");
                t = end + 1;
                continue;
            }
        }
        put(&b, t, 1);
        t++;
    }
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
