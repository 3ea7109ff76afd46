/* API call durations, batched per thread: the launch path appends to its
 * thread's batch under the batch's own lock (uncontended but for the flush
 * at exit) and hands the aggregator a whole batch at once, so the
 * aggregator's lock and its name lookup are paid once per batch, not once
 * per CUDA call. */
#include <pthread.h>
#include <stdlib.h>

#include "profiler/inject/inject.h"

#define BATCH 512

typedef struct ApiBatch {
    pthread_mutex_t lock;
    size_t count;
    const char *names[BATCH]; /* CUPTI's own strings, valid for the process's life */
    uint64_t durations[BATCH];
    struct ApiBatch *next;
} ApiBatch;

static pthread_mutex_t batches_lock = PTHREAD_MUTEX_INITIALIZER;
static ApiBatch *batches;          /* every thread's, for the flush at exit */
static pthread_key_t batch_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread ApiBatch *mine;

/* Called with b->lock held. */
static void flush_locked(ApiBatch *b) {
    if (b->count) agg_api_batch(inject_agg, b->names, b->durations, b->count);
    b->count = 0;
}

static void flush_at_thread_exit(void *p) {
    ApiBatch *b = p;
    pthread_mutex_lock(&b->lock);
    flush_locked(b); /* the batch stays listed (and empty) until the process ends */
    pthread_mutex_unlock(&b->lock);
}

static void make_key(void) {
    pthread_key_create(&batch_key, flush_at_thread_exit);
}

static ApiBatch *thread_batch(void) {
    if (mine) return mine;
    ApiBatch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_mutex_init(&b->lock, NULL);
    pthread_once(&key_once, make_key);
    pthread_setspecific(batch_key, b);
    pthread_mutex_lock(&batches_lock);
    b->next = batches;
    batches = b;
    pthread_mutex_unlock(&batches_lock);
    mine = b;
    return b;
}

void api_time_add(const char *name, uint64_t duration_ns) {
    ApiBatch *b = thread_batch();
    if (!b) return;
    pthread_mutex_lock(&b->lock);
    b->names[b->count] = name;
    b->durations[b->count] = duration_ns;
    if (++b->count == BATCH) flush_locked(b);
    pthread_mutex_unlock(&b->lock);
}

void api_times_flush_all(void) {
    pthread_mutex_lock(&batches_lock);
    for (ApiBatch *b = batches; b; b = b->next) {
        pthread_mutex_lock(&b->lock);
        flush_locked(b);
        pthread_mutex_unlock(&b->lock);
    }
    pthread_mutex_unlock(&batches_lock);
}
