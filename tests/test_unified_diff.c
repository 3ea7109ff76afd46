/* The unified diff of `advise check --diff` (server/render/unified_diff.c) made
 * round trips: for each before/after pair the test writes "before", makes
 * the diff with unified_diff_write, applies it with GNU patch, and the
 * result must equal "after" byte for byte. patch runs strictly (no fuzz,
 * --binary so that it leaves CRs alone) and must not report a hunk applied
 * at an offset, which would mean wrong line numbers in a hunk header.
 *
 * The pairs: edits at the start, the end and the middle, hunks close
 * enough to merge and far apart, empty texts, texts without a final
 * newline, CRLF lines, long texts with many changes, texts so different
 * that the writer falls back to one hunk, and a seeded generator of random
 * edits over texts with many repeated lines (ADVISE_DIFF_SEED=n picks
 * another seed). The tests skip when `patch` is not installed
 * (scripts/setup.sh installs it). */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/render/unified_diff.h"

static bool have_patch(void) { return system("patch --version >/dev/null 2>&1") == 0; }

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static void spit(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fwrite(text, 1, len, f);
    fclose(f);
}

typedef struct {
    char dir[64];
    char before[128], diff[128], result[128], log[128];
} Scratch;

static Scratch scratch_new(void) {
    Scratch s;
    snprintf(s.dir, sizeof s.dir, "/tmp/advise-udiff-XXXXXX");
    cr_assert_not_null(mkdtemp(s.dir));
    snprintf(s.before, sizeof s.before, "%s/before.txt", s.dir);
    snprintf(s.diff, sizeof s.diff, "%s/change.diff", s.dir);
    snprintf(s.result, sizeof s.result, "%s/result.txt", s.dir);
    snprintf(s.log, sizeof s.log, "%s/patch.log", s.dir);
    return s;
}

static void scratch_free(const Scratch *s) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    cr_expect_eq(system(cmd), 0);
}

/* a text with its control characters visible, cut short, for messages */
static char *visible(const char *text, size_t len) {
    size_t cap = 4 * (len < 2000 ? len : 2000) + 16, k = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < len && k + 8 < cap; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') k += (size_t)snprintf(out + k, cap - k, "\\n\n");
        else if (c == '\r') k += (size_t)snprintf(out + k, cap - k, "\\r");
        else if (c < 32 || c >= 127) k += (size_t)snprintf(out + k, cap - k, "\\x%02x", c);
        else out[k++] = (char)c;
    }
    if (len > 2000) k += (size_t)snprintf(out + k, cap - k, "...");
    out[k] = '\0';
    return out;
}

/* Round trip of one pair; returns false (after reporting) when it fails. */
static bool round_trip(const char *name, const char *before, size_t blen, const char *after, size_t alen) {
    Scratch s = scratch_new();
    spit(s.before, before, blen);
    FILE *out = fopen(s.diff, "wb");
    cr_assert_not_null(out);
    bool wrote = unified_diff_write(out, "a/file.txt", "b/file.txt", before, blen, after, alen);
    fclose(out);
    cr_assert(wrote, "%s: unified_diff_write failed", name);
    size_t dlen = 0;
    char *diff = slurp(s.diff, &dlen);
    bool ok = true;
    if (blen == alen && memcmp(before, after, blen) == 0) {
        ok = dlen == 0;
        cr_expect(ok, "%s: equal texts, yet a diff:\n%s", name, diff);
        free(diff);
        scratch_free(&s);
        return ok;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "patch --batch --fuzz=0 --binary --no-backup-if-mismatch -o '%s' '%s' <'%s' >'%s' 2>&1", s.result,
             s.before, s.diff, s.log);
    int status = system(cmd);
    size_t loglen = 0, rlen = 0;
    char *log = slurp(s.log, &loglen);
    char *result = slurp(s.result, &rlen);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        ok = false;
        cr_expect_fail("%s: patch refused the diff:\n%s\n--- the diff:\n%s", name, log ? log : "", diff);
    } else if (strstr(log, "offset") || strstr(log, "fuzz") || strstr(log, "malformed")) {
        ok = false;
        cr_expect_fail("%s: patch applied the diff only loosely:\n%s\n--- the diff:\n%s", name, log, diff);
    } else if (!result || rlen != alen || memcmp(result, after, alen) != 0) {
        ok = false;
        char *want = visible(after, alen), *got = visible(result ? result : "", result ? rlen : 0);
        char *shown = visible(diff, dlen);
        cr_expect_fail("%s: the patched text differs from \"after\"\n--- want:\n%s\n--- got:\n%s\n--- the diff:\n%s",
                       name, want, got, shown);
        free(want);
        free(got);
        free(shown);
    }
    free(log);
    free(result);
    free(diff);
    scratch_free(&s);
    return ok;
}

