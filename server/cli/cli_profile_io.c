/* Shared by the profile-reading commands (cli_profile_io.h). */
#include "server/cli/cli_profile_io.h"

#include <stdlib.h>
#include <string.h>

#include "server/cli/cli.h"
#include "profiler/profile_json.h"

int cli_format_option(const char *command, const char *arg, bool *json) {
    if (strcmp(arg, "text") == 0) *json = false;
    else if (strcmp(arg, "json") == 0) *json = true;
    else return cli_usage_error(command, "--format wants text or json, not '%s'", arg);
    return EXIT_CLEAN;
}

Profile *cli_read_profile(const char *command, const char *path) {
    char *error = NULL;
    Profile *p = profile_read_file(path, PROFILE_FINAL, &error);
    if (!p) fprintf(stderr, "advise %s: %s\n", command, error ? error : "out of memory");
    free(error);
    return p;
}

bool cli_write_json(FILE *out, json_t *doc) {
    if (!doc) return false;
    int rc = json_dumpf(doc, out, JSON_INDENT(2));
    fputc('\n', out);
    json_decref(doc);
    return rc == 0;
}

json_t *cli_json_u64(uint64_t value) {
    return json_integer(value > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)value);
}
