/* Writing a file whole or not at all (atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analysis/finding.h"

bool atomic_file_write(const char *path, AtomicFileWriter write, const void *arg, char **error) {
    char *temp = format_string("%s.tmp-XXXXXX", path);
    if (!temp) {
        *error = format_string("out of memory");
        return false;
    }
    int fd = mkstemp(temp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        *error = format_string("cannot write %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(temp);
        }
        free(temp);
        return false;
    }
    bool ok = write(f, arg) && fflush(f) == 0 && fsync(fileno(f)) == 0 && fchmod(fileno(f), 0644) == 0;
    int saved = errno;
    if (fclose(f) != 0) ok = false;
    if (ok && rename(temp, path) != 0) {
        saved = errno;
        ok = false;
    }
    if (!ok) {
        *error = format_string("cannot write %s: %s", path, saved ? strerror(saved) : "write error");
        unlink(temp);
    }
    free(temp);
    return ok;
}
