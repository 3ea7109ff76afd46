/* The document model: the line index, byte offset <-> position conversions
 * in the three LSP encodings, UTF-8 validation, incremental replacement and
 * language detection. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/document.h"

static Document *doc_of(const char *text) { return document_new("t.py", LANGUAGE_PYTHON, text, strlen(text)); }

static const char *enc_name(PositionEncoding enc) {
    return enc == POSITION_UTF8 ? "utf-8" : enc == POSITION_UTF16 ? "utf-16" : "utf-32";
}

static void expect_position(const Document *doc, size_t offset, PositionEncoding enc, uint32_t line, uint32_t ch) {
    Position p = document_position_at(doc, offset, enc);
    cr_expect(p.line == line && p.character == ch, "%s: offset %zu -> (%u,%u), expected (%u,%u)", enc_name(enc),
              offset, p.line, p.character, line, ch);
}

static void expect_offset(const Document *doc, uint32_t line, uint32_t ch, PositionEncoding enc, size_t offset) {
    size_t got = document_offset_at(doc, (Position){line, ch}, enc);
    cr_expect(got == offset, "%s: (%u,%u) -> offset %zu, expected %zu", enc_name(enc), line, ch, got, offset);
}

static void expect_lines(const Document *doc, const size_t *starts, size_t count) {
    cr_assert(doc->line_count == count, "line_count %zu, expected %zu", doc->line_count, count);
    for (size_t i = 0; i < count; i++)
        cr_expect(doc->line_starts[i] == starts[i], "line %zu starts at %zu, expected %zu", i, doc->line_starts[i],
                  starts[i]);
}

/* ---- line index ---------------------------------------------------------- */

Test(lines, lf_crlf_and_lone_cr_terminators) {
    Document *doc = doc_of("a\nb\r\nc\rd");
    cr_assert_not_null(doc);
    expect_lines(doc, (size_t[]){0, 2, 5, 7}, 4);
    cr_expect(document_line_end(doc, 0) == 1);
    cr_expect(document_line_end(doc, 1) == 3, "CRLF line ends before the \\r, got %zu", document_line_end(doc, 1));
    cr_expect(document_line_end(doc, 2) == 6, "lone-CR line ends before the \\r, got %zu", document_line_end(doc, 2));
    cr_expect(document_line_end(doc, 3) == 8);
    cr_expect(document_line_end(doc, 99) == 8, "a line past the end ends at the document's end");
    /* every byte belongs to the line whose terminator it is part of */
    size_t expected_line[] = {0, 0, 1, 1, 1, 2, 2, 3, 3};
    for (size_t off = 0; off <= doc->length; off++)
        cr_expect(document_line_of(doc, off) == expected_line[off], "offset %zu on line %zu, expected %zu", off,
                  document_line_of(doc, off), expected_line[off]);
    cr_expect(document_line_of(doc, 1000) == 3, "offsets past the end map to the last line");
    document_free(doc);
}

Test(lines, consecutive_terminators_make_empty_lines) {
    Document *doc = doc_of("\r\n\r\n");
    expect_lines(doc, (size_t[]){0, 2, 4}, 3);
    cr_expect(document_line_end(doc, 0) == 0 && document_line_end(doc, 1) == 2 && document_line_end(doc, 2) == 4);
    document_free(doc);

    doc = doc_of("\r\r");
    expect_lines(doc, (size_t[]){0, 1, 2}, 3);
    document_free(doc);

    doc = doc_of("\n\r"); /* LF then a lone CR: not one CRLF */
    expect_lines(doc, (size_t[]){0, 1, 2}, 3);
    document_free(doc);

    doc = doc_of("\n\n\n");
    expect_lines(doc, (size_t[]){0, 1, 2, 3}, 4);
    document_free(doc);
}

Test(lines, empty_text) {
    Document *doc = document_new(NULL, LANGUAGE_UNKNOWN, "", 0);
    cr_assert_not_null(doc);
    cr_expect(doc->length == 0 && doc->text[0] == '\0');
    expect_lines(doc, (size_t[]){0}, 1);
    cr_expect(document_line_end(doc, 0) == 0);
    cr_expect(document_line_of(doc, 0) == 0);
    for (int e = POSITION_UTF8; e <= POSITION_UTF32; e++) {
        expect_position(doc, 0, e, 0, 0);
        expect_position(doc, 5, e, 0, 0);
        expect_offset(doc, 0, 0, e, 0);
        expect_offset(doc, 0, 7, e, 0);
        expect_offset(doc, 3, 1, e, 0);
    }
    cr_expect(doc->path == NULL);
    document_free(doc);
}

