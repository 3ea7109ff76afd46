/* Reads advise.toml: the subset of TOML that the settings need.
 *
 *   [check]
 *   select = ["PY", "CU001"]      # codes, prefixes, names or "ALL"
 *   ignore = ["PY009"]
 *   fail-on = "warning"           # error | warning | info | hint | never
 *   exclude = ["build/", "third_party/"]
 *   max-file-size = 2097152       # bytes
 *
 *   [severity]
 *   PY007 = "hint"
 *   unfused-attention = "error"
 *
 *   [profile]
 *   dir = ".advise/profiles"
 *   cold = "hint"                 # hint | hide | keep
 *
 *   [cuda]
 *   build-dir = "build"           # folder with compile_commands.json
 *   gpu-arch = "sm_90"
 *   cuda-path = "/usr/local/cuda"
 *
 * Supported: tables, bare and quoted keys, strings (basic and literal),
 * integers, booleans, arrays of strings over several lines, comments.
 * Anything else, and any unknown key, is an error with its line number. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/base/growable.h"
#include "analysis/cuda/cuda_flags.h"
#include "rules/engine/config.h"
#include "analysis/base/text_format.h"

#define MAX_CONFIG_BYTES (1024 * 1024)

typedef struct {
    const char *p, *end;
    int line;
    const char *path;
    char *error;
} Reader;

typedef enum { VALUE_STRING, VALUE_INTEGER, VALUE_BOOL, VALUE_ARRAY } ValueKind;

typedef struct {
    ValueKind kind;
    char *string;
    long long integer;
    bool boolean;
    StringList array;
} Value;

static void value_free(Value *v) {
    free(v->string);
    string_list_free(&v->array);
}

static bool fail(Reader *r, const char *message, const char *detail) {
    if (!r->error)
        r->error = format_string("%s:%d: %s%s%s", r->path, r->line, message, detail ? " " : "", detail ? detail : "");
    return false;
}

static void skip_blank(Reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t')) r->p++;
}

/* skips whitespace, newlines and comments (inside arrays) */
static void skip_space_lines(Reader *r) {
    for (;;) {
        skip_blank(r);
        if (r->p < r->end && *r->p == '#')
            while (r->p < r->end && *r->p != '\n') r->p++;
        if (r->p < r->end && (*r->p == '\n' || *r->p == '\r')) {
            if (*r->p == '\n') r->line++;
            r->p++;
            continue;
        }
        return;
    }
}

static bool end_of_line(Reader *r) {
    skip_blank(r);
    if (r->p < r->end && *r->p == '#')
        while (r->p < r->end && *r->p != '\n') r->p++;
    if (r->p < r->end && *r->p == '\r') r->p++;
    if (r->p < r->end && *r->p != '\n') return fail(r, "unexpected text after the value", NULL);
    if (r->p < r->end) {
        r->p++;
        r->line++;
    }
    return true;
}

static bool parse_string(Reader *r, char **out) {
    char quote = *r->p++;
    size_t cap = 32, n = 0;
    char *s = malloc(cap);
    if (!s) return fail(r, "out of memory", NULL);
    while (r->p < r->end && *r->p != quote) {
        char c = *r->p++;
        if (c == '\n') {
            free(s);
            return fail(r, "unterminated string", NULL);
        }
        if (c == '\\' && quote == '"') {
            if (r->p >= r->end) break;
            char e = *r->p++;
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case '\\': c = '\\'; break;
            case '"': c = '"'; break;
            default: free(s); return fail(r, "unsupported escape in string", NULL);
            }
        }
        if (!array_reserve_n(&s, n, 2, &cap, 1, 32)) { /* c and, at the end, the NUL */
            free(s);
            return fail(r, "out of memory", NULL);
        }
        s[n++] = c;
    }
    if (r->p >= r->end) {
        free(s);
        return fail(r, "unterminated string", NULL);
    }
    r->p++;
    s[n] = '\0';
    *out = s;
    return true;
}

