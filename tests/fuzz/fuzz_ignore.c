/* The .gitignore matcher: the input's first line is a path to match, the
 * rest the patterns (relative to /repo). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/workspace/ignore_rules.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_string(data, size);
    char *newline = strchr(text, '\n');
    const char *patterns = newline ? newline + 1 : "";
    if (newline) *newline = '\0';
    char path[4200];
    snprintf(path, sizeof path, "/repo/%.4096s", text);
    IgnoreRules rules = {0};
    ignore_rules_add_text(&rules, "/repo", patterns);
    (void)ignore_rules_match(&rules, path, false);
    (void)ignore_rules_match(&rules, path, true);
    (void)glob_match(text, patterns);
    ignore_rules_free(&rules);
    free(text);
    return 0;
}
