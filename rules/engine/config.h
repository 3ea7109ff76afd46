/* Which rules run and how loudly: from `advise.toml` at the project root
 * (see docs/configuration.md), the command line, or an editor's settings.
 *
 * Selectors name rules by code ("PY001"), code prefix ("PY"), name
 * ("host-sync-in-loop") or "ALL". */
#ifndef ADVISE_CONFIG_H
#define ADVISE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "rules/rule.h"

typedef struct {
    char *selector;
    Severity severity;
} SeverityOverride;

typedef struct {
    char **items;
    size_t count;
    size_t cap; /* room in items (array_reserve); a copy made by hand is a new list (string_list_add) */
} StringList;

/* What a merged profile does to a static finding in code it shows cold
 * (`[profile] cold`): demote it to a hint (default), hide it, or keep it. */
typedef enum { PROFILE_COLD_HINT, PROFILE_COLD_HIDE, PROFILE_COLD_KEEP } ProfileCold;

typedef struct {
    StringList select;  /* empty: every rule */
    StringList ignore;
    SeverityOverride *severity;
    size_t severity_count;
    size_t severity_cap; /* room in severity (array_reserve) */
    Severity fail_on;   /* findings at or above this fail `advise check` */
    bool fail_never;
    StringList exclude; /* gitignore-style patterns, relative to the project root */
    char *profile_dir;
    ProfileCold profile_cold;
    char *cuda_build_dir; /* folder with compile_commands.json ([cuda] build-dir) */
    char *cuda_gpu_arch;  /* [cuda] gpu-arch, default sm_90 */
    char *cuda_path;      /* [cuda] cuda-path, default: search */
    size_t max_file_bytes;
    char *source;       /* the file the settings came from, or NULL */
} Config;

void config_init(Config *cfg);
void config_free(Config *cfg);

bool string_list_add(StringList *list, const char *s);
void string_list_free(StringList *list);
/* Adds each comma-separated item of text. */
bool string_list_add_csv(StringList *list, const char *text);

/* A selector names at least one rule (or is "ALL"). */
bool config_selector_valid(const char *selector);
bool config_rule_enabled(const Config *cfg, const Rule *rule);
Severity config_rule_severity(const Config *cfg, const Rule *rule, Severity reported);
/* Sets a severity override; false when selector or severity is unknown. */
bool config_set_severity(Config *cfg, const char *selector, const char *severity);
/* Checks every selector; on failure stores a message for a person. */
bool config_validate(const Config *cfg, char **error);

/* Reads advise.toml into cfg (on top of what it holds). */
bool config_load_file(Config *cfg, const char *path, char **error);
/* The same for text already in memory (length bytes, not NUL-terminated);
 * path names it in messages. */
bool config_load_text(Config *cfg, const char *text, size_t length, const char *path, char **error);
/* Walks up from dir to find advise.toml; returns a heap path or NULL. */
char *config_find(const char *dir);

#endif
