/* Temporary folders for tests: made under $TMPDIR (else /tmp) and removed,
 * with everything in them, when the test process exits, passed or failed
 * (Criterion runs each test in a process of its own and ends it with
 * exit(), so atexit handlers run; a test that crashes leaves its folder).
 * Set ADVISE_KEEP_TEST_FILES=1 to keep them for a look. */
#ifndef ADVISE_TESTS_TEMP_TREE_H
#define ADVISE_TESTS_TEMP_TREE_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *temp_tree_paths[128];
static size_t temp_tree_count;

/* removes path and, for a folder, what it holds (links are removed, not followed) */
static inline void temp_tree_remove(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *dir = opendir(path);
        for (struct dirent *e; dir && (e = readdir(dir));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char child[PATH_MAX];
            if ((size_t)snprintf(child, sizeof child, "%s/%s", path, e->d_name) < sizeof child) temp_tree_remove(child);
        }
        if (dir) closedir(dir);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static inline void temp_tree_remove_all(void) {
    const char *keep = getenv("ADVISE_KEEP_TEST_FILES");
    while (temp_tree_count) {
        char *path = temp_tree_paths[--temp_tree_count];
        if (!(keep && *keep && strcmp(keep, "0") != 0))
            temp_tree_remove(path);
        free(path);
    }
}

/* A fresh empty folder named <prefix>-XXXXXX, as a resolved path (the code
 * under test compares real paths); NULL when none can be made. The folder
 * and the returned string live until the process exits. */
static inline char *temp_tree(const char *prefix) {
    const char *base = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s/%s-XXXXXX", base && *base ? base : "/tmp", prefix);
    if (!mkdtemp(tmpl)) return NULL;
    char *real = realpath(tmpl, NULL);
    if (!real) return NULL;
    if (temp_tree_count == 0) {
        static int registered;
        if (!registered) registered = atexit(temp_tree_remove_all) == 0;
    }
    if (temp_tree_count < sizeof temp_tree_paths / sizeof *temp_tree_paths) temp_tree_paths[temp_tree_count++] = real;
    return real;
}

#endif
