/* The Python front end with every rule, then the fixes they offer applied
 * and the fixed text checked again. Inputs are what an editor or a file
 * can hand advise: valid UTF-8 (anything else is refused before the engine,
 * source_file.c and the LSP server), NUL bytes included.
 *
 * Built for libFuzzer, it has a structure-aware mutator: half of the
 * mutations splice a real statement (a line of the repository's Python
 * fixtures and samples, re-indented to the line it lands after) into the
 * input, so that the fuzzer reaches the rules rather than only the parser's
 * error recovery.
 *
 * The profile rules run too: each input is merged with a small profile made
 * for it (profile_for), whose measurements sit on the input's own lines.
 * And the module's summary for the workspace index, which `advise check`
 * and the server build for every Python file of a project: a hang there
 * (tiny-cuda-nn's scripts/gen_sh.py, 2026-12-05) was outside what this
 * target ran. */
#include <stdlib.h>
#include <string.h>

#include "analysis/document.h"
#include "analysis/edits.h"
#include "analysis/finding.h"
#include "analysis/python/python_module_facts.h"
#include "analysis/python/python_source.h"
#include "profiler/profile_view.h"
#include "rules/engine/config.h"
#include "rules/engine/engine.h"
#include "tests/fuzz/fuzz.h"
#include "tests/profile_builder.h"

#define PROFILED_LINES 32
#define MiB (1ull << 20)

/* A profile of one 10 s run on an H200 with figures on the first
 * PROFILED_LINES lines of the input, varied by line so that every profile
 * rule finds something to judge: launches (hot kernels, many tiny ones),
 * copies, syncs, allocations, and --memory's lines of every kind (a peak
 * holder freed at the next line, memory kept from an earlier step, growth,
 * allocations, an out-of-memory error's holders). */
static Profile *profile_for(const char *text, size_t length) {
    Profile *p = pb_new(10000000000ull, 5000000000ull);
    if (!p) return NULL;
    uint32_t lines = 1;
    for (size_t i = 0; i < length; i++) lines += text[i] == '\n';
    if (lines > PROFILED_LINES) lines = PROFILED_LINES;
    ProfMemory m = {.process = 0, .device = 0, .events = 1000, .window_complete = true,
                    .max_allocated = 1024 * MiB, .max_reserved = 2048 * MiB, .peak_time_ns = 1000,
                    .peak_allocated = 1024 * MiB, .peak_reserved = 1536 * MiB, .steps = 10, .steps_in_window = 10,
                    .oom = true, .oom_bytes = 512 * MiB, .oom_allocated = 1000 * MiB, .oom_site = -1};
    p->memories = malloc(sizeof *p->memories);
    p->memory_lines = calloc((size_t)lines * 5, sizeof *p->memory_lines);
    if (!p->memories || !p->memory_lines) {
        profile_free(p);
        return NULL;
    }
    p->memories[0] = m;
    p->memory_count = 1;
    for (uint32_t line = 1; line <= lines; line++) {
        switch (line % 4) {
        case 0: pb_launch(p, "fuzz.py", line, "ampere_sgemm_128x64_nn", 200, 2000000000ull); break;
        case 1: pb_launch(p, "fuzz.py", line, "vectorized_elementwise_kernel", 20000, 40000000ull); break;
        case 2: pb_copy(p, "fuzz.py", line, PROF_COPY_HTOD, PROF_MEM_PAGEABLE, 64 * MiB, 100, 300000000ull); break;
        default: pb_sync(p, "fuzz.py", line, 500, 400000000ull); break;
        }
        int f = profile_add_file(p, "fuzz.py");
        int site = profile_add_site(p, f, line, NULL), next = profile_add_site(p, f, line + 1, NULL);
        ProfMemLine *l = &p->memory_lines[p->memory_line_count];
        l[0] = (ProfMemLine){.kind = PROF_MEM_LINE_PEAK, .site = site, .bytes = 256 * MiB, .freed_bytes = 128 * MiB,
                             .freed_site = next};
        l[1] = (ProfMemLine){.kind = PROF_MEM_LINE_KEPT, .site = site, .bytes = 128 * MiB, .count = 2};
        l[2] = (ProfMemLine){.kind = PROF_MEM_LINE_GROWTH, .site = site, .bytes = 4 * MiB, .count = 8};
        l[3] = (ProfMemLine){.kind = PROF_MEM_LINE_ALLOCS, .site = site, .bytes = 64 * MiB, .count = 40};
        l[4] = (ProfMemLine){.kind = PROF_MEM_LINE_OOM, .site = site, .bytes = 256 * MiB};
        p->memory_line_count += 5;
        if (line == 1) p->memories[0].oom_site = site;
    }
    return p;
}

