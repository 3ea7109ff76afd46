#include "server/workspace/ignore_rules.h"

#include "analysis/base/growable.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The POSIX class named by [name, name + len) (from "[:name:]") holds c;
 * -1 when the name is unknown (git then matches nothing). */
static int posix_class(const char *name, size_t len, unsigned char c) {
    static const struct {
        const char *name;
        int (*test)(int);
    } classes[] = {{"alnum", isalnum}, {"alpha", isalpha}, {"blank", isblank}, {"cntrl", iscntrl},
                   {"digit", isdigit}, {"graph", isgraph}, {"lower", islower}, {"print", isprint},
                   {"punct", ispunct}, {"space", isspace}, {"upper", isupper}, {"xdigit", isxdigit}};
    for (size_t i = 0; i < sizeof classes / sizeof *classes; i++)
        if (strlen(classes[i].name) == len && memcmp(classes[i].name, name, len) == 0) return classes[i].test(c) != 0;
    return -1;
}

/* A bracket expression at *pp ('['), read as git's wildmatch reads it: '!'
 * or '^' negates, a ']' right after the '[' (or the negation) is a member,
 * '\' escapes the next character, "a-z" is a range (a '-' first, last or
 * right after a range is itself), "[:alpha:]" names a class. Returns 1 when
 * c is in it, 0 when not, -1 when it is unterminated or names an unknown
 * class: git then matches nothing at all (not even a literal '['). On 0 and
 * 1, *pp moves past the closing ']'. */
static int match_class(const char **pp, unsigned char c) {
    const char *p = *pp + 1; /* after '[' */
    bool negate = false, hit = false;
    if (*p == '!' || *p == '^') {
        negate = true;
        p++;
    }
    unsigned char prev = 0; /* the previous member, the low end of a range; 0 after a range or a class */
    for (bool first = true;; first = false, p++) {
        unsigned char ch = (unsigned char)*p;
        if (!ch) return -1;
        if (ch == ']' && !first) break;
        if (ch == '\\') {
            ch = (unsigned char)*++p;
            if (!ch) return -1;
            hit |= c == ch;
            prev = ch;
        } else if (ch == '-' && prev && p[1] && p[1] != ']') {
            unsigned char hi = (unsigned char)*++p;
            if (hi == '\\' && !(hi = (unsigned char)*++p)) return -1;
            hit |= c >= prev && c <= hi;
            prev = 0;
        } else if (ch == '[' && p[1] == ':') {
            const char *name = p + 2, *close = strchr(name, ']');
            if (!close) return -1;
            if (close - name < 1 || close[-1] != ':') { /* no ":]": the '[' is a member, read on from ':' */
                hit |= c == '[';
                prev = '[';
                continue;
            }
            int in = posix_class(name, (size_t)(close - name - 1), c);
            if (in < 0) return -1;
            hit |= in;
            prev = 0;
            p = close;
        } else {
            hit |= c == ch;
            prev = ch;
        }
    }
    *pp = p + 1;
    return hit != negate;
}

/* What one attempt at matching reports. Besides a match and a mismatch, two
 * verdicts prune the search, as in git's wildmatch: ABORT_ALL when the text
 * ran out before the pattern did (no later start of any enclosing '*' can
 * match either, since it leaves even less text), ABORT_TO_GLOBSTAR when a
 * single '*' reached a '/' (only an enclosing '**' can still move past it).
 * Without them, a pattern of many stars tries every split of the text:
 * exponential time (fuzzing found a 174-byte input that took over 25 s). */
typedef enum { GLOB_MATCH, GLOB_NOMATCH, GLOB_ABORT_ALL, GLOB_ABORT_TO_GLOBSTAR } GlobVerdict;

