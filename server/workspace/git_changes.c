#include "server/workspace/git_changes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/base/growable.h"
#include "analysis/base/text_format.h"

extern char **environ;

#define MAX_STDERR 4096u

typedef struct {
    char *path; /* absolute: top + '/' + git's path */
    ChangedLines lines;
} FileChanges;

struct GitChanges {
    char *top, *commit;
    FileChanges *files;
    size_t count, cap;
};

/* ---- the line sets ---------------------------------------------------------------- */

static bool add_span(ChangedLines *l, size_t first, size_t last) {
    if (l->count && first <= l->spans[l->count - 1].last + 1 && first >= l->spans[l->count - 1].first) {
        if (last > l->spans[l->count - 1].last) l->spans[l->count - 1].last = last;
        return true;
    }
    if (!array_reserve(&l->spans, l->count, &l->cap, sizeof *l->spans, 4)) return false;
    l->spans[l->count++] = (LineSpan){first, last};
    return true;
}

static int by_first(const void *a, const void *b) {
    const LineSpan *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* sorts and merges the spans (hunks arrive in order; this guards the rest) */
static void normalise(ChangedLines *l) {
    if (l->count < 2) return;
    qsort(l->spans, l->count, sizeof *l->spans, by_first);
    size_t w = 0;
    for (size_t i = 1; i < l->count; i++) {
        if (l->spans[i].first <= l->spans[w].last + 1) {
            if (l->spans[i].last > l->spans[w].last) l->spans[w].last = l->spans[i].last;
        } else
            l->spans[++w] = l->spans[i];
    }
    l->count = w + 1;
}

bool changed_lines_touch(const ChangedLines *lines, size_t first, size_t last) {
    if (!lines) return false;
    if (lines->all) return true;
    size_t lo = 0, hi = lines->count; /* the first span that ends at or after first */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lines->spans[mid].last < first) lo = mid + 1;
        else hi = mid;
    }
    return lo < lines->count && lines->spans[lo].first <= last;
}

/* the file's entry, made when new (files arrive one after another; a path
 * met twice is merged once all are in) */
static ChangedLines *file_entry(GitChanges *c, const char *rel) {
    char *path = format_string("%s%s%s", c->top, strcmp(c->top, "/") == 0 ? "" : "/", rel);
    if (!path) return NULL;
    if (c->count && strcmp(c->files[c->count - 1].path, path) == 0) {
        free(path);
        return &c->files[c->count - 1].lines;
    }
    if (!array_reserve(&c->files, c->count, &c->cap, sizeof *c->files, 16)) {
        free(path);
        return NULL;
    }
    c->files[c->count] = (FileChanges){.path = path};
    return &c->files[c->count++].lines;
}

static int by_path(const void *a, const void *b) {
    return strcmp(((const FileChanges *)a)->path, ((const FileChanges *)b)->path);
}

static bool finish_files(GitChanges *c) {
    if (c->count) qsort(c->files, c->count, sizeof *c->files, by_path);
    size_t w = 0;
    for (size_t i = 0; i < c->count; i++) {
        FileChanges *f = &c->files[i];
        if (w > 0 && strcmp(c->files[w - 1].path, f->path) == 0) { /* the same file twice: one entry */
            ChangedLines *into = &c->files[w - 1].lines;
            into->all = into->all || f->lines.all;
            for (size_t k = 0; k < f->lines.count; k++)
                if (!array_reserve(&into->spans, into->count, &into->cap, sizeof *into->spans, 4)) return false;
                else into->spans[into->count++] = f->lines.spans[k];
            free(f->path);
            free(f->lines.spans);
            continue;
        }
        c->files[w++] = *f;
    }
    c->count = w;
    for (size_t i = 0; i < c->count; i++) normalise(&c->files[i].lines);
    return true;
}

/* ---- reading the unified diff -------------------------------------------------------- */

/* A path as git writes it: C-quoted ("a/t\tb.py", octal escapes for bytes
 * it quotes) when it starts with '"', else as is. *end: after it. Heap;
 * NULL when the quoting is broken. */
