/* The `advise` command line: subcommands and their options. */
#ifndef ADVISE_CLI_H
#define ADVISE_CLI_H

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
