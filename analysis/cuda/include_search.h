/* Finding a project's own headers when no compile database says where they
 * are: `#include "ggml.h"` from src/ggml-cuda/ when the header lives in
 * include/. nvcc finds it because the build passes -Iinclude; a parse with
 * no database does not. The search looks through the project (the nearest
 * folder above the file that holds .git, else a few folders up) for a file
 * whose path ends with what the directive spells, and answers the folder to
 * add with -I. Headers that are not in the project (a library that is not
 * installed) stay missing. */
#ifndef ADVISE_INCLUDE_SEARCH_H
#define ADVISE_INCLUDE_SEARCH_H

#include <stddef.h>

/* The folder that, added with -I, makes `#include "spelled"` find a header
 * of the project that holds from_dir: the match nearest to from_dir. Heap
 * string, or NULL when the project holds no such file (or spelled climbs
 * with ".."). Thread-safe; the project's file list is read once a minute at
 * most. */
char *include_search_find(const char *from_dir, const char *spelled);

/* The folders earlier searches in from_dir's project found (most projects
 * have one or two: include/, Common/). Adding them before the first parse
 * spares most files of a project the parse that finds them missing. A heap
 * array of heap strings (free each and the array); 0 when none. */
size_t include_search_learned(const char *from_dir, char ***dirs);

/* The project folder the search would look through for from_dir (heap), or
 * NULL. */
char *include_search_project_root(const char *from_dir);

#endif