static char *git_path(const char *s, size_t len, size_t *end) {
    if (len == 0 || s[0] != '"') {
        *end = len;
        return strndup(s, len);
    }
    char *out = malloc(len + 1), *w = out;
    if (!out) return NULL;
    size_t i = 1;
    for (; i < len && s[i] != '"'; i++) {
        if (s[i] != '\\') {
            *w++ = s[i];
            continue;
        }
        if (++i >= len) break;
        char e = s[i];
        if (e >= '0' && e <= '3' && i + 2 < len && s[i + 1] >= '0' && s[i + 1] <= '7' && s[i + 2] >= '0' &&
            s[i + 2] <= '7') {
            *w++ = (char)((e - '0') * 64 + (s[i + 1] - '0') * 8 + (s[i + 2] - '0'));
            i += 2;
            continue;
        }
        const char *from = "abtnvfr\"\\", *to = "\a\b\t\n\v\f\r\"\\";
        const char *k = strchr(from, e);
        if (!k || !e) {
            free(out);
            return NULL;
        }
        *w++ = to[k - from];
    }
    if (i >= len) { /* no closing quote */
        free(out);
        return NULL;
    }
    *w = '\0';
    *end = i + 1;
    if (memchr(out, '\0', (size_t)(w - out))) { /* "\000" is no path */
        free(out);
        return NULL;
    }
    return out;
}

/* drops git's "a/" or "b/" */
static char *without_prefix(char *p) {
    if (p && (p[0] == 'a' || p[0] == 'b') && p[1] == '/') memmove(p, p + 2, strlen(p + 2) + 1);
    return p;
}

/* The new side's path from "diff --git a/X b/Y": quoted sides are read
 * exactly; two unquoted sides only when they are the same path (the case
 * without a rename, where "rename to" does not follow). NULL: unknown. */
static char *diff_git_new_path(const char *rest, size_t len) {
    size_t end;
    if (len && rest[0] == '"') {
        char *a = git_path(rest, len, &end);
        bool read = a != NULL;
        free(a);
        if (!read || end + 1 >= len || rest[end] != ' ') return NULL;
        size_t e2;
        return without_prefix(git_path(rest + end + 1, len - end - 1, &e2));
    }
    const char *q = memchr(rest, '"', len); /* an unquoted name holds no '"': one starts the quoted side */
    if (q) return q > rest && q[-1] == ' ' ? without_prefix(git_path(q, len - (size_t)(q - rest), &end)) : NULL;
    if (len < 5 || (len - 5) % 2) return NULL;
    size_t n = (len - 5) / 2; /* "a/X b/X" */
    if (memcmp(rest, "a/", 2) != 0 || memcmp(rest + 2 + n, " b/", 3) != 0 || memcmp(rest + 2, rest + 5 + n, n) != 0)
        return NULL;
    return strndup(rest + 2, n);
}

/* IN_BETWEEN: after a hunk, where only another hunk or file may follow */
typedef enum { IN_NOTHING, IN_HEADER, IN_HUNK, IN_BETWEEN } ParseState;

typedef struct {
    GitChanges *c;
    ParseState state;
    char *path;    /* the new side's path (relative to top) of the file being read, or NULL */
    bool deleted;  /* its new side is /dev/null */
    ChangedLines *lines;
    unsigned long old_left, new_left; /* lines of the current hunk still to come */
    char *error;
} DiffParser;

static void parser_set_path(DiffParser *p, char *path) {
    if (!path) return;
    free(p->path);
    p->path = path;
}

static bool parse_number(const char **s, unsigned long *out) {
    if (**s < '0' || **s > '9') return false;
    errno = 0;
    char *end;
    *out = strtoul(*s, &end, 10);
    if (errno || *out > (unsigned long)INT32_MAX) return false;
    *s = end;
    return true;
}

/* "@@ -a[,b] +c[,d] @@ ..." */
static bool parse_hunk(DiffParser *p, const char *line) {
    const char *s = line + 3;
    unsigned long a, b = 1, c, d = 1;
    if (*s++ != '-' || !parse_number(&s, &a)) return false;
    if (*s == ',' && (s++, !parse_number(&s, &b))) return false;
    if (*s++ != ' ' || *s++ != '+' || !parse_number(&s, &c)) return false;
    if (*s == ',' && (s++, !parse_number(&s, &d))) return false;
    if (strncmp(s, " @@", 3) != 0) return false;
    p->old_left = b;
    p->new_left = d;
    if (d > 0 && !p->deleted && p->path) {
        if (c == 0) return false;
        if (!p->lines) p->lines = file_entry(p->c, p->path);
        if (!p->lines || !add_span(p->lines, c, c + d - 1)) {
            p->error = strdup("out of memory reading git's diff");
            return false;
        }
    }
    p->state = p->old_left || p->new_left ? IN_HUNK : IN_BETWEEN;
    return true;
}

