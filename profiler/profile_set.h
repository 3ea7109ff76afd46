/* Several profiles at once: a file, or every valid profile in a folder,
 * newest first (by `created`, then file name). Each source file takes its
 * figures from the newest profile that mentions it, so a folder holding the
 * runs of several programs (samples/profiles/) or several runs of one
 * program (.advise/profiles/) both read as expected.
 *
 * Pure C over profile_view.h; no rule, LSP or output knowledge. */
#ifndef ADVISE_PROFILE_SET_H
#define ADVISE_PROFILE_SET_H

#include <stdbool.h>
#include <stddef.h>

#include "profiler/profile_view.h"

typedef struct ProfileSet ProfileSet;

/* path: a profile file, or a folder of them (*.json, not recursive;
 * unreadable or invalid files are skipped, their reasons kept as notes).
 * NULL with *error set when nothing usable is there. */
ProfileSet *profile_set_load(const char *path, char **error);
/* A set of one view (takes ownership). */
ProfileSet *profile_set_of(ProfileView *v);
void profile_set_free(ProfileSet *set);

size_t profile_set_count(const ProfileSet *set);
const ProfileView *profile_set_at(const ProfileSet *set, size_t i); /* newest first */
/* Why files of the folder were skipped ("x.json: version: 2: ..."). */
size_t profile_set_notes(const ProfileSet *set, const char *const **notes);

/* The newest view that mentions a source file: by its path relative to the
 * project root, else (when absolute is not NULL) by a profile path that the
 * absolute path ends with at a '/' (a profile recorded from another root).
 * Sets *file (index in that view) and returns the view, or NULL. */
const ProfileView *profile_set_for_file(const ProfileSet *set, const char *relative, const char *absolute,
                                        int *file);

/* Removes and returns the newest view (NULL when empty). */
ProfileView *profile_set_take_newest(ProfileSet *set);

#endif
