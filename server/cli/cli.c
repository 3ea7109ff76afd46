#include "server/cli/cli.h"

#include "analysis/crash_guard.h"

#include <limits.h>
#include <stdarg.h>
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/engine/config.h"
#include "rules/rule.h"

#include "advise_version.h" /* ADVISE_VERSION: project(VERSION) in CMakeLists.txt */

static void usage(FILE *out) {
    fputs("usage: advise <command> [options]\n"
          "\n"
          "commands:\n"
          "  check [PATHS...]     analyse Python and CUDA files and folders (default: .)\n"
          "  rules                list the rules (--format markdown: the docs/rules pages)\n"
          "  rule CODE|NAME       print one rule's documentation\n"
          "  import TRACE.json    turn a torch.profiler trace into an advise profile\n"
          "  server [--stdio]     run the language server (LSP over stdio)\n"
          "  profile -- CMD...    run CMD with the CUDA profiler and write a profile\n"
          "  report [PATHS...]    the findings ranked by measured cost, as text or one HTML page\n"
          "  diff BEFORE AFTER    compare two profiles: totals, kernels and call sites by time saved\n"
          "  ranks PROFILE        per rank: compute, NCCL communication and its overlap, stragglers\n"
          "  version              print the version\n"
          "\n"
          "`advise <command> --help` describes a command's options.\n",
          out);
}

int cli_usage_error(const char *command, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "advise %s: ", command);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see `advise %s --help`)\n", command);
    va_end(ap);
    return EXIT_TROUBLE;
}

int cli_option_error(const char *command, char *const argv[], int token) {
    const char *arg = argv[token] ? argv[token] : "";
    /* getopt sets optopt to the short option it stopped at; in a group
     * ("-qj2") the option is one letter of the token, not the token */
    bool short_option = optopt > 0 && optopt < 128 && isalnum(optopt) && arg[0] == '-' && arg[1] != '-';
    if (short_option && strlen(arg) > 2)
        return cli_usage_error(command, "unknown or incomplete option '-%c' (in '%s')", optopt, arg);
    if (short_option) return cli_usage_error(command, "unknown or incomplete option '-%c'", optopt);
    return cli_usage_error(command, "unknown or incomplete option '%s'", arg);
}

int cli_load_config_file(const char *config_path, bool no_config, Config *cfg, char **config_dir) {
    config_init(cfg);
    *config_dir = NULL;
    char *path = config_path ? strdup(config_path) : no_config ? NULL : config_find(".");
    if (!path) return EXIT_CLEAN;
    char *error = NULL;
    if (!config_load_file(cfg, path, &error)) {
        fprintf(stderr, "advise: %s\n", error ? error : "out of memory");
        free(error);
        free(path);
        return EXIT_TROUBLE;
    }
    char *abs = realpath(path, NULL);
    if (abs) {
        char *slash = strrchr(abs, '/');
        if (slash) *(slash == abs ? slash + 1 : slash) = '\0';
        *config_dir = abs;
    }
    free(path);
    return EXIT_CLEAN;
}

int cli_main(int argc, char **argv) {
    size_t count;
    rules_all(&count); /* sorts the registry before anything else runs */
    crash_guard_install(); /* before libclang's own handlers, which then chain to ours */
    if (argc < 2) {
        usage(stderr);
        return EXIT_TROUBLE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "check") == 0) return cli_check(argc - 1, argv + 1);
    if (strcmp(cmd, "rules") == 0) return cli_rules(argc - 1, argv + 1);
    if (strcmp(cmd, "rule") == 0) return cli_rule(argc - 1, argv + 1);
    if (strcmp(cmd, "import") == 0) return cli_import(argc - 1, argv + 1);
    if (strcmp(cmd, "server") == 0) return cli_server(argc - 1, argv + 1);
    if (strcmp(cmd, "profile") == 0) return cli_profile(argc - 1, argv + 1);
    if (strcmp(cmd, "diff") == 0) return cli_diff(argc - 1, argv + 1);
    if (strcmp(cmd, "ranks") == 0) return cli_ranks(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0) return cli_report(argc - 1, argv + 1);
    if (strcmp(cmd, "debug-ast") == 0) return cli_debug_ast(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("advise %s\n", ADVISE_VERSION);
        return EXIT_CLEAN;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return EXIT_CLEAN;
    }
    fprintf(stderr, "advise: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_TROUBLE;
}
