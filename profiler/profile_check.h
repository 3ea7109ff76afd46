/* The rules of the profile format, checked on a Profile struct. The JSON
 * reader applies them to what it parsed and the writer to what it is asked
 * to write, so that a profile one writes the other reads. Messages name the
 * place as a JSON path ("kernels[3].grid[1]: must be a positive integer"). */
#ifndef ADVISE_PROFILE_CHECK_H
#define ADVISE_PROFILE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "profiler/profile.h"
#include "profiler/profile_json.h"

/* False with *error set (when error is not NULL) on the first broken rule. */
bool profile_check(const Profile *p, ProfileKind kind, char **error);

/* The pieces the JSON reader also needs on their own. */
bool profile_utf8_ok(const char *s, size_t length);
bool profile_created_ok(const char *s);      /* "2026-11-30T15:01:02Z" */
bool profile_sha256_ok(const char *s);       /* 64 lowercase hex digits */
bool profile_module_path_ok(const char *s);  /* absolute, no control characters */
bool profile_source_ok(const char *s);       /* "cupti" or "torch-profiler" */

#endif
