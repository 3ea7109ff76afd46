/* Reading git's unified diff into changed lines (server/workspace/git_changes.h)
 * and the one rule that says whether a finding is on the change
 * (finding_on_change, server/render/check_filter.h): hunks, renames,
 * deletions, binary files, quoted paths, content lines that look like
 * headers, and mutated diffs that must never crash. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/document.h"
#include "analysis/finding.h"
#include "server/render/check_filter.h"
#include "server/workspace/git_changes.h"
#include "tests/cli_harness.h"

/* what `git diff -U0 -M HEAD` printed in a repository with a binary file
 * changed, two hunks, a deleted file, a rename without edits, a rename
 * with an edit (a name with a space and an accent: git ends its ---/+++
 * lines with a tab), and a new file whose name holds a tab (quoted) */
static const char DIFF[] = "diff --git a/b.bin b/b.bin\n"
                           "index 7989678..dedd3de 100644\n"
                           "Binary files a/b.bin and b/b.bin differ\n"
                           "diff --git a/f.py b/f.py\n"
                           "index 9405325..c23227c 100644\n"
                           "--- a/f.py\n"
                           "+++ b/f.py\n"
                           "@@ -2 +2 @@ a\n"
                           "-b\n"
                           "+B\n"
                           "@@ -3,0 +4,2 @@ c\n"
                           "+new\n"
                           "+diff --git a/x b/x\n"
                           "diff --git a/gone.py b/gone.py\n"
                           "deleted file mode 100644\n"
                           "index b68fde2..0000000\n"
                           "--- a/gone.py\n"
                           "+++ /dev/null\n"
                           "@@ -1 +0,0 @@\n"
                           "-k\n"
                           "diff --git a/mv.py b/moved.py\n"
                           "similarity index 100%\n"
                           "rename from mv.py\n"
                           "rename to moved.py\n"
                           "diff --git a/sp ace \xc3\xa9.py b/new n\xc3\xa4me.py\n"
                           "similarity index 75%\n"
                           "rename from sp ace \xc3\xa9.py\n"
                           "rename to new n\xc3\xa4me.py\n"
                           "index 04ec35a..a470291 100644\n"
                           "--- a/sp ace \xc3\xa9.py\t\n"
                           "+++ b/new n\xc3\xa4me.py\t\n"
                           "@@ -3,0 +4 @@ z\n"
                           "+w\n"
                           "diff --git \"a/ta\\tb.py\" \"b/ta\\tb.py\"\n"
                           "new file mode 100644\n"
                           "index 0000000..8cc35a3\n"
                           "--- /dev/null\n"
                           "+++ \"b/ta\\tb.py\"\n"
                           "@@ -0,0 +1 @@\n"
                           "+tab\n";

static GitChanges *parse(const char *top, const char *diff, const char *const *untracked, size_t n) {
    char *error = NULL;
    GitChanges *c = git_changes_parse(top, diff, strlen(diff), untracked, n, &error);
    cr_assert(c != NULL, "parse failed: %s", error ? error : "?");
    return c;
}

/* the state of top/rel (made as an empty file so that realpath finds it) */
static GitFileState state_of(const GitChanges *c, const char *top, const char *rel, const ChangedLines **lines) {
    char *p = path_in(top, rel);
    write_text(p, "");
    return git_changes_for(c, p, lines);
}

Test(git_diff, hunks_renames_deletions_binary_and_quoted_paths) {
    char *top = temp_dir();
    const char *untracked[] = {"untracked.py", "nested/"};
    GitChanges *c = parse(top, DIFF, untracked, 2);
    const ChangedLines *l;

    cr_assert_eq(state_of(c, top, "f.py", &l), GIT_FILE_CHANGED);
    cr_expect(!l->all);
    cr_assert_eq(l->count, 2, "line 2, then lines 4-5");
    cr_expect_eq(l->spans[0].first, 2);
    cr_expect_eq(l->spans[0].last, 2);
    cr_expect_eq(l->spans[1].first, 4);
    cr_expect_eq(l->spans[1].last, 5, "an added line that reads like a header is content");
    cr_expect(!changed_lines_touch(l, 1, 1));
    cr_expect(changed_lines_touch(l, 1, 2));
    cr_expect(!changed_lines_touch(l, 3, 3));
    cr_expect(changed_lines_touch(l, 5, 9));
    cr_expect(!changed_lines_touch(l, 6, 9));

    cr_expect_eq(state_of(c, top, "b.bin", &l), GIT_FILE_CHANGED);
    cr_expect(l && l->all, "a binary diff has no hunks: every line counts");
    cr_expect_eq(state_of(c, top, "moved.py", &l), GIT_FILE_UNCHANGED, "renamed without edits");
    cr_expect_eq(state_of(c, top, "mv.py", &l), GIT_FILE_UNCHANGED);
    cr_expect_eq(state_of(c, top, "gone.py", &l), GIT_FILE_UNCHANGED, "deleted");
    cr_expect_eq(state_of(c, top, "new n\xc3\xa4me.py", &l), GIT_FILE_CHANGED);
    cr_expect(l && l->count == 1 && l->spans[0].first == 4 && l->spans[0].last == 4, "only the edited line");
    cr_expect_eq(state_of(c, top, "ta\tb.py", &l), GIT_FILE_CHANGED);
    cr_expect(l && l->count == 1 && l->spans[0].first == 1);
    cr_expect_eq(state_of(c, top, "untracked.py", &l), GIT_FILE_CHANGED);
    cr_expect(l && l->all, "an untracked file is new: every line");
    cr_expect_eq(state_of(c, top, "other.py", &l), GIT_FILE_UNCHANGED);
    cr_expect_eq(git_changes_for(c, "/etc/hostname", &l), GIT_FILE_OUTSIDE);
    cr_expect_eq(git_changes_for(c, "/no/such/file.py", &l), GIT_FILE_UNKNOWN);
    cr_expect_eq(git_changes_file_count(c), 5);
    git_changes_free(c);
}

