/* The `advise` command line: subcommands and their options. */
#ifndef ADVISE_CLI_H
#define ADVISE_CLI_H

#include <stdbool.h>

#include "rules/engine/config.h"

/* Exit codes of every subcommand */
enum {
    EXIT_CLEAN = 0,    /* nothing at or above --fail-on */
    EXIT_FINDINGS = 1, /* findings at or above --fail-on */
    EXIT_TROUBLE = 2,  /* usage or I/O error (the other files were still checked) */
};

int cli_main(int argc, char **argv);
/* Prints "advise COMMAND: <message>" and where to find help on stderr;
 * returns EXIT_TROUBLE. */
int cli_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The usage error for the option getopt_long refused: token is the index in
 * argv that optind held before the call (read it before each call), so that
 * a letter of a group of short options ("-qj2") is named, not the previous
 * word. Returns EXIT_TROUBLE. */
int cli_option_error(const char *command, char *const argv[], int token);
/* Settings for a command run here: config_path (--config) when given, else
 * the nearest advise.toml unless no_config; *config_dir gets the folder the
 * file is in (heap, NULL without one). EXIT_CLEAN, or EXIT_TROUBLE with the
 * error on stderr. cfg is initialised either way. */
int cli_load_config_file(const char *config_path, bool no_config, Config *cfg, char **config_dir);
int cli_check(int argc, char **argv);
int cli_rules(int argc, char **argv);
int cli_rule(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_server(int argc, char **argv);
int cli_debug_ast(int argc, char **argv);
int cli_profile(int argc, char **argv);
int cli_diff(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_ranks(int argc, char **argv);

#endif