Test(lines, final_newline_or_not) {
    Document *doc = doc_of("abc");
    expect_lines(doc, (size_t[]){0}, 1);
    cr_expect(document_line_end(doc, 0) == 3);
    expect_position(doc, 3, POSITION_UTF16, 0, 3);
    document_free(doc);

    doc = doc_of("abc\n");
    expect_lines(doc, (size_t[]){0, 4}, 2);
    cr_expect(document_line_end(doc, 0) == 3 && document_line_end(doc, 1) == 4);
    expect_position(doc, 4, POSITION_UTF16, 1, 0);
    expect_offset(doc, 1, 0, POSITION_UTF16, 4);
    document_free(doc);

    doc = doc_of("ab\ncd");
    expect_position(doc, 5, POSITION_UTF16, 1, 2);
    expect_offset(doc, 1, 99, POSITION_UTF16, 5);
    document_free(doc);
}

Test(lines, text_is_copied_and_terminated) {
    char buf[] = "xyz!";
    Document *doc = document_new("p.py", LANGUAGE_PYTHON, buf, 3);
    buf[0] = 'Q';
    cr_expect(strcmp(doc->text, "xyz") == 0, "the document keeps its own copy of exactly length bytes");
    cr_expect(strcmp(doc->path, "p.py") == 0 && doc->path != (char *)"p.py");
    cr_expect(doc->language == LANGUAGE_PYTHON);
    document_free(doc);
    document_free(NULL); /* allowed */
}

/* ---- positions ------------------------------------------------------------ */

/* a(1 byte) é(2) €(3) 中(3) 😀(4, a surrogate pair in UTF-16) b(1) */
static const char MIXED[] = "a\xC3\xA9\xE2\x82\xAC\xE4\xB8\xAD\xF0\x9F\x98\x80" "b\nsecond \xF0\x9F\x98\x80!";
static const size_t char_offsets[] = {0, 1, 3, 6, 9, 13, 14};
static const uint32_t utf8_cols[] = {0, 1, 3, 6, 9, 13, 14};
static const uint32_t utf16_cols[] = {0, 1, 2, 3, 4, 6, 7};
static const uint32_t utf32_cols[] = {0, 1, 2, 3, 4, 5, 6};

Test(positions, round_trips_on_every_character_boundary) {
    Document *doc = doc_of(MIXED);
    const uint32_t *cols[] = {utf8_cols, utf16_cols, utf32_cols};
    for (int e = POSITION_UTF8; e <= POSITION_UTF32; e++)
        for (size_t i = 0; i < sizeof char_offsets / sizeof *char_offsets; i++) {
            expect_position(doc, char_offsets[i], e, 0, cols[e][i]);
            expect_offset(doc, 0, cols[e][i], e, char_offsets[i]);
        }
    /* second line: "second " is 7 bytes, then the emoji, then '!' */
    size_t l1 = 15;
    cr_assert(doc->line_starts[1] == l1);
    expect_position(doc, l1 + 7, POSITION_UTF16, 1, 7);
    expect_position(doc, l1 + 11, POSITION_UTF16, 1, 9);
    expect_position(doc, l1 + 11, POSITION_UTF32, 1, 8);
    expect_position(doc, l1 + 11, POSITION_UTF8, 1, 11);
    expect_offset(doc, 1, 9, POSITION_UTF16, l1 + 11);
    expect_offset(doc, 1, 8, POSITION_UTF32, l1 + 11);
    expect_offset(doc, 1, 10, POSITION_UTF16, l1 + 12);
    document_free(doc);
}

Test(positions, round_trip_every_offset_of_a_multilingual_text) {
    /* position_at(offset_at(p)) == p and offset_at(position_at(o)) == o at every character start */
    const char *text = "x = \"\xC3\xA9t\xC3\xA9\"  # \xE2\x82\xAC\r\n\xE4\xB8\xAD\xE6\x96\x87\xF0\x9F\x98\x80\xF0\x9F\x98\x81\rz\n";
    Document *doc = doc_of(text);
    for (int e = POSITION_UTF8; e <= POSITION_UTF32; e++)
        for (size_t o = 0; o <= doc->length;) {
            uint32_t cp;
            size_t n = o < doc->length ? utf8_decode(doc->text, doc->length, o, &cp) : 1;
            size_t line = document_line_of(doc, o);
            bool in_terminator = o > document_line_end(doc, line);
            if (!in_terminator) {
                Position p = document_position_at(doc, o, e);
                size_t back = document_offset_at(doc, p, e);
                cr_expect(back == o, "%s: offset %zu -> (%u,%u) -> %zu", enc_name(e), o, p.line, p.character, back);
            }
            o += n;
        }
    document_free(doc);
}

