#include "analysis/python/python_workspace.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/base/monotonic_clock.h"
#include "analysis/base/growable.h"
#include "analysis/python/python_module_facts.h"

#define MAX_FILES 20000           /* Python files indexed per workspace */
#define MAX_FILE_BYTES (2 << 20)  /* larger files are generated or data: not indexed */
#define MAX_SCAN_DEPTH 16
#define MAX_HOPS 8                /* links followed for one question */

struct PyWorkspaceView {
    int refcount;
    PyModuleFacts **modules; /* sorted by path */
    size_t count;
    /* modules by the last part of their dotted name, for suffix matches */
    struct NameEntry {
        const char *last;
        const PyModuleFacts *module;
    } *by_last;
};

struct PyWorkspace {
    pthread_mutex_t lock;       /* guards current and refreshed_at */
    pthread_mutex_t write_lock; /* one writer at a time (refresh, update, forget): none loses another's change */
    char *root;
    PyWorkspaceView *current;
    double refreshed_at; /* monotonic seconds, 0: never */
};

/* ---- views ---------------------------------------------------------------- */

static int by_path(const void *a, const void *b) {
    return strcmp((*(PyModuleFacts *const *)a)->path, (*(PyModuleFacts *const *)b)->path);
}

static const char *last_part(const char *dotted) {
    const char *dot = strrchr(dotted, '.');
    return dot ? dot + 1 : dotted;
}

static int by_last(const void *a, const void *b) {
    return strcmp(((const struct NameEntry *)a)->last, ((const struct NameEntry *)b)->last);
}

/* Takes the modules (and their references). NULL when memory runs out. */
static PyWorkspaceView *view_new(PyModuleFacts **modules, size_t count) {
    PyWorkspaceView *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->refcount = 1;
    v->modules = modules;
    v->count = count;
    if (count) {
        qsort(modules, count, sizeof *modules, by_path);
        v->by_last = malloc(count * sizeof *v->by_last);
        if (!v->by_last) {
            free(v);
            return NULL;
        }
        for (size_t i = 0; i < count; i++) v->by_last[i] = (struct NameEntry){last_part(modules[i]->name), modules[i]};
        qsort(v->by_last, count, sizeof *v->by_last, by_last);
    }
    return v;
}

