/* `advise import TRACE.json`: a torch.profiler trace -> an advise profile
 * in the project's profile folder (or -o FILE). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../profiler/profile_json.h"
#include "../profiler/torch_import.h"
#include "../rules/config.h"
#include "cli.h"

#define DEFAULT_PROFILE_DIR ".advise/profiles"
#define MAX_NAME_TRIES 1000

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

static int fail(const char *fmt, const char *a, const char *b) {
    fputs("advise import: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
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
        fail("'%s' is larger than 2 GiB, more than advise import reads%s", path, "");
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

/* The nearest folder at or above dir that holds .git, or NULL */
static char *git_root(const char *dir) {
    char *cur = realpath(dir, NULL);
    while (cur) {
        char probe[PATH_MAX + 8];
        struct stat st;
        snprintf(probe, sizeof probe, "%s/.git", strcmp(cur, "/") ? cur : "");
        if (stat(probe, &st) == 0) return cur;
        char *slash = strrchr(cur, '/');
        if (!slash || slash == cur) break;
        *slash = '\0';
    }
    free(cur);
    return NULL;
}

/* The project root and its settings; false after printing why */
static bool find_project(char **root, Config *cfg) {
    char *toml = config_find(".");
    if (toml) {
        char *error = NULL;
        if (!config_load_file(cfg, toml, &error)) {
            fail("%s%s", error ? error : "cannot read advise.toml", "");
            free(error);
            free(toml);
            return false;
        }
        char *slash = strrchr(toml, '/');
        if (slash) *(slash == toml ? slash + 1 : slash) = '\0';
        *root = toml;
        return true;
    }
    *root = git_root(".");
    if (!*root) *root = realpath(".", NULL);
    if (!*root) return fail("cannot resolve the current folder: %s%s", strerror(errno), ""), false;
    return true;
}

static bool mkdir_p(const char *path) {
    char buf[PATH_MAX];
    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) return false;
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return false;
            struct stat st;
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) return false;
            *p = saved;
            if (!saved) return true;
        }
    }
}

/* The name as a file name: letters, digits, '.', '-', '_'; others become '_' */
static void file_safe(char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
              *s == '-' || *s == '_'))
            *s = '_';
}

/* Creates (empty, exclusively) the first free NAME-STAMP[-N].json in dir;
 * returns its path, or NULL after printing why */
static char *reserve_output(const char *dir, const char *name) {
    if (!mkdir_p(dir)) {
        fail("cannot create the profile folder '%s': %s", dir, strerror(errno));
        return NULL;
    }
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    char safe[128];
    snprintf(safe, sizeof safe, "%s", name[0] && strcmp(name, ".") && strcmp(name, "..") ? name : "trace");
    file_safe(safe);
    for (int n = 1; n <= MAX_NAME_TRIES; n++) {
        char suffix[16] = "";
        if (n > 1) snprintf(suffix, sizeof suffix, "-%d", n);
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s-%s%s.json", dir, safe, stamp, suffix) >= sizeof path) break;
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            close(fd);
            return strdup(path);
        }
        if (errno != EEXIST) {
            fail("cannot create '%s': %s", path, strerror(errno));
            return NULL;
        }
    }
    fail("no free file name for '%s' in '%s'", safe, dir);
    return NULL;
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
            if (optopt == 'o') fail("-o needs a file name%s%s", "", "");
            else if (optopt == OPT_NAME) fail("--name needs a name%s%s", "", "");
            else fail("unknown option '%s'%s", argv[optind - 1], "");
            fputs("(see `advise import --help`)\n", stderr);
            return EXIT_TROUBLE;
        }
    }
    if (argc - optind != 1) {
        fail(argc == optind ? "which trace? give one TRACE.json%s%s" : "give one trace, not %s%s",
             argc == optind ? "" : "several", "");
        fputs("(see `advise import --help`)\n", stderr);
        return EXIT_TROUBLE;
    }
    if (name && !name[0]) return fail("--name needs a non-empty name%s%s", "", "");
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
        fail("%s%s", error ? error : "import failed", "");
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
        const char *dir = cfg.profile_dir && cfg.profile_dir[0] ? cfg.profile_dir : DEFAULT_PROFILE_DIR;
        char full[PATH_MAX];
        if ((size_t)snprintf(full, sizeof full, "%s/%s", dir[0] == '/' ? "" : root, dir[0] == '/' ? dir + 1 : dir) >=
            sizeof full) {
            fail("profile folder path too long: %s%s", dir, "");
            goto done;
        }
        path = reserve_output(full, p->name ? p->name : "trace");
    }
    if (!path) goto done;
    if (!profile_write_file(p, PROFILE_FINAL, path, &error)) {
        fail("cannot write '%s': %s", path, error ? error : "unknown error");
        if (!output) unlink(path);
        goto done;
    }
    warn_about(trace, root, &report);
    fprintf(stderr, "advise: imported %llu kernels, %llu copies, %zu call sites from %s into %s\n",
            (unsigned long long)report.kernels, (unsigned long long)report.copies, p->site_count, trace, path);
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