Test(git_diff, a_path_through_a_symlink_finds_its_file) {
    char *top = temp_dir();
    char *dir = path_in(top, "src");
    mkdir(dir, 0755);
    GitChanges *c = parse(top, "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n-a\n+b\n",
                          NULL, 0);
    write_text(path_in(top, "src/m.py"), "b\n");
    char *other = temp_dir();
    char *link = path_in(other, "link");
    cr_assert_eq(symlink(dir, link), 0);
    const ChangedLines *l;
    cr_expect_eq(git_changes_for(c, path_in(other, "link/m.py"), &l), GIT_FILE_CHANGED);
    git_changes_free(c);
}

Test(git_diff, broken_diffs_are_errors) {
    const char *bad[] = {
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n",            /* ends inside a hunk */
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -x +1 @@\n",                 /* no number */
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n",    /* more lines than it said */
        "diff --git a/f b/f\n--- a/f\n+++ \"b/f\n@@ -1 +1 @@\n-a\n+b\n",      /* quote not closed */
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +0,99999999999 @@\n",    /* too large */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *error = NULL;
        GitChanges *c = git_changes_parse("/tmp", bad[i], strlen(bad[i]), NULL, 0, &error);
        cr_expect(c == NULL && error != NULL, "case %zu should fail", i);
        git_changes_free(c);
        free(error);
    }
}

Test(git_diff, mutated_diffs_never_crash) {
    size_t n = strlen(DIFF);
    char *buf = malloc(n + 1);
    srand(7);
    for (int round = 0; round < 3000; round++) {
        memcpy(buf, DIFF, n + 1);
        int edits = 1 + rand() % 4;
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)rand() % n;
            const char pick[] = "\n+-@ ,\"\\0123456789abq";
            buf[at] = rand() % 3 ? pick[rand() % (sizeof pick - 1)] : (char)(rand() % 256);
        }
        size_t len = (size_t)rand() % (n + 1);
        char *error = NULL;
        GitChanges *c = git_changes_parse("/tmp", buf, len, NULL, 0, &error);
        cr_assert(c != NULL || error != NULL);
        if (c) {
            const ChangedLines *l;
            git_changes_for(c, "/tmp/f.py", &l);
        }
        git_changes_free(c);
        free(error);
    }
    free(buf);
}

/* ---- the rule: a finding is on the change when a line of it or of a related location changed ---- */

Test(on_change, primary_range_or_related_location) {
    const char *text = "l1\nl2\nl3\nl4\nl5\n";
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, text, strlen(text));
    GitLineIndex index;
    cr_assert(git_line_index_init(&index, doc));
    LineSpan span = {4, 4};
    ChangedLines lines = {.spans = &span, .count = 1};
    Finding f = {.range = {3, 5}}; /* "l2" */
    cr_expect(!finding_on_change(&index, &f, &lines));
    f.range = (ByteRange){3, 12}; /* "l2\nl3\nl4" */
    cr_expect(finding_on_change(&index, &f, &lines), "a range over lines 2-4 holds line 4");
    f.range = (ByteRange){3, 9}; /* "l2\nl3\n": ends at line 4's start, which it does not cover */
    cr_expect(!finding_on_change(&index, &f, &lines));
    f.range = (ByteRange){3, 5};
    cr_assert(finding_add_related(&f, (ByteRange){9, 11}, "related, on line 4"));
    cr_expect(finding_on_change(&index, &f, &lines), "a related location on a changed line counts");
    cr_expect(!finding_on_change(&index, &f, NULL), "a file without changes");
    ChangedLines all = {.all = true};
    cr_expect(finding_on_change(&index, &f, &all));
    finding_free(&f);
    git_line_index_free(&index);
    document_free(doc);
}

Test(on_change, lines_are_counted_as_git_counts_them) {
    /* a lone CR ends a line for the editor, not for git: "b" is on git's line 1 */
    const char *text = "a\rb\nc\n";
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, text, strlen(text));
    GitLineIndex index;
    cr_assert(git_line_index_init(&index, doc));
    LineSpan span = {1, 1};
    ChangedLines lines = {.spans = &span, .count = 1};
    Finding f = {.range = {2, 3}};
    cr_expect(finding_on_change(&index, &f, &lines));
    f.range = (ByteRange){4, 5}; /* "c", line 2 */
    cr_expect(!finding_on_change(&index, &f, &lines));
    git_line_index_free(&index);
    document_free(doc);
}
