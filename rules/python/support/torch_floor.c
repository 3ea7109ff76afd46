#include "rules/python/support/torch_floor.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/read_bounded.h"

/* ---- reading a dependency list ------------------------------------------ */

typedef struct {
    const char *p, *end;
} Cursor;

static void skip_blanks(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) c->p++;
}

static bool starts(const Cursor *c, const char *s) {
    size_t n = strlen(s);
    return (size_t)(c->end - c->p) >= n && memcmp(c->p, s, n) == 0;
}

/* digits[.digits]...: *v = major * 1000 + minor */
static bool read_version(Cursor *c, TorchVersion *v) {
    if (c->p >= c->end || !isdigit((unsigned char)*c->p)) return false;
    long major = 0, minor = 0;
    while (c->p < c->end && isdigit((unsigned char)*c->p) && major < 1000) major = major * 10 + (*c->p++ - '0');
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        while (c->p < c->end && isdigit((unsigned char)*c->p) && minor < 1000) minor = minor * 10 + (*c->p++ - '0');
    }
    while (c->p < c->end && (isalnum((unsigned char)*c->p) || *c->p == '.' || *c->p == '*' || *c->p == '+')) c->p++;
    if (major >= 1000 || minor >= 1000) return false;
    *v = TORCH_VERSION((int)major, (int)minor);
    return true;
}

/* The requirement after the name: `>=1.8,<3`, `==1.7.1`, conda's `=1.10`,
 * poetry's `= "^2.0"`. bare: a version without an operator counts (poetry's
 * quoted `"2.0"`). Lowers *floor by each lower bound; true when one was seen. */
static bool read_specs(Cursor *c, bool bare, TorchVersion *floor) {
    static const struct {
        const char *op;
        bool lower; /* bounds the release from below */
    } ops[] = {{"===", true}, {"==", true}, {"~=", true}, {">=", true}, {"<=", false}, {"!=", false},
               {"^", true},   {"~", true},  {">", true},  {"<", false}, {"=", true}};
    bool seen = false;
    for (int guard = 0; guard < 8; guard++) {
        skip_blanks(c);
        bool lower = bare, has_op = false;
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
            if (starts(c, ops[i].op)) {
                c->p += strlen(ops[i].op);
                lower = ops[i].lower;
                has_op = true;
                break;
            }
        if (!has_op && !bare) return seen;
        skip_blanks(c);
        TorchVersion v;
        if (!read_version(c, &v)) return seen;
        if (lower && (!seen || v < *floor)) *floor = v;
        seen |= lower;
        skip_blanks(c);
        if (c->p >= c->end || *c->p != ',') return seen;
        c->p++;
    }
    return seen;
}

static bool name_char(char ch) {
    return isalnum((unsigned char)ch) || ch == '_' || ch == '-' || ch == '.' || ch == '/';
}

/* the requirement that follows `torch` or `pytorch` at c */
static bool read_requirement(Cursor *c, TorchVersion *floor) {
    skip_blanks(c);
    if (c->p < c->end && *c->p == '[') { /* extras: torch[opt-einsum]>=2.0 */
        while (c->p < c->end && *c->p != ']' && *c->p != '\n') c->p++;
        if (c->p < c->end && *c->p == ']') c->p++;
        skip_blanks(c);
    }
    if (c->p < c->end && *c->p == '(') c->p++; /* setup.cfg's `torch (>=1.8)` */
    /* poetry: torch = ">=1.8" or torch = "^2.0" */
    if (starts(c, "=") && !starts(c, "==")) {
        Cursor q = *c;
        q.p++;
        skip_blanks(&q);
        if (q.p < q.end && (*q.p == '"' || *q.p == '\'')) {
            q.p++;
            *c = q;
            return read_specs(c, true, floor);
        }
    }
    return read_specs(c, false, floor);
}

bool torch_floor_in_text(const char *text, size_t length, TorchVersion *floor) {
    if (!text) return false;
    Cursor c = {text, text + length};
    bool found = false;
    while (c.p < c.end) {
        char ch = *c.p;
        if (ch == '#') { /* a comment, to the end of its line */
            while (c.p < c.end && *c.p != '\n') c.p++;
            continue;
        }
        size_t name = starts(&c, "pytorch") ? 7 : starts(&c, "torch") ? 5 : 0;
        if (!name || (c.p > text && name_char(c.p[-1]))) {
            c.p++;
            continue;
        }
        c.p += name;
        /* `torchvision`, `torch-geometric`, `torch.cuda`: another package, or code */
        if (c.p < c.end && name_char(*c.p)) continue;
        TorchVersion v;
        if (read_requirement(&c, &v) && (!found || v < *floor)) {
            *floor = v;
            found = true;
        }
    }
    return found;
}

/* ---- finding the project's files ---------------------------------------- */

#define MAX_LEVELS 8
#define MAX_DEPENDENCY_FILE (1 << 20) /* a dependency list is small; a larger file is not one */

static bool floor_of_file(const char *dir, const char *name, TorchVersion *floor) {
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    struct stat st;
    char *text = NULL;
    size_t length = 0;
    bool too_large = false, found = false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        read_fd_bounded(fd, MAX_DEPENDENCY_FILE, &text, &length, &too_large) && !too_large)
        found = torch_floor_in_text(text, length, floor);
    free(text);
    close(fd);
    return found;
}

static bool is_requirements_name(const char *name) {
    size_t n = strlen(name);
    return strncmp(name, "requirements", 12) == 0 && n > 4 && strcmp(name + n - 4, ".txt") == 0;
}

/* the lowest floor over dir's dependency files */
static bool floor_of_folder(const char *dir, TorchVersion *floor) {
    static const char *const fixed[] = {"pyproject.toml", "setup.py", "setup.cfg", "environment.yml",
                                        "environment.yaml", NULL};
    bool found = false;
    TorchVersion v;
    for (size_t i = 0; fixed[i]; i++)
        if (floor_of_file(dir, fixed[i], &v) && (!found || v < *floor)) {
            *floor = v;
            found = true;
        }
    DIR *d = opendir(dir);
    if (!d) return found;
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) && files < 4096; files++)
        if (is_requirements_name(e->d_name) && floor_of_file(dir, e->d_name, &v) && (!found || v < *floor)) {
            *floor = v;
            found = true;
        }
    closedir(d);
    return found;
}

static bool holds_git(const char *dir) {
    char path[PATH_MAX];
    struct stat st;
    return (size_t)snprintf(path, sizeof path, "%s/.git", dir) < sizeof path && stat(path, &st) == 0;
}

bool torch_floor_of_project(const char *path, TorchVersion *floor) {
    if (!path || !*path) return false;
    char dir[PATH_MAX];
    if (path[0] == '/') {
        if ((size_t)snprintf(dir, sizeof dir, "%s", path) >= sizeof dir) return false;
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || (size_t)snprintf(dir, sizeof dir, "%s/%s", cwd, path) >= sizeof dir)
            return false;
    }
    for (int level = 0; level < MAX_LEVELS; level++) {
        char *slash = strrchr(dir, '/');
        if (!slash) return false;
        if (slash == dir) slash[1] = '\0'; /* the root */
        else *slash = '\0';
        if (floor_of_folder(dir, floor)) return true;
        if (holds_git(dir) || strcmp(dir, "/") == 0) return false;
    }
    return false;
}
