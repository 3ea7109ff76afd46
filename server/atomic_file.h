/* Writing a file whole or not at all: into a temporary file beside it,
 * flushed to disk, then renamed over it, so that a reader (or a crash)
 * never sees half a file. For generated outputs (reports, documentation);
 * edits of the user's sources go through source_file.c, which also refuses
 * a file that changed since it was read. */
#ifndef ADVISE_ATOMIC_FILE_H
#define ADVISE_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>

/* Writes the contents to out; false on failure (errno may say why). */
typedef bool (*AtomicFileWriter)(FILE *out, const void *arg);

/* Writes path (mode 0644) with write(out, arg). False with *error set (the
 * caller frees it) when anything fails; path is then left as it was. */
bool atomic_file_write(const char *path, AtomicFileWriter write, const void *arg, char **error);

#endif