static bool parse_value(Reader *r, Value *v) {
    memset(v, 0, sizeof *v);
    skip_blank(r);
    if (r->p >= r->end) return fail(r, "missing value", NULL);
    char c = *r->p;
    if (c == '"' || c == '\'') {
        v->kind = VALUE_STRING;
        return parse_string(r, &v->string);
    }
    if (c == '[') {
        v->kind = VALUE_ARRAY;
        r->p++;
        int open_line = r->line;
        for (;;) {
            skip_space_lines(r);
            if (r->p < r->end && *r->p == ']') {
                r->p++;
                return true;
            }
            if (r->p >= r->end) {
                r->line = open_line; /* report where the array began, not past the last line */
                return fail(r, "unterminated array (no closing ']')", NULL);
            }
            if (*r->p != '"' && *r->p != '\'')
                return fail(r, "arrays may hold only strings", NULL);
            char *item;
            if (!parse_string(r, &item)) return false;
            bool ok = string_list_add(&v->array, item);
            free(item);
            if (!ok) return fail(r, "out of memory", NULL);
            skip_space_lines(r);
            if (r->p < r->end && *r->p == ',') r->p++;
            else if (r->p < r->end && *r->p != ']') return fail(r, "expected ',' or ']' in array", NULL);
        }
    }
    size_t left = (size_t)(r->end - r->p); /* the text is not NUL-terminated */
    if ((left >= 4 && memcmp(r->p, "true", 4) == 0) || (left >= 5 && memcmp(r->p, "false", 5) == 0)) {
        v->kind = VALUE_BOOL;
        v->boolean = *r->p == 't';
        r->p += v->boolean ? 4 : 5;
        return true;
    }
    if (isdigit((unsigned char)c) || c == '-' || c == '+') {
        char buf[32];
        size_t n = 0;
        while (r->p < r->end && (isdigit((unsigned char)*r->p) || *r->p == '_' || *r->p == '-' || *r->p == '+') &&
               n + 1 < sizeof buf)
            if (*r->p++ != '_') buf[n++] = r->p[-1];
        buf[n] = '\0';
        char *endp;
        errno = 0;
        v->kind = VALUE_INTEGER;
        v->integer = strtoll(buf, &endp, 10);
        if (*endp || errno) return fail(r, "invalid integer", buf);
        return true;
    }
    return fail(r, "unsupported value (use a string, integer, boolean or array of strings)", NULL);
}

static bool parse_key(Reader *r, char **out) {
    skip_blank(r);
    if (r->p < r->end && (*r->p == '"' || *r->p == '\'')) return parse_string(r, out);
    const char *start = r->p;
    while (r->p < r->end && (isalnum((unsigned char)*r->p) || *r->p == '-' || *r->p == '_')) r->p++;
    if (r->p == start) return fail(r, "expected a key", NULL);
    *out = strndup(start, (size_t)(r->p - start));
    return *out ? true : fail(r, "out of memory", NULL);
}

static bool want(Reader *r, const Value *v, ValueKind kind, const char *key) {
    static const char *names[] = {"a string", "an integer", "a boolean", "an array of strings"};
    if (v->kind == kind) return true;
    char detail[128];
    snprintf(detail, sizeof detail, "'%s' must be %s", key, names[kind]);
    return fail(r, "wrong type:", detail);
}

static bool apply_list(Reader *r, StringList *dest, Value *v, const char *key, bool selectors) {
    if (!want(r, v, VALUE_ARRAY, key)) return false;
    for (size_t i = 0; i < v->array.count; i++) {
        if (selectors && !config_selector_valid(v->array.items[i]))
            return fail(r, "unknown rule selector:", v->array.items[i]);
        if (!string_list_add(dest, v->array.items[i])) return fail(r, "out of memory", NULL);
    }
    return true;
}

static bool apply(Reader *r, Config *cfg, const char *table, const char *key, Value *v) {
    if (strcmp(table, "check") == 0) {
        if (strcmp(key, "select") == 0) {
            string_list_free(&cfg->select);
            return apply_list(r, &cfg->select, v, key, true);
        }
        if (strcmp(key, "ignore") == 0) return apply_list(r, &cfg->ignore, v, key, true);
        if (strcmp(key, "exclude") == 0) return apply_list(r, &cfg->exclude, v, key, false);
        if (strcmp(key, "fail-on") == 0) {
            if (!want(r, v, VALUE_STRING, key)) return false;
            if (strcasecmp(v->string, "never") == 0) {
                cfg->fail_never = true;
                return true;
            }
            cfg->fail_never = false;
            if (!severity_parse(v->string, &cfg->fail_on))
                return fail(r, "fail-on must be error, warning, info, hint or never, not", v->string);
            return true;
        }
        if (strcmp(key, "max-file-size") == 0) {
            if (!want(r, v, VALUE_INTEGER, key)) return false;
            if (v->integer <= 0) return fail(r, "max-file-size must be positive", NULL);
            cfg->max_file_bytes = (size_t)v->integer;
            return true;
        }
    } else if (strcmp(table, "severity") == 0) {
        if (!want(r, v, VALUE_STRING, key)) return false;
        if (!config_selector_valid(key)) return fail(r, "unknown rule selector:", key);
        if (!config_set_severity(cfg, key, v->string))
            return fail(r, "severity must be error, warning, info or hint, not", v->string);
        return true;
    } else if (strcmp(table, "cuda") == 0) {
        char **slot = strcmp(key, "build-dir") == 0 ? &cfg->cuda_build_dir
                      : strcmp(key, "gpu-arch") == 0 ? &cfg->cuda_gpu_arch
                      : strcmp(key, "cuda-path") == 0 ? &cfg->cuda_path
                                                     : NULL;
        if (slot) {
            if (!want(r, v, VALUE_STRING, key)) return false;
            if (slot == &cfg->cuda_gpu_arch) {
                char *arch = cuda_arch_normalized(v->string);
                bool known = arch && cuda_arch_known(arch);
                free(arch);
                if (!known) {
                    char *message = cuda_arch_unknown_message(v->string);
                    bool ok = fail(r, message ? message : "unknown gpu-arch", NULL);
                    free(message);
                    return ok;
                }
            }
            free(*slot);
            *slot = strdup(v->string);
            return *slot ? true : fail(r, "out of memory", NULL);
        }
    } else if (strcmp(table, "profile") == 0) {
        if (strcmp(key, "dir") == 0) {
            if (!want(r, v, VALUE_STRING, key)) return false;
            free(cfg->profile_dir);
            cfg->profile_dir = strdup(v->string);
            return cfg->profile_dir ? true : fail(r, "out of memory", NULL);
        }
        if (strcmp(key, "cold") == 0) {
            if (!want(r, v, VALUE_STRING, key)) return false;
            if (strcmp(v->string, "hint") == 0) cfg->profile_cold = PROFILE_COLD_HINT;
            else if (strcmp(v->string, "hide") == 0) cfg->profile_cold = PROFILE_COLD_HIDE;
            else if (strcmp(v->string, "keep") == 0) cfg->profile_cold = PROFILE_COLD_KEEP;
            else return fail(r, "cold must be hint, hide or keep, not", v->string);
            return true;
        }
    } else {
        return fail(r, "unknown table:", table);
    }
    char detail[160];
    snprintf(detail, sizeof detail, "'%s' in [%s]", key, table);
    return fail(r, "unknown key", detail);
}

