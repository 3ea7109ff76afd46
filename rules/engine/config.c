#include "rules/engine/config.h"
#include "analysis/base/growable.h"
#include "analysis/base/text_format.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Larger files are skipped unless the user raises the limit: a 9.5 MB
 * Python file took 20 s and 500 MB to check; 2 MiB takes about 4 s. Such
 * files are nearly always generated. */
#define DEFAULT_MAX_FILE_BYTES (2u * 1024 * 1024)

void config_init(Config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->fail_on = SEVERITY_WARNING;
    cfg->max_file_bytes = DEFAULT_MAX_FILE_BYTES;
}

void string_list_free(StringList *list) {
    for (size_t i = 0; i < list->count; i++) free(list->items[i]);
    free(list->items);
    list->items = NULL;
    list->count = list->cap = 0;
}

void config_free(Config *cfg) {
    string_list_free(&cfg->select);
    string_list_free(&cfg->ignore);
    string_list_free(&cfg->exclude);
    for (size_t i = 0; i < cfg->severity_count; i++) free(cfg->severity[i].selector);
    free(cfg->severity);
    free(cfg->profile_dir);
    free(cfg->cuda_build_dir);
    free(cfg->cuda_gpu_arch);
    free(cfg->cuda_path);
    free(cfg->source);
    memset(cfg, 0, sizeof *cfg);
}

bool string_list_add(StringList *list, const char *s) {
    if (!array_reserve(&list->items, list->count, &list->cap, sizeof *list->items, 8)) return false;
    char *copy = strdup(s);
    if (!copy) return false;
    list->items[list->count++] = copy;
    return true;
}

bool string_list_add_csv(StringList *list, const char *text) {
    const char *p = text;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        const char *start = p;
        while (*p && *p != ',') p++;
        const char *end = p;
        while (end > start && end[-1] == ' ') end--;
        if (end > start) {
            char *item = strndup(start, (size_t)(end - start));
            if (!item) return false;
            bool ok = string_list_add(list, item);
            free(item);
            if (!ok) return false;
        }
    }
    return true;
}

static bool matches(const char *selector, const Rule *rule) {
    if (strcmp(selector, "ALL") == 0) return true;
    if (strcmp(selector, rule->name) == 0) return true;
    size_t n = strlen(selector);
    return n > 0 && strncmp(rule->code, selector, n) == 0; /* exact code or prefix */
}

bool config_selector_valid(const char *selector) {
    size_t count;
    const Rule *const *all = rules_all(&count);
    if (strcmp(selector, "ALL") == 0) return true;
    for (size_t i = 0; i < count; i++)
        if (matches(selector, all[i])) return true;
    return false;
}

static bool any_matches(const StringList *list, const Rule *rule) {
    for (size_t i = 0; i < list->count; i++)
        if (matches(list->items[i], rule)) return true;
    return false;
}

bool config_rule_enabled(const Config *cfg, const Rule *rule) {
    if (cfg->select.count && !any_matches(&cfg->select, rule)) return false;
    return !any_matches(&cfg->ignore, rule);
}

/* the most specific override wins: a name or full code over a prefix over ALL */
Severity config_rule_severity(const Config *cfg, const Rule *rule, Severity reported) {
    Severity result = reported;
    size_t best = 0;
    for (size_t i = 0; i < cfg->severity_count; i++) {
        const char *sel = cfg->severity[i].selector;
        if (!matches(sel, rule)) continue;
        size_t specificity = strcmp(sel, "ALL") == 0 ? 1 : strcmp(sel, rule->name) == 0 ? 1000 : 1 + strlen(sel);
        if (specificity >= best) {
            best = specificity;
            result = cfg->severity[i].severity;
        }
    }
    return result;
}

bool config_set_severity(Config *cfg, const char *selector, const char *severity) {
    Severity s;
    if (!severity_parse(severity, &s) || !config_selector_valid(selector)) return false;
    if (!array_reserve(&cfg->severity, cfg->severity_count, &cfg->severity_cap, sizeof *cfg->severity, 4)) return false;
    char *copy = strdup(selector);
    if (!copy) return false;
    cfg->severity[cfg->severity_count++] = (SeverityOverride){copy, s};
    return true;
}

static bool check_list(const StringList *list, const char *what, char **error) {
    for (size_t i = 0; i < list->count; i++)
        if (!config_selector_valid(list->items[i])) {
            *error = format_string("unknown rule selector '%s' in %s (see `advise rules`)", list->items[i], what);
            return false;
        }
    return true;
}

bool config_validate(const Config *cfg, char **error) {
    return check_list(&cfg->select, "select", error) && check_list(&cfg->ignore, "ignore", error);
}

char *config_find(const char *dir) {
    char path[PATH_MAX];
    char *cur = realpath(dir, NULL);
    if (!cur) return NULL;
    for (;;) {
        struct stat st;
        if ((size_t)snprintf(path, sizeof path, "%s/advise.toml", strcmp(cur, "/") ? cur : "") < sizeof path &&
            stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            free(cur);
            return strdup(path);
        }
        char *slash = strrchr(cur, '/');
        if (!slash || slash == cur) {
            if (strcmp(cur, "/") == 0 || !slash) break;
            cur[1] = '\0';
            continue;
        }
        *slash = '\0';
    }
    free(cur);
    return NULL;
}
