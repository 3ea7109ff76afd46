/* Files checked on worker threads, handed back in order (check_pool.h). */
#include "server/workspace/check_pool.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/base/monotonic_clock.h"
#include "analysis/crash_guard.h"
#include "analysis/document.h"
#include "analysis/cuda/include_search.h"

#define MAX_JOBS 1024
#define WINDOW_PER_JOB 8    /* items worked ahead of the one awaited, per thread: bounds what is held */
#define PROGRESS_SECONDS 0.1 /* the progress line is redrawn at most this often */

typedef struct {
    const CheckPool *pool;
    char *slots;
    IncludeLesson **lessons;
    bool *done;
    IncludeLearning *learning;
    size_t next;     /* the next item a worker takes */
    size_t emitted;  /* items handed back */
    size_t finished; /* items worked */
    size_t window;
    pthread_mutex_t lock;
    pthread_cond_t more_work; /* the window moved on */
    pthread_cond_t finished_one;
    /* the progress line (calling thread only) */
    bool shown;
    double drawn_at;
} Pool;

static void *slot(Pool *p, size_t i) { return p->slots + i * p->pool->result_size; }

/* One item, its header searches learning in a lesson of the run. */
static void work_item(Pool *p, size_t i) {
    include_lesson_begin(p->learning); /* NULL: the process-wide lists */
    p->pool->work(p->pool->ctx, i, slot(p, i));
    p->lessons[i] = include_lesson_end();
}

static void *worker(void *arg) {
    Pool *p = arg;
    size_t count = p->pool->count;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->next < count && p->next >= p->emitted + p->window) pthread_cond_wait(&p->more_work, &p->lock);
        if (p->next >= count) break;
        size_t i = p->next++;
        pthread_mutex_unlock(&p->lock);
        work_item(p, i);
        pthread_mutex_lock(&p->lock);
        p->done[i] = true;
        p->finished++;
        pthread_cond_signal(&p->finished_one);
    }
    pthread_mutex_unlock(&p->lock);
    crash_guard_thread_end();
    return NULL;
}

static void progress_clear(Pool *p) {
    if (!p->shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = false;
}

static void progress_draw(Pool *p, size_t finished, bool force) {
    if (!p->pool->progress) return;
    double t = monotonic_seconds();
    if (!force && t - p->drawn_at < PROGRESS_SECONDS) return;
    fprintf(stderr, "\r\033[Kadvise: %zu/%zu files", finished, p->pool->count);
    fflush(stderr);
    p->shown = true;
    p->drawn_at = t;
}

/* Settles item i (its lesson committed, or the item worked again when a
 * file before it learned meanwhile) and emits it. */
static void hand_back(Pool *p, size_t i) {
    const CheckPool *pool = p->pool;
    if (p->learning && !include_learning_commit(p->learning, p->lessons[i])) {
        pool->discard(pool->ctx, i, slot(p, i));
        memset(slot(p, i), 0, pool->result_size);
        work_item(p, i); /* everything before it is committed: it starts from what they left */
        (void)include_learning_commit(p->learning, p->lessons[i]); /* true: nothing else commits meanwhile */
    }
    p->lessons[i] = NULL;
    bool was_shown = p->shown;
    progress_clear(p); /* the item may print, on stdout or stderr */
    pool->emit(pool->ctx, i, slot(p, i));
    if (was_shown) fflush(stdout);
}

static bool sync_init(Pool *p) {
    if (pthread_mutex_init(&p->lock, NULL) != 0) return false;
    if (pthread_cond_init(&p->more_work, NULL) == 0) {
        if (pthread_cond_init(&p->finished_one, NULL) == 0) return true;
        pthread_cond_destroy(&p->more_work);
    }
    pthread_mutex_destroy(&p->lock);
    return false;
}

static void sync_destroy(Pool *p) {
    pthread_cond_destroy(&p->finished_one);
    pthread_cond_destroy(&p->more_work);
    pthread_mutex_destroy(&p->lock);
}

static unsigned start_workers(Pool *p, pthread_t *threads, unsigned wanted) {
    unsigned started = 0;
    pthread_attr_t attr;
    bool attr_ok = pthread_attr_init(&attr) == 0;
    size_t stack = 0;
    /* the analyses recurse (syntax trees): as much stack as the main thread has, at least 8 MiB */
    if (attr_ok && pthread_attr_getstacksize(&attr, &stack) == 0 && stack < (8u << 20))
        pthread_attr_setstacksize(&attr, 8u << 20);
    for (; started < wanted; started++)
        if (pthread_create(&threads[started], attr_ok ? &attr : NULL, worker, p) != 0) break;
    if (attr_ok) pthread_attr_destroy(&attr);
    return started;
}

/* -j 1, or no thread would start: every item on this thread, in order */
static void run_here(Pool *p) {
    for (size_t i = 0; i < p->pool->count; i++) {
        progress_draw(p, i, i == 0);
        work_item(p, i);
        hand_back(p, i);
    }
}

/* The calling thread hands the items back in order as the workers finish them. */
static void run_threads(Pool *p, pthread_t *threads, unsigned started) {
    for (size_t i = 0; i < p->pool->count; i++) {
        pthread_mutex_lock(&p->lock);
        while (!p->done[i]) {
            size_t finished = p->finished;
            pthread_mutex_unlock(&p->lock);
            progress_draw(p, finished, i == 0 && !p->shown);
            pthread_mutex_lock(&p->lock);
            if (p->done[i]) break;
            struct timespec until; /* wake for the progress line now and then */
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += (long)(PROGRESS_SECONDS * 1e9);
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&p->finished_one, &p->lock, &until);
        }
        pthread_mutex_unlock(&p->lock);
        hand_back(p, i);
        pthread_mutex_lock(&p->lock);
        p->emitted = i + 1;
        pthread_cond_broadcast(&p->more_work);
        size_t finished = p->finished;
        pthread_mutex_unlock(&p->lock);
        progress_draw(p, finished, false);
    }
    for (unsigned t = 0; t < started; t++) pthread_join(threads[t], NULL);
}

