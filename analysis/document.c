#include "analysis/document.h"

#include <stdlib.h>
#include <string.h>

static bool build_line_index(Document *doc) {
    size_t count = 1;
    for (size_t i = 0; i < doc->length; i++) {
        char c = doc->text[i];
        if (c == '\n' || (c == '\r' && (i + 1 >= doc->length || doc->text[i + 1] != '\n')))
            count++;
    }
    size_t *starts = malloc(count * sizeof *starts);
    if (!starts) return false;
    size_t n = 0;
    starts[n++] = 0;
    for (size_t i = 0; i < doc->length; i++) {
        char c = doc->text[i];
        if (c == '\n' || (c == '\r' && (i + 1 >= doc->length || doc->text[i + 1] != '\n')))
            starts[n++] = i + 1;
    }
    free(doc->line_starts);
    doc->line_starts = starts;
    doc->line_count = count;
    doc->line_capacity = count;
    return true;
}

Document *document_new(const char *path, Language language, const char *text, size_t length) {
    Document *doc = calloc(1, sizeof *doc);
    if (!doc) return NULL;
    doc->language = language;
    doc->text = malloc(length + 1);
    if (!doc->text) goto fail;
    doc->capacity = length + 1;
    if (length) memcpy(doc->text, text, length);
    doc->text[length] = '\0';
    doc->length = length;
    if (path && !(doc->path = strdup(path))) goto fail;
    if (!build_line_index(doc)) goto fail;
    return doc;
fail:
    document_free(doc);
    return NULL;
}

Document *document_clone(const Document *doc) {
    Document *copy = calloc(1, sizeof *copy);
    if (!copy) return NULL;
    copy->language = doc->language;
    copy->length = doc->length;
    copy->capacity = doc->length + 1;
    copy->line_count = doc->line_count;
    copy->line_capacity = doc->line_count;
    copy->text = malloc(doc->length + 1);
    copy->line_starts = malloc(doc->line_count * sizeof *copy->line_starts);
    if (!copy->text || !copy->line_starts || (doc->path && !(copy->path = strdup(doc->path)))) {
        document_free(copy);
        return NULL;
    }
    memcpy(copy->text, doc->text, doc->length + 1);
    memcpy(copy->line_starts, doc->line_starts, doc->line_count * sizeof *copy->line_starts);
    return copy;
}

void document_free(Document *doc) {
    if (!doc) return;
    free(doc->path);
    free(doc->text);
    free(doc->line_starts);
    free(doc);
}

/* Whether a line starts at byte i + 1: after a '\n', or after a '\r' that
 * no '\n' follows. */
static bool breaks_after(const char *text, size_t length, size_t i) {
    return text[i] == '\n' || (text[i] == '\r' && (i + 1 >= length || text[i + 1] != '\n'));
}

/* The first index k with starts[k] >= offset (starts is sorted). */
static size_t first_start_at_or_after(const size_t *starts, size_t count, size_t offset) {
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (starts[mid] < offset) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Brings the line index of the text before a replacement of [start, end)
 * by `length` bytes up to the text after it (already in doc), in place and
 * without reading the rest of the text: a line start at p depends only on
 * the bytes at p - 1 and p, so the starts before `start` stay, those after
 * `end` move by the change in length, and only those in
 * [start, start + length] are found again (keystrokes on a 6,000-line
 * module rebuilt the whole index each). The index has room for
 * line_index_bound() entries. */
static void update_line_index(Document *doc, size_t start, size_t end, size_t length) {
    size_t *starts = doc->line_starts, old_count = doc->line_count;
    /* starts < start, and always the first line's 0, which no break makes */
    size_t keep_before = start ? first_start_at_or_after(starts, old_count, start) : 1;
    size_t after = first_start_at_or_after(starts, old_count, end + 1); /* starts > end */
    size_t from = start ? start - 1 : 0, to = start + length < doc->length ? start + length : doc->length;
    size_t found = 0;
    for (size_t i = from; i < to; i++) found += breaks_after(doc->text, doc->length, i);
    size_t tail = old_count - after;
    memmove(starts + keep_before + found, starts + after, tail * sizeof *starts);
    size_t n = keep_before;
    for (size_t i = from; i < to; i++)
        if (breaks_after(doc->text, doc->length, i)) starts[n++] = i + 1;
    long long delta = (long long)length - (long long)(end - start);
    for (size_t k = n; k < n + tail; k++) starts[k] = (size_t)((long long)starts[k] + delta);
    doc->line_count = n + tail;
}

/* the most line starts the index can hold after the replacement */
static size_t line_index_bound(const Document *doc, size_t start, size_t end, size_t length) {
    size_t keep_before = start ? first_start_at_or_after(doc->line_starts, doc->line_count, start) : 1;
    size_t after = first_start_at_or_after(doc->line_starts, doc->line_count, end + 1);
    return keep_before + length + 1 + (doc->line_count - after);
}

bool document_replace(Document *doc, size_t start, size_t end, const char *text, size_t length) {
    if (start > doc->length) start = doc->length;
    if (end > doc->length) end = doc->length;
    if (end < start) end = start;
    size_t new_length = doc->length - (end - start) + length;
    /* Text and index change in place, growing by half again when they run
     * out of room: a new copy of each per keystroke of a 150 KB module cost
     * page faults and, in the server, a sweep of the allocator's free lists
     * (malloc_consolidate) on the main thread. Both grow before either
     * changes, so that running out of memory leaves the document as it was. */
    size_t bound = line_index_bound(doc, start, end, length);
    if (bound > doc->line_capacity) {
        size_t capacity = bound + bound / 2;
        size_t *starts = realloc(doc->line_starts, capacity * sizeof *starts);
        if (!starts) return false;
        doc->line_starts = starts;
        doc->line_capacity = capacity;
    }
    uintptr_t from = (uintptr_t)text, own = (uintptr_t)doc->text;
    bool aliased = text && from >= own && from < own + doc->capacity;
    if (new_length + 1 > doc->capacity || aliased) {
        size_t capacity = new_length + 1 + (aliased ? 0 : (new_length + 1) / 2);
        char *buf = malloc(capacity);
        if (!buf) return false;
        memcpy(buf, doc->text, start);
        if (length) memcpy(buf + start, text, length);
        memcpy(buf + start + length, doc->text + end, doc->length - end + 1);
        free(doc->text);
        doc->text = buf;
        doc->capacity = capacity;
    } else {
        memmove(doc->text + start + length, doc->text + end, doc->length - end + 1);
        if (length) memcpy(doc->text + start, text, length);
    }
    doc->length = new_length;
    update_line_index(doc, start, end, length);
    return true;
}

size_t document_line_of(const Document *doc, size_t offset) {
    size_t lo = 0, hi = doc->line_count; /* find last start <= offset */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (doc->line_starts[mid] <= offset) lo = mid;
        else hi = mid;
    }
    return lo;
}

