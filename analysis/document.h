/* A source document: UTF-8 text with a line index, and conversions between
 * byte offsets and line/column positions counted in UTF-8 bytes, UTF-16 code
 * units or code points (UTF-32). Every other module speaks byte offsets; only
 * the edges (LSP, text output) convert. */
#ifndef ADVISE_DOCUMENT_H
#define ADVISE_DOCUMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    POSITION_UTF8,  /* columns in bytes */
    POSITION_UTF16, /* columns in UTF-16 code units (LSP default) */
    POSITION_UTF32, /* columns in code points */
} PositionEncoding;

typedef struct {
    uint32_t line;      /* 0-based */
    uint32_t character; /* 0-based, in the chosen encoding */
} Position;

typedef enum {
    LANGUAGE_UNKNOWN = 0,
    LANGUAGE_PYTHON = 1 << 0,
    LANGUAGE_CUDA = 1 << 1, /* CUDA, C and C++ */
} Language;

typedef struct {
    char *path;          /* as given by the caller; may be NULL */
    Language language;
    char *text;          /* NUL-terminated; may hold invalid UTF-8 only if the caller allowed it */
    size_t length;       /* bytes, without the terminating NUL */
    size_t capacity;     /* bytes allocated for text (room to grow in place) */
    size_t *line_starts; /* byte offset of each line's first byte */
    size_t line_count;   /* >= 1 */
    size_t line_capacity; /* entries allocated for line_starts */
} Document;

/* Copies text. Returns NULL only when memory runs out. */
Document *document_new(const char *path, Language language, const char *text, size_t length);
/* A copy of doc, its line index included. NULL when memory runs out. */
Document *document_clone(const Document *doc);
void document_free(Document *doc);

/* Replaces bytes [start, end) with text, keeping the line index current.
 * Offsets are clamped to the document. Returns false when memory runs out
 * (the document is then unchanged). */
bool document_replace(Document *doc, size_t start, size_t end, const char *text, size_t length);

/* The 0-based line holding byte offset (offsets past the end map to the last line). */
size_t document_line_of(const Document *doc, size_t offset);
/* Byte offset of the end of a line's content, before its terminator. */
size_t document_line_end(const Document *doc, size_t line);

/* Converts a byte offset to a position. An offset inside a multi-byte
 * character maps to that character's start. */
Position document_position_at(const Document *doc, size_t offset, PositionEncoding enc);

/* Converts a position to a byte offset. Lines past the end map to the end of
 * the document, columns past the line's end to the line's end, and a column
 * inside a character (e.g. between the halves of a surrogate pair) to the
 * character's start. */
size_t document_offset_at(const Document *doc, Position pos, PositionEncoding enc);

/* True when text[0..length) is valid UTF-8 (no overlongs, no surrogates, no
 * code points above U+10FFFF). On failure *bad_offset holds the first bad byte. */
bool utf8_validate(const char *text, size_t length, size_t *bad_offset);

/* Decodes one code point at text[i] (assumes valid UTF-8); returns its byte
 * length (1 for a stray byte) and stores the code point in *cp. */
size_t utf8_decode(const char *text, size_t length, size_t i, uint32_t *cp);

Language language_for_path(const char *path);
const char *language_name(Language language);

#endif
