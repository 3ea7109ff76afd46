/* `advise import TRACE.json`: a torch.profiler trace -> an advise profile
 * in the project's profile folder (or -o FILE). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profiler/profile_json.h"
#include "profiler/import/torch_import.h"
#include "rules/engine/config.h"
#include "server/cli/cli.h"
#include "profiler/profile_store.h"


static void import_usage(FILE *out) {
    fputs("usage: advise import TRACE.json [-o FILE] [--name NAME]\n"
          "\n"
          "Turns a torch.profiler Chrome trace (recorded with with_stack=True) into an advise profile.\n"
          "\n"
          "options:\n"
          "  -o, --output FILE   write the profile to FILE (replacing it)\n"
          "                      default: NAME-YYYYMMDD-HHMMSS.json (UTC) in [profile] dir of advise.toml,\n"
          "                      else .advise/profiles/ under the project root; never overwrites\n"
          "  --name NAME         the profile's name (default: the trace's file name without extensions)\n"
          "\n"
          "The project root is the folder holding advise.toml, else the git work tree above the\n"
          "current folder, else the current folder. Call sites are the innermost Python function\n"
          "under it (function-level: torch.profiler records a function's first line, not the call's).\n"
          "\n"
          "exit status: 0 imported, 2 usage or I/O error, or not a trace\n",
          out);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("advise import: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_TROUBLE;
}

/* The whole trace; NULL after printing why not */
static char *read_trace(const char *path, size_t *length) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fail("cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        fail("'%s' is not a regular file%s", path, S_ISDIR(st.st_mode) ? " (it is a folder)" : "");
        return NULL;
    }
    if ((unsigned long long)st.st_size > TORCH_IMPORT_MAX_BYTES) {
        fail("'%s' is larger than 2 GiB, more than advise import reads", path);
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fail("cannot read '%s': %s", path, fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    char *text = malloc(size ? size : 1);
    size_t got = 0;
    while (text && got < size) {
        ssize_t n = read(fd, text + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    int saved = errno;
    close(fd);
    if (!text || got != size) {
        fail("cannot read '%s': %s", path, text ? (got < size ? "the file shrank while reading" : strerror(saved))
                                                : "out of memory");
        free(text);
        return NULL;
    }
    *length = size;
    return text;
}

/* The project root and its settings; false after printing why */
static bool find_project(char **root, Config *cfg) {
    *root = profile_store_root();
    if (!*root) return fail("cannot resolve the current folder: %s", strerror(errno)), false;
    char *toml = config_find(*root);
    if (!toml) return true;
    char *error = NULL;
    bool ok = config_load_file(cfg, toml, &error);
    if (!ok) fail("%s", error ? error : "cannot read advise.toml");
    free(error);
    free(toml);
    return ok;
}

static void warn_about(const char *trace, const char *root, const TorchImportReport *r) {
    if (r->python_events == 0)
        fprintf(stderr,
                "advise import: warning: '%s' has no python_function events, so no call sites; record it with "
                "torch.profiler.profile(..., with_stack=True)\n",
                trace);
    else if (r->attributed == 0 && r->kernels + r->copies + r->memsets + r->syncs + r->allocations > 0)
        fprintf(stderr,
                "advise import: warning: no GPU work in '%s' came from Python code under '%s' "
                "(was the trace recorded from this project?)\n",
                trace, root);
    if (r->skipped)
        fprintf(stderr, "advise import: skipped %llu event%s with a missing or ill-typed field\n",
                (unsigned long long)r->skipped, r->skipped == 1 ? "" : "s");
}

enum { OPT_NAME = 256, OPT_HELP };

static const struct option import_options[] = {
    {"output", required_argument, 0, 'o'}, {"name", required_argument, 0, OPT_NAME},
    {"help", no_argument, 0, OPT_HELP},    {0, 0, 0, 0}};

int cli_import(int argc, char **argv) {
    const char *output = NULL, *name = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", import_options, NULL)) != -1) {
        if (c == 'o') output = optarg;
        else if (c == OPT_NAME) name = optarg;
        else if (c == 'h' || c == OPT_HELP) {
            import_usage(stdout);
            return EXIT_CLEAN;
        } else {
            if (optopt == 'o') fail("-o needs a file name");
            else if (optopt == OPT_NAME) fail("--name needs a name");
            else fail("unknown option '%s'", argv[optind - 1]);
            fputs("(see `advise import --help`)\n", stderr);
            return EXIT_TROUBLE;
        }
    }
    if (argc - optind != 1) {
        fail(argc == optind ? "which trace? give one TRACE.json" : "give one trace, not several");
        fputs("(see `advise import --help`)\n", stderr);
        return EXIT_TROUBLE;
    }
    if (name && !name[0]) return fail("--name needs a non-empty name");
    const char *trace = argv[optind];

    size_t length = 0;
    char *text = read_trace(trace, &length);
    if (!text) return EXIT_TROUBLE;
    Config cfg;
    config_init(&cfg);
    char *root = NULL;
    int status = EXIT_TROUBLE;
    Profile *p = NULL;
    char *path = NULL, *error = NULL;
    TorchImportReport report;
    if (!find_project(&root, &cfg)) goto done;
    p = torch_import_report(text, length, root, trace, &report, &error);
    free(text);
    text = NULL;
    if (!p) {
        fail("%s", error ? error : "import failed");
        goto done;
    }
    if (name) {
        char *copy = strdup(name);
        if (!copy) goto done;
        free(p->name);
        p->name = copy;
    }
    if (output) {
        path = strdup(output);
    } else {
        char *dir = profile_store_dir(root, cfg.profile_dir);
        path = dir ? profile_store_reserve(dir, p->name, &error) : NULL;
        free(dir);
        if (!path) {
            fail("%s", error ? error : "out of memory");
            goto done;
        }
    }
    if (!path) goto done;
    if (!profile_write_file(p, PROFILE_FINAL, path, &error)) {
        fail("cannot write '%s': %s", path, error ? error : "unknown error");
        if (!output) unlink(path);
        goto done;
    }
    warn_about(trace, root, &report);
    fprintf(stderr, "advise: imported %llu kernels, %llu copies, %zu call sites from %s into %s\n",
            (unsigned long long)report.kernels, (unsigned long long)report.copies, p->site_count, trace,
            profile_store_display(path));
    status = EXIT_CLEAN;
done:
    free(text);
    free(error);
    free(path);
    free(root);
    if (p) profile_free(p);
    config_free(&cfg);
    return status;
}
