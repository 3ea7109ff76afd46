/* A small open-addressing index from 64-bit hashes to array positions, used
 * to find duplicates in a profile's files and sites without comparing every
 * pair. It stores positions only: the caller compares the entries a lookup
 * returns, so two different keys with the same hash never get confused.
 *
 * Hashes are seeded once per process at random, so that no file can be
 * crafted to make every key land in the same slot. The one hash table of
 * advise: the profile's aggregator, its loader and the analyses use it. */
#ifndef ADVISE_HASH_INDEX_H
#define ADVISE_HASH_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t hash;
    int position;           /* -1: empty slot */
} HashSlot;

typedef struct {
    HashSlot *slots;
    size_t capacity;        /* 0 or a power of two */
    size_t count;
} HashIndex;

/* A zeroed HashIndex is empty and ready; hash_index_free returns it to that. */
void hash_index_free(HashIndex *index);
/* False when out of memory. */
bool hash_index_add(HashIndex *index, uint64_t hash, int position);

/* Visits the positions stored under hash: start with *cursor = 0 and call
 * until it answers -1. */
int hash_index_next(const HashIndex *index, uint64_t hash, size_t *cursor);
/* The first position stored under hash for which same(ctx, position)
 * holds, or -1. */
int hash_index_find(const HashIndex *index, uint64_t hash, bool (*same)(const void *ctx, int position),
                    const void *ctx);

/* Seeded hashing of bytes, strings (NULL hashes apart from "") and numbers,
 * chained: h = hash_bytes(hash_start(), ...), h = hash_u64(h, ...). */
uint64_t hash_start(void);
uint64_t hash_bytes(uint64_t h, const void *data, size_t length);
uint64_t hash_string(uint64_t h, const char *s);
uint64_t hash_u64(uint64_t h, uint64_t value);

#endif
