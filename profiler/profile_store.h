/* Where profiles live: the project root, the profile folder (`[profile] dir`
 * in advise.toml, default `.advise/profiles/` under the root) and fresh file
 * names in it that never overwrite an earlier profile. Shared by `advise
 * profile`, `advise import` and (later) the readers of the newest profile. */
#ifndef ADVISE_PROFILE_STORE_H
#define ADVISE_PROFILE_STORE_H

#include <stdbool.h>

#define PROFILE_STORE_DEFAULT_DIR ".advise/profiles"

/* The project root for the current directory: the nearest folder above it
 * holding advise.toml, else the nearest holding .git, else the current
 * directory. Absolute, heap; NULL only when out of memory or cwd is gone. */
char *profile_store_root(void);
/* The same for a folder other than the current one (an editor's workspace). */
char *profile_store_root_of(const char *start);
/* The nearest folder at or above start holding advise.toml, else .git;
 * NULL when there is none (no project marks start's folders). */
char *profile_store_marked_root_of(const char *start);

/* The profile folder: configured (absolute, or relative to root) or the
 * default under root. Heap. */
char *profile_store_dir(const char *root, const char *configured);

/* Creates dir (and its parents) and reserves "<dir>/<name>-YYYYMMDD-HHMMSS.json"
 * (then -2, -3, ... when taken) by creating it empty with O_EXCL. name is
 * reduced to [A-Za-z0-9._-]. Heap path, or NULL with *error set. */
char *profile_store_reserve(const char *dir, const char *name, char **error);

/* mkdir -p; false with *error set. */
bool profile_store_mkdirs(const char *dir, char **error);

/* path shown relative to the current directory when it lies below it. */
const char *profile_store_display(const char *path);

#endif
