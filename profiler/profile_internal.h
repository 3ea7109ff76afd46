/* What the profile model's own files share and nobody else needs: the
 * identity of files and sites (the keys that profile_add_* deduplicate by and
 * that a valid profile holds once each), and error messages. */
#ifndef ADVISE_PROFILE_INTERNAL_H
#define ADVISE_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "profiler/profile.h"

/* A resolved site (file >= 0) is known by file, line, function and
 * function_level; an unresolved one by its frames. */
uint64_t prof_file_key_hash(const char *path);
uint64_t prof_site_key_hash(const ProfSite *s);
bool prof_site_same_key(const ProfSite *a, const ProfSite *b);

/* Sets *error (when error is not NULL and *error is not yet set) to a
 * message formatted like printf. Always returns false. */
bool prof_fail(char **error, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Counts the entries of the profile text's top-level arrays and bounds its
 * nesting before any of it is parsed (profile_prescan.c); false with *error
 * set when a cap is passed. */
bool profile_prescan(const char *text, size_t length, char **error);

#endif
