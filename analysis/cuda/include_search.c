#include "analysis/cuda/include_search.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analysis/base/growable.h"

#define MAX_FILES 200000  /* a project bigger than this is searched in part */
#define MAX_DEPTH 24
#define LEVELS_WITHOUT_GIT 3
#define REFRESH_SECONDS 60
#define MAX_CACHED_PROJECTS 8

typedef struct {
    char *root;
    char **paths; /* header-like files, relative to root, sorted */
    size_t count;
    time_t read_at;
    char **learned; /* folders that searches found, in the order found */
    size_t learned_count;
    size_t learned_cap; /* room in learned (array_reserve); moves with it */
} ProjectFiles;

#define MAX_LEARNED 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ProjectFiles cache[MAX_CACHED_PROJECTS];
static size_t cache_next;

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static bool is_header_name(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return false;
    static const char *const ext[] = {".h", ".hpp", ".hh", ".hxx", ".cuh", ".inl", ".inc", ".tcc", ".ipp", NULL};
    for (size_t i = 0; ext[i]; i++)
        if (strcmp(dot, ext[i]) == 0) return true;
    return false;
}

static bool skipped_folder(const char *name) {
    return name[0] == '.' || strcmp(name, "node_modules") == 0 || strcmp(name, "__pycache__") == 0 ||
           strcmp(name, "site-packages") == 0;
}

char *include_search_project_root(const char *from_dir) {
    char *cur = realpath(from_dir, NULL);
    if (!cur) return NULL;
    char *fallback = strdup(cur);
    const char *home = getenv("HOME");
    for (int level = 0;; level++) {
        char probe[PATH_MAX];
        snprintf(probe, sizeof probe, "%s/.git", cur);
        if (exists(probe)) {
            free(fallback);
            return cur;
        }
        char *slash = strrchr(cur, '/');
        if (!slash || slash == cur) break;
        *slash = '\0';
        if (level < LEVELS_WITHOUT_GIT && !(home && strcmp(cur, home) == 0)) {
            free(fallback);
            fallback = strdup(cur);
        }
    }
    free(cur);
    return fallback;
}

typedef struct {
    char **paths;
    size_t count, cap;
} PathList;

static void list_add(PathList *l, const char *path) {
    if (!array_reserve(&l->paths, l->count, &l->cap, sizeof *l->paths, 256)) return;
    char *copy = strdup(path);
    if (copy) l->paths[l->count++] = copy;
}

/* rel: the folder relative to root ("" for root itself) */
static void scan(const char *root, const char *rel, int depth, PathList *out, size_t *seen) {
    if (depth > MAX_DEPTH || *seen >= MAX_FILES) return;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && *seen < MAX_FILES) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        (*seen)++;
        char child[PATH_MAX];
        int n = snprintf(child, sizeof child, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        if (n < 0 || (size_t)n >= sizeof child) continue;
        bool is_dir = e->d_type == DT_DIR, is_reg = e->d_type == DT_REG;
        if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
            char full[PATH_MAX * 2];
            snprintf(full, sizeof full, "%s/%s", root, child);
            struct stat st;
            if (e->d_type == DT_LNK || stat(full, &st) != 0) continue; /* links could loop */
            is_dir = S_ISDIR(st.st_mode);
            is_reg = S_ISREG(st.st_mode);
        }
        if (is_dir && !skipped_folder(e->d_name)) scan(root, child, depth + 1, out, seen);
        else if (is_reg && is_header_name(e->d_name)) list_add(out, child);
    }
    closedir(d);
}

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void project_free(ProjectFiles *p) {
    for (size_t i = 0; i < p->count; i++) free(p->paths[i]);
    free(p->paths);
    for (size_t i = 0; i < p->learned_count; i++) free(p->learned[i]);
    free(p->learned);
    free(p->root);
    memset(p, 0, sizeof *p);
}

/* The cached file list of root, read again when stale, or (again) when it
 * was read in an earlier second: a header may have been added since. Call
 * with the lock held. */
static const ProjectFiles *project_files(const char *root, bool again) {
    time_t now = time(NULL);
    ProjectFiles *slot = NULL;
    for (size_t i = 0; i < MAX_CACHED_PROJECTS; i++)
        if (cache[i].root && strcmp(cache[i].root, root) == 0) slot = &cache[i];
    if (slot && now - slot->read_at < REFRESH_SECONDS && !(again && now > slot->read_at)) return slot;
    char **learned = NULL;
    size_t learned_count = 0, learned_cap = 0;
    if (!slot) {
        slot = &cache[cache_next];
        cache_next = (cache_next + 1) % MAX_CACHED_PROJECTS;
    } else { /* the same project read again: what it learned stays */
        learned = slot->learned;
        learned_count = slot->learned_count;
        learned_cap = slot->learned_cap;
        slot->learned = NULL;
        slot->learned_count = slot->learned_cap = 0;
    }
    project_free(slot);
    slot->learned = learned;
    slot->learned_count = learned_count;
    slot->learned_cap = learned_cap;
    PathList list = {0};
    size_t seen = 0;
    scan(root, "", 0, &list, &seen);
    if (list.count) qsort(list.paths, list.count, sizeof *list.paths, by_string);
    slot->root = strdup(root);
    slot->paths = list.paths;
    slot->count = list.count;
    slot->read_at = now;
    return slot;
}

