/* The Python front end with every rule, then the fixes they offer applied
 * and the fixed text checked again. Inputs are what an editor or a file
 * can hand advise: valid UTF-8 (anything else is refused before the engine,
 * source_file.c and the LSP server), NUL bytes included.
 *
 * Built for libFuzzer, it has a structure-aware mutator: half of the
 * mutations splice a real statement (a line of the repository's Python
 * fixtures and samples, re-indented to the line it lands after) into the
 * input, so that the fuzzer reaches the rules rather than only the parser's
 * error recovery. */
#include <stdlib.h>
#include <string.h>

#include "analysis/document.h"
#include "analysis/edits.h"
#include "analysis/finding.h"
#include "rules/engine/config.h"
#include "rules/engine/engine.h"
#include "tests/fuzz/fuzz.h"

static void check_text(const char *text, size_t length, int depth) {
    Document *doc = document_new("fuzz.py", LANGUAGE_PYTHON, text, length);
    if (!doc) return;
    Config cfg;
    config_init(&cfg);
    FindingList out;
    finding_list_init(&out);
    char *error = NULL;
    if (engine_check(doc, NULL, &cfg, &out, NULL, &error) && depth == 0) {
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