#define ROUND_TRIP(name, before, after) round_trip(name, before, strlen(before), after, strlen(after))

/* ---- hand-written pairs -------------------------------------------------------------- */

#define TEN "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"

Test(unified_diff, edits_at_the_start_end_and_middle) {
    if (!have_patch()) cr_skip_test("patch is not installed");
    ROUND_TRIP("first line changed", TEN, "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    ROUND_TRIP("line added before the first", TEN, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    ROUND_TRIP("first line deleted", TEN, "2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    ROUND_TRIP("last line changed", TEN, "1\n2\n3\n4\n5\n6\n7\n8\n9\nten\n");
    ROUND_TRIP("line added after the last", TEN, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n");
    ROUND_TRIP("last line deleted", TEN, "1\n2\n3\n4\n5\n6\n7\n8\n9\n");
    ROUND_TRIP("middle line changed", TEN, "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n");
    ROUND_TRIP("middle lines inserted", TEN, "1\n2\n3\n4\n5\na\nb\nc\n6\n7\n8\n9\n10\n");
    ROUND_TRIP("middle lines deleted", TEN, "1\n2\n3\n8\n9\n10\n");
    ROUND_TRIP("one-line text changed", "a\n", "b\n");
    ROUND_TRIP("everything replaced", TEN, "a\nb\nc\n");
    ROUND_TRIP("lines swapped", TEN, "2\n1\n3\n4\n5\n6\n7\n8\n10\n9\n");
    ROUND_TRIP("indentation changed", "def f():\n    return 1\n", "def f():\n\treturn 1\n");
}

Test(unified_diff, adjacent_and_distant_hunks) {
    if (!have_patch()) cr_skip_test("patch is not installed");
    char before[4096], after[4096];
    /* two changes with 0..9 equal lines between them: one hunk or two */
    for (int gap = 0; gap <= 9; gap++) {
        size_t b = 0, a = 0;
        for (int i = 0; i < 30; i++) {
            b += (size_t)snprintf(before + b, sizeof before - b, "line %d\n", i);
            bool changed = i == 10 || i == 11 + gap;
            a += (size_t)snprintf(after + a, sizeof after - a, changed ? "LINE %d\n" : "line %d\n", i);
        }
        char name[64];
        snprintf(name, sizeof name, "two changes %d lines apart", gap);
        round_trip(name, before, b, after, a);
    }
    /* changes 3, 6, 7 and 20 lines apart, near both ends */
    size_t b = 0, a = 0;
    for (int i = 0; i < 80; i++) {
        b += (size_t)snprintf(before + b, sizeof before - b, "x = %d\n", i);
        if (i == 1 || i == 5 || i == 12 || i == 20 || i == 41 || i == 78) continue; /* deleted */
        a += (size_t)snprintf(after + a, sizeof after - a, "x = %d\n", i);
        if (i == 2 || i == 13 || i == 60 || i == 79) a += (size_t)snprintf(after + a, sizeof after - a, "new\n");
    }
    round_trip("hunks near and far", before, b, after, a);
}

Test(unified_diff, empty_texts) {
    if (!have_patch()) cr_skip_test("patch is not installed");
    ROUND_TRIP("both empty", "", "");
    ROUND_TRIP("from empty", "", "a\nb\n");
    ROUND_TRIP("to empty", "a\nb\n", "");
    ROUND_TRIP("from empty to no final newline", "", "a");
    ROUND_TRIP("from a lone unterminated line to empty", "a", "");
    ROUND_TRIP("from a blank line", "\n", "x\n");
    ROUND_TRIP("to a blank line", "x\n", "\n");
    ROUND_TRIP("blank lines added", "a\n", "a\n\n\n");
}

Test(unified_diff, no_newline_at_end_of_file) {
    if (!have_patch()) cr_skip_test("patch is not installed");
    ROUND_TRIP("newline added at the end", "a\nb", "a\nb\n");
    ROUND_TRIP("newline removed at the end", "a\nb\n", "a\nb");
    ROUND_TRIP("unterminated last line changed", "a\nb", "a\nc");
    ROUND_TRIP("line added after an unterminated one", "a\nb", "a\nb\nc");
    ROUND_TRIP("change far from an unterminated last line", TEN "11", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11");
    ROUND_TRIP("change near an unterminated last line", "1\n2\n3\n4\n5\n6", "1\n2\n3\nfour\n5\n6");
    ROUND_TRIP("unterminated single line", "a", "b");
    ROUND_TRIP("unterminated line kept, line added before", "a\nb", "a\nx\nb");
    ROUND_TRIP("both unterminated, last kept", "1\n2\n3\n4\n5\nend", "0\n1\n2\n3\n4\n5\nend");
}

Test(unified_diff, crlf_lines) {
    if (!have_patch()) cr_skip_test("patch is not installed");
    ROUND_TRIP("CRLF line changed", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n");
    ROUND_TRIP("CRLF line added", "a\r\nb\r\n", "a\r\nx\r\nb\r\n");
    ROUND_TRIP("CRLF to LF", "a\r\nb\r\n", "a\nb\n");
    ROUND_TRIP("mixed endings", "a\r\nb\nc\r\n", "a\r\nb\r\nc\n");
    ROUND_TRIP("CRLF without a final newline", "a\r\nb", "a\r\nb\r\n");
    ROUND_TRIP("lone CR inside a line", "a\rb\nc\n", "a\rb\nC\n");
}

Test(unified_diff, odd_bytes) {
    if (!have_patch()) cr_skip_test("patch is not installed");
    ROUND_TRIP("lines that look like diff syntax", "--- a\n+++ b\n@@ -1 +1 @@\n", "--- a\n+++ c\n@@ -1 +1 @@\n");
    ROUND_TRIP("backslash lines", "\\ No newline at end of file\nx\n", "\\ No newline at end of file\ny\n");
    ROUND_TRIP("UTF-8", "caf\xc3\xa9\n\xe2\x9c\x93\n", "caf\xc3\xa9!\n\xe2\x9c\x93\n");
    ROUND_TRIP("tabs and trailing spaces", "a\t \nb  \n", "a\t\nb  \n");
}

/* ---- generated pairs ------------------------------------------------------------------ */

static unsigned long long rng_state;

static unsigned rnd(unsigned n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng_state >> 33) % n);
}

typedef struct {
    char *text;
    size_t len, cap;
} Buf;

static void buf_put(Buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->text = realloc(b->text, b->cap);
    }
    memcpy(b->text + b->len, s, n);
    b->len += n;
    b->text[b->len] = '\0';
}

/* a line from a small vocabulary (many repeats, as code has: blank lines, braces) */
static void random_line(Buf *b, bool crlf) {
    static const char *const words[] = {"", "}", "{", "    return x;", "x += 1", "pass", "# comment", "import torch"};
    char line[64];
    int n = rnd(3) ? snprintf(line, sizeof line, "%s", words[rnd(8)])
                   : snprintf(line, sizeof line, "value_%u = %u", rnd(40), rnd(5));
    buf_put(b, line, (size_t)n);
    buf_put(b, crlf ? "\r\n" : "\n", crlf ? 2 : 1);
}

/* splits text into lines (each with its terminator, the last maybe without) */
static size_t split(const char *text, size_t len, const char **starts, size_t *lens, size_t max) {
    size_t n = 0, from = 0;
    for (size_t i = 0; i <= len && n < max; i++) {
        if (i == len ? i > from : text[i] == '\n') {
            size_t end = i == len ? len : i + 1;
            starts[n] = text + from;
            lens[n++] = end - from;
            from = end;
        }
    }
    return n;
}

/* "after": before with random line edits (runs of inserts, deletes, replacements) */
static Buf random_edit(const char *before, size_t blen, unsigned edits, bool crlf) {
    enum { MAX_LINES = 20000 };
    const char **starts = malloc(MAX_LINES * sizeof *starts);
    size_t *lens = malloc(MAX_LINES * sizeof *lens);
    size_t n = split(before, blen, starts, lens, MAX_LINES);
    /* for each line: 0 keep, 1 delete, 2 replace; inserts before it */
    unsigned char *op = calloc(n + 1, 1);
    unsigned *inserts = calloc(n + 1, sizeof *inserts);
    for (unsigned e = 0; e < edits; e++) {
        size_t at = rnd((unsigned)n + 1), run = 1 + rnd(rnd(4) ? 2 : 8);
        unsigned kind = rnd(3);
        for (size_t k = at; k < at + run && k <= n; k++) {
            if (kind == 0) inserts[k]++;
            else if (k < n) op[k] = (unsigned char)kind;
        }
    }
    Buf after = {0};
    buf_put(&after, "", 0);
    for (size_t i = 0; i <= n; i++) {
        for (unsigned k = 0; k < inserts[i]; k++) random_line(&after, crlf && rnd(4));
        if (i == n) break;
        if (op[i] == 0) buf_put(&after, starts[i], lens[i]);
        else if (op[i] == 2) random_line(&after, crlf && rnd(4));
    }
    /* sometimes the final newline goes or comes */
    if (rnd(5) == 0 && after.len && after.text[after.len - 1] == '\n') after.text[--after.len] = '\0';
    else if (rnd(5) == 0) buf_put(&after, "\n", 1);
    free(starts);
    free(lens);
    free(op);
    free(inserts);
    return after;
}

Test(unified_diff, generated_edits) {
    if (!have_patch()) cr_skip_test("patch is not installed");
    const char *seed_text = getenv("ADVISE_DIFF_SEED");
    unsigned long long seed = seed_text ? strtoull(seed_text, NULL, 10) : 7ull;
    rng_state = seed;
    size_t failures = 0;
    for (int c = 0; c < 120 && failures < 5; c++) {
        bool crlf = rnd(6) == 0;
        unsigned lines = c < 90 ? rnd(60) : 200 + rnd(1500); /* short texts, then long ones */
        Buf before = {0};
        buf_put(&before, "", 0);
        for (unsigned i = 0; i < lines; i++) random_line(&before, crlf);
        if (rnd(6) == 0 && before.len) before.text[--before.len] = '\0'; /* no final newline */
        unsigned edits = lines < 60 ? rnd(6) : 5 + rnd(80);
        Buf after = random_edit(before.text, before.len, edits, crlf);
        char name[96];
        snprintf(name, sizeof name, "generated pair %d (seed %llu, %u lines, %u edits)", c, seed, lines, edits);
        if (!round_trip(name, before.text, before.len, after.text, after.len)) failures++;
        free(before.text);
        free(after.text);
    }
}

/* texts too different for the edit-distance limit: one hunk replaces everything */
Test(unified_diff, too_different_falls_back_to_one_hunk) {
    if (!have_patch()) cr_skip_test("patch is not installed");
    Buf before = {0}, after = {0};
    buf_put(&before, "", 0);
    buf_put(&after, "", 0);
    char line[64];
    for (int i = 0; i < 2100; i++) {
        buf_put(&before, line, (size_t)snprintf(line, sizeof line, "old %d\n", i));
        buf_put(&after, line, (size_t)snprintf(line, sizeof line, "new %d\n", i));
    }
    round_trip("2100 lines, all replaced", before.text, before.len, after.text, after.len);
    free(before.text);
    free(after.text);
}
