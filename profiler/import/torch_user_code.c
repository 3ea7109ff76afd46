#include "profiler/import/torch_user_code.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/base/growable.h"
#include "profiler/profile.h"
#include "analysis/base/text_format.h"

/* Bounds of the walk that finds "FILE" as the tail of a path under the root */
#define WALK_MAX_ENTRIES 200000u
#define WALK_MAX_DEPTH 24

typedef struct {
    char *name;   /* the python_function name; NULL: empty slot */
    int id;       /* frame id, or -1 */
} NameSlot;

typedef struct {
    char *path;        /* relative to the root */
    const char *base;  /* into path: after the last '/' */
} IndexedFile;

struct TorchUserCode {
    char *root;                 /* realpath of the project root */
    size_t root_len;
    NameSlot *slots;            /* open addressing, power-of-two size */
    size_t slot_count, used;
    TorchFrame *frames;
    size_t frame_count, frame_cap;
    bool walked;                /* the index below is built (lazily) */
    IndexedFile *files;
    size_t file_count, file_cap;
};

TorchUserCode *torch_user_code_new(const char *project_root, char **error) {
    char *root = realpath(project_root, NULL);
    if (!root) {
        *error = format_string("project root '%s': %s", project_root, strerror(errno));
        return NULL;
    }
    TorchUserCode *uc = calloc(1, sizeof *uc);
    if (uc) {
        uc->slot_count = 1024;
        uc->slots = calloc(uc->slot_count, sizeof *uc->slots);
    }
    if (!uc || !uc->slots) {
        free(root);
        if (uc) free(uc);
        *error = format_string("out of memory");
        return NULL;
    }
    /* "/" as root: paths under it start right after the slash */
    uc->root = root;
    uc->root_len = strcmp(root, "/") == 0 ? 0 : strlen(root);
    return uc;
}

void torch_user_code_free(TorchUserCode *uc) {
    if (!uc) return;
    for (size_t i = 0; i < uc->slot_count; i++) free(uc->slots[i].name);
    free(uc->slots);
    for (size_t i = 0; i < uc->frame_count; i++) {
        free(uc->frames[i].path);
        free(uc->frames[i].function);
    }
    free(uc->frames);
    for (size_t i = 0; i < uc->file_count; i++) free(uc->files[i].path);
    free(uc->files);
    free(uc->root);
    free(uc);
}

const TorchFrame *torch_user_code_frame(const TorchUserCode *uc, int id) {
    return id >= 0 && (size_t)id < uc->frame_count ? &uc->frames[id] : NULL;
}

size_t torch_user_code_frame_count(const TorchUserCode *uc) {
    return uc->frame_count;
}

/* ---- parsing "FILE(LINE): FUNCTION" */

bool torch_frame_parse(const char *name, const char **file, size_t *file_len, uint32_t *line,
                       const char **function) {
    /* the first "(DIGITS): " that follows a non-empty file part */
    for (const char *close = strstr(name, "): "); close; close = strstr(close + 1, "): ")) {
        const char *digits = close;
        while (digits > name && digits[-1] >= '0' && digits[-1] <= '9') digits--;
        if (digits == close || digits - 1 <= name || digits[-1] != '(') continue;
        if (close - digits > 9) continue; /* no line number has ten digits */
        uint32_t n = 0;
        for (const char *d = digits; d < close; d++) n = n * 10 + (uint32_t)(*d - '0');
        if (n == 0) continue;
        *file = name;
        *file_len = (size_t)(digits - 1 - name);
        *line = n;
        *function = close + 3;
        return true;
    }
    return false;
}

/* ---- path rules */

/* A component of path (len bytes) equals word */
static bool has_component(const char *path, size_t len, const char *word, bool directories_only) {
    size_t wl = strlen(word);
    const char *end = path + len;
    for (const char *c = path; c < end;) {
        const char *slash = memchr(c, '/', (size_t)(end - c));
        const char *stop = slash ? slash : end;
        if ((size_t)(stop - c) == wl && memcmp(c, word, wl) == 0 && (slash || !directories_only)) return true;
        if (!slash) break;
        c = slash + 1;
    }
    return false;
}