/* start: the whole pattern (a '**' is special only at its start or after a '/') */
static GlobVerdict match_at(const char *start, const char *p, const char *t, int depth) {
    if (depth > 64) return GLOB_ABORT_ALL;
    while (*p) {
        if (*p == '*') {
            const char *stars = p;
            while (*p == '*') p++;
            /* As in git's wildmatch, a run of two or more stars is '**' only as a
             * whole path component: at the start or after '/', and at the end or
             * before '/'. Elsewhere, as in "a**b" or "x**.py", it is one '*'. */
            bool globstar = p - stars >= 2 && (stars == start || stars[-1] == '/') &&
                            (!*p || *p == '/' || (p[0] == '\\' && p[1] == '/'));
            if (globstar) {
                if (!*p) return GLOB_MATCH; /* a trailing '**' matches everything */
                p += *p == '/' ? 1 : 2;
                /* "**" + "/" matches any run of whole folders, none included */
                for (const char *s = t;; s++) {
                    if (s == t || s[-1] == '/') {
                        GlobVerdict v = match_at(start, p, s, depth + 1);
                        if (v == GLOB_MATCH || v == GLOB_ABORT_ALL) return v;
                    }
                    if (!*s) return GLOB_ABORT_ALL;
                }
            }
            if (!*p) return strchr(t, '/') ? GLOB_ABORT_TO_GLOBSTAR : GLOB_MATCH;
            for (const char *s = t;; s++) {
                GlobVerdict v = match_at(start, p, s, depth + 1);
                if (v != GLOB_NOMATCH) return v;
                if (*s == '/') return GLOB_ABORT_TO_GLOBSTAR;
                if (!*s) return GLOB_ABORT_ALL;
            }
        }
        if (!*t) return GLOB_ABORT_ALL;
        if (*p == '?') {
            if (*t == '/') return GLOB_NOMATCH;
            p++;
            t++;
            continue;
        }
        if (*p == '[') {
            /* an unterminated class makes the whole pattern match nothing, as in git */
            int in = match_class(&p, (unsigned char)*t);
            if (in < 0) return GLOB_ABORT_ALL;
            if (in == 0 || *t == '/') return GLOB_NOMATCH;
            t++;
            continue;
        }
        if (*p == '\\' && !*++p) return GLOB_ABORT_ALL; /* a pattern that ends in a backslash matches nothing (git) */
        if (*p != *t) return GLOB_NOMATCH;
        p++;
        t++;
    }
    return *t == '\0' ? GLOB_MATCH : GLOB_NOMATCH;
}

bool glob_match(const char *pattern, const char *text) { return match_at(pattern, pattern, text, 0) == GLOB_MATCH; }

/* An anchored pattern against a path relative to its base, as git does it:
 * git compares the pattern's literal head (up to the first '*', '?', '[' or
 * backslash) as plain text and gives only the rest to wildmatch, so a '**'
 * right after that head starts the pattern wildmatch sees: "a**" + "/b"
 * then matches "a/x/b" and "ax/y/b" like "a" followed by "**" + "/b". */
static bool path_match(const char *pattern, const char *rel) {
    size_t head = strcspn(pattern, "*?[\\");
    if (strncmp(pattern, rel, head) != 0) return false;
    return match_at(pattern + head, pattern + head, rel + head, 0) == GLOB_MATCH;
}

static void add_pattern(IgnoreRules *rules, const char *base, const char *line, size_t len) {
    /* As git reads a line: the '\r' of a CRLF ending goes, then the trailing
     * spaces that no backslash escapes (`a\ ` keeps its space; in `a\\ `
     * the backslash escapes a backslash and the space goes); tabs stay. */
    if (len && line[len - 1] == '\r') len--;
    size_t trimmed = len;
    for (size_t i = 0; i < len; i++) {
        if (line[i] == ' ') {
            if (trimmed == len) trimmed = i;
            continue;
        }
        if (line[i] == '\\') i++; /* the escaped character is never trimmed */
        trimmed = len;
    }
    len = trimmed;
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
    if (!p.pattern || !p.base || !array_reserve(&rules->items, rules->count, &rules->cap, sizeof *rules->items, 8)) {
        free(p.pattern);
        free(p.base);
        return;
    }
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
    /* git skips a UTF-8 byte order mark at the start of the file */
    bool bom = n >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0;
    ignore_rules_add_text(rules, base, buf + (bom ? 3 : 0));
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
        bool hit = p->anchored ? path_match(p->pattern, rel) : glob_match(p->pattern, name);
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
    rules->cap = 0;
}
