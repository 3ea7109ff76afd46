/* Applying text edits, and choosing which fixes go in together. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/edits.h"

#define E(s, e, t) ((TextEdit){{(s), (e)}, (char *)(t)})
#define COUNT(a) (sizeof(a) / sizeof *(a))

static void expect_applied(const char *text, const TextEdit *edits, size_t count, const char *expected) {
    size_t len = 999;
    char *out = edits_apply(text, strlen(text), edits, count, &len);
    cr_assert_not_null(out, "edits rejected, expected \"%s\"", expected);
    cr_expect(strcmp(out, expected) == 0, "got \"%s\", expected \"%s\"", out, expected);
    cr_expect(len == strlen(expected), "out_length %zu, expected %zu", len, strlen(expected));
    free(out);
}

static void expect_rejected(const char *text, const TextEdit *edits, size_t count) {
    size_t len = 999;
    char *out = edits_apply(text, strlen(text), edits, count, &len);
    cr_expect_null(out, "edits accepted: \"%s\"", out ? out : "");
    free(out);
}

Test(edits_apply, no_edits_copies_the_text) {
    expect_applied("hello", NULL, 0, "hello");
    expect_applied("", NULL, 0, "");
    char *out = edits_apply("abc", 3, NULL, 0, NULL); /* out_length may be NULL */
    cr_assert_not_null(out);
    cr_expect(strcmp(out, "abc") == 0);
    free(out);
}

