/* advise server's JSON-RPC framing and dispatch: the input is the byte
 * stream a client sends on stdin (Content-Length frames, JSON bodies), run
 * through the whole server until the stream ends; replies go to /dev/null.
 *
 * The server runs in an empty folder of its own: when the client names no
 * workspace (the seeds' rootUri is null), the server takes the current
 * folder's project, whose profile folder its watcher reads at start-up.
 * Started from the repository, every input read samples/profiles again
 * (most of its time), and what an input did depended on where the fuzzer
 * was started. The process moves there only while the server runs, so
 * libFuzzer's corpus and the replay's files keep their relative paths; the
 * crash files libFuzzer writes while an input runs are given an absolute
 * prefix (LLVMFuzzerInitialize).
 *
 * The server runs one analysis worker (lsp_worker_count), where on its own
 * it runs two or three by the machine's cores: starting and ending a thread
 * under ASan cost more than most inputs' whole run. Every path of the
 * server's code still runs; what two workers would do at once is for
 * ThreadSanitizer to check (scripts/tsan.sh): libFuzzer cannot replay a
 * thread interleaving anyway. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/lsp/lsp_server.h"
#include "tests/fuzz/fuzz.h"

static int in = -1, out = -1, home = -1; /* the input's memfd (rewritten each time), /dev/null, the start folder */
static char *folder;                     /* the empty folder the server runs in */

static void remove_folder(void) {
    if (folder) rmdir(folder); /* left behind if something was written into it */
}

/* once per process: the folder and the descriptors */
static void set_up(void) {
    const char *tmp = getenv("TMPDIR");
    if (asprintf(&folder, "%s/advise-fuzz-jsonrpc-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 || !mkdtemp(folder)) {
        perror("fuzz_jsonrpc: cannot make an empty folder to run the server in");
        abort();
    }
    atexit(remove_folder);
    in = memfd_create("advise-fuzz-in", MFD_CLOEXEC);
    out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    home = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (in < 0 || out < 0 || home < 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 256 * 1024) return 0;
    if (in < 0) set_up();
    if (ftruncate(in, 0) != 0 || (size && pwrite(in, data, size, 0) != (ssize_t)size) || lseek(in, 0, SEEK_SET) != 0)
        abort();
    lsp_exit_grace_seconds = 600; /* every worker ends before the next input (a hang is a finding) */
    lsp_worker_count = 1;         /* lsp_server.h says why */
    if (chdir(folder) != 0) abort();
    (void)lsp_server_run(in, out);
    if (fchdir(home) != 0) abort();
    return 0;
}

#ifdef ADVISE_LIBFUZZER
/* libFuzzer's flags that name where it writes while an input runs (a
 * crash, a timeout, running out of memory), made absolute */
static const char *const path_flags[] = {"-artifact_prefix=", "-exact_artifact_path="};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) abort();
    char **args = calloc((size_t)*argc + 2, sizeof *args);
    if (!args) abort();
    int prefixed = 0;
    for (int i = 0; i < *argc; i++) {
        char *a = (*argv)[i];
        args[i] = a;
        for (size_t f = 0; i > 0 && f < sizeof path_flags / sizeof *path_flags; f++) {
            size_t n = strlen(path_flags[f]);
            if (strncmp(a, path_flags[f], n) != 0) continue;
            prefixed |= f == 0;
            if (a[n] != '/' && asprintf(&args[i], "%.*s%s/%s", (int)n, a, cwd, a + n) < 0) abort();
        }
    }
    int n = *argc;
    if (!prefixed && asprintf(&args[n++], "-artifact_prefix=%s/", cwd) < 0) abort(); /* libFuzzer's default: here */
    *argc = n;
    *argv = args; /* kept for the life of the process */
    return 0;
}
#endif