/* Out of memory for the slots: one slot, item by item. */
static void run_one_slot(const CheckPool *pool) {
    char *one = calloc(1, pool->result_size ? pool->result_size : 1);
    for (size_t i = 0; one && i < pool->count; i++) {
        memset(one, 0, pool->result_size);
        pool->work(pool->ctx, i, one);
        pool->emit(pool->ctx, i, one);
    }
    free(one);
}

void check_pool_run(const CheckPool *pool) {
    if (pool->count == 0) return;
    Pool p = {.pool = pool};
    p.slots = calloc(pool->count, pool->result_size ? pool->result_size : 1);
    p.lessons = calloc(pool->count, sizeof *p.lessons);
    p.done = calloc(pool->count, sizeof *p.done);
    /* without room for the run's learning, the process-wide lists, one file after another */
    p.learning = pool->ordered_learning ? include_learning_new() : NULL;
    if (!p.slots || !p.lessons || !p.done) {
        run_one_slot(pool);
    } else {
        unsigned jobs = pool->jobs ? pool->jobs : 1;
        if (jobs > pool->count) jobs = (unsigned)pool->count;
        if (pool->ordered_learning && !p.learning) jobs = 1;
        p.window = (size_t)jobs * WINDOW_PER_JOB;
        pthread_t *threads = jobs > 1 ? calloc(jobs, sizeof *threads) : NULL;
        bool sync = threads && sync_init(&p);
        unsigned started = sync ? start_workers(&p, threads, jobs) : 0;
        if (started) run_threads(&p, threads, started);
        else run_here(&p);
        if (sync) sync_destroy(&p);
        free(threads);
        progress_clear(&p);
    }
    for (size_t i = 0; p.lessons && i < pool->count; i++) include_lesson_free(p.lessons[i]);
    free(p.slots);
    free(p.lessons);
    free(p.done);
    include_learning_free(p.learning);
}

unsigned check_pool_default_jobs(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_JOBS ? MAX_JOBS : (unsigned)n;
}

bool check_pool_parse_jobs(const char *text, unsigned *jobs) {
    if (!text || *text < '0' || *text > '9') return false;
    errno = 0;
    char *end;
    unsigned long n = strtoul(text, &end, 10);
    if (*end || errno || n == 0 || n > MAX_JOBS) return false;
    *jobs = (unsigned)n;
    return true;
}

typedef struct {
    PyWorkspaces *workspaces;
    const char *path;
} IndexJob;

static void index_one(void *arg) {
    IndexJob *job = arg;
    py_workspaces_for(job->workspaces, job->path);
}

void check_pool_index_projects(PyWorkspaces *workspaces, const char *const *paths, size_t count) {
    for (size_t i = 0; workspaces && i < count; i++) {
        if (language_for_path(paths[i]) != LANGUAGE_PYTHON) continue;
        IndexJob job = {workspaces, paths[i]};
        int sig;
        crash_guard_run(index_one, &job, &sig); /* a crash leaves that project's index as far as it got */
    }
}