static bool library_path(const char *path, size_t len) {
    return has_component(path, len, "site-packages", false) || has_component(path, len, "dist-packages", false) ||
           has_component(path, len, "torch", true);
}

static bool regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The part of an absolute path below the root, or NULL */
static const char *below_root(const TorchUserCode *uc, const char *abs) {
    if (uc->root_len == 0) return abs[0] == '/' ? abs + 1 : NULL;
    if (strncmp(abs, uc->root, uc->root_len) != 0 || abs[uc->root_len] != '/') return NULL;
    return abs + uc->root_len + 1;
}

/* ---- the index of .py files under the root, for relative names */

static bool skipped_folder(const char *name) {
    return name[0] == '.' || strcmp(name, "__pycache__") == 0 || strcmp(name, "node_modules") == 0 ||
           strcmp(name, "site-packages") == 0 || strcmp(name, "dist-packages") == 0 || strcmp(name, "venv") == 0;
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

static bool index_add(TorchUserCode *uc, const char *rel) {
    if (!array_reserve(&uc->files, uc->file_count, &uc->file_cap, sizeof *uc->files, 256)) return false;
    char *copy = strdup(rel);
    if (!copy) return false;
    const char *slash = strrchr(copy, '/');
    uc->files[uc->file_count++] = (IndexedFile){copy, slash ? slash + 1 : copy};
    return true;
}

/* rel: the folder below the root ("" for the root itself) */
static bool walk(TorchUserCode *uc, const char *rel, int depth, size_t *visited) {
    char dir_path[PATH_MAX];
    if ((size_t)snprintf(dir_path, sizeof dir_path, "%s/%s", uc->root_len ? uc->root : "", rel) >= sizeof dir_path)
        return true;
    DIR *dir = opendir(dir_path);
    if (!dir) return true;
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(dir)) != NULL && ++*visited <= WALK_MAX_ENTRIES) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char child[PATH_MAX];
        if ((size_t)snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >= sizeof child)
            continue;
        unsigned char type = e->d_type;
        if (type == DT_UNKNOWN) {
            char full[PATH_MAX + 1];
            struct stat st;
            snprintf(full, sizeof full, "%s/%s", uc->root_len ? uc->root : "", child);
            if (lstat(full, &st) != 0) continue;
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
        if (type == DT_DIR) {
            if (depth < WALK_MAX_DEPTH && !skipped_folder(e->d_name)) ok = walk(uc, child, depth + 1, visited);
        } else if (type == DT_REG && ends_with(e->d_name, ".py")) {
            ok = index_add(uc, child);
        }
    }
    closedir(dir);
    return ok;
}

static int by_base(const void *a, const void *b) {
    const IndexedFile *x = a, *y = b;
    int c = strcmp(x->base, y->base);
    return c ? c : strcmp(x->path, y->path);
}

/* The only indexed file whose path ends with "/rel", or NULL. false: out of memory */
static bool find_by_tail(TorchUserCode *uc, const char *rel, const char **found) {
    *found = NULL;
    if (!uc->walked) {
        size_t visited = 0;
        if (!walk(uc, "", 0, &visited)) return false;
        if (uc->file_count) qsort(uc->files, uc->file_count, sizeof *uc->files, by_base);
        uc->walked = true;
    }
    const char *slash = strrchr(rel, '/');
    const char *base = slash ? slash + 1 : rel;
    size_t lo = 0, hi = uc->file_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(uc->files[mid].base, base) < 0) lo = mid + 1;
        else hi = mid;
    }
    size_t rl = strlen(rel);
    for (size_t i = lo; i < uc->file_count && strcmp(uc->files[i].base, base) == 0; i++) {
        const char *p = uc->files[i].path;
        size_t pl = strlen(p);
        if (pl > rl && p[pl - rl - 1] == '/' && strcmp(p + pl - rl, rel) == 0) {
            if (*found) {
                *found = NULL; /* two candidates: say nothing rather than guess */
                return true;
            }
            *found = p;
        }
    }
    return true;
}

/* A trace recorded in another checkout of the project (a cluster node, a CI
 * runner): the longest tail of the absolute path, at least two components
 * long, that names a file under this root. "/work/main/tests/x.py" is found
 * as tests/x.py. Heap, or NULL. */