Test(positions, offset_inside_a_character_maps_to_its_start) {
    Document *doc = doc_of(MIXED);
    expect_position(doc, 2, POSITION_UTF8, 0, 1);  /* inside é */
    expect_position(doc, 2, POSITION_UTF16, 0, 1);
    expect_position(doc, 4, POSITION_UTF16, 0, 2); /* inside € */
    expect_position(doc, 5, POSITION_UTF32, 0, 2);
    expect_position(doc, 7, POSITION_UTF8, 0, 6);  /* inside 中 */
    for (size_t off = 10; off <= 12; off++) {      /* inside the emoji */
        expect_position(doc, off, POSITION_UTF8, 0, 9);
        expect_position(doc, off, POSITION_UTF16, 0, 4);
        expect_position(doc, off, POSITION_UTF32, 0, 4);
    }
    document_free(doc);
}

Test(positions, column_inside_a_character_maps_to_its_start) {
    Document *doc = doc_of(MIXED);
    expect_offset(doc, 0, 5, POSITION_UTF16, 9); /* between the halves of the surrogate pair */
    expect_offset(doc, 0, 2, POSITION_UTF8, 1);  /* second byte of é */
    expect_offset(doc, 0, 4, POSITION_UTF8, 3);
    expect_offset(doc, 0, 5, POSITION_UTF8, 3);
    expect_offset(doc, 0, 10, POSITION_UTF8, 9);
    expect_offset(doc, 0, 12, POSITION_UTF8, 9);
    document_free(doc);

    doc = doc_of("\xF0\x9F\x98\x80\xF0\x9F\x98\x80x");
    expect_offset(doc, 0, 1, POSITION_UTF16, 0);
    expect_offset(doc, 0, 2, POSITION_UTF16, 4);
    expect_offset(doc, 0, 3, POSITION_UTF16, 4);
    expect_offset(doc, 0, 4, POSITION_UTF16, 8);
    expect_offset(doc, 0, 5, POSITION_UTF16, 9);
    document_free(doc);
}

Test(positions, past_line_end_clamps_and_past_last_line_maps_to_end) {
    Document *doc = doc_of(MIXED);
    for (int e = POSITION_UTF8; e <= POSITION_UTF32; e++) {
        expect_offset(doc, 0, 100, e, 14); /* the end of line 0's content, not past its '\n' */
        expect_offset(doc, 1, 100, e, doc->length);
        expect_offset(doc, 2, 0, e, doc->length);
        expect_offset(doc, 1000, 3, e, doc->length);
    }
    Position end = document_position_at(doc, doc->length + 100, POSITION_UTF16);
    cr_expect(end.line == 1 && end.character == 10, "past the end -> (%u,%u)", end.line, end.character);
    document_free(doc);
}

Test(positions, crlf_column_never_lands_between_cr_and_lf) {
    Document *doc = doc_of("ab\r\ncd\r\n");
    for (int e = POSITION_UTF8; e <= POSITION_UTF32; e++) {
        expect_offset(doc, 0, 2, e, 2);
        expect_offset(doc, 0, 3, e, 2);
        expect_offset(doc, 0, 50, e, 2);
        expect_offset(doc, 1, 3, e, 6);
        expect_position(doc, 2, e, 0, 2); /* the \r */
        expect_position(doc, 3, e, 0, 2); /* the \n of CRLF: still the end of line 0 */
        expect_position(doc, 4, e, 1, 0);
        expect_position(doc, 8, e, 2, 0);
    }
    document_free(doc);

    doc = doc_of("ab\rcd");
    expect_position(doc, 3, POSITION_UTF16, 1, 0);
    expect_offset(doc, 0, 9, POSITION_UTF16, 2);
    expect_offset(doc, 1, 1, POSITION_UTF16, 4);
    document_free(doc);
}

/* ---- UTF-8 ---------------------------------------------------------------- */

static void expect_invalid(const char *bytes, size_t length, size_t bad) {
    size_t at = 12345;
    bool ok = utf8_validate(bytes, length, &at);
    cr_expect(!ok, "accepted invalid bytes (first bad at %zu)", bad);
    cr_expect(at == bad, "first bad offset %zu, expected %zu", at, bad);
}

