/* Where a rule's documentation page is linked from (rule_links.h). */
#include "server/render/rule_links.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/base/text_format.h"
#include "server/workspace/file_uri.h"

#ifndef ADVISE_DOCS_URL
#define ADVISE_DOCS_URL ""
#endif
#ifndef ADVISE_SOURCE_DOCS
#define ADVISE_SOURCE_DOCS ""
#endif

static pthread_once_t found_once = PTHREAD_ONCE_INIT;
static char installed_pages[PATH_MAX]; /* <prefix>/share/doc/advise/rules, or "" */

static void find_installed_pages(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = '\0'; /* <prefix>/bin */
    char candidate[PATH_MAX + 64];
    snprintf(candidate, sizeof candidate, "%s/../share/doc/advise/rules", exe);
    char *real = realpath(candidate, NULL);
    if (real && strlen(real) < sizeof installed_pages) snprintf(installed_pages, sizeof installed_pages, "%s", real);
    free(real);
}

/* dir/<code>.md as a file: URI when it exists */
static char *page_in(const char *dir, const char *code) {
    if (!dir[0]) return NULL;
    char *path = format_string("%s/%s.md", dir, code);
    char *uri = path && access(path, R_OK) == 0 ? file_uri_from_path(path) : NULL;
    free(path);
    return uri;
}

char *rule_page_link(const char *code) {
    if (ADVISE_DOCS_URL[0]) return format_string("%s/%s.md", ADVISE_DOCS_URL, code);
    pthread_once(&found_once, find_installed_pages);
    char *uri = page_in(installed_pages, code);
    return uri ? uri : page_in(ADVISE_SOURCE_DOCS, code);
}
