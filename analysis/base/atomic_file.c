/* Writing a file whole or not at all (atomic_file.h). */
#include "analysis/base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/text_format.h"

/* path's folder and base name, in fresh strings */
static bool split_path(const char *path, char **folder, char **name) {
    char *a = strdup(path), *b = strdup(path);
    *folder = a ? strdup(dirname(a)) : NULL;
    *name = b ? strdup(basename(b)) : NULL;
    free(a);
    free(b);
    if (*folder && *name) return true;
    free(*folder);
    free(*name);
    return false;
}

/* The rename is durable only once the folder's entry is on disk too. */
static void sync_folder(const char *folder) {
    int fd = open(folder, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

bool atomic_file_write_with(const char *path, const AtomicFileOptions *options, AtomicFileWriter write,
                            const void *arg, char **error) {
    AtomicFileOptions none = {0};
    if (!options) options = &none;
    char *folder, *name;
    if (!split_path(path, &folder, &name)) {
        *error = format_string("out of memory");
        return false;
    }
    char *temp = format_string("%s/.%s.advise-XXXXXX", folder, name);
    free(name);
    if (!temp) {
        free(folder);
        *error = format_string("out of memory");
        return false;
    }
    int fd = mkstemp(temp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        *error = format_string("cannot write %s: cannot create a file beside it: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(temp);
        }
        free(temp);
        free(folder);
        return false;
    }
    errno = 0;
    bool ok = write(f, arg) && fflush(f) == 0 && fsync(fileno(f)) == 0 &&
              (!options->keep_owner || fchown(fileno(f), options->owner, options->group) == 0) &&
              fchmod(fileno(f), options->mode ? options->mode : 0644) == 0;
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && options->before_rename && !options->before_rename(options->check_arg, error)) {
        unlink(temp);
        free(temp);
        free(folder);
        return false;
    }
    if (ok && rename(temp, path) != 0) {
        saved = errno;
        ok = false;
    }
    if (ok) {
        sync_folder(folder);
    } else {
        *error = format_string("cannot write %s: %s", path, saved ? strerror(saved) : "write error");
        unlink(temp);
    }
    free(temp);
    free(folder);
    return ok;
}

bool atomic_file_write(const char *path, AtomicFileWriter write, const void *arg, char **error) {
    return atomic_file_write_with(path, NULL, write, arg, error);
}

typedef struct {
    const char *text;
    size_t length;
} Bytes;

static bool write_bytes(FILE *out, const void *arg) {
    const Bytes *b = arg;
    return fwrite(b->text, 1, b->length, out) == b->length;
}

bool atomic_file_write_bytes(const char *path, const AtomicFileOptions *options, const char *text, size_t length,
                             char **error) {
    Bytes b = {text, length};
    return atomic_file_write_with(path, options, write_bytes, &b, error);
}
