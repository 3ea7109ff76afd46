/* The edit applier: the input holds a text and edits to it. Layout: one
 * byte n (edits, at most 16), then per edit four bytes (start, end, as
 * offsets scaled into the text, and the length of its new text), then the
 * new texts, then the text. Applied edits must give a text of the length
 * the edits imply, or a refusal (overlap, out of range). */
#include <stdlib.h>
#include <string.h>

#include "analysis/edits.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t n = data[0] % 17, at = 1;
    if (size < at + 4 * n) return 0;
    const uint8_t *header = data + at;
    at += 4 * n;
    TextEdit edits[16] = {0};
    size_t new_total = 0;
    size_t made = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = header[4 * i + 2] % 8;
        if (at + len > size) {
            for (size_t k = 0; k < made; k++) free(edits[k].new_text);
            return 0;
        }
        edits[i].new_text = fuzz_string(data + at, len);
        made++;
        at += len;
        new_total += strlen(edits[i].new_text);
    }
    const char *text = (const char *)data + at;
    size_t length = size - at;
    size_t removed = 0;
    for (size_t i = 0; i < n; i++) {
        /* offsets mostly inside the text, sometimes one past or beyond */
        size_t span = length + 2;
        size_t a = header[4 * i] * span / 256, b = a + header[4 * i + 1] % 4 + (header[4 * i + 3] & 1 ? 0 : 1) - 1;
        if (b < a) b = a;
        edits[i].range = (ByteRange){a, b};
        removed += b - a;
    }
    size_t out_length = 0;
    char *out = edits_apply(text, length, edits, n, &out_length);
    if (out && out_length != length - removed + new_total) abort(); /* the applier lost or invented text */
    free(out);
    for (size_t i = 0; i < n; i++) free(edits[i].new_text);
    return 0;
}
