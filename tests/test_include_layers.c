/* The include direction (docs/architecture.md, "Layers"): every #include of
 * a project header names it from the repository root, and a folder includes
 * only the folders below it in the layering. This walks every .c and .h in
 * analysis/, profiler/, rules/ and server/ and fails on the first include
 * that runs against the direction, naming the file, the line and the rule. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What each folder may include besides itself. The longest folder that
 * contains a file decides. Lower layers first. */
#define ANALYSIS "analysis", "analysis/base", "analysis/python", "analysis/cuda"
typedef struct {
    const char *folder;
    const char *may_include[16];
} Room;

static const Room rooms[] = {
    /* base: containers, formatting, atomic writes; the C library only */
    {"analysis/base", {NULL}},
    /* the profile model, its importers, the injection library and the driver */
    {"profiler", {"analysis/base"}},
    {"profiler/import", {"profiler", "analysis/base"}},
    {"profiler/inject", {"profiler", "analysis/base"}},
    {"profiler/driver", {"profiler", "analysis/base"}},
    /* documents, findings and the two front ends; they never see a profile */
    {"analysis", {"analysis/base"}},
    {"analysis/python", {"analysis", "analysis/base"}},
    {"analysis/cuda", {"analysis", "analysis/base"}},
    /* the rule interface, then the models, the rules and the engine over them */
    {"rules", {ANALYSIS, "profiler"}},
    {"rules/measure", {"rules", ANALYSIS, "profiler"}},
    {"rules/python", {"rules", "rules/python/support", ANALYSIS, "profiler"}},
    {"rules/python/support", {"rules", ANALYSIS, "profiler"}},
    {"rules/cuda", {"rules", "rules/cuda/support", ANALYSIS, "profiler"}},
    {"rules/cuda/support", {"rules", ANALYSIS, "profiler"}},
    {"rules/profile", {"rules", "rules/measure", "rules/profile/support", ANALYSIS, "profiler"}},
    {"rules/profile/support", {"rules", "rules/measure", ANALYSIS, "profiler"}},
    {"rules/engine", {"rules", "rules/measure", ANALYSIS, "profiler"}},
    /* the faces: files on disk, renderers, the LSP server, the CLI on top */
    {"server/workspace", {"rules", "rules/engine", ANALYSIS, "profiler"}},
    {"server/render", {"server/workspace", "rules", "rules/engine", "rules/measure", ANALYSIS, "profiler"}},
    {"server/lsp",
     {"server/render", "server/workspace", "rules", "rules/engine", "rules/measure", ANALYSIS, "profiler"}},
    {"server/cli",
     {"server/lsp", "server/render", "server/workspace", "rules", "rules/engine", "rules/measure", ANALYSIS,
      "profiler", "profiler/driver", "profiler/import"}},
};

/* headers the build generates (build/generated/) */
static const char *const generated[] = {"advise_version.h"};

static bool under(const char *path, const char *folder) {
    size_t n = strlen(folder);
    return strncmp(path, folder, n) == 0 && path[n] == '/';
}

/* the room of a file: the longest folder that contains it */
static const Room *room_of(const char *path) {
    const Room *best = NULL;
    for (size_t i = 0; i < sizeof rooms / sizeof *rooms; i++)
        if (under(path, rooms[i].folder) && (!best || strlen(rooms[i].folder) > strlen(best->folder)))
            best = &rooms[i];
    return best;
}

static void folder_of(const char *path, char *out, size_t size) {
    snprintf(out, size, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash) *slash = '\0';
    else out[0] = '\0';
}

/* Whether file may include `included`; when not, why. */
static bool include_allowed(const char *file, const char *included, char *why, size_t size) {
    for (size_t i = 0; i < sizeof generated / sizeof *generated; i++)
        if (strcmp(included, generated[i]) == 0) return true;
    if (strncmp(included, "../", 3) == 0 || strstr(included, "/../") || !strchr(included, '/')) {
        snprintf(why, size, "\"%s\" is not named from the repository root", included);
        return false;
    }
    const Room *from = room_of(file);
    if (!from) {
        snprintf(why, size, "%s lies in no folder of the layering (add it to rooms[])", file);
        return false;
    }
    char target[512];
    folder_of(included, target, sizeof target);
    if (strcmp(target, from->folder) == 0) return true;
    for (const char *const *ok = from->may_include; *ok; ok++)
        if (strcmp(target, *ok) == 0) return true;
    snprintf(why, size, "%s/ may not include %s/ (\"%s\")", from->folder, target, included);
    return false;
}

typedef struct {
    size_t files, includes, violations;
    char first[1024];
} Walk;

