/* Turns the paths a user gave into the list of files to check: folders are
 * walked recursively, skipping what .gitignore, the `exclude` setting and
 * the usual tool folders (.git, __pycache__, virtual environments) hide. */
#ifndef ADVISE_FILE_WALK_H
#define ADVISE_FILE_WALK_H

#include <stdbool.h>
#include <stddef.h>

#include "rules/engine/config.h"

typedef struct {
    char *path;
    char *message;
} PathError;

typedef struct {
    char **files; /* sorted, as the user would write them (relative stays relative) */
    size_t count;
    size_t cap; /* room in files (array_reserve) */
    PathError *errors;
    size_t error_count;
    size_t error_cap; /* room in errors (array_reserve) */
} FileList;

/* root: the folder `exclude` patterns are relative to (the config's folder
 * or the working directory). Explicitly named files are always kept. */
void file_walk(const char *const *paths, size_t path_count, const Config *cfg, const char *root, FileList *out);
void file_list_free(FileList *list);
bool file_list_add_error(FileList *list, const char *path, const char *message);

/* Languages that `advise check` analyses today. */
bool file_walk_supported(const char *path);

#endif
