#include "ignore_rules.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool match_class(const char **pp, char c) {
    const char *p = *pp + 1; /* after '[' */
    bool negate = false, hit = false;
    if (*p == '!' || *p == '^') {
        negate = true;
        p++;
    }
    bool first = true;
    while (*p && (*p != ']' || first)) {
        first = false;
        char lo = *p, hi = lo;
        if (p[1] == '-' && p[2] && p[2] != ']') {
            hi = p[2];
            p += 3;
        } else {
            p++;
        }
        if (c >= lo && c <= hi) hit = true;
    }
    if (*p != ']') return false; /* unterminated: treat '[' literally (caller) */
    *pp = p + 1;
    return hit != negate && c != '/';
}

static bool match_at(const char *p, const char *t, int depth) {
    if (depth > 64) return false;
    while (*p) {
        if (p[0] == '*' && p[1] == '*') {
            p += 2;
            bool slash_after = *p == '/';
            if (slash_after) p++;
            /* '**' matches any run of characters including '/'; "**" + "/" may match nothing */
            for (const char *s = t;; s++) {
                if ((!slash_after || s == t || s[-1] == '/') && match_at(p, s, depth + 1)) return true;
                if (!*s) return false;
            }
        }
        if (*p == '*') {
            p++;
            for (const char *s = t;; s++) {
                if (match_at(p, s, depth + 1)) return true;
                if (!*s || *s == '/') return false;
            }
        }
        if (!*t) return false;
        if (*p == '?') {
            if (*t == '/') return false;
            p++;
            t++;
            continue;
        }
        if (*p == '[') {
            const char *q = p;
            if (strchr(p, ']')) {
                if (!match_class(&q, *t)) return false;
                p = q;
                t++;
                continue;
            }
        }
        if (*p == '\\' && p[1]) p++;
        if (*p != *t) return false;
        p++;
        t++;
    }
    return *t == '\0';
}

bool glob_match(const char *pattern, const char *text) { return match_at(pattern, text, 0); }

static void add_pattern(IgnoreRules *rules, const char *base, const char *line, size_t len) {
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\r' || line[len - 1] == '\t')) {
        if (len >= 2 && line[len - 2] == '\\') break; /* escaped trailing space */
        len--;
    }
    if (!len || line[0] == '#') return;
    IgnorePattern p = {0};
    if (line[0] == '!') {
        p.negated = true;
        line++;
        len--;
    } else if (line[0] == '\\' && len > 1 && (line[1] == '#' || line[1] == '!')) {
        line++;
        len--;
    }
    if (len && line[len - 1] == '/') {
        p.dir_only = true;
        len--;
    }
    if (!len) return;
    if (line[0] == '/') {
        p.anchored = true;
        line++;
        len--;
    }
    if (!len) return;
    if (memchr(line, '/', len)) p.anchored = true;
    p.pattern = strndup(line, len);
    p.base = strdup(base);
    IgnorePattern *grown = p.pattern && p.base ? realloc(rules->items, (rules->count + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(p.pattern);
        free(p.base);
        return;
    }
    rules->items = grown;
    rules->items[rules->count++] = p;
}

void ignore_rules_add_text(IgnoreRules *rules, const char *base, const char *text) {
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        add_pattern(rules, base, p, len);
        p += len + (end ? 1 : 0);
    }
}

void ignore_rules_add_file(IgnoreRules *rules, const char *base) {
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/.gitignore", base) >= sizeof path) return;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char *buf = malloc(1024 * 1024 + 1);
    size_t n = buf ? fread(buf, 1, 1024 * 1024, f) : 0;
    fclose(f);
    if (!buf) return;
    buf[n] = '\0';
    ignore_rules_add_text(rules, base, buf);
    free(buf);
}

void ignore_rules_add_parents(IgnoreRules *rules, const char *dir) {
    char *abs = realpath(dir, NULL);
    if (!abs) return;
    /* find the work tree root: the nearest folder above that holds .git */
    char root[PATH_MAX];
    root[0] = '\0';
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s", abs);
    for (;;) {
        char git[PATH_MAX + 8];
        struct stat st;
        snprintf(git, sizeof git, "%s/.git", probe[1] ? probe : "");
        if (stat(git, &st) == 0) {
            snprintf(root, sizeof root, "%s", probe);
            break;
        }
        char *slash = strrchr(probe, '/');
        if (!slash || slash == probe) break;
        *slash = '\0';
    }
    if (root[0]) {
        /* every folder from the root down to dir, the dir itself excluded (the walk reads it) */
        size_t rootlen = strlen(root);
        char cur[PATH_MAX];
        snprintf(cur, sizeof cur, "%s", root);
        const char *rest = abs + rootlen;
        while (strcmp(cur, abs) != 0) {
            ignore_rules_add_file(rules, cur);
            if (*rest == '/') rest++;
            const char *next = strchr(rest, '/');
            size_t seg = next ? (size_t)(next - rest) : strlen(rest);
            size_t len = strlen(cur);
            if (len + 1 + seg >= sizeof cur) break;
            cur[len] = '/';
            memcpy(cur + len + 1, rest, seg);
            cur[len + 1 + seg] = '\0';
            rest += seg;
        }
    }
    free(abs);
}

bool ignore_rules_match(const IgnoreRules *rules, const char *path, bool is_dir) {
    bool ignored = false;
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    for (size_t i = 0; i < rules->count; i++) {
        const IgnorePattern *p = &rules->items[i];
        if (p->dir_only && !is_dir) continue;
        size_t blen = strlen(p->base);
        if (strncmp(path, p->base, blen) != 0 || (path[blen] != '/' && blen != 1)) continue;
        const char *rel = path + blen + (blen == 1 ? 0 : 1);
        bool hit = p->anchored ? glob_match(p->pattern, rel) : glob_match(p->pattern, name);
        if (hit) ignored = !p->negated;
    }
    return ignored;
}

void ignore_rules_truncate(IgnoreRules *rules, size_t count) {
    while (rules->count > count) {
        rules->count--;
        free(rules->items[rules->count].pattern);
        free(rules->items[rules->count].base);
    }
}

void ignore_rules_free(IgnoreRules *rules) {
    ignore_rules_truncate(rules, 0);
    free(rules->items);
    rules->items = NULL;
}