static void check_file(const char *root, const char *relative, Walk *w) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", root, relative);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    w->files++;
    char line[4096];
    for (size_t number = 1; fgets(line, sizeof line, f); number++) {
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '#') continue;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "include", 7) != 0) continue;
        p += 7;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '"') continue;
        const char *end = strchr(p + 1, '"');
        if (!end) continue;
        char included[1024];
        snprintf(included, sizeof included, "%.*s", (int)(end - p - 1), p + 1);
        w->includes++;
        char why[1024];
        bool ok = include_allowed(relative, included, why, sizeof why);
        if (ok && strchr(included, '/')) {
            /* a root-relative name must name a file that exists */
            char target[8192];
            struct stat st;
            snprintf(target, sizeof target, "%s/%s", root, included);
            if (stat(target, &st) != 0) {
                snprintf(why, sizeof why, "\"%.900s\" names no file of the repository", included);
                ok = false;
            }
        }
        if (!ok) {
            if (!w->violations)
                snprintf(w->first, sizeof w->first, "%.100s:%zu: %.900s", relative, number, why);
            fprintf(stderr, "%s:%zu: %s\n", relative, number, why);
            w->violations++;
        }
    }
    fclose(f);
}

static void walk(const char *root, const char *relative, Walk *w) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, relative);
    DIR *d = opendir(path);
    cr_assert_not_null(d, "cannot list %s", path);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", relative, e->d_name);
        char full[8192];
        snprintf(full, sizeof full, "%s/%s", root, child);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        size_t n = strlen(e->d_name);
        if (S_ISDIR(st.st_mode)) walk(root, child, w);
        else if (n > 2 && (strcmp(e->d_name + n - 2, ".c") == 0 || strcmp(e->d_name + n - 2, ".h") == 0))
            check_file(root, child, w);
    }
    closedir(d);
}

Test(include_layers, every_include_runs_with_the_direction) {
    Walk w = {0};
    const char *top[] = {"analysis", "profiler", "rules", "server"};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++) walk(ADVISE_SOURCE_DIR, top[i], &w);
    cr_assert_gt(w.files, 150, "only %zu files found under %s", w.files, ADVISE_SOURCE_DIR);
    cr_assert_gt(w.includes, 500, "only %zu includes found", w.includes);
    cr_assert_eq(w.violations, 0, "%zu includes run against the layering; the first: %s", w.violations, w.first);
}

/* The check itself can fail: each of these is a violation it must name. */
Test(include_layers, the_check_names_what_runs_against_the_direction) {
    char why[1024];
    static const char *const wrong[][2] = {
        {"rules/python/py001_host_sync_in_loop.c", "server/lsp/lsp_server.h"},
        {"rules/python/py001_host_sync_in_loop.c", "rules/cuda/support/grid_guard.h"},
        {"rules/cuda/cu001_missing_syncthreads.c", "rules/measure/measure.h"},
        {"analysis/python/python_source.c", "rules/rule.h"},
        {"analysis/python/python_source.c", "analysis/cuda/cuda_source.h"},
        {"analysis/document.c", "profiler/profile.h"},
        {"profiler/profile.c", "analysis/finding.h"},
        {"analysis/base/growable.c", "analysis/finding.h"},
        {"rules/measure/line_waste.c", "rules/engine/engine.h"},
        {"server/render/report_text.c", "server/cli/cli.h"},
        {"server/workspace/check_file.c", "server/lsp/jsonrpc.h"},
        {"rules/cuda/cu001_missing_syncthreads.c", "../analysis/document.h"},
        {"rules/cuda/cu001_missing_syncthreads.c", "cuda_query.h"},
        {"bench/check_throughput.c", "analysis/document.h"},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
        why[0] = '\0';
        cr_expect_not(include_allowed(wrong[i][0], wrong[i][1], why, sizeof why), "%s including %s passed",
                      wrong[i][0], wrong[i][1]);
        cr_expect_neq(why[0], '\0', "no reason given for %s including %s", wrong[i][0], wrong[i][1]);
    }
    static const char *const right[][2] = {
        {"server/cli/cli_server.c", "server/lsp/lsp_server.h"},
        {"rules/profile/pr010_uncoalesced_global_access.c", "rules/measure/line_metrics.h"},
        {"rules/cuda/cu002_divergent_barrier.c", "rules/cuda/support/grid_guard.h"},
        {"profiler/driver/profile_run.c", "profiler/profile_json.h"},
        {"profiler/aggregate.c", "analysis/base/hash_index.h"},
        {"analysis/python/python_query.c", "analysis/document.h"},
        {"server/lsp/lsp_worker.c", "advise_version.h"},
    };
    for (size_t i = 0; i < sizeof right / sizeof *right; i++)
        cr_expect(include_allowed(right[i][0], right[i][1], why, sizeof why), "%s including %s: %s", right[i][0],
                  right[i][1], why);
}
