/* What the commands that read profiles and print text or JSON (`advise
 * diff`, `advise ranks`) share: the --format option, reading a profile with
 * its error on stderr, and writing a JSON document. */
#ifndef ADVISE_CLI_PROFILE_IO_H
#define ADVISE_CLI_PROFILE_IO_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profiler/profile.h"

/* --format text|json into *json; EXIT_CLEAN, or the usage error's status
 * (printed) for anything else. */
int cli_format_option(const char *command, const char *arg, bool *json);
/* The profile at path, or NULL with "advise COMMAND: <why>" on stderr. */
Profile *cli_read_profile(const char *command, const char *path);
/* Writes doc indented, with a final newline, and releases it; false when
 * doc is NULL or writing fails. */
bool cli_write_json(FILE *out, json_t *doc);
/* A count or duration as a JSON integer, clamped to the largest one. */
json_t *cli_json_u64(uint64_t value);

#endif
