/* SHA-256 as FIPS 180-4 describes it: sections 4.1.2 (functions), 4.2.2
 * (constants), 5.1.1 (padding), 5.3.3 (initial hash value) and 6.2.2 (the
 * hash computation). */
#include "profiler/sha256.h"

#include <string.h>

/* 4.2.2: the first 32 bits of the fractional parts of the cube roots of the
 * first 64 primes */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* 4.1.2 */
static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }
static uint32_t ch(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (~x & z); }
static uint32_t maj(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (x & z) ^ (y & z); }
static uint32_t big_sigma0(uint32_t x) { return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22); }
static uint32_t big_sigma1(uint32_t x) { return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25); }
static uint32_t small_sigma0(uint32_t x) { return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3); }
static uint32_t small_sigma1(uint32_t x) { return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10); }

/* 6.2.2: one 512-bit block, read as sixteen big-endian words */
static void compress(uint32_t h[8], const uint8_t block[64]) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 | (uint32_t)block[4 * t + 2] << 8 |
               (uint32_t)block[4 * t + 3];
    for (int t = 16; t < 64; t++) w[t] = small_sigma1(w[t - 2]) + w[t - 7] + small_sigma0(w[t - 15]) + w[t - 16];

    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = hh + big_sigma1(e) + ch(e, f, g) + K[t] + w[t];
        uint32_t t2 = big_sigma0(a) + maj(a, b, c);
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

void sha256_init(Sha256 *s) {
    /* 5.3.3: the first 32 bits of the fractional parts of the square roots of
     * the first 8 primes */
    static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->state, H0, sizeof H0);
    s->length = 0;
    s->block_used = 0;
}

void sha256_update(Sha256 *s, const void *data, size_t length) {
    const uint8_t *in = data;
    s->length += length;
    while (length > 0) {
        size_t take = 64 - s->block_used;
        if (take > length) take = length;
        memcpy(s->block + s->block_used, in, take);
        s->block_used += take;
        in += take;
        length -= take;
        if (s->block_used == 64) {
            compress(s->state, s->block);
            s->block_used = 0;
        }
    }
}

void sha256_final(Sha256 *s, uint8_t digest[SHA256_DIGEST_BYTES]) {
    /* 5.1.1: a 1 bit, zeros up to 448 mod 512 bits, then the message length
     * in bits as a 64-bit big-endian number */
    uint64_t bits = s->length * 8;
    uint8_t pad[72] = {0x80};
    size_t zeros_to = s->block_used < 56 ? 56 : 120;
    size_t pad_length = zeros_to - s->block_used;
    for (int i = 0; i < 8; i++) pad[pad_length + i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(s, pad, pad_length + 8);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(s->state[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(s->state[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(s->state[i] >> 8);
        digest[4 * i + 3] = (uint8_t)s->state[i];
    }
}

void sha256_hex(const uint8_t digest[SHA256_DIGEST_BYTES], char hex[SHA256_HEX_CHARS + 1]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_DIGEST_BYTES; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[SHA256_HEX_CHARS] = '\0';
}

void sha256_hex_of(const void *data, size_t length, char hex[SHA256_HEX_CHARS + 1]) {
    Sha256 s;
    uint8_t digest[SHA256_DIGEST_BYTES];
    sha256_init(&s);
    sha256_update(&s, data, length);
    sha256_final(&s, digest);
    sha256_hex(digest, hex);
}
