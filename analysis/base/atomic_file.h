/* Writing a file whole or not at all: into a temporary file beside it
 * (named .<name>.advise-XXXXXX, so that globs and file watchers pass it by),
 * flushed to disk, then renamed over it and the folder synced, so that a
 * reader, or a crash, never sees half a file. The one writer for everything
 * advise writes: profiles, reports, documentation, header shims, and the
 * user's own sources (source_file.c adds the check that the file did not
 * change since it was read). */
#ifndef ADVISE_ATOMIC_FILE_H
#define ADVISE_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Writes the contents to out; false on failure (errno may say why). */
typedef bool (*AtomicFileWriter)(FILE *out, const void *arg);

/* Called after the contents are on disk and right before the rename: false
 * (with *error set) leaves path as it was. */
typedef bool (*AtomicFileCheck)(const void *arg, char **error);

typedef struct {
    mode_t mode;                 /* permissions of the new file; 0 means 0644 */
    bool keep_owner;             /* give the new file owner and group (fails when that is not allowed) */
    uid_t owner;
    gid_t group;
    AtomicFileCheck before_rename; /* optional */
    const void *check_arg;
} AtomicFileOptions;

/* Writes path with write(out, arg). False with *error set (the caller frees
 * it) when anything fails; path is then left as it was and no temporary
 * file remains. options may be NULL. */
bool atomic_file_write_with(const char *path, const AtomicFileOptions *options, AtomicFileWriter write,
                            const void *arg, char **error);
bool atomic_file_write(const char *path, AtomicFileWriter write, const void *arg, char **error);
/* Writes length bytes of text. */
bool atomic_file_write_bytes(const char *path, const AtomicFileOptions *options, const char *text, size_t length,
                             char **error);

#endif