static void expect_valid(const char *bytes, size_t length) {
    size_t at = 12345;
    cr_expect(utf8_validate(bytes, length, &at), "rejected valid UTF-8 at %zu", at);
}

#define INVALID(s, bad) expect_invalid(s, sizeof s - 1, bad)
#define VALID(s) expect_valid(s, sizeof s - 1)

Test(utf8, rejects_overlongs) {
    INVALID("\xC0\x80", 0);
    INVALID("ab\xC0\x80", 2);
    INVALID("\xC1\xBF", 0);         /* U+007F in two bytes */
    INVALID("\xE0\x80\x80", 0);
    INVALID("x\xE0\x9F\xBF", 1);    /* U+07FF in three bytes */
    INVALID("\xF0\x8F\xBF\xBF", 0); /* U+FFFF in four bytes */
}

Test(utf8, rejects_surrogates_and_too_large) {
    INVALID("\xED\xA0\x80", 0); /* U+D800 */
    INVALID("ok\xED\xBF\xBF", 2); /* U+DFFF */
    INVALID("\xED\xA0\xBD\xED\xB8\x80", 0); /* CESU-8 pair */
    INVALID("\xF4\x90\x80\x80", 0); /* U+110000 */
    INVALID("\xF5\x80\x80\x80", 0);
    INVALID("\xF8\x88\x80\x80\x80", 0);
    INVALID("\xFE", 0);
    INVALID("\xFF", 0);
    VALID("\xED\x9F\xBF");     /* U+D7FF */
    VALID("\xEE\x80\x80");     /* U+E000 */
    VALID("\xF4\x8F\xBF\xBF"); /* U+10FFFF */
}

Test(utf8, rejects_truncated_sequences) {
    INVALID("\xC3", 0);
    INVALID("x\xE2\x82", 1);
    INVALID("\xF0\x9F\x98", 0);
    INVALID("\xE2\x82" "A", 0); /* continuation missing, ASCII follows */
    INVALID("\xF0\x9F\x98" "\xC3\xA9", 0);
    /* the length is respected: a sequence cut by it is truncated */
    expect_invalid("\xC3\xA9", 1, 0);
    expect_invalid("a\xF0\x9F\x98\x80", 4, 1);
}

Test(utf8, rejects_stray_continuation_bytes) {
    INVALID("\x80", 0);
    INVALID("ab\xBF", 2);
    INVALID("\xC3\xA9\xA9", 2);
    INVALID("\xE2\x82\xAC\x80x", 3);
}

Test(utf8, reports_the_first_bad_offset) {
    INVALID("abc\xC3\xA9\xFF\xC0\x80", 5);
    INVALID("\xE4\xB8\xAD\xE6\x96\x87 \x80 \xFF", 7);
    cr_expect(!utf8_validate("\xC0\x80", 2, NULL), "a NULL bad_offset is allowed");
}

Test(utf8, accepts_valid_text) {
    VALID("");
    VALID("plain ascii\n");
    VALID("caf\xC3\xA9 \xE2\x82\xAC \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80");
    VALID("\xC2\x80");         /* U+0080, smallest 2-byte */
    VALID("\xDF\xBF");         /* U+07FF */
    VALID("\xE0\xA0\x80");     /* U+0800, smallest 3-byte */
    VALID("\xEF\xBF\xBF");     /* U+FFFF */
    VALID("\xF0\x90\x80\x80"); /* U+10000, smallest 4-byte */
    expect_valid("a\0b", 3);   /* NUL is a valid code point */
    cr_expect(utf8_validate(MIXED, strlen(MIXED), NULL));
}

Test(utf8, decode) {
    uint32_t cp;
    cr_expect(utf8_decode("A", 1, 0, &cp) == 1 && cp == 'A');
    cr_expect(utf8_decode("\xC3\xA9", 2, 0, &cp) == 2 && cp == 0xE9);
    cr_expect(utf8_decode("\xE2\x82\xAC", 3, 0, &cp) == 3 && cp == 0x20AC);
    cr_expect(utf8_decode("x\xF0\x9F\x98\x80", 5, 1, &cp) == 4 && cp == 0x1F600);
    cr_expect(utf8_decode("\x80", 1, 0, &cp) == 1 && cp == 0xFFFD, "a stray byte decodes as one U+FFFD");
    cr_expect(utf8_decode("\xE2\x82", 2, 0, &cp) == 1 && cp == 0xFFFD, "a truncated sequence is one stray byte");
}

