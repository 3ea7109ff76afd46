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

static void check_range(ByteRange r, size_t text_length) {
    if (r.start > r.end || r.end > text_length) abort();
}

void fuzz_check_findings(const FindingList *out, size_t text_length) {
    for (size_t i = 0; i < out->count; i++) {
        const Finding *f = &out->items[i];
        check_range(f->range, text_length);
        for (size_t k = 0; k < f->fix_count; k++) {
            if (f->fixes[k].edit_count == 0) abort();
            for (size_t e = 0; e < f->fixes[k].edit_count; e++) check_range(f->fixes[k].edits[e].range, text_length);
        }
    }
}
