/* Reading a user's source file defensively: size limit, binary and
 * invalid-UTF-8 detection, each with a message for a person. */
#ifndef ADVISE_SOURCE_FILE_H
#define ADVISE_SOURCE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

typedef struct {
    char *text;
    size_t length;
    struct stat st; /* as read, to tell later whether the file changed */
} SourceFile;

/* On failure returns false with *error set ("binary file", "invalid UTF-8
 * at line 3, column 7", "12.0 MiB is over the 2.0 MiB limit", strerror...). */
bool source_file_read(const char *path, size_t max_bytes, SourceFile *out, char **error);
void source_file_free(SourceFile *f);

/* Writes text to path atomically (temporary file in the same folder, fsync,
 * rename), keeping the file's mode, owner and group; refuses when the file
 * on disk no longer holds `expected` (it changed since it was read), when
 * it has several hard links (they would split), when the user may not
 * write it, or when its owner could not be kept. Through a symbolic link it
 * writes the link's target and leaves the link as it is. */
bool source_file_replace(const char *path, const SourceFile *expected, const char *text, size_t length,
                         char **error);

#endif