/* ---- replace -------------------------------------------------------------- */

/* the incremental index must equal the one a fresh document builds */
static void expect_same_index(const Document *doc) {
    Document *fresh = document_new(NULL, LANGUAGE_UNKNOWN, doc->text, doc->length);
    cr_assert(doc->text[doc->length] == '\0', "text not NUL-terminated after replace");
    cr_assert(doc->line_count == fresh->line_count, "line_count %zu, fresh %zu (text \"%s\")", doc->line_count,
              fresh->line_count, doc->text);
    for (size_t i = 0; i < doc->line_count; i++)
        cr_expect(doc->line_starts[i] == fresh->line_starts[i], "line %zu at %zu, fresh %zu", i, doc->line_starts[i],
                  fresh->line_starts[i]);
    document_free(fresh);
}

static void replace(Document *doc, size_t start, size_t end, const char *text) {
    cr_assert(document_replace(doc, start, end, text, strlen(text)));
}

Test(replace, insert_newline) {
    Document *doc = doc_of("a\nb\nc");
    replace(doc, 1, 1, "\n");
    cr_expect(strcmp(doc->text, "a\n\nb\nc") == 0);
    expect_lines(doc, (size_t[]){0, 2, 3, 5}, 4);
    expect_position(doc, 5, POSITION_UTF16, 3, 0);
    expect_same_index(doc);
    replace(doc, 0, 0, "x\r\ny");
    cr_expect(strcmp(doc->text, "x\r\nya\n\nb\nc") == 0);
    expect_lines(doc, (size_t[]){0, 3, 6, 7, 9}, 5);
    document_free(doc);
}

Test(replace, delete_lines) {
    Document *doc = doc_of("l0\nl1\nl2\nl3\n");
    replace(doc, 3, 9, "");
    cr_expect(strcmp(doc->text, "l0\nl3\n") == 0);
    cr_expect(doc->length == 6);
    expect_lines(doc, (size_t[]){0, 3, 6}, 3);
    expect_offset(doc, 1, 1, POSITION_UTF8, 4);
    replace(doc, 0, doc->length, "");
    cr_expect(doc->length == 0 && doc->text[0] == '\0');
    expect_lines(doc, (size_t[]){0}, 1);
    document_free(doc);
}

Test(replace, replace_across_lines) {
    Document *doc = doc_of("abc\ndef\nghi");
    replace(doc, 2, 9, "X\r\n\xC3\xA9Y");
    cr_expect(strcmp(doc->text, "abX\r\n\xC3\xA9Yhi") == 0, "got \"%s\"", doc->text);
    expect_lines(doc, (size_t[]){0, 5}, 2);
    cr_expect(document_line_end(doc, 0) == 3);
    expect_position(doc, 8, POSITION_UTF16, 1, 2); /* 'h' after é and Y */
    expect_same_index(doc);
    document_free(doc);
}

Test(replace, joining_cr_and_lf_makes_one_terminator) {
    /* deleting the text between a \r and a \n turns two line breaks into one CRLF */
    Document *doc = doc_of("a\rX\nb");
    expect_lines(doc, (size_t[]){0, 2, 4}, 3);
    replace(doc, 2, 3, "");
    expect_lines(doc, (size_t[]){0, 3}, 2);
    cr_expect(document_line_end(doc, 0) == 1);
    document_free(doc);
}

Test(replace, offsets_are_clamped) {
    Document *doc = doc_of("abc");
    replace(doc, 100, 200, "\nd");
    cr_expect(strcmp(doc->text, "abc\nd") == 0);
    expect_lines(doc, (size_t[]){0, 4}, 2);
    replace(doc, 2, 1, "Z"); /* end before start: an insertion at start */
    cr_expect(strcmp(doc->text, "abZc\nd") == 0, "got \"%s\"", doc->text);
    document_free(doc);
}

