/* The lines added or changed in a git working tree since a commit, for
 * `advise check --diff-base REF`: git runs without a shell (posix_spawnp,
 * an argument vector), once for `git diff -M -U0 REF` (the working tree,
 * staged and unstaged, against REF; renames followed) and once for the
 * untracked files that are not ignored (new: every line counts). The
 * unified diff's hunk headers become, per file, the ranges of lines on the
 * new side. Paths are kept as absolute paths below the repository's real
 * top folder, so that a path as the user gave it (relative, through a
 * symbolic link) finds its file after realpath().
 *
 * Lines are counted as git counts them: 1-based, split at '\n' only. */
#ifndef ADVISE_GIT_CHANGES_H
#define ADVISE_GIT_CHANGES_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    size_t first, last; /* 1-based, inclusive */
} LineSpan;

/* What changed in one file. */
typedef struct {
    bool all;        /* every line: an untracked file, or one git calls binary */
    LineSpan *spans; /* sorted, disjoint; empty for a rename without edits */
    size_t count, cap;
} ChangedLines;

typedef struct GitChanges GitChanges;

/* Runs git in the repository that holds `where` (a folder, or a file's
 * folder) and collects what changed since ref. NULL with *error (heap, for
 * a person) when git is missing, `where` is not in a work tree, ref is not
 * a commit there (or starts with '-'), or git fails. */
GitChanges *git_changes_load(const char *where, const char *ref, char **error);

/* The same from a diff's text (what `git diff -U0 --src-prefix=a/
 * --dst-prefix=b/` prints) and a list of untracked paths, both relative to
 * top: for tests, and the fuzzer. NULL with *error when the diff cannot be
 * read. */
GitChanges *git_changes_parse(const char *top, const char *diff, size_t diff_len, const char *const *untracked,
                              size_t untracked_count, char **error);
void git_changes_free(GitChanges *c);

/* The repository's top folder (a real path), and the commit ref named. */
const char *git_changes_top(const GitChanges *c);
const char *git_changes_commit(const GitChanges *c);

typedef enum {
    GIT_FILE_CHANGED,   /* some lines (or all) were added or changed */
    GIT_FILE_UNCHANGED, /* none: untouched, renamed without edits, or ignored by git */
    GIT_FILE_OUTSIDE,   /* not below the repository's top folder */
    GIT_FILE_UNKNOWN,   /* the path cannot be resolved (it does not exist) */
} GitFileState;

/* What changed in path (as the user gave it); *lines is set for
 * GIT_FILE_CHANGED and points into c. */
GitFileState git_changes_for(const GitChanges *c, const char *path, const ChangedLines **lines);

/* Does any line of [first, last] (1-based, inclusive) count as changed? */
bool changed_lines_touch(const ChangedLines *lines, size_t first, size_t last);

/* Number of files with changed lines (untracked ones included). */
size_t git_changes_file_count(const GitChanges *c);

#endif