static bool listed(char *const *list, size_t count, const char *dir) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(list[i], dir) == 0) return true;
    return false;
}

/* Adds dir to a list of learned folders unless it holds it or is full. */
static void learn(char ***list, size_t *count, size_t *cap, const char *dir) {
    if (listed(*list, *count, dir) || *count >= MAX_LEARNED) return;
    char *copy = array_reserve(list, *count, cap, sizeof **list, 4) ? strdup(dir) : NULL;
    if (copy) (*list)[(*count)++] = copy;
}

static void list_free(char **list, size_t count) {
    for (size_t i = 0; i < count; i++) free(list[i]);
    free(list);
}

/* ---- learning in the files' order (include_search.h) ---- */

typedef struct {
    char *root;
    char **learned;
    size_t count, cap;
} RunProject;

struct IncludeLearning {
    pthread_mutex_t lock;
    RunProject *projects;
    size_t count, cap;
};

typedef struct {
    char *root;
    char **start; /* the run's folders for root when the file first asked */
    size_t start_count;
    char **known; /* start, then what the file found */
    size_t known_count, known_cap;
} LessonProject;

struct IncludeLesson {
    IncludeLearning *run;
    LessonProject *projects;
    size_t count, cap;
};

static _Thread_local IncludeLesson *current_lesson;

IncludeLearning *include_learning_new(void) {
    IncludeLearning *run = calloc(1, sizeof *run);
    if (run && pthread_mutex_init(&run->lock, NULL) != 0) {
        free(run);
        return NULL;
    }
    return run;
}

void include_learning_free(IncludeLearning *run) {
    if (!run) return;
    for (size_t i = 0; i < run->count; i++) {
        free(run->projects[i].root);
        list_free(run->projects[i].learned, run->projects[i].count);
    }
    free(run->projects);
    pthread_mutex_destroy(&run->lock);
    free(run);
}

/* Under run->lock. */
static RunProject *run_project(IncludeLearning *run, const char *root, bool make) {
    for (size_t i = 0; i < run->count; i++)
        if (strcmp(run->projects[i].root, root) == 0) return &run->projects[i];
    if (!make || !array_reserve(&run->projects, run->count, &run->cap, sizeof *run->projects, 4)) return NULL;
    char *copy = strdup(root);
    if (!copy) return NULL;
    run->projects[run->count] = (RunProject){copy, NULL, 0, 0};
    return &run->projects[run->count++];
}

/* The lesson's view of root, made from the run's folders the first time. */
static LessonProject *lesson_project(IncludeLesson *l, const char *root) {
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->projects[i].root, root) == 0) return &l->projects[i];
    if (!array_reserve(&l->projects, l->count, &l->cap, sizeof *l->projects, 2)) return NULL;
    LessonProject p = {.root = strdup(root)};
    if (!p.root) return NULL;
    pthread_mutex_lock(&l->run->lock);
    RunProject *r = run_project(l->run, root, false);
    size_t start_cap = 0;
    for (size_t i = 0; r && i < r->count; i++) {
        learn(&p.start, &p.start_count, &start_cap, r->learned[i]);
        learn(&p.known, &p.known_count, &p.known_cap, r->learned[i]);
    }
    pthread_mutex_unlock(&l->run->lock);
    l->projects[l->count] = p;
    return &l->projects[l->count++];
}

void include_lesson_begin(IncludeLearning *run) {
    include_lesson_free(include_lesson_end());
    if (!run) return;
    current_lesson = calloc(1, sizeof *current_lesson);
    if (current_lesson) current_lesson->run = run;
}

IncludeLesson *include_lesson_end(void) {
    IncludeLesson *l = current_lesson;
    current_lesson = NULL;
    return l;
}

void include_lesson_free(IncludeLesson *l) {
    if (!l) return;
    for (size_t i = 0; i < l->count; i++) {
        free(l->projects[i].root);
        list_free(l->projects[i].start, l->projects[i].start_count);
        list_free(l->projects[i].known, l->projects[i].known_count);
    }
    free(l->projects);
    free(l);
}

