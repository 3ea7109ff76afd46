/* file: URIs and paths (file_uri.h). */
#include "server/workspace/file_uri.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char *file_uri_to_path(const char *uri) {
    if (strncmp(uri, "file://", 7) != 0) return strdup(uri);
    const char *p = uri + 7;
    if (strncmp(p, "localhost/", 10) == 0) p += 9;
    char *out = malloc(strlen(p) + 1), *o = out;
    if (!out) return NULL;
    for (; *p; p++) {
        if (*p == '%' && hex(p[1]) >= 0 && hex(p[2]) >= 0) {
            char c = (char)(hex(p[1]) * 16 + hex(p[2]));
            *o++ = c ? c : '?';
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

char *file_uri_from_path(const char *path) {
    size_t n = strlen(path);
    char *out = malloc(n * 3 + 8), *o = out;
    if (!out) return NULL;
    o += sprintf(o, "file://");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (isalnum(*p) || strchr("/-_.~", *p)) *o++ = (char)*p;
        else o += sprintf(o, "%%%02X", *p);
    }
    *o = '\0';
    return out;
}