/* TOML forbids defining a table or a key twice; a second `select` that
 * silently replaced the first turned rules off. seen holds "[table]" and
 * "table.key" for everything defined so far. */
static bool first_definition(Reader *r, StringList *seen, const char *table, const char *key) {
    char *name = key ? format_string("%s.%s", table, key) : format_string("[%s]", table);
    if (!name) return fail(r, "out of memory", NULL);
    for (size_t i = 0; i < seen->count; i++)
        if (strcmp(seen->items[i], name) == 0) {
            bool ok = fail(r, key ? "this key is already set in this table (TOML allows a key once):"
                                  : "this table is already defined (TOML allows a table once):",
                           name);
            free(name);
            return ok;
        }
    bool ok = string_list_add(seen, name) || fail(r, "out of memory", NULL);
    free(name);
    return ok;
}

static bool parse_definitions(Reader *r, Config *cfg, StringList *seen);

static bool parse(Reader *r, Config *cfg) {
    StringList seen = {0};
    bool ok = parse_definitions(r, cfg, &seen);
    string_list_free(&seen);
    return ok;
}

static bool parse_definitions(Reader *r, Config *cfg, StringList *seen) {
    char table[64] = "";
    while (r->p < r->end) {
        skip_space_lines(r);
        if (r->p >= r->end) break;
        if (*r->p == '[') {
            r->p++;
            char *name;
            if (!parse_key(r, &name)) return false;
            skip_blank(r);
            if (r->p >= r->end || *r->p != ']') {
                free(name);
                return fail(r, "expected ']' after the table name (nested tables are not supported)", NULL);
            }
            r->p++;
            snprintf(table, sizeof table, "%s", name);
            bool known = strcmp(name, "check") == 0 || strcmp(name, "severity") == 0 || strcmp(name, "profile") == 0 ||
                         strcmp(name, "cuda") == 0;
            if (!known || !first_definition(r, seen, name, NULL)) {
                if (!known) fail(r, "unknown table:", name);
                free(name);
                return false;
            }
            free(name);
            if (!end_of_line(r)) return false;
            continue;
        }
        if (!table[0]) return fail(r, "settings must be inside a table such as [check]", NULL);
        char *key;
        if (!parse_key(r, &key)) return false;
        skip_blank(r);
        if (r->p >= r->end || *r->p != '=') {
            free(key);
            return fail(r, "expected '=' after the key", NULL);
        }
        r->p++;
        if (!first_definition(r, seen, table, key)) {
            free(key);
            return false;
        }
        Value v;
        bool ok = parse_value(r, &v) && apply(r, cfg, table, key, &v) && end_of_line(r);
        value_free(&v);
        free(key);
        if (!ok) return false;
    }
    return true;
}

bool config_load_file(Config *cfg, const char *path, char **error) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        *error = format_string("%s: cannot read: %s", path, strerror(errno));
        return false;
    }
    char *text = malloc(MAX_CONFIG_BYTES + 1);
    size_t n = text ? fread(text, 1, MAX_CONFIG_BYTES + 1, f) : 0;
    bool read_error = ferror(f);
    fclose(f);
    if (!text || read_error || n > MAX_CONFIG_BYTES) {
        free(text);
        *error = format_string("%s: %s", path, read_error ? "read error" : "too large (over 1 MiB) or out of memory");
        return false;
    }
    bool ok = config_load_text(cfg, text, n, path, error);
    free(text);
    return ok;
}

bool config_load_text(Config *cfg, const char *text, size_t length, const char *path, char **error) {
    if (length > MAX_CONFIG_BYTES) {
        *error = format_string("%s: too large (over 1 MiB)", path);
        return false;
    }
    if (memchr(text, '\0', length)) {
        *error = format_string("%s: not a text file", path);
        return false;
    }
    Reader r = {.p = text, .end = text + length, .line = 1, .path = path};
    if (!parse(&r, cfg)) {
        *error = r.error;
        return false;
    }
    free(cfg->source);
    cfg->source = strdup(path);
    return true;
}