static char *from_other_checkout(const TorchUserCode *uc, const char *abs) {
    for (const char *tail = strchr(abs + 1, '/'); tail; tail = strchr(tail + 1, '/')) {
        const char *rel = tail + 1;
        if (!strchr(rel, '/')) break; /* a bare file name is too weak a match */
        char full[PATH_MAX];
        if ((size_t)snprintf(full, sizeof full, "%s/%s", uc->root_len ? uc->root : "", rel) >= sizeof full) continue;
        if (regular_file(full)) return strdup(rel);
    }
    return NULL;
}

/* The root-relative path of file, or NULL when it is not under the root.
 * Sets *oom on allocation failure. The result is heap-allocated. */
static char *resolve(TorchUserCode *uc, const char *file, bool *oom) {
    if (file[0] == '/') {
        const char *below = below_root(uc, file);
        if (below) return strdup(below);
        char *real = realpath(file, NULL);
        if (real) {
            below = below_root(uc, real);
            char *rel = below ? strdup(below) : NULL;
            free(real);
            if (rel) return rel;
        }
        return from_other_checkout(uc, file);
    }
    while (file[0] == '.' && file[1] == '/') file += 2;
    char full[PATH_MAX];
    if ((size_t)snprintf(full, sizeof full, "%s/%s", uc->root_len ? uc->root : "", file) >= sizeof full) return NULL;
    if (regular_file(full)) return strdup(file);
    const char *found = NULL;
    if (!find_by_tail(uc, file, &found)) {
        *oom = true;
        return NULL;
    }
    return found ? strdup(found) : NULL;
}

/* -1: not user code; -2: out of memory; else the new frame's id */
static int classify(TorchUserCode *uc, const char *name) {
    const char *file, *function;
    size_t file_len;
    uint32_t line;
    if (!torch_frame_parse(name, &file, &file_len, &line, &function)) return -1;
    if (file_len == 0 || file[0] == '<' || file_len >= PATH_MAX || library_path(file, file_len)) return -1;
    char *raw = strndup(file, file_len);
    if (!raw) return -2;
    bool oom = false;
    char *rel = resolve(uc, raw, &oom);
    free(raw);
    if (oom) return -2;
    if (!rel) return -1;
    if (library_path(rel, strlen(rel)) || !profile_path_ok(rel)) {
        free(rel);
        return -1;
    }
    if (!array_reserve(&uc->frames, uc->frame_count, &uc->frame_cap, sizeof *uc->frames, 64)) {
        free(rel);
        return -2;
    }
    char *fn = strdup(function);
    if (!fn || uc->frame_count >= INT_MAX) {
        free(fn);
        free(rel);
        return -2;
    }
    uc->frames[uc->frame_count] = (TorchFrame){rel, line, fn};
    return (int)uc->frame_count++;
}

/* ---- the cache by name */

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool grow_slots(TorchUserCode *uc) {
    size_t count = uc->slot_count * 2;
    NameSlot *slots = calloc(count, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < uc->slot_count; i++) {
        if (!uc->slots[i].name) continue;
        size_t j = hash_name(uc->slots[i].name) & (count - 1);
        while (slots[j].name) j = (j + 1) & (count - 1);
        slots[j] = uc->slots[i];
    }
    free(uc->slots);
    uc->slots = slots;
    uc->slot_count = count;
    return true;
}

int torch_user_code_lookup(TorchUserCode *uc, const char *name) {
    size_t i = hash_name(name) & (uc->slot_count - 1);
    while (uc->slots[i].name) {
        if (strcmp(uc->slots[i].name, name) == 0) return uc->slots[i].id;
        i = (i + 1) & (uc->slot_count - 1);
    }
    int id = classify(uc, name);
    if (id == -2) return -2;
    if ((uc->used + 1) * 2 > uc->slot_count) {
        if (!grow_slots(uc)) return -2;
        i = hash_name(name) & (uc->slot_count - 1);
        while (uc->slots[i].name) i = (i + 1) & (uc->slot_count - 1);
    }
    char *copy = strdup(name);
    if (!copy) return -2;
    uc->slots[i] = (NameSlot){copy, id};
    uc->used++;
    return id;
}
