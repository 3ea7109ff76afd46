/* `advise profile --memory`: where the injection library finds the Python
 * recorder (advise-python/advise_memory.py beside libadvise_inject.so, in
 * the build and installed alike), and the memory parts it leaves. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/base/growable.h"
#include "analysis/base/read_bounded.h"
#include "profiler/memory_part.h"
#include "profiler/driver/profile_run_internal.h"

#define MEMORY_MODULE_DIR "advise-python"

bool memory_recording_start(const char *inject, bool native) {
    char dir[PATH_MAX];
    const char *slash = strrchr(inject, '/');
    int n = snprintf(dir, sizeof dir, "%.*s/" MEMORY_MODULE_DIR, slash ? (int)(slash - inject) : 1,
                     slash ? inject : ".");
    char module[PATH_MAX + 32];
    snprintf(module, sizeof module, "%s/advise_memory.py", dir);
    if (n <= 0 || (size_t)n >= sizeof dir || access(module, R_OK) != 0) {
        fprintf(stderr, "advise: --memory: the memory recorder %s is missing (it is installed beside the profiler "
                        "library); memory is not recorded\n", module);
        return false;
    }
    if (native ? setenv(MEMORY_STACKS_ENV, "all", 1) != 0 : unsetenv(MEMORY_STACKS_ENV) != 0) return false;
    return setenv(MEMORY_ENV, dir, 1) == 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

MemoryParts memory_parts_take(const char *parts_dir) {
    MemoryParts parts = {0};
    DIR *d = opendir(parts_dir);
    if (!d) return parts;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "memory-", 7) != 0) continue;
        char *name = strdup(e->d_name);
        if (!name || !array_reserve(&parts.names, parts.count, &cap, sizeof *parts.names, 8)) {
            free(name);
            break;
        }
        parts.names[parts.count++] = name;
    }
    closedir(d);
    if (parts.count > 1) qsort(parts.names, parts.count, sizeof *parts.names, by_name); /* names is NULL when none */
    parts.texts = calloc(parts.count ? parts.count : 1, sizeof *parts.texts);
    parts.lengths = calloc(parts.count ? parts.count : 1, sizeof *parts.lengths);
    for (size_t i = 0; i < parts.count; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", parts_dir, parts.names[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        bool too_large = false;
        if (fd >= 0 && parts.texts && parts.lengths &&
            read_fd_bounded(fd, MEMORY_PART_MAX_BYTES, &parts.texts[i], &parts.lengths[i], &too_large) &&
            too_large) {
            free(parts.texts[i]);
            parts.texts[i] = NULL;
        }
        if (fd >= 0) close(fd);
        unlink(path);
    }
    return parts;
}

static const char *bytes_text(uint64_t b, char *buf, size_t size) {
    if (b >= (1ull << 30)) snprintf(buf, size, "%.2f GiB", (double)b / (1ull << 30));
    else snprintf(buf, size, "%.1f MiB", (double)b / (1ull << 20));
    return buf;
}

/* Puts the CUPTI entries (cudaMalloc/cudaFree, from the process parts) back
 * after PyTorch's were added, except where PyTorch's recorder covered the
 * same process and device: its entry is tensor-level, CUPTI's sees only the
 * caching allocator's segments. */
static void cupti_entries_restore(Profile *p, ProfMemory *memories, size_t count, ProfMemLine *lines,
                                  size_t line_count) {
    int *map = calloc(count ? count : 1, sizeof *map);
    size_t torch = p->memory_count;
    for (size_t i = 0; i < count; i++) {
        bool covered = false;
        for (size_t j = 0; j < torch; j++)
            covered |= p->memories[j].process == memories[i].process && p->memories[j].device == memories[i].device;
        ProfMemory *grown = !covered && map && p->memory_count < PROFILE_MAX_MEMORIES
                                ? realloc(p->memories, (p->memory_count + 1) * sizeof *grown)
                                : NULL;
        if (!grown) {
            free(memories[i].samples);
            if (map) map[i] = -1;
            continue;
        }
        p->memories = grown;
        map[i] = (int)p->memory_count;
        p->memories[p->memory_count++] = memories[i];
    }
    ProfMemLine *grown = map && line_count ? realloc(p->memory_lines, (p->memory_line_count + line_count) * sizeof *grown)
                                           : NULL;
    for (size_t i = 0; grown && i < line_count; i++) {
        p->memory_lines = grown;
        int m = lines[i].memory >= 0 && (size_t)lines[i].memory < count ? map[lines[i].memory] : -1;
        if (m < 0 || p->memory_line_count >= PROFILE_MAX_MEMORY_LINES) continue;
        p->memory_lines[p->memory_line_count] = lines[i];
        p->memory_lines[p->memory_line_count++].memory = m;
    }
    free(map);
    free(memories);
    free(lines);
}

void memory_parts_add(Profile *p, const MemoryParts *parts) {
    ProfMemory *cupti = p->memories;
    ProfMemLine *cupti_lines = p->memory_lines;
    size_t cupti_count = p->memory_count, cupti_line_count = p->memory_line_count;
    p->memories = NULL;
    p->memory_lines = NULL;
    p->memory_count = p->memory_line_count = 0;
    for (size_t i = 0; i < parts->count; i++) {
        char *err = NULL;
        if (!parts->texts || !parts->texts[i]) {
            fprintf(stderr, "advise: --memory: %s could not be read (or is too large); skipped\n", parts->names[i]);
        } else if (!profile_add_memory_part(p, parts->texts[i], parts->lengths[i], &err)) {
            fprintf(stderr, "advise: --memory: %s: %s\n", parts->names[i], err ? err : "out of memory");
        }
        free(err);
    }
    cupti_entries_restore(p, cupti, cupti_count, cupti_lines, cupti_line_count);
    if (p->memory_count == 0)
        fprintf(stderr, "advise: --memory: no process recorded its memory (PyTorch's allocator history needs Python "
                        "3.9+ and PyTorch 2.1+; CUDA's own allocations are recorded through CUPTI)\n");
    for (size_t i = 0; i < p->memory_count; i++) {
        const ProfMemory *m = &p->memories[i];
        char peak[32], reserved[32];
        if (m->source == PROF_MEM_SOURCE_CUPTI)
            fprintf(stderr, "advise: memory: process %lld, device %u: peak %s allocated with cudaMalloc and friends\n",
                    (long long)p->processes[m->process].pid, m->device, bytes_text(m->max_allocated, peak, sizeof peak));
        else
            fprintf(stderr, "advise: memory: process %lld, device %u: peak %s allocated, %s reserved%s\n",
                    (long long)p->processes[m->process].pid, m->device, bytes_text(m->max_allocated, peak, sizeof peak),
                    bytes_text(m->max_reserved, reserved, sizeof reserved),
                    m->oom ? "; an allocation failed (out of memory)" : "");
    }
}

void memory_parts_free(MemoryParts *parts) {
    for (size_t i = 0; i < parts->count; i++) {
        free(parts->names[i]);
        if (parts->texts) free(parts->texts[i]);
    }
    free(parts->names);
    free(parts->texts);
    free(parts->lengths);
    *parts = (MemoryParts){0};
}
