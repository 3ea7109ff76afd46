#include "server/workspace/file_walk.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/base/growable.h"
#include "server/workspace/ignore_rules.h"

#define MAX_DEPTH 64

static const char *const skipped_folders[] = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv",
                                              ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                                              "site-packages", ".advise", ".eggs", NULL};

static bool has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* C and C++ files count when they use CUDA: a quick look at their start */
static bool mentions_cuda(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char buf[65536 + 1];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) return false;
    return strstr(buf, "cuda") || strstr(buf, "__global__") || strstr(buf, "__device__");
}

bool file_walk_supported(const char *path) {
    Language lang = language_for_path(path);
    if (lang == LANGUAGE_PYTHON) return true;
    if (lang != LANGUAGE_CUDA) return false;
    return has_suffix(path, ".cu") || has_suffix(path, ".cuh") || mentions_cuda(path);
}

bool file_list_add_error(FileList *list, const char *path, const char *message) {
    if (!array_reserve(&list->errors, list->error_count, &list->error_cap, sizeof *list->errors, 4)) return false;
    list->errors[list->error_count++] = (PathError){strdup(path), strdup(message)};
    return true;
}

static void add_file(FileList *list, const char *path) {
    if (!array_reserve(&list->files, list->count, &list->cap, sizeof *list->files, 16)) return;
    list->files[list->count] = strdup(path);
    if (list->files[list->count]) list->count++;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct {
    FileList *out;
    IgnoreRules rules;
} Walk;

static void walk_dir(Walk *w, const char *shown, const char *abs, int depth) {
    if (depth > MAX_DEPTH) {
        file_list_add_error(w->out, shown, "skipped: folders nested too deep");
        return;
    }
    size_t mark = w->rules.count;
    ignore_rules_add_file(&w->rules, abs);
    DIR *d = opendir(abs);
    if (!d) {
        char msg[256];
        snprintf(msg, sizeof msg, "cannot read folder: %s", strerror(errno));
        file_list_add_error(w->out, shown, msg);
        ignore_rules_truncate(&w->rules, mark);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (!array_reserve(&names, n, &cap, sizeof *names, 16)) break;
        names[n] = strdup(e->d_name);
        if (names[n]) n++;
    }
    closedir(d);
    if (n > 1) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char child_abs[PATH_MAX], child_shown[PATH_MAX];
        bool fits = (size_t)snprintf(child_abs, sizeof child_abs, "%s/%s", abs, names[i]) < sizeof child_abs &&
                    (size_t)snprintf(child_shown, sizeof child_shown, "%s%s%s", shown,
                                     shown[strlen(shown) - 1] == '/' ? "" : "/", names[i]) < sizeof child_shown;
        if (!fits) {
            file_list_add_error(w->out, names[i], "skipped: path too long");
            continue;
        }
        struct stat st;
        if (lstat(child_abs, &st) != 0) continue;
        bool is_dir = S_ISDIR(st.st_mode);
        if (S_ISLNK(st.st_mode)) {
            /* follow links to files; never links to folders (cycles) */
            if (stat(child_abs, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        }
        bool skip_folder = false;
        for (size_t k = 0; is_dir && skipped_folders[k]; k++)
            if (strcmp(names[i], skipped_folders[k]) == 0) skip_folder = true;
        if (skip_folder || ignore_rules_match(&w->rules, child_abs, is_dir)) continue;
        if (is_dir) walk_dir(w, child_shown, child_abs, depth + 1);
        else if (S_ISREG(st.st_mode) && file_walk_supported(child_abs)) add_file(w->out, child_shown);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    ignore_rules_truncate(&w->rules, mark);
}

void file_walk(const char *const *paths, size_t path_count, const Config *cfg, const char *root, FileList *out) {
    memset(out, 0, sizeof *out);
    Walk w = {.out = out};
    char *root_abs = root ? realpath(root, NULL) : NULL;
    for (size_t i = 0; i < path_count; i++) {
        const char *path = paths[i];
        struct stat st;
        if (stat(path, &st) != 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "cannot open: %s", strerror(errno));
            file_list_add_error(out, path, msg);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            char *abs = realpath(path, NULL);
            if (!abs) {
                file_list_add_error(out, path, "cannot resolve the folder's path");
                continue;
            }
            ignore_rules_add_parents(&w.rules, abs);
            if (root_abs) {
                for (size_t k = 0; k < cfg->exclude.count; k++)
                    ignore_rules_add_text(&w.rules, root_abs, cfg->exclude.items[k]);
            }
            walk_dir(&w, path, abs, 0);
            ignore_rules_truncate(&w.rules, 0);
            free(abs);
        } else if (S_ISREG(st.st_mode)) {
            if (language_for_path(path) == LANGUAGE_UNKNOWN) {
                file_list_add_error(out, path,
                                    "skipped: not a Python, CUDA or C/C++ file (.py, .pyi, .cu, .cuh, .c, .cc, .cpp, "
                                    ".h, .hpp)");
                continue;
            }
            add_file(out, path);
        } else {
            file_list_add_error(out, path, "skipped: not a regular file or folder");
        }
    }
    ignore_rules_free(&w.rules);
    free(root_abs);
}

void file_list_free(FileList *list) {
    for (size_t i = 0; i < list->count; i++) free(list->files[i]);
    free(list->files);
    for (size_t i = 0; i < list->error_count; i++) {
        free(list->errors[i].path);
        free(list->errors[i].message);
    }
    free(list->errors);
    memset(list, 0, sizeof *list);
}
