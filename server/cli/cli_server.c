/* `advise server`: the LSP server over stdio. */
#include <stdio.h>
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
    return lsp_server_run(0, 1);
}
