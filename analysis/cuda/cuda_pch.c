/* The precompiled CUDA prefix (cuda_pch.h): one header per flag list, in a
 * private temporary folder. */
#include "analysis/cuda/cuda_pch.h"

#include <clang-c/Index.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/base/growable.h"

#define MAX_HEADERS 32 /* a project whose files all have flags of their own gets no more */
#define MAX_PREAMBLES 16 /* preamble headers hold the project's headers whole: tens of MB each */
#define WAIT_SECONDS 60 /* for another thread's build, at most */

typedef enum {
    PCH_SEEN,     /* asked for once: parsed without a header */
    PCH_BUILDING, /* a thread builds it */
    PCH_READY,
    PCH_FAILED,   /* the build failed or clang rejected it: never again */
} PchState;

typedef struct {
    char *key; /* the arguments, each ended by '\0' (then, for a preamble, its folder and bytes) */
    size_t key_len;
    PchState state;
    char *path;
    char *seen_by; /* a preamble's: the file that asked first (a second file builds it, not a reparse) */
} PchEntry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t built = PTHREAD_COND_INITIALIZER; /* a build ended */
static PchEntry *entries;
static size_t entry_count, entry_cap, headers_started, preambles_started;
static char folder[PATH_MAX]; /* "" until made */
static bool folder_failed;
static CudaPchStats stats;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static bool enabled, eager;

static void read_env(void) {
    const char *v = getenv("ADVISE_CUDA_PCH");
    enabled = !(v && strcmp(v, "0") == 0);
    eager = v && strcmp(v, "eager") == 0;
}

bool cuda_pch_enabled(void) {
    pthread_once(&env_once, read_env);
    return enabled;
}

/* atexit and at_quick_exit: the headers and their folder go. The folder's
 * name is read under the lock: `advise server` ends with quick_exit while a
 * worker may still be inside an analysis (lsp_server.c). */
static void remove_folder(void) {
    char dir[PATH_MAX];
    pthread_mutex_lock(&lock);
    memcpy(dir, folder, sizeof dir);
    pthread_mutex_unlock(&lock);
    if (!dir[0]) return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char path[PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Under the lock. */
static bool make_folder(void) {
    if (folder[0]) return true;
    if (folder_failed) return false;
    const char *tmp = getenv("TMPDIR");
    snprintf(folder, sizeof folder, "%s/advise-pch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(folder)) {
        folder[0] = '\0';
        folder_failed = true;
        return false;
    }
    atexit(remove_folder);
    at_quick_exit(remove_folder); /* how `advise server` ends when a worker is still busy */
    return true;
}

static bool eligible(const CudaFlags *flags) {
    if (!flags->language || strcmp(flags->language, "cuda") != 0) return false;
    for (size_t i = 0; i < flags->count; i++) /* a database's own precompiled header: leave it alone */
        if (strncmp(flags->args[i], "-include-pch", 12) == 0 || strncmp(flags->args[i], "-include-pth", 12) == 0)
            return false;
    return true;
}

static char *key_of(const CudaFlags *flags, size_t *len) {
    size_t n = 0;
    for (size_t i = 0; i < flags->count; i++) n += strlen(flags->args[i]) + 1;
    char *key = malloc(n ? n : 1);
    if (!key) return NULL;
    size_t at = 0;
    for (size_t i = 0; i < flags->count; i++) {
        size_t k = strlen(flags->args[i]) + 1;
        memcpy(key + at, flags->args[i], k);
        at += k;
    }
    *len = n;
    return key;
}

static PchEntry *find(const char *key, size_t len) {
    for (size_t i = 0; i < entry_count; i++)
        if (entries[i].key_len == len && memcmp(entries[i].key, key, len) == 0) return &entries[i];
    return NULL;
}

static bool has_errors(CXTranslationUnit tu) {
    unsigned n = clang_getNumDiagnostics(tu);
    bool errors = false;
    for (unsigned i = 0; i < n && !errors; i++) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        errors = clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error;
        clang_disposeDiagnostic(d);
    }
    return errors;
}

/* What a header is built from: an empty file in the private folder (the
 * CUDA prefix), or a file's include preamble, parsed as a file beside it (its
 * quoted includes are found from its folder). The file is never written:
 * libclang reads it from memory. */
typedef struct {
    const char *main_file; /* NULL: the empty prefix file */
    const char *text;
    size_t length;
} BuildSource;

/* The source parsed with flags, saved as a precompiled header: what clang
 * reads before the first line. The CUDA prefix skips the bodies of
 * functions, as libclang's preamble skips those of the headers a file
 * includes; a file's preamble keeps them, as a first parse does (the file's
 * templates instantiate them). */
static bool build(const CudaFlags *flags, const char *path, const BuildSource *source) {
    char prefix_file[PATH_MAX + 32];
    snprintf(prefix_file, sizeof prefix_file, "%s/prefix.cu", folder);
    const char *main_file = source ? source->main_file : prefix_file;
    CXIndex index = clang_createIndex(0, 0);
    if (!index) return false;
    struct CXUnsavedFile unsaved = {main_file, source ? source->text : "", source ? (unsigned long)source->length : 0};
    unsigned options = CXTranslationUnit_Incomplete | CXTranslationUnit_ForSerialization;
    if (!source) options |= CXTranslationUnit_SkipFunctionBodies;
    CXTranslationUnit tu = NULL;
    enum CXErrorCode e = clang_parseTranslationUnit2(index, main_file, (const char *const *)flags->args,
                                                     (int)flags->count, &unsaved, 1, options, &tu);
    bool ok = e == CXError_Success && tu && !has_errors(tu) &&
              clang_saveTranslationUnit(tu, path, clang_defaultSaveOptions(tu)) == CXSaveError_None;
    if (tu) clang_disposeTranslationUnit(tu);
    clang_disposeIndex(index);
    if (!ok) unlink(path);
    return ok;
}

/* The header for key (taken), built from source (NULL: the CUDA prefix)
 * the second time it is asked for (for a preamble: by another file than
 * the first, `file`), or at once for the prefix when eager. */
static const char *header_for(const CudaFlags *flags, char *key, size_t len, const BuildSource *source,
                              const char *file) {
    pthread_mutex_lock(&lock);
    PchEntry *e = find(key, len);
    const char *ready = NULL;
    char *to_build = NULL;
    /* no more preamble headers to build: stop remembering new preambles */
    bool full = source && preambles_started >= MAX_PREAMBLES;
    if (!e && !full && array_reserve(&entries, entry_count, &entry_cap, sizeof *entries, 8)) {
        char *seen_by = source ? strdup(file) : NULL;
        if (!source || seen_by) {
            entries[entry_count] = (PchEntry){key, len, PCH_SEEN, NULL, seen_by};
            key = NULL;
            if (eager && !source) e = &entries[entry_count];
            entry_count++;
        }
    }
    if (e && e->state == PCH_SEEN && source && e->seen_by && strcmp(e->seen_by, file) == 0)
        e = NULL; /* the same file again (a reparse, a second open): not a shared preamble yet */
    if (e && e->state == PCH_BUILDING) { /* another thread builds it: a parse without it would cost more */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += WAIT_SECONDS;
        size_t at = (size_t)(e - entries); /* entries may move while the lock is let go */
        while (entries[at].state == PCH_BUILDING)
            if (pthread_cond_timedwait(&built, &lock, &until) != 0) break; /* its builder never came back */
        e = &entries[at];
    }
    size_t *started = source ? &preambles_started : &headers_started;
    if (e && e->state == PCH_READY) {
        ready = e->path;
        stats.used++;
    } else if (e && e->state == PCH_SEEN && *started < (source ? MAX_PREAMBLES : MAX_HEADERS) && make_folder()) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s-%zu.pch", folder, source ? "preamble" : "prefix", *started + 1);
        char *kept = strdup(path);
        to_build = kept ? strdup(path) : NULL;
        if (to_build) { /* out of memory: it stays SEEN, and a later request tries again */
            e->path = kept;
            e->state = PCH_BUILDING;
            ++*started;
        } else {
            free(kept);
        }
    }
    pthread_mutex_unlock(&lock);
    free(key);
    if (!to_build) return ready;

    /* built outside the lock; the threads that want it meanwhile wait. A
     * crash that unwinds out of here (crash_guard.h) leaves it BUILDING:
     * they wait WAIT_SECONDS and parse without it. */
    bool ok = build(flags, to_build, source);
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < entry_count; i++) {
        if (!entries[i].path || strcmp(entries[i].path, to_build) != 0) continue;
        entries[i].state = ok ? PCH_READY : PCH_FAILED;
        if (ok) {
            ready = entries[i].path;
            stats.built++;
            stats.used++;
        } else {
            stats.failed++;
        }
    }
    pthread_cond_broadcast(&built);
    pthread_mutex_unlock(&lock);
    free(to_build);
    return ready;
}

