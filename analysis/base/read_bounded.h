/* One way to read a whole file or stream whose size the caller bounds:
 * sources, stdin, baselines. */
#ifndef ADVISE_READ_BOUNDED_H
#define ADVISE_READ_BOUNDED_H

#include <stdbool.h>
#include <stddef.h>

/* Reads fd to its end into a heap buffer (*out, with a '\0' after the
 * *length bytes). Stops once more than limit bytes came: *too_large, and
 * what was read is still returned (the caller frees it). False on a read
 * error or when memory runs out (errno says which; nothing to free). */
bool read_fd_bounded(int fd, size_t limit, char **out, size_t *length, bool *too_large);

#endif