static void check_text(const char *text, size_t length, int depth) {
    Document *doc = document_new("fuzz.py", LANGUAGE_PYTHON, text, length);
    if (!doc) return;
    Config cfg;
    config_init(&cfg);
    FindingList out;
    finding_list_init(&out);
    char *error = NULL;
    /* one parse for the static rules and the profile merge, as the server
     * does (lsp_worker.c, lsp_profile.c); without one (too wide, or the
     * parser gave up) engine_check tries and reports, as before */
    PySource *py = py_source_too_wide(doc) ? NULL : py_source_new(doc);
    bool checked = engine_check(doc, py, &cfg, &out, NULL, &error);
    Profile *p = checked ? profile_for(doc->text, doc->length) : NULL;
    ProfileView *view = p ? profile_view_new(p, "fuzz.json") : NULL; /* owns p, even when it fails */
    if (view) engine_merge_profile_parsed(doc, py, NULL, "fuzz.py", view, &cfg, &out, NULL);
    profile_view_free(view);
    if (py && depth == 0) py_module_facts_unref(py_module_facts_extract(py, "/fuzz/fuzz.py", "fuzz", false));
    py_source_free(py);
    if (checked) fuzz_check_findings(&out, doc->length);
    if (checked && depth == 0) {
        size_t fixed_length = 0, applied = 0;
        char *fixed = fixes_apply(doc->text, doc->length, &out, true, &fixed_length, &applied);
        if (fixed && applied) check_text(fixed, fixed_length, 1);
        free(fixed);
    }
    free(error);
    finding_list_free(&out);
    config_free(&cfg);
    document_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 64 * 1024 || !utf8_validate((const char *)data, size, NULL)) return 0;
    check_text((const char *)data, size, 0);
    return 0;
}

#ifdef ADVISE_LIBFUZZER
#include <dirent.h>
#include <stdio.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static char **statements;
static size_t statement_count, statement_cap;

static void keep_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *s = line;
        while (*s == ' ') s++;
        if (*s == '\n' || *s == '#' || *s == '\0' || strlen(s) < 4) continue;
        if (statement_count == statement_cap) {
            statement_cap = statement_cap ? statement_cap * 2 : 256;
            statements = realloc(statements, statement_cap * sizeof *statements);
            if (!statements) abort();
        }
        statements[statement_count++] = strdup(s);
    }
    fclose(f);
}

static void keep_folder(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (n > 3 && strcmp(e->d_name + n - 3, ".py") == 0) keep_lines(path);
        else if (e->d_type == DT_DIR) keep_folder(path);
    }
    closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    keep_folder(ADVISE_SOURCE_DIR "/tests/fixtures/python");
    keep_folder(ADVISE_SOURCE_DIR "/samples/python");
    return 0;
}

/* a statement spliced in after a random line, with that line's indentation
 * (one level deeper after a line ending in ':') */
static size_t splice(uint8_t *data, size_t size, size_t max_size, unsigned seed) {
    if (!statement_count) return LLVMFuzzerMutate(data, size, max_size);
    const char *s = statements[seed % statement_count];
    size_t lines = 0;
    for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
    size_t target = lines ? (seed / 7) % (lines + 1) : 0, at = 0, seen = 0, line_start = 0;
    for (; at < size && seen < target; at++)
        if (data[at] == '\n') {
            seen++;
            line_start = at + 1;
        }
    /* the line before the insertion point: its indentation */
    size_t prev = line_start >= 1 ? line_start - 1 : 0, prev_start = prev;
    while (prev_start > 0 && data[prev_start - 1] != '\n') prev_start--;
    size_t indent = 0;
    while (prev_start + indent < prev && data[prev_start + indent] == ' ') indent++;
    if (prev > prev_start && data[prev - 1] == ':') indent += 4;
    if (!lines) indent = 0;
    size_t len = strlen(s), add = indent + len;
    if (size + add > max_size) return LLVMFuzzerMutate(data, size, max_size);
    memmove(data + line_start + add, data + line_start, size - line_start);
    memset(data + line_start, ' ', indent);
    memcpy(data + line_start + indent, s, len);
    return size + add;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    if (seed % 2) return LLVMFuzzerMutate(data, size, max_size);
    return splice(data, size, max_size, seed / 2);
}
#endif
