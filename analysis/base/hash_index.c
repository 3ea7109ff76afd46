#include "analysis/base/hash_index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static uint64_t seed;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

static void choose_seed(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        s = (uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)now.tv_sec ^ (uint64_t)(uintptr_t)&s;
    }
    seed = s;
}

/* splitmix64's finaliser: spreads every input bit over the whole word */
static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

uint64_t hash_start(void) {
    pthread_once(&seed_once, choose_seed);
    return mix(seed ^ 0x243f6a8885a308d3u);
}

uint64_t hash_bytes(uint64_t h, const void *data, size_t length) {
    const unsigned char *p = data;
    /* FNV-1a over the bytes from a seeded state, then mixed with the length */
    for (size_t i = 0; i < length; i++) h = (h ^ p[i]) * 0x100000001b3u;
    return mix(h ^ length);
}

uint64_t hash_string(uint64_t h, const char *s) {
    if (!s) return mix(h ^ 0x5bd1e9955bd1e995u);
    return hash_bytes(h ^ 0x2545f4914f6cdd1du, s, strlen(s));
}

uint64_t hash_u64(uint64_t h, uint64_t value) { return mix(h ^ mix(value + 0x9e3779b97f4a7c15u)); }

void hash_index_free(HashIndex *index) {
    free(index->slots);
    memset(index, 0, sizeof *index);
}

static void place(HashSlot *slots, size_t capacity, uint64_t hash, int position) {
    size_t i = (size_t)hash & (capacity - 1);
    while (slots[i].position >= 0) i = (i + 1) & (capacity - 1);
    slots[i] = (HashSlot){hash, position};
}

bool hash_index_add(HashIndex *index, uint64_t hash, int position) {
    if ((index->count + 1) * 2 > index->capacity) { /* keep at most half full */
        size_t capacity = index->capacity ? index->capacity * 2 : 16;
        HashSlot *slots = malloc(capacity * sizeof *slots);
        if (!slots) return false;
        for (size_t i = 0; i < capacity; i++) slots[i].position = -1;
        for (size_t i = 0; i < index->capacity; i++)
            if (index->slots[i].position >= 0) place(slots, capacity, index->slots[i].hash, index->slots[i].position);
        free(index->slots);
        index->slots = slots;
        index->capacity = capacity;
    }
    place(index->slots, index->capacity, hash, position);
    index->count++;
    return true;
}

int hash_index_next(const HashIndex *index, uint64_t hash, size_t *cursor) {
    if (index->capacity == 0) return -1;
    size_t mask = index->capacity - 1;
    for (size_t step = *cursor; step < index->capacity; step++) {
        const HashSlot *slot = &index->slots[((size_t)hash + step) & mask];
        if (slot->position < 0) break;
        if (slot->hash == hash) {
            *cursor = step + 1;
            return slot->position;
        }
    }
    *cursor = index->capacity;
    return -1;
}

int hash_index_find(const HashIndex *index, uint64_t hash, bool (*same)(const void *ctx, int position),
                    const void *ctx) {
    size_t cursor = 0;
    for (int position; (position = hash_index_next(index, hash, &cursor)) >= 0;)
        if (same(ctx, position)) return position;
    return -1;
}