Test(edits_apply, insert_delete_replace_in_any_order) {
    const char *text = "hello world";
    TextEdit edits[] = {E(11, 11, "!"), E(0, 5, "HELLO"), E(5, 6, ""), E(6, 7, "W")};
    expect_applied(text, edits, COUNT(edits), "HELLOWorld!");
    /* every order of the same edits gives the same result */
    TextEdit perm[COUNT(edits)];
    for (int p = 0; p < 24; p++) {
        size_t a[4] = {0, 1, 2, 3};
        int k = p;
        for (int i = 3; i > 0; i--) {
            int j = k % (i + 1);
            k /= i + 1;
            size_t t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        for (int i = 0; i < 4; i++) perm[i] = edits[a[i]];
        expect_applied(text, perm, 4, "HELLOWorld!");
    }
}

Test(edits_apply, insertions_at_the_edges_and_into_empty_text) {
    TextEdit edits[] = {E(3, 3, ">"), E(0, 0, "<")};
    expect_applied("abc", edits, 2, "<abc>");
    TextEdit into_empty[] = {E(0, 0, "new")};
    expect_applied("", into_empty, 1, "new");
    TextEdit delete_all[] = {E(0, 3, "")};
    expect_applied("abc", delete_all, 1, "");
    TextEdit grow[] = {E(1, 2, "long replacement")};
    expect_applied("abc", grow, 1, "along replacementc");
}

Test(edits_apply, adjacent_edits_are_not_overlapping) {
    TextEdit edits[] = {E(2, 4, "Y"), E(0, 2, "X"), E(4, 6, "Z")};
    expect_applied("abcdef", edits, 3, "XYZ");
}

Test(edits_apply, insertion_goes_before_a_replacement_at_the_same_offset) {
    TextEdit a[] = {E(2, 2, "X"), E(2, 4, "Y")};
    expect_applied("abcdef", a, 2, "abXYef");
    TextEdit b[] = {E(2, 4, "Y"), E(2, 2, "X")};
    expect_applied("abcdef", b, 2, "abXYef");
    /* and an insertion at the replacement's end goes after it */
    TextEdit c[] = {E(4, 4, "X"), E(2, 4, "Y")};
    expect_applied("abcdef", c, 2, "abYXef");
}

Test(edits_apply, overlapping_edits_are_rejected) {
    TextEdit partial[] = {E(0, 5, "A"), E(3, 8, "B")};
    expect_rejected("hello world", partial, 2);
    TextEdit partial_reversed[] = {E(3, 8, "B"), E(0, 5, "A")};
    expect_rejected("hello world", partial_reversed, 2);
    TextEdit nested[] = {E(1, 2, "B"), E(0, 5, "A")};
    expect_rejected("hello world", nested, 2);
    TextEdit same[] = {E(0, 5, "A"), E(0, 5, "B")};
    expect_rejected("hello world", same, 2);
    TextEdit insertion_inside[] = {E(0, 5, "A"), E(3, 3, "B")};
    expect_rejected("hello world", insertion_inside, 2);
    TextEdit among_many[] = {E(0, 1, "a"), E(9, 11, "b"), E(4, 6, "c"), E(5, 7, "d")};
    expect_rejected("hello world", among_many, 4);
}

Test(edits_apply, out_of_range_edits_are_rejected) {
    TextEdit past_end[] = {E(3, 12, "x")};
    expect_rejected("hello world", past_end, 1);
    TextEdit insertion_past_end[] = {E(12, 12, "x")};
    expect_rejected("hello world", insertion_past_end, 1);
    TextEdit backwards[] = {E(5, 3, "x")};
    expect_rejected("hello world", backwards, 1);
    TextEdit one_bad_among_good[] = {E(0, 1, "H"), E(20, 30, "x")};
    expect_rejected("hello world", one_bad_among_good, 2);
    TextEdit at_end[] = {E(11, 11, "!")}; /* the very end is in range */
    expect_applied("hello world", at_end, 1, "hello world!");
}

Test(edits_apply, respects_length_not_nul) {
    const char text[] = "ab\0cd"; /* 5 bytes with a NUL inside */
    TextEdit edits[] = {E(4, 5, "D")};
    size_t len = 0;
    char *out = edits_apply(text, 5, edits, 1, &len);
    cr_assert_not_null(out);
    cr_expect(len == 5 && memcmp(out, "ab\0cD", 6) == 0);
    free(out);
}

/* ---- fixes_apply ---------------------------------------------------------- */

static Finding *add_finding(FindingList *list, const char *code, size_t start, size_t end) {
    Finding *f = finding_list_push(list);
    cr_assert_not_null(f);
    f->code = code;
    f->name = "test-rule";
    f->severity = SEVERITY_WARNING;
    f->range = (ByteRange){start, end};
    f->message = strdup("message");
    return f;
}

static Fix *add_fix(Finding *f, bool safe, size_t start, size_t end, const char *text) {
    Fix *fix = finding_add_fix(f, safe ? "safe fix" : "unsafe fix", safe);
    cr_assert_not_null(fix);
    cr_assert(fix_add_edit(fix, start, end, text));
    return fix;
}

static void expect_fixed(const char *text, const FindingList *list, bool unsafe, const char *expected,
                         size_t expected_applied) {
    size_t len = 999, applied = 999;
    char *out = fixes_apply(text, strlen(text), list, unsafe, &len, &applied);
    cr_assert_not_null(out);
    cr_expect(strcmp(out, expected) == 0, "got \"%s\", expected \"%s\"", out, expected);
    cr_expect(len == strlen(expected));
    cr_expect(applied == expected_applied, "applied %zu, expected %zu", applied, expected_applied);
    free(out);
}

Test(fixes_apply, first_fix_safe_only_unless_unsafe_and_overlaps_skipped) {
    const char *text = "hello world";
    FindingList list;
    finding_list_init(&list);
    Finding *f1 = add_finding(&list, "PY001", 0, 5);
    add_fix(f1, true, 0, 5, "HELLO");
    add_fix(f1, true, 0, 5, "bye"); /* never: only the first fix of a finding */
    Finding *f2 = add_finding(&list, "PY002", 11, 11);
    add_fix(f2, false, 11, 11, "!");
    Finding *f3 = add_finding(&list, "PY003", 3, 7);
    add_fix(f3, true, 3, 7, "XX"); /* overlaps f1's fix, picked before it */
    add_finding(&list, "PY004", 0, 1); /* no fix at all */
    Finding *f5 = add_finding(&list, "PY005", 5, 7);
    Fix *two = add_fix(f5, true, 5, 6, "_");
    cr_assert(fix_add_edit(two, 6, 7, "W"));
    Finding *f6 = add_finding(&list, "PY006", 8, 9);
    add_fix(f6, true, 8, 9, "R");

    expect_fixed(text, &list, false, "HELLO_WoRld", 3);
    expect_fixed(text, &list, true, "HELLO_WoRld!", 4);
    finding_list_free(&list);
}

Test(fixes_apply, the_fix_picked_first_wins) {
    const char *text = "hello world";
    FindingList list;
    finding_list_init(&list);
    add_fix(add_finding(&list, "PY003", 3, 7), true, 3, 7, "XX");
    add_fix(add_finding(&list, "PY001", 0, 5), true, 0, 5, "HELLO");
    expect_fixed(text, &list, false, "helXXorld", 1);
    finding_list_free(&list);
}

Test(fixes_apply, overlap_with_any_edit_of_a_picked_fix) {
    const char *text = "0123456789";
    FindingList list;
    finding_list_init(&list);
    Fix *a = add_fix(add_finding(&list, "PY001", 0, 1), true, 0, 1, "a");
    cr_assert(fix_add_edit(a, 8, 9, "i"));
    add_fix(add_finding(&list, "PY002", 7, 10), true, 7, 10, "XYZ"); /* clashes with a's second edit */
    add_fix(add_finding(&list, "PY003", 4, 5), true, 4, 5, "e");
    expect_fixed(text, &list, false, "a123e567i9", 2);
    finding_list_free(&list);
}

Test(fixes_apply, a_fix_whose_own_edits_overlap_is_skipped) {
    const char *text = "0123456789";
    FindingList list;
    finding_list_init(&list);
    Fix *bad = add_fix(add_finding(&list, "PY001", 0, 5), true, 0, 5, "A");
    cr_assert(fix_add_edit(bad, 2, 4, "B"));
    add_fix(add_finding(&list, "PY002", 9, 10), true, 9, 10, "X");
    expect_fixed(text, &list, false, "012345678X", 1);
    finding_list_free(&list);
}

Test(fixes_apply, unsafe_only_findings) {
    const char *text = "abc";
    FindingList list;
    finding_list_init(&list);
    add_fix(add_finding(&list, "PY001", 0, 1), false, 0, 1, "A");
    expect_fixed(text, &list, false, "abc", 0);
    expect_fixed(text, &list, true, "Abc", 1);
    finding_list_free(&list);
}

Test(fixes_apply, nothing_to_apply) {
    FindingList list;
    finding_list_init(&list);
    expect_fixed("unchanged", &list, true, "unchanged", 0);
    add_finding(&list, "PY001", 0, 1);
    expect_fixed("unchanged", &list, true, "unchanged", 0);
    finding_list_free(&list);
}
