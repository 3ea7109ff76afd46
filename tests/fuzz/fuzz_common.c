#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

char *fuzz_string(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