static bool starts(const char *line, size_t len, const char *prefix, size_t *n) {
    *n = strlen(prefix);
    return len >= *n && memcmp(line, prefix, *n) == 0;
}

/* One line of the diff (without its '\n'); false on what cannot be read. */
static bool parse_line(DiffParser *p, const char *line, size_t len) {
    size_t n;
    if (p->state == IN_HUNK) {
        if (len && line[0] == '\\') return true; /* "\ No newline at end of file" */
        char k = len ? line[0] : ' ';
        if (k == '-' && p->old_left) p->old_left--;
        else if (k == '+' && p->new_left) p->new_left--;
        else if (k == ' ' && p->old_left && p->new_left) p->old_left--, p->new_left--;
        else return false;
        if (!p->old_left && !p->new_left) p->state = IN_BETWEEN;
        return true;
    }
    if (starts(line, len, "diff --git ", &n)) {
        free(p->path);
        p->path = diff_git_new_path(line + n, len - n);
        p->deleted = false;
        p->lines = NULL;
        p->state = IN_HEADER;
        return true;
    }
    if (p->state == IN_NOTHING) return true; /* "* Unmerged path ..." and the like */
    if (starts(line, len, "@@ ", &n)) return parse_hunk(p, line);
    if (p->state == IN_BETWEEN) {
        if (len && line[0] == '\\') return true; /* "\ No newline at end of file" */
        if (starts(line, len, "* ", &n)) { /* "* Unmerged path ..." */
            p->state = IN_NOTHING;
            return true;
        }
        return false; /* a line the hunk did not announce */
    }
    size_t end;
    if (starts(line, len, "+++ ", &n)) {
        if (len - n == 9 && memcmp(line + n, "/dev/null", 9) == 0) {
            p->deleted = true;
            return true;
        }
        size_t rest = len - n;
        if (line[n] != '"' && rest && line[len - 1] == '\t') rest--; /* git adds a tab after a name with a space */
        char *path = without_prefix(git_path(line + n, rest, &end));
        if (!path) return false;
        parser_set_path(p, path);
        return true;
    }
    if (starts(line, len, "rename to ", &n) || starts(line, len, "copy to ", &n)) {
        char *path = git_path(line + n, len - n, &end);
        if (!path) return false;
        parser_set_path(p, path);
        return true;
    }
    if (starts(line, len, "deleted file mode ", &n)) {
        p->deleted = true;
        return true;
    }
    if (starts(line, len, "Binary files ", &n)) { /* no hunks: take every line as changed */
        if (!p->deleted && p->path) {
            ChangedLines *l = file_entry(p->c, p->path);
            if (!l) {
                p->error = strdup("out of memory reading git's diff");
                return false;
            }
            l->all = true;
        }
        return true;
    }
    return true; /* index, modes, similarity, "--- a/..." */
}

static bool parse_diff(GitChanges *c, const char *diff, size_t len, char **error) {
    DiffParser p = {.c = c};
    size_t line_no = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(diff + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (diff + i)) : len - i;
        line_no++;
        if (!parse_line(&p, diff + i, n)) {
            *error = p.error ? p.error
                             : format_string("cannot read git's diff at line %zu: '%.*s'", line_no,
                                             (int)(n > 120 ? 120 : n), diff + i);
            free(p.path);
            return false;
        }
        i += n + 1;
    }
    free(p.path);
    if (p.state == IN_HUNK) {
        *error = strdup("git's diff ends inside a hunk");
        return false;
    }
    return true;
}

/* ---- running git ------------------------------------------------------------------- */

typedef struct {
    char *out;     /* stdout, whole (diffs are read after git exits) */
    size_t out_len, out_cap;
    char err[MAX_STDERR + 1];
    size_t err_len;
    int status;    /* exit status; -1 when it died of a signal */
} GitRun;

/* git's first line of stderr, for a message */
static const char *first_err_line(GitRun *r) {
    char *nl = strchr(r->err, '\n');
    if (nl) *nl = '\0';
    return r->err[0] ? r->err : "no message";
}

