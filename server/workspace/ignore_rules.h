/* .gitignore-style patterns: the project's .gitignore files and the
 * `exclude` setting decide which files a folder walk skips. */
#ifndef ADVISE_IGNORE_RULES_H
#define ADVISE_IGNORE_RULES_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *base;    /* folder the pattern is relative to, absolute, no trailing '/' */
    char *pattern; /* without '!' and trailing '/' */
    bool negated;
    bool dir_only;
    bool anchored; /* has a '/' before its end: matched against the path from base */
} IgnorePattern;

typedef struct {
    IgnorePattern *items;
    size_t count;
    size_t cap; /* room in items (array_reserve); truncating keeps it */
} IgnoreRules;

/* Adds the patterns of one .gitignore-format text, relative to base. */
void ignore_rules_add_text(IgnoreRules *rules, const char *base, const char *text);
/* Reads base/.gitignore if there is one. */
void ignore_rules_add_file(IgnoreRules *rules, const char *base);
/* Adds the .gitignore files from the enclosing git work tree's root down to dir. */
void ignore_rules_add_parents(IgnoreRules *rules, const char *dir);
/* path is absolute. The last matching pattern decides. */
bool ignore_rules_match(const IgnoreRules *rules, const char *path, bool is_dir);
/* Drops patterns added after `count` (leaving a folder during a walk). */
void ignore_rules_truncate(IgnoreRules *rules, size_t count);
void ignore_rules_free(IgnoreRules *rules);

/* Glob match with gitignore's meaning (git's wildmatch): '*', '?' and classes
 * stop at '/'. Two or more stars cross it only as a whole path component
 * (at the start or after a '/', and at the end or before a '/'); anywhere
 * else they are one '*'. */
bool glob_match(const char *pattern, const char *text);

#endif
