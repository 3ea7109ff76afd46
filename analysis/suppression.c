#include "analysis/suppression.h"

#include "analysis/base/growable.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool push(Suppressions *s, Suppression item) {
    if (!array_reserve(&s->items, s->count, &s->cap, sizeof *s->items, 4)) return false;
    s->items[s->count++] = item;
    return true;
}

static void free_item(Suppression *item) {
    for (size_t i = 0; i < item->selector_count; i++) free(item->selectors[i]);
    free(item->selectors);
    item->selectors = NULL;
    item->selector_count = item->selector_cap = 0;
}

/* parses "[A, b-c]" into selectors; returns false on malformed lists */
static bool parse_selectors(const char *p, const char *end, Suppression *item, const char **after) {
    if (p >= end || *p != '[') return false;
    p++;
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ',')) p++;
        if (p < end && *p == ']') {
            *after = p + 1;
            return item->selector_count > 0;
        }
        const char *start = p;
        while (p < end && (isalnum((unsigned char)*p) || *p == '-' || *p == '_')) p++;
        if (p == start) return false;
        if (!array_reserve(&item->selectors, item->selector_count, &item->selector_cap, sizeof *item->selectors, 4))
            return false;
        char *sel = strndup(start, (size_t)(p - start));
        if (!sel) return false;
        item->selectors[item->selector_count++] = sel;
    }
}

void suppressions_add_comment(Suppressions *s, const Document *doc, size_t start, size_t end, bool own_line) {
    const char *text = doc->text;
    const char *p = text + start, *stop = text + end;
    static const char marker[] = "advise:";
    for (;;) {
        const char *hit = NULL;
        for (const char *q = p; q + sizeof marker - 1 <= stop; q++)
            if (memcmp(q, marker, sizeof marker - 1) == 0) {
                hit = q;
                break;
            }
        if (!hit) return;
        p = hit + sizeof marker - 1;
        while (p < stop && (*p == ' ' || *p == '\t')) p++;
        Suppression item = {0};
        if ((size_t)(stop - p) >= 11 && memcmp(p, "ignore-file", 11) == 0) {
            item.whole_file = true;
            p += 11;
        } else if ((size_t)(stop - p) >= 6 && memcmp(p, "ignore", 6) == 0) {
            p += 6;
        } else {
            continue;
        }
        const char *after = p;
        if (p < stop && *p == '[') {
            if (!parse_selectors(p, stop, &item, &after)) {
                free_item(&item);
                continue; /* malformed: suppress nothing rather than everything */
            }
        } else if (p < stop && (isalnum((unsigned char)*p) || *p == '-' || *p == '_')) {
            continue; /* "ignored" or similar prose */
        } else {
            item.all_rules = true;
        }
        p = after;
        size_t line = document_line_of(doc, start);
        item.line = line;
        Suppression copy = item;
        if (!push(s, item)) {
            free_item(&item);
            return;
        }
        if (own_line && !item.whole_file) {
            /* a comment on its own line covers the next line too (the line
             * after its end, for a block comment over several lines) */
            copy.line = document_line_of(doc, end > start ? end - 1 : start) + 1;
            copy.selectors = NULL;
            copy.selector_count = copy.selector_cap = 0;
            bool ok = true;
            if (item.selector_count) {
                copy.selectors = calloc(item.selector_count, sizeof *copy.selectors);
                ok = copy.selectors != NULL;
                if (ok) copy.selector_cap = item.selector_count;
                for (size_t i = 0; ok && i < item.selector_count; i++) {
                    copy.selectors[i] = strdup(item.selectors[i]);
                    ok = copy.selectors[i] != NULL;
                    copy.selector_count = i + 1;
                }
            }
            if (!ok || !push(s, copy)) free_item(&copy);
        }
    }
}

void suppressions_scan_c_family(Suppressions *s, const Document *doc) {
    const char *t = doc->text;
    size_t n = doc->length, i = 0;
    if (!strstr(t, "advise:")) return;
    while (i < n) {
        char c = t[i];
        if (c == '"' || c == '\'') {
            char q = c;
            for (i++; i < n && t[i] != q && t[i] != '\n'; i++)
                if (t[i] == '\\') i++;
            i++;
        } else if (c == '/' && i + 1 < n && t[i + 1] == '/') {
            size_t start = i;
            while (i < n && t[i] != '\n') i++;
            size_t ls = doc->line_starts[document_line_of(doc, start)];
            bool own = true;
            for (size_t k = ls; k < start; k++)
                if (t[k] != ' ' && t[k] != '\t') own = false;
            suppressions_add_comment(s, doc, start, i, own);
        } else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
            size_t start = i;
            const char *close = strstr(t + i + 2, "*/");
            i = close ? (size_t)(close - t) + 2 : n;
            /* on a line of its own: only blanks before it and after it */
            bool own = true;
            for (size_t k = doc->line_starts[document_line_of(doc, start)]; k < start; k++)
                if (t[k] != ' ' && t[k] != '\t') own = false;
            for (size_t k = i; own && k < n && t[k] != '\n' && t[k] != '\r'; k++)
                if (t[k] != ' ' && t[k] != '\t') own = false;
            suppressions_add_comment(s, doc, start, i, own);
        } else {
            i++;
        }
    }
}

bool suppressions_cover(const Suppressions *s, size_t line, const char *code, const char *name) {
    for (size_t i = 0; i < s->count; i++) {
        const Suppression *item = &s->items[i];
        if (!item->whole_file && item->line != line) continue;
        if (item->all_rules) return true;
        for (size_t k = 0; k < item->selector_count; k++)
            if (strcmp(item->selectors[k], code) == 0 || strcmp(item->selectors[k], name) == 0) return true;
    }
    return false;
}

void suppressions_free(Suppressions *s) {
    for (size_t i = 0; i < s->count; i++) free_item(&s->items[i]);
    free(s->items);
    s->items = NULL;
    s->count = s->cap = 0;
}