/* a pipe whose ends other children do not inherit */
static bool cloexec_pipe(int fds[2]) {
    if (pipe(fds) != 0) {
        fds[0] = fds[1] = -1;
        return false;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return true;
}

/* Runs git -C dir ARGS with stdin from /dev/null, collecting stdout and the
 * start of stderr. False with *error when it cannot be started. */
static bool git_run(const char *dir, const char *const *args, GitRun *r, char **error) {
    memset(r, 0, sizeof *r);
    const char *argv[32];
    size_t n = 0;
    argv[n++] = "git";
    argv[n++] = "--no-pager";
    argv[n++] = "-C";
    argv[n++] = dir;
    argv[n++] = "-c";
    argv[n++] = "core.quotepath=off";
    for (size_t i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;

    /* the caller's environment, and no optional locks: a reader never takes the index lock */
    size_t env_count = 0;
    while (environ && environ[env_count]) env_count++;
    char **envp = calloc(env_count + 2, sizeof *envp);
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (!envp || !cloexec_pipe(out_pipe) || !cloexec_pipe(err_pipe)) {
        free(envp);
        if (out_pipe[0] >= 0) close(out_pipe[0]), close(out_pipe[1]);
        *error = strdup("cannot start git: out of resources");
        return false;
    }
    size_t e = 0;
    for (size_t i = 0; i < env_count; i++)
        if (strncmp(environ[i], "GIT_OPTIONAL_LOCKS=", 19) != 0) envp[e++] = environ[i];
    envp[e++] = "GIT_OPTIONAL_LOCKS=0";
    envp[e] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        *error = rc == ENOENT ? strdup("git was not found on PATH (--diff-base runs it)")
                              : format_string("cannot run git: %s", strerror(rc));
        return false;
    }
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    bool oom = false;
    char chunk[65536];
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t got = read(fds[k].fd, chunk, sizeof chunk);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                close(fds[k].fd);
                fds[k].fd = -1;
                continue;
            }
            if (k == 1) {
                size_t room = MAX_STDERR - r->err_len, take = (size_t)got < room ? (size_t)got : room;
                memcpy(r->err + r->err_len, chunk, take);
                r->err_len += take;
            } else if (!oom) {
                if (array_reserve_n(&r->out, r->out_len, (size_t)got + 1, &r->out_cap, 1, 65536)) {
                    memcpy(r->out + r->out_len, chunk, (size_t)got);
                    r->out_len += (size_t)got;
                } else
                    oom = true; /* read on, so that git can finish */
            }
        }
    }
    for (int k = 0; k < 2; k++)
        if (fds[k].fd >= 0) close(fds[k].fd);
    r->err[r->err_len] = '\0';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r->out) r->out[r->out_len] = '\0';
    if (oom) {
        free(r->out);
        r->out = NULL;
        *error = strdup("out of memory reading git's output");
        return false;
    }
    return true;
}

/* ---- loading ------------------------------------------------------------------------- */

static GitChanges *changes_new(const char *top, const char *commit) {
    GitChanges *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->top = strdup(top);
    c->commit = strdup(commit ? commit : "");
    if (!c->top || !c->commit) {
        git_changes_free(c);
        return NULL;
    }
    return c;
}

/* The last step of parse and load: the files sorted for lookup; c, or NULL
 * (and c freed) when a step failed. */
static GitChanges *changes_done(GitChanges *c, bool ok, char **error) {
    if (ok && !finish_files(c)) {
        *error = strdup("out of memory");
        ok = false;
    }
    if (!ok) {
        git_changes_free(c);
        return NULL;
    }
    return c;
}

static bool add_untracked(GitChanges *c, const char *rel) {
    size_t n = strlen(rel);
    if (n == 0 || rel[n - 1] == '/') return true; /* a nested repository */
    ChangedLines *l = file_entry(c, rel);
    if (!l) return false;
    l->all = true;
    return true;
}

GitChanges *git_changes_parse(const char *top, const char *diff, size_t diff_len, const char *const *untracked,
                              size_t untracked_count, char **error) {
    GitChanges *c = changes_new(top, NULL);
    if (!c) {
        *error = strdup("out of memory");
        return NULL;
    }
    bool ok = parse_diff(c, diff, diff_len, error);
    for (size_t i = 0; ok && i < untracked_count; i++)
        if (!add_untracked(c, untracked[i])) {
            *error = strdup("out of memory");
            ok = false;
        }
    return changes_done(c, ok, error);
}

static char *trimmed(const char *s, size_t len) {
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r')) len--;
    return strndup(s, len);
}

