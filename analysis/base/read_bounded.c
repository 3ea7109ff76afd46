#include "analysis/base/read_bounded.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

bool read_fd_bounded(int fd, size_t limit, char **out, size_t *length, bool *too_large) {
    size_t cap = 64 * 1024, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        errno = ENOMEM;
        return false;
    }
    *too_large = false;
    for (;;) {
        if (n == cap) {
            if (cap > limit) {
                *too_large = true;
                break;
            }
            char *grown = realloc(buf, cap * 2 + 1);
            if (!grown) {
                free(buf);
                errno = ENOMEM;
                return false;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0) {
            if (errno == EINTR) continue;
            free(buf);
            return false;
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n > limit) {
            *too_large = true;
            break;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *length = n;
    return true;
}
