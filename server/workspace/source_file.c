#include "server/workspace/source_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/document.h"
#include "analysis/finding.h"
#include "analysis/base/atomic_file.h"
#include "analysis/base/read_bounded.h"
#include "analysis/base/text_format.h"

bool source_file_read(const char *path, size_t max_bytes, SourceFile *out, char **error) {
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        *error = format_string("cannot open: %s", strerror(errno));
        return false;
    }
    if (fstat(fd, &out->st) != 0) {
        *error = format_string("cannot stat: %s", strerror(errno));
        close(fd);
        return false;
    }
    if (!S_ISREG(out->st.st_mode)) {
        *error = format_string("not a regular file");
        close(fd);
        return false;
    }
    if ((size_t)out->st.st_size > max_bytes) {
        *error = format_string("skipped: %.1f MiB is over the %.1f MiB limit (max-file-size; raise it with "
                               "--max-file-size BYTES or [check] max-file-size in advise.toml to check this file)",
                               out->st.st_size / 1048576.0, max_bytes / 1048576.0);
        close(fd);
        return false;
    }
    bool too_large = false;
    bool ok = read_fd_bounded(fd, max_bytes, &out->text, &out->length, &too_large);
    int saved = errno;
    close(fd);
    if (!ok) {
        *error = format_string("cannot read: %s", strerror(saved));
        return false;
    }
    if (too_large) {
        *error = format_string("skipped: the file grew over the %.1f MiB limit while being read", max_bytes / 1048576.0);
        source_file_free(out);
        return false;
    }
    size_t probe = out->length < 8192 ? out->length : 8192;
    if (memchr(out->text, '\0', probe) || memchr(out->text, '\0', out->length)) {
        *error = format_string("skipped: binary file (it contains NUL bytes)");
        source_file_free(out);
        return false;
    }
    size_t bad;
    if (!utf8_validate(out->text, out->length, &bad)) {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < bad; i++) {
            if (out->text[i] == '\n') {
                line++;
                col = 1;
            } else if (((unsigned char)out->text[i] & 0xC0) != 0x80) {
                col++;
            }
        }
        *error = format_string("skipped: invalid UTF-8 at line %zu, column %zu (byte 0x%02X at offset %zu)", line, col,
                               (unsigned char)out->text[bad], bad);
        source_file_free(out);
        return false;
    }
    return true;
}

void source_file_free(SourceFile *f) {
    free(f->text);
    f->text = NULL;
    f->length = 0;
}

/* "changed" by what stat says, before reading: a file that grew past its
 * old length is a changed file, not one over max-file-size */
static bool unchanged_on_disk(const char *path, const SourceFile *expected, char **error) {
    struct stat st;
    if (stat(path, &st) != 0) {
        *error = format_string("not written: the file is gone or unreadable since advise read it (%s)",
                               strerror(errno));
        return false;
    }
    bool same = st.st_ino == expected->st.st_ino && st.st_dev == expected->st.st_dev &&
                (size_t)st.st_size == expected->length;
    SourceFile now;
    char *read_error = NULL;
    if (same && !source_file_read(path, expected->length + 1, &now, &read_error)) {
        *error = format_string("not written: cannot re-read the file before writing (%s)", read_error);
        free(read_error);
        return false;
    }
    if (same) {
        same = now.length == expected->length && memcmp(now.text, expected->text, now.length) == 0;
        source_file_free(&now);
    }
    if (!same) *error = format_string("not written: the file changed since advise read it; run advise again");
    return same;
}

typedef struct {
    const char *path;
    const SourceFile *expected;
} UnchangedCheck;

/* once more right before the rename: an editor may have saved meanwhile */
static bool still_unchanged(const void *arg, char **error) {
    const UnchangedCheck *c = arg;
    return unchanged_on_disk(c->path, c->expected, error);
}

/* What replacing the file through a rename would get wrong, refused before
 * anything is written: a second hard link would keep the old text (the
 * links split), a file the user may not write would be replaced anyway
 * (rename needs only the folder), and an owner advise cannot give the new
 * file would change. */
static bool replaceable(const char *path, const struct stat *st, char **error) {
    if (st->st_nlink > 1) {
        *error = format_string("not written: the file has %ju hard links, and replacing it would leave the others "
                               "with the old text; apply the fix by hand (advise check --diff shows it)",
                               (uintmax_t)st->st_nlink);
        return false;
    }
    if (!(st->st_mode & (S_IWUSR | S_IWGRP | S_IWOTH))) { /* even for root: read-only says "leave it" */
        *error = format_string("not written: the file is read-only");
        return false;
    }
    if (access(path, W_OK) != 0) {
        *error = format_string("not written: you may not write this file (%s)", strerror(errno));
        return false;
    }
    if (st->st_uid != geteuid() && geteuid() != 0) {
        *error = format_string("not written: the file belongs to another user (uid %ju), and the fixed file "
                               "would belong to you; apply the fix by hand (advise check --diff shows it)",
                               (uintmax_t)st->st_uid);
        return false;
    }
    return true;
}

bool source_file_replace(const char *path, const SourceFile *expected, const char *text, size_t length,
                         char **error) {
    /* through a symbolic link the file is its target: write the target, in
     * its own folder, and leave the link a link */
    char *target = realpath(path, NULL);
    if (!target) {
        *error = format_string("not written: cannot resolve the file's path (%s)", strerror(errno));
        return false;
    }
    bool ok = unchanged_on_disk(target, expected, error) && replaceable(target, &expected->st, error);
    if (!ok) {
        free(target);
        return false;
    }
    UnchangedCheck check = {target, expected};
    AtomicFileOptions options = {.mode = expected->st.st_mode & 07777,
                                 .keep_owner = true,
                                 .owner = expected->st.st_uid,
                                 .group = expected->st.st_gid,
                                 .before_rename = still_unchanged,
                                 .check_arg = &check};
    char *problem = NULL;
    ok = atomic_file_write_bytes(target, &options, text, length, &problem);
    free(target);
    if (ok) return true;
    /* the check's own message already says "not written: ..." */
    if (problem && strncmp(problem, "not written", 11) == 0) {
        *error = problem;
    } else {
        *error = format_string("not written: %s", problem ? problem : "out of memory");
        free(problem);
    }
    return false;
}
