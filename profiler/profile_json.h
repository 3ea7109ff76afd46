/* Reading and writing profiles as JSON (format "advise-profile", version 1;
 * documented in profiler/FORMAT.md, schema in profiler/profile.schema.json).
 *
 * The reader treats every file as hostile: it enforces the caps in
 * profile.h, checks every index, number and path, and answers a clear
 * message instead of crashing. */
#ifndef ADVISE_PROFILE_JSON_H
#define ADVISE_PROFILE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "profiler/profile.h"

typedef enum {
    PROFILE_FINAL,   /* what `advise profile` and `advise import` write: sites resolved */
    PROFILE_PART     /* what one profiled process writes: may hold unresolved native frames */
} ProfileKind;

/* Serialises p; NULL with *error set when p breaks the format's rules. */
char *profile_to_json(const Profile *p, ProfileKind kind, char **error);
/* Writes atomically (temporary file in the same folder, fsync, rename). */
bool profile_write_file(const Profile *p, ProfileKind kind, const char *path, char **error);

/* Parses and validates; NULL with *error ("line 3: ...", "kernels[2].grid: ...")
 * on any problem. */
Profile *profile_from_json(const char *text, size_t length, ProfileKind kind, char **error);
/* Reads a file (refusing anything over PROFILE_MAX_FILE_BYTES, FIFOs and
 * other non-regular files) and parses it. */
Profile *profile_read_file(const char *path, ProfileKind kind, char **error);

#endif
