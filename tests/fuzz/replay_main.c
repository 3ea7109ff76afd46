/* Replays files through a fuzz target without libFuzzer: each argument is a
 * file or a folder (all files below it, in name order). Used by the ctest
 * fuzz_replay_* tests on the seed corpora and on every crash input kept in
 * tests/fuzz/crashes/TARGET/. Exit 0 when every input ran. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

static size_t inputs;

static void run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        exit(2);
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) data = realloc(data, cap *= 2);
    }
    fclose(f);
    if (!data) exit(2);
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    inputs++;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static void run_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return; /* a crash folder that does not exist yet */
    if (!S_ISDIR(st.st_mode)) {
        run_file(path);
        return;
    }
    struct dirent **names;
    int n = scandir(path, &names, NULL, by_name);
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char *child;
            if (asprintf(&child, "%s/%s", path, names[i]->d_name) < 0) exit(2);
            run_path(child);
            free(child);
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) run_path(argv[i]);
    printf("replay: %zu inputs ran\n", inputs);
    return inputs ? 0 : 1;
}