Test(replace, random_edits_keep_the_index_right) {
    static const char *pieces[] = {"", "a", "\n", "\r", "\r\n", "xy\nz", "\xC3\xA9", "\n\n\r", "line\r\nnext\rlast"};
    Document *doc = doc_of("start\r\nmiddle\nend\r");
    unsigned seed = 12345;
    for (int round = 0; round < 500; round++) {
        seed = seed * 1103515245u + 12345u;
        size_t start = (seed >> 8) % (doc->length + 1);
        seed = seed * 1103515245u + 12345u;
        size_t end = start + (seed >> 8) % 5;
        if (end > doc->length) end = doc->length;
        seed = seed * 1103515245u + 12345u;
        const char *piece = pieces[(seed >> 8) % (sizeof pieces / sizeof *pieces)];
        char *expected = malloc(doc->length + strlen(piece) + 1);
        memcpy(expected, doc->text, start);
        strcpy(expected + start, piece);
        strcat(expected, doc->text + end);
        replace(doc, start, end, piece);
        cr_assert(strcmp(doc->text, expected) == 0 && doc->length == strlen(expected), "round %d: wrong text", round);
        free(expected);
        expect_same_index(doc);
        if (doc->length > 400) replace(doc, 0, doc->length - 100, "");
    }
    document_free(doc);
}

/* ---- languages ------------------------------------------------------------ */

Test(language, for_path) {
    cr_expect(language_for_path("train.py") == LANGUAGE_PYTHON);
    cr_expect(language_for_path("/a/b/stubs.pyi") == LANGUAGE_PYTHON);
    static const char *cuda[] = {"k.cu", "k.cuh", "x.cc", "x.cpp", "x.cxx", "x.c", "x.h", "x.hpp", "x.hh", "dir/x.hxx"};
    for (size_t i = 0; i < sizeof cuda / sizeof *cuda; i++)
        cr_expect(language_for_path(cuda[i]) == LANGUAGE_CUDA, "%s", cuda[i]);
    static const char *unknown[] = {"README.md", "Makefile", "x.pyc", "notpy", "dir.py/file", "a.ch", "main.rc", "",
                                    "x.cu.bak"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        cr_expect(language_for_path(unknown[i]) == LANGUAGE_UNKNOWN, "%s", unknown[i]);
    cr_expect(language_for_path(NULL) == LANGUAGE_UNKNOWN);
    cr_expect(strcmp(language_name(LANGUAGE_PYTHON), "python") == 0);
    cr_expect(strcmp(language_name(LANGUAGE_CUDA), "cuda") == 0);
    cr_expect(strcmp(language_name(LANGUAGE_UNKNOWN), "unknown") == 0);
}

Test(clone, copies_text_path_and_line_index) {
    Document *doc = doc_of("one\r\ntwo\rthree\nfour");
    replace(doc, 4, 4, "\n");
    Document *copy = document_clone(doc);
    cr_assert_not_null(copy);
    cr_expect(copy->text != doc->text && copy->line_starts != doc->line_starts);
    cr_expect(copy->length == doc->length && memcmp(copy->text, doc->text, doc->length + 1) == 0);
    cr_expect(copy->language == doc->language);
    cr_expect((copy->path == NULL) == (doc->path == NULL));
    if (doc->path) cr_expect(strcmp(copy->path, doc->path) == 0);
    expect_same_index(copy);
    cr_expect(copy->line_count == doc->line_count);
    replace(copy, 0, copy->length, "x"); /* the copy is its own */
    cr_expect(strcmp(doc->text, "one\r\n\ntwo\rthree\nfour") == 0, "got \"%s\"", doc->text);
    document_free(copy);
    document_free(doc);
}

Test(replace, text_taken_from_the_document_itself) {
    /* a piece that points into the document's own buffer is read before the buffer changes */
    Document *doc = doc_of("abc\ndef\n");
    cr_assert(document_replace(doc, 0, 0, doc->text + 4, 4)); /* "def\n" in front */
    cr_expect(strcmp(doc->text, "def\nabc\ndef\n") == 0, "got \"%s\"", doc->text);
    expect_same_index(doc);
    cr_assert(document_replace(doc, 4, 8, doc->text, 3)); /* "abc\n" -> "def" */
    cr_expect(strcmp(doc->text, "def\ndefdef\n") == 0, "got \"%s\"", doc->text);
    expect_same_index(doc);
    document_free(doc);
}

Test(replace, grows_and_shrinks_in_place) {
    Document *doc = doc_of("x\n");
    for (int i = 0; i < 2000; i++) cr_assert(document_replace(doc, doc->length, doc->length, "y = 1\n", 6));
    cr_expect(doc->length == 2 + 2000 * 6 && doc->line_count == 2002);
    cr_expect(doc->capacity > doc->length);
    for (int i = 0; i < 2000; i++) cr_assert(document_replace(doc, 2, 8, "", 0));
    cr_expect(strcmp(doc->text, "x\n") == 0 && doc->line_count == 2);
    expect_same_index(doc);
    document_free(doc);
}