const char *cuda_pch_for(const CudaFlags *flags) {
    if (!cuda_pch_enabled() || !eligible(flags)) return NULL;
    size_t len = 0;
    char *key = key_of(flags, &len);
    return key ? header_for(flags, key, len, NULL, NULL) : NULL;
}

const char *cuda_pch_for_preamble(const CudaFlags *flags, const char *path, const char *text, size_t preamble) {
    if (!cuda_pch_enabled() || !eligible(flags) || preamble == 0) return NULL;
    /* the preamble is parsed as a file in path's folder, so that its quoted
     * includes find what the file's own find */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) : 1;
    const char *dir = slash ? path : ".";
    if (slash && dir_len == 0) dir_len = 1, dir = "/";
    static const char name[] = "/.advise-preamble.cu";
    char *main_file = malloc(dir_len + sizeof name);
    if (!main_file) return NULL;
    memcpy(main_file, dir, dir_len);
    memcpy(main_file + dir_len, name, sizeof name);
    /* the key: the flags, the folder, then the preamble's bytes */
    size_t flags_len = 0;
    char *flags_key = key_of(flags, &flags_len);
    size_t file_len = strlen(main_file) + 1, len = flags_len + file_len + preamble;
    char *key = flags_key ? malloc(len) : NULL;
    if (!key) {
        free(flags_key);
        free(main_file);
        return NULL;
    }
    memcpy(key, flags_key, flags_len);
    memcpy(key + flags_len, main_file, file_len);
    memcpy(key + flags_len + file_len, text, preamble);
    free(flags_key);
    BuildSource source = {main_file, text, preamble};
    const char *ready = header_for(flags, key, len, &source, path);
    free(main_file);
    return ready;
}

void cuda_pch_reject(const char *path) {
    if (!path) return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < entry_count; i++)
        if (entries[i].path && strcmp(entries[i].path, path) == 0 && entries[i].state != PCH_FAILED) {
            entries[i].state = PCH_FAILED;
            stats.failed++;
        }
    pthread_mutex_unlock(&lock);
}

void cuda_pch_stats(CudaPchStats *out) {
    pthread_mutex_lock(&lock);
    *out = stats;
    pthread_mutex_unlock(&lock);
}