void py_workspace_view_release(PyWorkspaceView *v) {
    if (!v || __atomic_sub_fetch(&v->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
    for (size_t i = 0; i < v->count; i++) py_module_facts_unref(v->modules[i]);
    free(v->modules);
    free(v->by_last);
    free(v);
}

size_t py_workspace_module_count(const PyWorkspaceView *v) { return v ? v->count : 0; }

static const PyModuleFacts *module_by_path(const PyWorkspaceView *v, const char *abs) {
    size_t lo = 0, hi = v ? v->count : 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(v->modules[mid]->path, abs);
        if (c == 0) return v->modules[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const PyModuleFacts *py_workspace_module(const PyWorkspaceView *v, const char *path) {
    if (!v || !path) return NULL;
    char *abs = realpath(path, NULL);
    const PyModuleFacts *m = module_by_path(v, abs ? abs : path);
    free(abs);
    return m;
}

const char *py_module_name(const PyModuleFacts *m) { return m ? m->name : ""; }
const char *py_module_path(const PyModuleFacts *m) { return m ? m->path : ""; }

/* ---- the project's files ------------------------------------------------------ */

static bool exists(const char *dir, const char *name) {
    char p[PATH_MAX];
    int n = snprintf(p, sizeof p, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof p) return false; /* a path too long to name exists for no one */
    struct stat st;
    return stat(p, &st) == 0;
}

/* a folder that marks a project: a repository, or advise's or Python's packaging files */
static bool is_project_folder(const char *dir) {
    static const char *const markers[] = {".git", "advise.toml", "pyproject.toml", "setup.py", "setup.cfg", NULL};
    for (size_t i = 0; markers[i]; i++)
        if (exists(dir, markers[i])) return true;
    return false;
}

char *py_workspace_root_for(const char *path) {
    char *abs = realpath(path, NULL);
    if (!abs) return NULL;
    struct stat st;
    if (stat(abs, &st) == 0 && !S_ISDIR(st.st_mode)) {
        char *slash = strrchr(abs, '/');
        if (slash && slash != abs) *slash = '\0';
    }
    char *cur = strdup(abs);
    while (cur && *cur) {
        if (is_project_folder(cur)) {
            free(abs);
            return cur;
        }
        char *slash = strrchr(cur, '/');
        if (!slash || slash == cur) break;
        *slash = '\0';
    }
    free(cur);
    /* no marker: the folder above the outermost package */
    while (exists(abs, "__init__.py")) {
        char *slash = strrchr(abs, '/');
        if (!slash || slash == abs) break;
        *slash = '\0';
    }
    return abs;
}

static bool skipped_folder(const char *name) {
    static const char *const names[] = {"__pycache__", "node_modules", "site-packages", "venv", "build", "dist",
                                        NULL};
    if (name[0] == '.') return true;
    size_t n = strlen(name);
    if (n > 9 && strcmp(name + n - 9, ".egg-info") == 0) return true;
    for (size_t i = 0; names[i]; i++)
        if (strcmp(name, names[i]) == 0) return true;
    return false;
}

typedef struct {
    char **paths;
    size_t count, cap;
} PathList;

/* other_repositories: skip folders with a `.git` of their own (the root is
 * a loose folder, no project: clones beside a script are other projects; in
 * a project, a submodule or vendored checkout is code the project imports) */
static void scan(const char *dir, int depth, bool other_repositories, PathList *out) {
    if (depth > MAX_SCAN_DEPTH || out->count >= MAX_FILES) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && out->count < MAX_FILES) {
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
        char child[PATH_MAX];
        int n = snprintf(child, sizeof child, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof child) continue;
        struct stat st;
        if (lstat(child, &st) != 0 || S_ISLNK(st.st_mode)) continue;
        if (S_ISDIR(st.st_mode)) {
            if (!skipped_folder(e->d_name) && !(other_repositories && exists(child, ".git")))
                scan(child, depth + 1, other_repositories, out);
        } else if (S_ISREG(st.st_mode) && n > 3 && strcmp(child + n - 3, ".py") == 0) {
            if (!array_reserve(&out->paths, out->count, &out->cap, sizeof *out->paths, 64)) break;
            char *copy = strdup(child);
            if (copy) out->paths[out->count++] = copy;
        }
    }
    closedir(d);
}

/* "pkg/sub/mod.py" under root -> "pkg.sub.mod"; "pkg/__init__.py" -> "pkg" */
static char *module_name(const char *root, const char *path, bool *is_package) {
    size_t rn = strlen(root);
    const char *rel = strncmp(path, root, rn) == 0 && path[rn] == '/' ? path + rn + 1 : path;
    char *name = strdup(rel);
    if (!name) return NULL;
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, ".py") == 0) name[n - 3] = '\0';
    for (char *p = name; *p; p++)
        if (*p == '/') *p = '.';
    *is_package = false;
    n = strlen(name);
    if (n >= 8 && strcmp(name + n - 8, "__init__") == 0) {
        *is_package = true;
        name[n >= 9 ? n - 9 : 0] = '\0';
    }
    return name;
}

static PyModuleFacts *summarise(const char *root, const char *path, const char *text, size_t length) {
    bool is_package;
    char *name = module_name(root, path, &is_package);
    Document *doc = name ? document_new(path, LANGUAGE_PYTHON, text, length) : NULL;
    PySource *src = doc && !py_source_too_wide(doc) ? py_source_new(doc) : NULL;
    PyModuleFacts *m = src ? py_module_facts_extract(src, path, name, is_package) : NULL;
    py_source_free(src);
    document_free(doc);
    free(name);
    return m;
}

static PyModuleFacts *summarise_file(const char *root, const char *path, const struct stat *st) {
    if (st->st_size > MAX_FILE_BYTES) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = malloc((size_t)st->st_size + 1);
    size_t got = text ? fread(text, 1, (size_t)st->st_size, f) : 0;
    fclose(f);
    PyModuleFacts *m = NULL;
    if (text && !memchr(text, '\0', got)) {
        text[got] = '\0';
        m = summarise(root, path, text, got);
        if (m) {
            m->mtime = st->st_mtime;
            m->size = st->st_size;
        }
    }
    free(text);
    return m;
}

/* ---- workspaces ---------------------------------------------------------------- */

PyWorkspace *py_workspace_new(const char *root) {
    PyWorkspace *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    char *abs = realpath(root, NULL);
    ws->root = abs ? abs : strdup(root);
    ws->current = view_new(NULL, 0);
    if (!ws->root || !ws->current || pthread_mutex_init(&ws->lock, NULL) != 0 ||
        pthread_mutex_init(&ws->write_lock, NULL) != 0) {
        free(ws->root);
        py_workspace_view_release(ws->current);
        free(ws);
        return NULL;
    }
    return ws;
}

void py_workspace_free(PyWorkspace *ws) {
    if (!ws) return;
    py_workspace_view_release(ws->current);
    pthread_mutex_destroy(&ws->lock);
    pthread_mutex_destroy(&ws->write_lock);
    free(ws->root);
    free(ws);
}

const char *py_workspace_root(const PyWorkspace *ws) { return ws ? ws->root : ""; }

PyWorkspaceView *py_workspace_view(PyWorkspace *ws) {
    if (!ws) return NULL;
    pthread_mutex_lock(&ws->lock);
    PyWorkspaceView *v = ws->current;
    __atomic_add_fetch(&v->refcount, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ws->lock);
    return v;
}

/* Makes `modules` the current view (taking their references). */
static void publish(PyWorkspace *ws, PyModuleFacts **modules, size_t count) {
    PyWorkspaceView *fresh = view_new(modules, count);
    if (!fresh) {
        for (size_t i = 0; i < count; i++) py_module_facts_unref(modules[i]);
        free(modules);
        return;
    }
    pthread_mutex_lock(&ws->lock);
    PyWorkspaceView *old = ws->current;
    ws->current = fresh;
    pthread_mutex_unlock(&ws->lock);
    py_workspace_view_release(old);
}

void py_workspace_refresh_if_older(PyWorkspace *ws, double max_age) {
    if (!ws) return;
    pthread_mutex_lock(&ws->lock);
    bool stale = ws->refreshed_at == 0 || monotonic_seconds() - ws->refreshed_at > max_age;
    if (stale) ws->refreshed_at = monotonic_seconds(); /* one refresh at a time */
    pthread_mutex_unlock(&ws->lock);
    if (stale) py_workspace_refresh(ws);
}

static bool unchanged(const PyModuleFacts *m, const struct stat *st) {
    return m && m->mtime == st->st_mtime && m->size == st->st_size;
}

/* Reads what changed without holding a lock (a crash guard may unwind out
 * of the parse), then publishes under the writer's lock, taking the editor
 * buffers and records that are current at that moment. */
void py_workspace_refresh(PyWorkspace *ws) {
    if (!ws) return;
    pthread_mutex_lock(&ws->lock);
    ws->refreshed_at = monotonic_seconds();
    pthread_mutex_unlock(&ws->lock);
    PathList files = {0};
    /* a loose file in a folder of clones (/tmp, a scratch folder) indexed every clone: 5,683 modules, 45 s */
    scan(ws->root, 0, !is_project_folder(ws->root), &files);
    struct stat *stats = files.count ? calloc(files.count, sizeof *stats) : NULL;
    PyModuleFacts **fresh = files.count ? calloc(files.count, sizeof *fresh) : NULL;
    PyWorkspaceView *before = py_workspace_view(ws);
    for (size_t i = 0; stats && fresh && i < files.count; i++) {
        if (stat(files.paths[i], &stats[i]) != 0) {
            stats[i].st_mtime = -1;
            continue;
        }
        const PyModuleFacts *m = module_by_path(before, files.paths[i]);
        if (!(m && (m->from_editor || unchanged(m, &stats[i]))))
            fresh[i] = summarise_file(ws->root, files.paths[i], &stats[i]);
    }
    py_workspace_view_release(before);

    pthread_mutex_lock(&ws->write_lock);
    PyWorkspaceView *now = py_workspace_view(ws);
    PyModuleFacts **modules = calloc(files.count + now->count + 1, sizeof *modules);
    size_t count = 0;
    for (size_t i = 0; modules && stats && fresh && i < files.count; i++) {
        if (stats[i].st_mtime == -1) continue;
        PyModuleFacts *m = (PyModuleFacts *)module_by_path(now, files.paths[i]);
        if (m && (m->from_editor || (!fresh[i] && unchanged(m, &stats[i])))) py_module_facts_ref(m);
        else if (fresh[i]) {
            m = fresh[i];
            fresh[i] = NULL;
        } else {
            m = NULL; /* unreadable now */
        }
        if (m) modules[count++] = m;
    }
    /* a buffer the editor holds for a file that is not on disk (yet) stays */
    for (size_t i = 0; modules && i < now->count; i++) {
        PyModuleFacts *m = now->modules[i];
        bool listed = false;
        for (size_t k = 0; k < count && !listed; k++) listed = strcmp(modules[k]->path, m->path) == 0;
        if (m->from_editor && !listed) {
            py_module_facts_ref(m);
            modules[count++] = m;
        }
    }
    py_workspace_view_release(now);
    if (modules) publish(ws, modules, count);
    pthread_mutex_unlock(&ws->write_lock);
    for (size_t i = 0; i < files.count; i++) {
        if (fresh) py_module_facts_unref(fresh[i]);
        free(files.paths[i]);
    }
    free(fresh);
    free(stats);
    free(files.paths);
}

/* The current modules with `replacement` in place of the one at path (or
 * without it when replacement is NULL). */
static void replace_module(PyWorkspace *ws, const char *path, PyModuleFacts *replacement) {
    pthread_mutex_lock(&ws->write_lock);
    PyWorkspaceView *before = py_workspace_view(ws);
    PyModuleFacts **modules = malloc((before->count + 1) * sizeof *modules);
    size_t count = 0;
    if (!modules) {
        py_module_facts_unref(replacement);
        py_workspace_view_release(before);
        pthread_mutex_unlock(&ws->write_lock);
        return;
    }
    for (size_t i = 0; i < before->count; i++) {
        if (strcmp(before->modules[i]->path, path) == 0) continue;
        py_module_facts_ref(before->modules[i]);
        modules[count++] = before->modules[i];
    }
    if (replacement) modules[count++] = replacement;
    py_workspace_view_release(before);
    publish(ws, modules, count);
    pthread_mutex_unlock(&ws->write_lock);
}

void py_workspace_update(PyWorkspace *ws, const PySource *src) {
    if (!ws || !src || !src->doc->path) return;
    char *abs = realpath(src->doc->path, NULL);
    size_t rn = strlen(ws->root);
    if (!abs || strncmp(abs, ws->root, rn) != 0 || abs[rn] != '/') {
        free(abs);
        return;
    }
    bool is_package;
    char *name = module_name(ws->root, abs, &is_package);
    PyModuleFacts *m = name ? py_module_facts_extract(src, abs, name, is_package) : NULL;
    free(name);
    if (m) {
        m->from_editor = true;
        replace_module(ws, abs, m);
    }
    free(abs);
}

void py_workspace_forget_editor(PyWorkspace *ws, const char *path) {
    if (!ws || !path) return;
    char *abs = realpath(path, NULL);
    const char *p = abs ? abs : path;
    struct stat st;
    PyModuleFacts *m = stat(p, &st) == 0 ? summarise_file(ws->root, p, &st) : NULL;
    replace_module(ws, p, m);
    free(abs);
}

struct PyWorkspaces {
    pthread_mutex_t lock;
    PyWorkspace **items;
    size_t count, cap;
};

PyWorkspaces *py_workspaces_new(void) {
    PyWorkspaces *all = calloc(1, sizeof *all);
    if (all && pthread_mutex_init(&all->lock, NULL) != 0) {
        free(all);
        return NULL;
    }
    return all;
}

void py_workspaces_free(PyWorkspaces *all) {
    if (!all) return;
    for (size_t i = 0; i < all->count; i++) py_workspace_free(all->items[i]);
    free(all->items);
    pthread_mutex_destroy(&all->lock);
    free(all);
}

PyWorkspace *py_workspaces_for(PyWorkspaces *all, const char *path) {
    if (!all || !path) return NULL;
    char *root = py_workspace_root_for(path);
    if (!root) return NULL;
    const char *home = getenv("HOME");
    if (strcmp(root, "/") == 0 || (home && strcmp(root, home) == 0)) { /* no project: do not index a home folder */
        free(root);
        return NULL;
    }
    pthread_mutex_lock(&all->lock);
    PyWorkspace *found = NULL;
    for (size_t i = 0; i < all->count && !found; i++)
        if (strcmp(all->items[i]->root, root) == 0) found = all->items[i];
    if (!found) {
        bool room = array_reserve(&all->items, all->count, &all->cap, sizeof *all->items, 4);
        PyWorkspace *ws = room ? py_workspace_new(root) : NULL;
        if (ws) {
            all->items[all->count++] = ws;
            found = ws;
        }
    }
    pthread_mutex_unlock(&all->lock);
    /* the first caller reads the project (outside the lock: the parse runs under a crash guard);
     * one that comes meanwhile works with what is indexed so far */
    py_workspace_refresh_if_older(found, 1e300);
    free(root);
    return found;
}

/* ---- following names across modules ------------------------------------------ */

typedef enum { TARGET_NONE, TARGET_MODULE, TARGET_FUNCTION, TARGET_CLASS, TARGET_VARIABLE, TARGET_EXTERNAL } TargetKind;

typedef struct {
    TargetKind kind;
    const PyModuleFacts *module; /* where the definition is (TARGET_MODULE: the module itself) */
    const PyFactValue *value;    /* TARGET_FUNCTION, TARGET_VARIABLE */
    const PyFactClass *cls;      /* TARGET_CLASS */
    char external[512];          /* TARGET_EXTERNAL: the absolute dotted name ("torch.nn.Module") */
} Target;

static size_t leading_parts_in_common(const char *a, const char *b) {
    size_t parts = 0, i = 0;
    for (;; i++) {
        bool end_a = a[i] == '\0' || a[i] == '.', end_b = b[i] == '\0' || b[i] == '.';
        if (end_a && end_b) {
            parts++;
            if (a[i] == '\0' || b[i] == '\0') return parts;
            continue;
        }
        if (a[i] != b[i]) return parts;
    }
}

/* The module named `dotted`, or whose name ends with ".dotted" (a project
 * run from a subfolder, a src/ layout): the one nearest to `near`. */
static const PyModuleFacts *find_module(const PyWorkspaceView *v, const char *dotted, const PyModuleFacts *near) {
    if (!v || !v->count || !*dotted) return NULL;
    const char *last = last_part(dotted);
    size_t lo = 0, hi = v->count;
    while (lo < hi) { /* first entry with this last part */
        size_t mid = (lo + hi) / 2;
        if (strcmp(v->by_last[mid].last, last) < 0) lo = mid + 1;
        else hi = mid;
    }
    size_t n = strlen(dotted);
    const PyModuleFacts *best = NULL;
    size_t best_score = 0;
    for (size_t i = lo; i < v->count && strcmp(v->by_last[i].last, last) == 0; i++) {
        const PyModuleFacts *m = v->by_last[i].module;
        size_t mn = strlen(m->name);
        bool match = (mn == n && strcmp(m->name, dotted) == 0) ||
                     (mn > n && m->name[mn - n - 1] == '.' && strcmp(m->name + mn - n, dotted) == 0);
        if (!match) continue;
        size_t score = near ? leading_parts_in_common(m->name, near->name) : 0;
        if (!best || score > best_score || (score == best_score && mn < strlen(best->name))) {
            best = m;
            best_score = score;
        }
    }
    return best;
}

static Target resolve_absolute(const PyWorkspaceView *v, const char *dotted, const PyModuleFacts *near, int hops);

/* `name` (one part) as module m defines or imports it */
static Target resolve_in_module(const PyWorkspaceView *v, const PyModuleFacts *m, const char *name, int hops) {
    Target t = {.kind = TARGET_NONE};
    if (hops > MAX_HOPS) return t;
    for (size_t i = m->function_count; i-- > 0;)
        if (strcmp(m->functions[i].name ? m->functions[i].name : "", name) == 0)
            return (Target){.kind = TARGET_FUNCTION, .module = m, .value = &m->functions[i]};
    for (size_t i = m->class_count; i-- > 0;)
        if (strcmp(m->classes[i].name ? m->classes[i].name : "", name) == 0)
            return (Target){.kind = TARGET_CLASS, .module = m, .cls = &m->classes[i]};
    for (size_t i = m->variable_count; i-- > 0;)
        if (strcmp(m->variables[i].name ? m->variables[i].name : "", name) == 0)
            return (Target){.kind = TARGET_VARIABLE, .module = m, .value = &m->variables[i]};
    for (size_t i = m->import_count; i-- > 0;)
        if (strcmp(m->imports[i].local, name) == 0) return resolve_absolute(v, m->imports[i].target, m, hops + 1);
    if (m->is_package) { /* a submodule of the package */
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s%s%s", m->name, *m->name ? "." : "", name);
        const PyModuleFacts *s = find_module(v, sub, m);
        if (s) return (Target){.kind = TARGET_MODULE, .module = s};
    }
    return t;
}

/* the rest of a dotted name, from a target that is a module */
static Target resolve_rest(const PyWorkspaceView *v, Target t, const char *rest, int hops) {
    char part[256];
    while (*rest && t.kind != TARGET_NONE) {
        if (t.kind == TARGET_EXTERNAL) {
            size_t used = strlen(t.external);
            snprintf(t.external + used, sizeof t.external - used, ".%s", rest);
            return t;
        }
        if (t.kind != TARGET_MODULE) return (Target){.kind = TARGET_NONE};
        size_t n = strcspn(rest, ".");
        if (n >= sizeof part) return (Target){.kind = TARGET_NONE};
        memcpy(part, rest, n);
        part[n] = '\0';
        rest += n + (rest[n] == '.');
        t = resolve_in_module(v, t.module, part, hops + 1);
    }
    return t;
}

static Target resolve_absolute(const PyWorkspaceView *v, const char *dotted, const PyModuleFacts *near, int hops) {
    Target none = {.kind = TARGET_NONE};
    if (hops > MAX_HOPS || !dotted || !*dotted) return none;
    char prefix[512];
    size_t n = strlen(dotted);
    if (n >= sizeof prefix) return none;
    /* the longest leading part that names a module of the workspace */
    for (size_t len = n; len > 0; len--) {
        if (len < n && dotted[len] != '.') continue;
        memcpy(prefix, dotted, len);
        prefix[len] = '\0';
        const PyModuleFacts *m = find_module(v, prefix, near);
        if (!m) continue;
        Target t = {.kind = TARGET_MODULE, .module = m};
        return resolve_rest(v, t, len < n ? dotted + len + 1 : "", hops);
    }
    Target ext = {.kind = TARGET_EXTERNAL};
    snprintf(ext.external, sizeof ext.external, "%s", dotted);
    return ext;
}

/* `spelled` as module `from` writes it */
static Target resolve_spelled(const PyWorkspaceView *v, const PyModuleFacts *from, const char *spelled, int hops) {
    Target none = {.kind = TARGET_NONE};
    if (!v || !spelled || !*spelled || hops > MAX_HOPS) return none;
    char head[256];
    size_t n = strcspn(spelled, ".");
    if (n >= sizeof head) return none;
    memcpy(head, spelled, n);
    head[n] = '\0';
    const char *rest = spelled[n] == '.' ? spelled + n + 1 : "";
    if (from) {
        Target t = resolve_in_module(v, from, head, hops);
        if (t.kind != TARGET_NONE) return resolve_rest(v, t, rest, hops);
    }
    return resolve_absolute(v, spelled, from, hops);
}

/* ---- questions ------------------------------------------------------------------ */

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* classes outside the workspace that are nn.Modules */
static bool external_is_module_class(const char *q) {
    if (starts_with(q, "torch.nn.") && !starts_with(q, "torch.nn.functional.") && !starts_with(q, "torch.nn.init.") &&
        !starts_with(q, "torch.nn.utils.")) {
        const char *last = last_part(q);
        return last[0] >= 'A' && last[0] <= 'Z' && strcmp(last, "Parameter") != 0;
    }
    return strcmp(q, "pytorch_lightning.LightningModule") == 0 || strcmp(q, "lightning.LightningModule") == 0 ||
           strcmp(q, "lightning.pytorch.LightningModule") == 0 || strcmp(q, "transformers.PreTrainedModel") == 0;
}

static bool class_is_module(const PyWorkspaceView *v, const PyModuleFacts *m, const PyFactClass *c, int hops) {
    if (hops > MAX_HOPS) return false;
    for (size_t i = 0; i < c->base_count; i++) {
        Target t = resolve_spelled(v, m, c->bases[i], hops + 1);
        if (t.kind == TARGET_EXTERNAL && external_is_module_class(t.external)) return true;
        if (t.kind == TARGET_CLASS && t.cls != c && class_is_module(v, t.module, t.cls, hops + 1)) return true;
    }
    return false;
}

bool py_workspace_is_module_class(const PyWorkspaceView *v, const PyModuleFacts *from, const char *name) {
    Target t = resolve_spelled(v, from, name, 0);
    return t.kind == TARGET_CLASS && class_is_module(v, t.module, t.cls, 0);
}

bool py_workspace_is_function(const PyWorkspaceView *v, const PyModuleFacts *from, const char *name) {
    return resolve_spelled(v, from, name, 0).kind == TARGET_FUNCTION;
}

static unsigned call_kinds(const PyWorkspaceView *v, const PyModuleFacts *from, const char *callee, int hops);

static unsigned value_kinds(const PyWorkspaceView *v, const PyModuleFacts *m, const PyFactValue *value, int hops) {
    unsigned kinds = value->kinds;
    for (size_t i = 0; i < value->call_count && hops < MAX_HOPS; i++) kinds |= call_kinds(v, m, value->calls[i], hops + 1);
    return kinds;
}

static unsigned call_kinds(const PyWorkspaceView *v, const PyModuleFacts *from, const char *callee, int hops) {
    Target t = resolve_spelled(v, from, callee, hops);
    switch (t.kind) {
    case TARGET_CLASS: return class_is_module(v, t.module, t.cls, hops) ? PY_VALUE_MODULE : 0;
    case TARGET_FUNCTION: return value_kinds(v, t.module, t.value, hops);
    case TARGET_VARIABLE: /* calling a model gives a tensor */
        return (value_kinds(v, t.module, t.value, hops) & PY_VALUE_MODULE) ? PY_VALUE_TENSOR : 0;
    default: return 0;
    }
}

unsigned py_workspace_call_kinds(const PyWorkspaceView *v, const PyModuleFacts *from, const char *callee) {
    return call_kinds(v, from, callee, 0);
}

static unsigned method_kinds(const PyWorkspaceView *v, const PyModuleFacts *m, const PyFactClass *c,
                             const char *method, int hops) {
    if (hops > MAX_HOPS) return 0;
    for (size_t i = 0; i < c->method_count; i++)
        if (c->methods[i].name && strcmp(c->methods[i].name, method) == 0)
            return value_kinds(v, m, &c->methods[i], hops + 1);
    for (size_t i = 0; i < c->base_count; i++) { /* inherited */
        Target t = resolve_spelled(v, m, c->bases[i], hops + 1);
        if (t.kind == TARGET_CLASS && t.cls != c) {
            unsigned k = method_kinds(v, t.module, t.cls, method, hops + 1);
            if (k) return k;
        }
    }
    return 0;
}

unsigned py_workspace_method_kinds(const PyWorkspaceView *v, const PyModuleFacts *from, const char *class_name,
                                   const char *method) {
    Target t = resolve_spelled(v, from, class_name, 0);
    return t.kind == TARGET_CLASS ? method_kinds(v, t.module, t.cls, method, 0) : 0;
}

unsigned py_workspace_name_kinds(const PyWorkspaceView *v, const PyModuleFacts *from, const char *name) {
    Target t = resolve_spelled(v, from, name, 0);
    return t.kind == TARGET_VARIABLE ? value_kinds(v, t.module, t.value, 0) : 0;
}

static bool class_has_matmul(const PyWorkspaceView *v, const PyModuleFacts *m, const PyFactClass *c, int hops);

static bool name_has_matmul(const PyWorkspaceView *v, const PyModuleFacts *from, const char *name, int hops) {
    if (hops > MAX_HOPS) return false;
    Target t = resolve_spelled(v, from, name, hops);
    if (t.kind == TARGET_CLASS) return class_has_matmul(v, t.module, t.cls, hops + 1);
    if (t.kind == TARGET_FUNCTION || t.kind == TARGET_VARIABLE)
        for (size_t i = 0; i < t.value->call_count; i++)
            if (name_has_matmul(v, t.module, t.value->calls[i], hops + 1)) return true;
    return false;
}

static bool class_has_matmul(const PyWorkspaceView *v, const PyModuleFacts *m, const PyFactClass *c, int hops) {
    if (c->matmul_work) return true;
    if (hops > MAX_HOPS) return false;
    for (size_t i = 0; i < c->part_count; i++)
        if (name_has_matmul(v, m, c->parts[i], hops + 1)) return true;
    for (size_t i = 0; i < c->base_count; i++)
        if (name_has_matmul(v, m, c->bases[i], hops + 1)) return true;
    return false;
}

bool py_workspace_has_matmul_work(const PyWorkspaceView *v, const PyModuleFacts *from, const char *name) {
    return name_has_matmul(v, from, name, 0);
}

unsigned py_workspace_uses_of(const PyWorkspaceView *v, const PyModuleFacts *module, const char *function,
                              const PyModuleFacts **where_module, unsigned *where_line) {
    unsigned uses = 0;
    if (where_module) *where_module = NULL;
    if (where_line) *where_line = 0;
    for (size_t i = 0; v && i < v->count; i++) {
        const PyModuleFacts *m = v->modules[i];
        if (m == module) continue;
        for (size_t k = 0; k < m->use_count; k++) {
            const PyFactUse *u = &m->uses[k];
            if (strcmp(last_part(u->callee), function) != 0) continue; /* cheap test first */
            Target t = resolve_spelled(v, m, u->callee, 0);
            if (t.kind != TARGET_FUNCTION || t.module != module || strcmp(t.value->name, function) != 0) continue;
            if (where_module && !*where_module && (u->uses & (PY_USE_GPU_BATCHES | PY_USE_INFERENCE))) {
                *where_module = m;
                if (where_line) *where_line = u->line;
            }
            uses |= u->uses;
        }
    }
    return uses;
}

/* Some module that uses the GPU calls a function of m. */
static bool called_from_gpu_code(const PyWorkspaceView *v, const PyModuleFacts *m) {
    for (size_t i = 0; i < v->count; i++) {
        const PyModuleFacts *caller = v->modules[i];
        if (caller == m || !caller->uses_gpu) continue;
        for (size_t k = 0; k < caller->use_count; k++) {
            Target t = resolve_spelled(v, caller, caller->uses[k].callee, 0);
            if (t.kind == TARGET_FUNCTION && t.module == m) return true;
        }
    }
    return false;
}

/* The module imports from a project module written for another accelerator
 * (a TPU program's helpers). */
static bool imports_other_accelerator(const PyWorkspaceView *v, const PyModuleFacts *m) {
    for (size_t i = 0; i < m->import_count; i++) {
        Target t = resolve_spelled(v, m, m->imports[i].local, 0);
        if (t.kind != TARGET_NONE && t.kind != TARGET_EXTERNAL && t.module && t.module->other_accelerator) return true;
    }
    return false;
}

void py_workspace_attach(PySource *src, const PyWorkspaceView *view) {
    src->workspace = view;
    src->module = view && src->doc->path ? py_workspace_module(view, src->doc->path) : NULL;
    if (!src->module || src->other_accelerator) return;
    const PyModuleFacts *m = src->module;
    /* helpers of a TPU program: the file is one too, unless it says cuda itself */
    if (!strstr(src->doc->text, "cuda") && imports_other_accelerator(view, m)) {
        src->other_accelerator = true;
        src->uses_gpu = false;
        return;
    }
    if (src->uses_gpu) return;
    for (size_t i = 0; i < m->import_count && !src->uses_gpu; i++) {
        unsigned kinds = py_workspace_name_kinds(view, m, m->imports[i].local) |
                         py_workspace_call_kinds(view, m, m->imports[i].local);
        if (kinds & PY_VALUE_DEVICE) src->uses_gpu = true;
    }
    if (!src->uses_gpu && called_from_gpu_code(view, m)) src->uses_gpu = true;
}

/* ---- precision -------------------------------------------------------------------- */

static bool module_index(const PyWorkspaceView *v, const PyModuleFacts *m, size_t *index) {
    size_t lo = 0, hi = v->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(v->modules[mid]->path, m->path);
        if (c == 0) {
            *index = mid;
            return v->modules[mid] == m;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

/* The first module that `from` loads, directly or through the project
 * modules those load (a package above one of them too: its __init__ runs
 * first), for which wanted(module, data) holds; `from` itself is not asked.
 * NULL when none (or memory runs out). */
typedef bool (*ModuleWanted)(const PyModuleFacts *m, const void *data);

static const PyModuleFacts *first_loaded(const PyWorkspaceView *v, const PyModuleFacts *from, ModuleWanted wanted,
                                         const void *data) {
    if (!v || !from || !v->count) return NULL;
    bool *seen = calloc(v->count, sizeof *seen);
    const PyModuleFacts **queue = malloc((v->count + 1) * sizeof *queue);
    if (!seen || !queue) {
        free(seen);
        free(queue);
        return NULL;
    }
    size_t head = 0, tail = 0, at;
    if (module_index(v, from, &at)) seen[at] = true; /* an editor's buffer may not be in the view */
    queue[tail++] = from;
    const PyModuleFacts *found = NULL;
    char prefix[512];
    while (head < tail && !found) {
        const PyModuleFacts *m = queue[head++];
        for (size_t i = 0; i < m->loaded_module_count && !found; i++) {
            const char *name = m->loaded_modules[i];
            size_t n = strlen(name);
            if (n >= sizeof prefix) continue;
            /* "a.b.c" loads a, a.b and a.b.c */
            for (size_t len = 1; len <= n && !found; len++) {
                if (len < n && name[len] != '.') continue;
                memcpy(prefix, name, len);
                prefix[len] = '\0';
                const PyModuleFacts *s = find_module(v, prefix, m);
                if (!s || !module_index(v, s, &at) || seen[at]) continue;
                seen[at] = true;
                if (wanted(s, data)) found = s;
                else queue[tail++] = s;
            }
        }
    }
    free(seen);
    free(queue);
    return found;
}

static bool makes_precision_choice(const PyModuleFacts *m, const void *data) {
    (void)data;
    return m->precision_choice_line != 0;
}

bool py_workspace_imports_precision_choice(const PyWorkspaceView *v, const PyModuleFacts *from,
                                           const PyModuleFacts **where_module, unsigned *where_line) {
    const PyModuleFacts *found = first_loaded(v, from, makes_precision_choice, NULL);
    if (where_module) *where_module = found;
    if (where_line) *where_line = found ? found->precision_choice_line : 0;
    return found != NULL;
}

static bool is_module(const PyModuleFacts *m, const void *data) {
    return strcmp(m->path, ((const PyModuleFacts *)data)->path) == 0;
}

bool py_workspace_default_cuda_for(const PyWorkspaceView *v, const PyModuleFacts *module,
                                   const PyModuleFacts **where_module, unsigned *where_line) {
    if (where_module) *where_module = NULL;
    if (where_line) *where_line = 0;
    for (size_t i = 0; v && module && i < v->count; i++) {
        const PyModuleFacts *setter = v->modules[i];
        if (!setter->cuda_default_line) continue;
        if (strcmp(setter->path, module->path) != 0 && !first_loaded(v, setter, is_module, module)) continue;
        if (where_module) *where_module = setter;
        if (where_line) *where_line = setter->cuda_default_line;
        return true;
    }
    return false;
}

#define MAX_VISITED 128 /* definitions one matmul question looks at */

typedef struct {
    const PyModuleFacts *module;
    uint32_t line;
    bool from_parameters;
    const void *visited[MAX_VISITED]; /* classes and values already looked at */
    size_t visited_count;
} ScaleSearch;

static bool scale_settled(const ScaleSearch *s) { return s->line && !s->from_parameters; }

/* false when item was looked at already, or the search has looked at enough */
static bool scale_visit(ScaleSearch *s, const void *item) {
    for (size_t i = 0; i < s->visited_count; i++)
        if (s->visited[i] == item) return false;
    if (s->visited_count == MAX_VISITED) return false;
    s->visited[s->visited_count++] = item;
    return true;
}

static void scale_note(ScaleSearch *s, const PyModuleFacts *m, uint32_t line, bool from_parameters) {
    if (!line || (s->line && (!s->from_parameters || from_parameters))) return;
    s->module = m;
    s->line = line;
    s->from_parameters = from_parameters;
}

static void class_scale(const PyWorkspaceView *v, const PyModuleFacts *m, const PyFactClass *c, int hops,
                        ScaleSearch *s);

static void name_scale(const PyWorkspaceView *v, const PyModuleFacts *from, const char *name, int hops,
                       ScaleSearch *s) {
    if (hops > MAX_HOPS || scale_settled(s)) return;
    Target t = resolve_spelled(v, from, name, hops);
    if (t.kind == TARGET_CLASS) {
        class_scale(v, t.module, t.cls, hops + 1, s);
    } else if ((t.kind == TARGET_FUNCTION || t.kind == TARGET_VARIABLE) && scale_visit(s, t.value)) {
        scale_note(s, t.module, t.value->matmul_at_scale_line, t.value->matmul_at_scale_from_parameters);
        if (t.value->call_count == 1) {
            name_scale(v, t.module, t.value->calls[0], hops + 1, s);
        } else if (t.value->call_count > 1 && !scale_settled(s)) {
            /* a builder that returns one of several models: each of them must do the work */
            ScaleSearch *each = calloc(1, sizeof *each);
            ScaleSearch found = {0};
            bool all = each != NULL;
            for (size_t i = 0; i < t.value->call_count && all; i++) {
                memcpy(each->visited, s->visited, s->visited_count * sizeof *s->visited);
                each->visited_count = s->visited_count;
                each->line = 0;
                each->from_parameters = false;
                name_scale(v, t.module, t.value->calls[i], hops + 1, each);
                all = each->line != 0;
                if (all) scale_note(&found, each->module, each->line, each->from_parameters);
            }
            if (all) scale_note(s, found.module, found.line, found.from_parameters);
            free(each);
        }
    }
}

static void class_scale(const PyWorkspaceView *v, const PyModuleFacts *m, const PyFactClass *c, int hops,
                        ScaleSearch *s) {
    if (hops > MAX_HOPS || !scale_visit(s, c)) return;
    scale_note(s, m, c->matmul_at_scale_line, c->matmul_at_scale_from_parameters);
    for (size_t i = 0; i < c->part_count && !scale_settled(s); i++) name_scale(v, m, c->parts[i], hops + 1, s);
    for (size_t i = 0; i < c->base_count && !scale_settled(s); i++) name_scale(v, m, c->bases[i], hops + 1, s);
}

bool py_workspace_matmul_at_scale(const PyWorkspaceView *v, const PyModuleFacts *from, const char *name,
                                  const PyModuleFacts **where_module, unsigned *where_line, bool *from_parameters) {
    ScaleSearch *s = calloc(1, sizeof *s);
    if (s && v && name) name_scale(v, from, name, 0, s);
    bool found = s && s->line;
    if (where_module) *where_module = found ? s->module : NULL;
    if (where_line) *where_line = found ? s->line : 0;
    if (from_parameters) *from_parameters = found && s->from_parameters;
    free(s);
    return found;
}