bool include_learning_commit(IncludeLearning *run, IncludeLesson *l) {
    if (!l) return true;
    bool same = true;
    pthread_mutex_lock(&run->lock);
    for (size_t i = 0; i < l->count && same; i++) {
        const LessonProject *p = &l->projects[i];
        RunProject *r = run_project(run, p->root, false);
        size_t now = r ? r->count : 0;
        same = now == p->start_count;
        for (size_t k = 0; same && k < now; k++) same = strcmp(r->learned[k], p->start[k]) == 0;
    }
    for (size_t i = 0; i < l->count && same; i++) {
        const LessonProject *p = &l->projects[i];
        RunProject *r = run_project(run, p->root, true);
        for (size_t k = p->start_count; r && k < p->known_count; k++)
            learn(&r->learned, &r->count, &r->cap, p->known[k]);
    }
    pthread_mutex_unlock(&run->lock);
    include_lesson_free(l);
    return same;
}

/* named as folders of shared headers are */
static bool include_like(const char *dir) {
    const char *last = strrchr(dir, '/');
    last = last ? last + 1 : dir;
    static const char *const names[] = {"include", "includes", "inc", "common", "Common", "headers", "shared", NULL};
    for (size_t i = 0; names[i]; i++)
        if (strcmp(last, names[i]) == 0) return true;
    return false;
}

static size_t common_prefix(const char *a, const char *b) {
    size_t n = 0;
    while (a[n] && a[n] == b[n]) n++;
    return n;
}

char *include_search_find(const char *from_dir, const char *spelled) {
    if (!spelled || !*spelled || spelled[0] == '/' || strstr(spelled, "..")) return NULL;
    char *root = include_search_project_root(from_dir);
    char *from = realpath(from_dir, NULL);
    if (!root || !from) {
        free(root);
        free(from);
        return NULL;
    }
    LessonProject *lesson = current_lesson ? lesson_project(current_lesson, root) : NULL;
    if (current_lesson && !lesson) { /* out of memory: no search rather than one the run cannot repeat */
        free(root);
        free(from);
        return NULL;
    }
    size_t spelled_len = strlen(spelled);
    char *best = NULL;
    size_t best_score = 0, best_len = 0;
    int best_rank = 0;
    pthread_mutex_lock(&lock);
    const ProjectFiles *files = project_files(root, false);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt == 1) {
            if (best) break;
            files = project_files(root, true); /* a miss: the header may be new */
        }
        for (size_t i = 0; i < files->count; i++) {
            const char *p = files->paths[i];
            size_t len = strlen(p);
            if (len < spelled_len || strcmp(p + len - spelled_len, spelled) != 0) continue;
            if (len > spelled_len && p[len - spelled_len - 1] != '/') continue; /* "xggml.h" is not "ggml.h" */
            char dir[PATH_MAX];
            size_t dir_len = len - spelled_len;
            snprintf(dir, sizeof dir, "%s/%.*s", root, (int)(dir_len ? dir_len - 1 : 0), p);
            if (!dir_len) snprintf(dir, sizeof dir, "%s", root);
            /* a folder other files of the project needed, then one named as shared
             * headers' folders are (include/, common/), then the nearest to the
             * including file, then the shortest path: a copy of a header inside
             * another sample's folder loses to the project's shared one */
            bool was_learned = lesson ? listed(lesson->known, lesson->known_count, dir)
                                      : listed(files->learned, files->learned_count, dir);
            int rank = was_learned ? 2 : include_like(dir) ? 1 : 0;
            size_t score = common_prefix(dir, from);
            if (!best || rank > best_rank || (rank == best_rank && score > best_score) ||
                (rank == best_rank && score == best_score && len < best_len)) {
                free(best);
                best = strdup(dir);
                best_rank = rank;
                best_score = score;
                best_len = len;
            }
        }
    }
    if (best && lesson) { /* remembered for the file's next searches, and by the run at commit */
        learn(&lesson->known, &lesson->known_count, &lesson->known_cap, best);
    } else if (best) { /* remembered for the project's next files */
        ProjectFiles *p = (ProjectFiles *)files;
        learn(&p->learned, &p->learned_count, &p->learned_cap, best);
    }
    pthread_mutex_unlock(&lock);
    free(root);
    free(from);
    return best;
}

size_t include_search_learned(const char *from_dir, char ***dirs) {
    *dirs = NULL;
    char *root = include_search_project_root(from_dir);
    if (!root) return 0;
    size_t count = 0;
    if (current_lesson) {
        LessonProject *p = lesson_project(current_lesson, root);
        *dirs = p && p->known_count ? calloc(p->known_count, sizeof **dirs) : NULL;
        for (size_t k = 0; *dirs && k < p->known_count; k++)
            if (((*dirs)[count] = strdup(p->known[k]))) count++;
        free(root);
        return count;
    }
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < MAX_CACHED_PROJECTS; i++) {
        ProjectFiles *p = &cache[i];
        if (!p->root || strcmp(p->root, root) != 0 || !p->learned_count) continue;
        *dirs = calloc(p->learned_count, sizeof **dirs);
        for (size_t k = 0; *dirs && k < p->learned_count; k++) {
            (*dirs)[count] = strdup(p->learned[k]);
            if ((*dirs)[count]) count++;
        }
    }
    pthread_mutex_unlock(&lock);
    free(root);
    return count;
}
