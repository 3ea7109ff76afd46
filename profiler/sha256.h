/* SHA-256 (FIPS 180-4): the digest that a profile records for each source
 * file, so that a later reader can tell whether the file changed since it was
 * profiled. Incremental: init, update any number of times, final. */
#ifndef ADVISE_SHA256_H
#define ADVISE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_BYTES 32
#define SHA256_HEX_CHARS 64

typedef struct {
    uint32_t state[8];
    uint64_t length;        /* message bytes seen so far */
    uint8_t block[64];      /* the partial block not yet compressed */
    size_t block_used;
} Sha256;

void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t length);
void sha256_final(Sha256 *s, uint8_t digest[SHA256_DIGEST_BYTES]);

/* The digest as 64 lowercase hex digits and a terminating NUL. */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_BYTES], char hex[SHA256_HEX_CHARS + 1]);
/* The digest of length bytes of data, as hex (what profiles record per file). */
void sha256_hex_of(const void *data, size_t length, char hex[SHA256_HEX_CHARS + 1]);

#endif
