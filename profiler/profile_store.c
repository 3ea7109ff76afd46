#include "profiler/profile_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool has_entry(const char *dir, const char *name) {
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) return false;
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The nearest folder at or above start holding name, or NULL. */
static char *find_upwards(const char *start, const char *name) {
    char *dir = strdup(start);
    while (dir) {
        if (has_entry(dir, name)) return dir;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            bool at_root = has_entry("/", name) && strcmp(dir, "/") != 0;
            free(dir);
            return at_root ? strdup("/") : NULL;
        }
        *slash = '\0';
    }
    return NULL;
}

char *profile_store_root(void) {
    return profile_store_root_of(".");
}

char *profile_store_marked_root_of(const char *start) {
    char *cwd = realpath(start ? start : ".", NULL);
    if (!cwd) return NULL;
    char *root = find_upwards(cwd, "advise.toml");
    if (!root) root = find_upwards(cwd, ".git");
    free(cwd);
    return root;
}

char *profile_store_root_of(const char *start) {
    char *root = profile_store_marked_root_of(start);
    return root ? root : realpath(start ? start : ".", NULL);
}

char *profile_store_dir(const char *root, const char *configured) {
    const char *rel = configured && *configured ? configured : PROFILE_STORE_DEFAULT_DIR;
    if (rel[0] == '/') return strdup(rel);
    size_t n = strlen(root) + strlen(rel) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s/%s", strcmp(root, "/") == 0 ? "" : root, rel);
    return out;
}

static char *format_error(const char *what, const char *path) {
    const char *reason = strerror(errno);
    size_t n = strlen(what) + strlen(path) + strlen(reason) + 8;
    char *msg = malloc(n);
    if (msg) snprintf(msg, n, "%s %s: %s", what, path, reason);
    return msg;
}

bool profile_store_mkdirs(const char *dir, char **error) {
    char path[PATH_MAX];
    if (strlen(dir) >= sizeof path) {
        errno = ENAMETOOLONG;
        *error = format_error("cannot create", dir);
        return false;
    }
    strcpy(path, dir);
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                *error = format_error("cannot create", path);
                return false;
            }
            *p = saved;
            if (!saved) break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (errno == 0) errno = ENOTDIR;
        *error = format_error("cannot use", dir);
        return false;
    }
    return true;
}

char *profile_store_reserve(const char *dir, const char *name, char **error) {
    if (!profile_store_mkdirs(dir, error)) return NULL;
    char clean[64];
    size_t n = 0;
    for (const char *s = name && *name ? name : "profile"; *s && n < sizeof clean - 1; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                  c == '_' || c == '-';
        clean[n++] = ok ? c : '_';
    }
    clean[n] = '\0';
    if (clean[0] == '.') clean[0] = '_';
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    for (int attempt = 1; attempt < 1000; attempt++) {
        char path[PATH_MAX];
        int len = attempt == 1 ? snprintf(path, sizeof path, "%s/%s-%s.json", dir, clean, stamp)
                               : snprintf(path, sizeof path, "%s/%s-%s-%d.json", dir, clean, stamp, attempt);
        if (len < 0 || (size_t)len >= sizeof path) {
            errno = ENAMETOOLONG;
            *error = format_error("cannot create a file in", dir);
            return NULL;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            close(fd);
            return strdup(path);
        }
        if (errno != EEXIST) {
            *error = format_error("cannot create", path);
            return NULL;
        }
    }
    errno = EEXIST;
    *error = format_error("too many profiles with this name and time in", dir);
    return NULL;
}

const char *profile_store_display(const char *path) {
    static char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return path;
    size_t n = strlen(cwd);
    if (strncmp(path, cwd, n) == 0 && path[n] == '/') return path + n + 1;
    return path;
}
