/* A profile moved onto an edited text (profile_remap.h). */
#include "profiler/profile_remap.h"

#include <stdlib.h>
#include <string.h>

static uint32_t moved(uint32_t line, const uint32_t *to, uint32_t to_count) {
    return line >= 1 && line <= to_count ? to[line] : 0;
}

Profile *profile_remap_lines(const Profile *p, int file, const uint32_t *to, uint32_t to_count,
                             const char *sha256_hex) {
    if (file < 0 || (size_t)file >= p->file_count) return NULL;
    Profile *copy = profile_new();
    if (!copy || !profile_append(copy, p)) {
        profile_free(copy);
        return NULL;
    }
    /* profile_append dedups files by path: find the file again */
    int f = -1;
    for (size_t i = 0; i < copy->file_count && f < 0; i++)
        if (strcmp(copy->files[i].path, p->files[file].path) == 0) f = (int)i;
    char *sha = strdup(sha256_hex);
    if (f < 0 || !sha) {
        free(sha);
        profile_free(copy);
        return NULL;
    }
    free(copy->files[f].sha256);
    copy->files[f].sha256 = sha;
    /* Lines are changed in place: nothing is added to the copy afterwards,
     * so the dedup indexes the adding helpers keep are not consulted again. */
    for (size_t i = 0; i < copy->site_count; i++)
        if (copy->sites[i].file == f) copy->sites[i].line = moved(copy->sites[i].line, to, to_count);
    for (size_t i = 0; i < copy->line_metric_count; i++)
        if (copy->line_metrics[i].file == f)
            copy->line_metrics[i].line = moved(copy->line_metrics[i].line, to, to_count);
    return copy;
}
