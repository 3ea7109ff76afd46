/* advise server's JSON-RPC framing and dispatch: the input is the byte
 * stream a client sends on stdin (Content-Length frames, JSON bodies), run
 * through the whole server until the stream ends; replies go to /dev/null. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/lsp/lsp_server.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 256 * 1024) return 0;
    int in = memfd_create("advise-fuzz-in", MFD_CLOEXEC);
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (in < 0 || out < 0) abort();
    if (size && write(in, data, size) != (ssize_t)size) abort();
    lseek(in, 0, SEEK_SET);
    lsp_exit_grace_seconds = 600; /* every worker ends before the next input (a hang is a finding) */
    (void)lsp_server_run(in, out);
    close(in);
    close(out);
    return 0;
}