size_t document_line_end(const Document *doc, size_t line) {
    if (line >= doc->line_count) return doc->length;
    size_t end = line + 1 < doc->line_count ? doc->line_starts[line + 1] : doc->length;
    if (end > doc->line_starts[line] && line + 1 < doc->line_count) {
        end--; /* the terminator's last byte */
        if (doc->text[end] == '\n' && end > doc->line_starts[line] && doc->text[end - 1] == '\r')
            end--;
    }
    return end;
}

size_t utf8_decode(const char *text, size_t length, size_t i, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)text;
    unsigned char c = s[i];
    size_t n;
    uint32_t v;
    if (c < 0x80) { *cp = c; return 1; }
    else if ((c & 0xE0) == 0xC0) { n = 2; v = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 3; v = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 4; v = c & 0x07; }
    else { *cp = 0xFFFD; return 1; }
    if (i + n > length) { *cp = 0xFFFD; return 1; }
    for (size_t k = 1; k < n; k++) {
        if ((s[i + k] & 0xC0) != 0x80) { *cp = 0xFFFD; return 1; }
        v = (v << 6) | (s[i + k] & 0x3F);
    }
    *cp = v;
    return n;
}

bool utf8_validate(const char *text, size_t length, size_t *bad_offset) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < length) {
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t n;
        uint32_t v, min;
        if ((c & 0xE0) == 0xC0) { n = 2; v = c & 0x1F; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { n = 3; v = c & 0x0F; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { n = 4; v = c & 0x07; min = 0x10000; }
        else goto bad;
        if (i + n > length) goto bad;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) goto bad;
            v = (v << 6) | (s[i + k] & 0x3F);
        }
        if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto bad;
        i += n;
    }
    return true;
bad:
    if (bad_offset) *bad_offset = i;
    return false;
}

static uint32_t units_of(uint32_t cp, size_t bytes, PositionEncoding enc) {
    switch (enc) {
    case POSITION_UTF8: return (uint32_t)bytes;
    case POSITION_UTF16: return cp >= 0x10000 && bytes == 4 ? 2 : 1;
    case POSITION_UTF32: return 1;
    }
    return 1;
}

Position document_position_at(const Document *doc, size_t offset, PositionEncoding enc) {
    if (offset > doc->length) offset = doc->length;
    size_t line = document_line_of(doc, offset);
    size_t i = doc->line_starts[line];
    size_t end = document_line_end(doc, line);
    if (offset > end) offset = end; /* inside a CRLF terminator */
    uint32_t col = 0;
    while (i < offset) {
        uint32_t cp;
        size_t n = utf8_decode(doc->text, doc->length, i, &cp);
        if (i + n > offset) break; /* offset inside this character */
        col += units_of(cp, n, enc);
        i += n;
    }
    return (Position){(uint32_t)line, col};
}

size_t document_offset_at(const Document *doc, Position pos, PositionEncoding enc) {
    if (pos.line >= doc->line_count) return doc->length;
    size_t i = doc->line_starts[pos.line];
    size_t end = document_line_end(doc, pos.line);
    uint32_t col = 0;
    while (i < end && col < pos.character) {
        uint32_t cp;
        size_t n = utf8_decode(doc->text, doc->length, i, &cp);
        uint32_t u = units_of(cp, n, enc);
        if (col + u > pos.character) break; /* inside this character */
        col += u;
        i += n;
    }
    return i;
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

Language language_for_path(const char *path) {
    if (!path) return LANGUAGE_UNKNOWN;
    if (has_suffix(path, ".py") || has_suffix(path, ".pyi")) return LANGUAGE_PYTHON;
    static const char *cuda[] = {".cu", ".cuh", ".cc", ".cpp", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx"};
    for (size_t k = 0; k < sizeof cuda / sizeof *cuda; k++)
        if (has_suffix(path, cuda[k])) return LANGUAGE_CUDA;
    return LANGUAGE_UNKNOWN;
}

const char *language_name(Language language) {
    switch (language) {
    case LANGUAGE_PYTHON: return "python";
    case LANGUAGE_CUDA: return "cuda";
    default: return "unknown";
    }
}
