/* `advise server`: the LSP server over stdio. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cli/cli.h"
#include "server/lsp/lsp_server.h"

int cli_server(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--stdio") == 0) continue; /* what clients usually pass */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            puts("usage: advise server [--stdio]\n\nSpeaks the Language Server Protocol (3.17) on stdin/stdout.\n"
                 "Settings come from initializationOptions or workspace/configuration (section \"advise\"):\n"
                 "select, ignore (lists of rule selectors), severity ({rule: level}), profileDir, debounceMs.");
            return EXIT_CLEAN;
        }
        fprintf(stderr, "advise server: unexpected argument '%s'\n", argv[i]);
        return EXIT_TROUBLE;
    }
    /* One malloc arena for the whole process, unless the user chose: glibc
     * gives each thread that allocates its own arena, and the workers, the
     * profile watcher and each advise/findings thread then leave freed memory
     * scattered over several of them. In a 100,000-edit soak (bench/soak)
     * resident memory grew 11-15% that way; with one arena it was 20%
     * lower and flat for 60,000 edits (bench/README.md, soak). The threads
     * allocate little at a time; the latency benchmark's figures were taken
     * with it. */
    if (!getenv("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, 1);
    return lsp_server_run(0, 1);
}