GitChanges *git_changes_load(const char *where, const char *ref, char **error) {
    *error = NULL;
    if (!ref || !*ref || ref[0] == '-') {
        *error = format_string("--diff-base wants a git revision, not '%s'", ref ? ref : "");
        return NULL;
    }
    GitRun r;
    if (!git_run(where, (const char *const[]){"rev-parse", "--show-toplevel", NULL}, &r, error)) return NULL;
    if (r.status != 0 || !r.out) {
        const char *why = first_err_line(&r);
        *error = strstr(why, "not a git repository")
                     ? format_string("%s is not in a git repository, so --diff-base has nothing to compare with",
                                     where)
                     : format_string("git rev-parse --show-toplevel in %s failed: %s", where, why);
        free(r.out);
        return NULL;
    }
    char *top_text = trimmed(r.out, r.out_len);
    free(r.out);
    char *top = top_text ? realpath(top_text, NULL) : NULL;
    free(top_text);
    if (!top) {
        *error = format_string("%s is not in a git work tree (a bare repository?)", where);
        return NULL;
    }
    char *spec = format_string("%s^{commit}", ref);
    bool ran = spec && git_run(top, (const char *const[]){"rev-parse", "--verify", "--quiet", spec, NULL}, &r, error);
    free(spec);
    if (!ran) {
        free(top);
        return NULL;
    }
    if (r.status != 0 || !r.out || r.out_len < 40) {
        *error = format_string("--diff-base: '%s' is not a commit in the repository %s", ref, top);
        free(r.out);
        free(top);
        return NULL;
    }
    char *commit = trimmed(r.out, r.out_len);
    free(r.out);
    GitChanges *c = commit ? changes_new(top, commit) : NULL;
    free(commit);
    free(top);
    if (!c) {
        *error = strdup("out of memory");
        return NULL;
    }
    /* the working tree (staged and unstaged) against the commit */
    const char *diff_args[] = {"diff", "--no-color", "--no-ext-diff", "--no-textconv", "-U0", "-M",
                               "--src-prefix=a/", "--dst-prefix=b/", c->commit, "--", NULL};
    if (!git_run(c->top, diff_args, &r, error)) {
        git_changes_free(c);
        return NULL;
    }
    if (r.status != 0) {
        *error = format_string("git diff %s failed: %s", ref, first_err_line(&r));
        free(r.out);
        git_changes_free(c);
        return NULL;
    }
    bool ok = parse_diff(c, r.out ? r.out : "", r.out_len, error);
    free(r.out);
    /* untracked files that are not ignored: new, every line */
    if (ok && !git_run(c->top, (const char *const[]){"ls-files", "-z", "--others", "--exclude-standard", NULL}, &r,
                       error))
        ok = false;
    else if (ok && r.status != 0) {
        *error = format_string("git ls-files --others failed: %s", first_err_line(&r));
        free(r.out);
        ok = false;
    } else if (ok) {
        for (size_t i = 0; ok && r.out && i < r.out_len;) {
            size_t n = strnlen(r.out + i, r.out_len - i);
            if (!add_untracked(c, r.out + i)) {
                *error = strdup("out of memory");
                ok = false;
            }
            i += n + 1;
        }
        free(r.out);
    }
    return changes_done(c, ok, error);
}

void git_changes_free(GitChanges *c) {
    if (!c) return;
    for (size_t i = 0; i < c->count; i++) {
        free(c->files[i].path);
        free(c->files[i].lines.spans);
    }
    free(c->files);
    free(c->top);
    free(c->commit);
    free(c);
}

const char *git_changes_top(const GitChanges *c) { return c->top; }
const char *git_changes_commit(const GitChanges *c) { return c->commit; }

size_t git_changes_file_count(const GitChanges *c) {
    size_t n = 0;
    for (size_t i = 0; i < c->count; i++) n += c->files[i].lines.all || c->files[i].lines.count;
    return n;
}

GitFileState git_changes_for(const GitChanges *c, const char *path, const ChangedLines **lines) {
    *lines = NULL;
    char *abs = realpath(path, NULL);
    if (!abs) return GIT_FILE_UNKNOWN;
    size_t n = strlen(c->top);
    bool inside = strcmp(c->top, "/") == 0 || (strncmp(abs, c->top, n) == 0 && abs[n] == '/');
    if (!inside) {
        free(abs);
        return GIT_FILE_OUTSIDE;
    }
    size_t lo = 0, hi = c->count;
    GitFileState state = GIT_FILE_UNCHANGED;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(c->files[mid].path, abs);
        if (cmp == 0) {
            const ChangedLines *l = &c->files[mid].lines;
            if (l->all || l->count) {
                *lines = l;
                state = GIT_FILE_CHANGED;
            }
            break;
        }
        if (cmp < 0) lo = mid + 1;
        else hi = mid;
    }
    free(abs);
    return state;
}
