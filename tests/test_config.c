/* Settings: the advise.toml reader (every accepted form and every error,
 * with its line number), rule selection and severity overrides, finding the
 * file by walking up directories, and comma-separated lists. PY003
 * (sync-in-hot-loop) is the rule known to exist. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/growable.h"
#include "rules/engine/config.h"

/* ---- helpers ---------------------------------------------------------------- */

static char *write_temp_bytes(const char *bytes, size_t length) {
    char *path = strdup("/tmp/advise-config-XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp failed");
    cr_assert(write(fd, bytes, length) == (ssize_t)length);
    close(fd);
    return path;
}

static char *write_temp(const char *text) { return write_temp_bytes(text, strlen(text)); }

/* loads text, which must succeed */
static void load_ok(Config *cfg, const char *text) {
    char *path = write_temp(text);
    char *error = NULL;
    bool ok = config_load_file(cfg, path, &error);
    unlink(path); /* before any assertion can end the test */
    cr_assert(ok, "rejected: %s\n---\n%s", error ? error : "(no message)", text);
    cr_expect(cfg->source && strcmp(cfg->source, path) == 0, "source is the file read");
    free(path);
}

/* loads bytes, which must fail with a message that starts "<path>:<line>:" (line > 0) and holds needle */
static void load_fails_bytes(const char *bytes, size_t length, int line, const char *needle) {
    char *path = write_temp_bytes(bytes, length);
    Config cfg;
    config_init(&cfg);
    char *error = NULL;
    bool ok = config_load_file(&cfg, path, &error);
    unlink(path); /* before any assertion can end the test */
    cr_expect(!ok, "accepted:\n%.*s", (int)length, bytes);
    cr_assert_not_null(error, "no message for:\n%.*s", (int)length, bytes);
    if (line > 0) {
        char prefix[PATH_MAX + 32];
        snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
        cr_expect(strncmp(error, prefix, strlen(prefix)) == 0, "message \"%s\" does not start with \"%s\"", error,
                  prefix);
    } else {
        cr_expect(strncmp(error, path, strlen(path)) == 0, "message \"%s\" does not name the file", error);
    }
    cr_expect(strstr(error, needle) != NULL, "message \"%s\" lacks \"%s\"", error, needle);
    free(error);
    config_free(&cfg); /* a failed load leaves a config that can be freed */
    free(path);
}

static void load_fails(const char *text, int line, const char *needle) {
    load_fails_bytes(text, strlen(text), line, needle);
}

static bool has(const StringList *list, size_t i, const char *s) { return i < list->count && strcmp(list->items[i], s) == 0; }

/* ---- parsing ------------------------------------------------------------------- */

Test(config_file, defaults) {
    Config cfg;
    config_init(&cfg);
    cr_expect(cfg.select.count == 0 && cfg.ignore.count == 0 && cfg.exclude.count == 0);
    cr_expect(cfg.fail_on == SEVERITY_WARNING && !cfg.fail_never);
    cr_expect(cfg.max_file_bytes == 2u * 1024 * 1024);
    cr_expect(cfg.profile_dir == NULL && cfg.source == NULL && cfg.severity_count == 0);
    config_free(&cfg);
}

Test(config_file, every_setting) {
    Config cfg;
    config_init(&cfg);
    load_ok(&cfg,
            "# project settings\n"
            "\n"
            "[check]   # the checks\n"
            "select = [\"PY\", \"sync-in-hot-loop\"]   # trailing comment\n"
            "ignore = [\n"
            "  \"PY003\",   # a comment inside an array\n"
            "\n"
            "  'sync-in-hot-loop',\n"
            "]\n"
            "fail-on = \"error\"\n"
            "exclude = [\"build/\", 'third_party/**', \"a \\\"quoted\\\" dir\\\\\"]\n"
            "max-file-size = 1_048_576\n"
            "\n"
            "[severity]\n"
            "PY = \"hint\"\n"
            "\"PY003\" = \"error\"\n"
            "'sync-in-hot-loop' = 'Warning'\n"
            "ALL = \"info\"\n"
            "\n"
            "[profile]\n"
            "dir = \".advise/profiles\"\n");
    cr_expect(cfg.select.count == 2 && has(&cfg.select, 0, "PY") && has(&cfg.select, 1, "sync-in-hot-loop"));
    cr_expect(cfg.ignore.count == 2 && has(&cfg.ignore, 0, "PY003") && has(&cfg.ignore, 1, "sync-in-hot-loop"));
    cr_expect(cfg.fail_on == SEVERITY_ERROR && !cfg.fail_never);
    cr_expect(cfg.exclude.count == 3 && has(&cfg.exclude, 0, "build/") && has(&cfg.exclude, 1, "third_party/**") &&
                  has(&cfg.exclude, 2, "a \"quoted\" dir\\"),
              "exclude: %zu items", cfg.exclude.count);
    cr_expect(cfg.max_file_bytes == 1048576, "max-file-size %zu", cfg.max_file_bytes);
    cr_assert(cfg.severity_count == 4);
    cr_expect(strcmp(cfg.severity[0].selector, "PY") == 0 && cfg.severity[0].severity == SEVERITY_HINT);
    cr_expect(strcmp(cfg.severity[1].selector, "PY003") == 0 && cfg.severity[1].severity == SEVERITY_ERROR);
    cr_expect(strcmp(cfg.severity[2].selector, "sync-in-hot-loop") == 0 &&
              cfg.severity[2].severity == SEVERITY_WARNING);
    cr_expect(strcmp(cfg.severity[3].selector, "ALL") == 0 && cfg.severity[3].severity == SEVERITY_INFO);
    cr_expect(cfg.profile_dir && strcmp(cfg.profile_dir, ".advise/profiles") == 0);
    config_free(&cfg);
}

Test(config_file, crlf_and_no_final_newline) {
    Config cfg;
    config_init(&cfg);
    load_ok(&cfg, "[check]\r\nselect = [\r\n  \"PY003\",\r\n]\r\nfail-on = \"hint\"  # c\r\n[profile]\r\ndir = 'p'");
    cr_expect(cfg.select.count == 1 && has(&cfg.select, 0, "PY003"));
    cr_expect(cfg.fail_on == SEVERITY_HINT);
    cr_expect(cfg.profile_dir && strcmp(cfg.profile_dir, "p") == 0);
    config_free(&cfg);
}

Test(config_file, empty_and_comment_only_files) {
    Config cfg;
    config_init(&cfg);
    load_ok(&cfg, "");
    load_ok(&cfg, "# nothing here\n\n   # still nothing\n");
    load_ok(&cfg, "[check]\n[severity]\n[profile]\n");
    cr_expect(cfg.select.count == 0 && cfg.severity_count == 0 && cfg.fail_on == SEVERITY_WARNING);
    config_free(&cfg);
}

Test(config_file, fail_on_values) {
    static const struct { const char *text; Severity s; bool never; } cases[] = {
        {"error", SEVERITY_ERROR, false}, {"warning", SEVERITY_WARNING, false}, {"info", SEVERITY_INFO, false},
        {"information", SEVERITY_INFO, false}, {"hint", SEVERITY_HINT, false}, {"never", SEVERITY_WARNING, true},
        {"NEVER", SEVERITY_WARNING, true}, {"Error", SEVERITY_ERROR, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Config cfg;
        config_init(&cfg);
        char text[128];
        snprintf(text, sizeof text, "[check]\nfail-on = \"%s\"\n", cases[i].text);
        load_ok(&cfg, text);
        cr_expect(cfg.fail_never == cases[i].never, "%s", cases[i].text);
        if (!cases[i].never) cr_expect(cfg.fail_on == cases[i].s, "%s", cases[i].text);
        config_free(&cfg);
    }
    /* a later value (a second file laid over the first) replaces "never" */
    Config cfg;
    config_init(&cfg);
    load_ok(&cfg, "[check]\nfail-on = \"never\"\n");
    load_ok(&cfg, "[check]\nfail-on = \"info\"\n");
    cr_expect(!cfg.fail_never && cfg.fail_on == SEVERITY_INFO);
    config_free(&cfg);
}

Test(config_file, loads_on_top_of_what_the_config_holds) {
    Config cfg;
    config_init(&cfg);
    load_ok(&cfg, "[check]\nselect = [\"PY\"]\nignore = [\"PY003\"]\n[profile]\ndir = \"a\"\n");
    load_ok(&cfg, "[check]\nselect = [\"sync-in-hot-loop\"]\nignore = [\"sync-in-hot-loop\"]\n[profile]\ndir = \"b\"\n");
    cr_expect(cfg.select.count == 1 && has(&cfg.select, 0, "sync-in-hot-loop"), "select is replaced");
    cr_expect(cfg.ignore.count == 2 && has(&cfg.ignore, 0, "PY003"), "ignore is extended");
    cr_expect(strcmp(cfg.profile_dir, "b") == 0);
    config_free(&cfg);
}

Test(config_file, quoted_keys_and_tables_with_blanks) {
    Config cfg;
    config_init(&cfg);
    load_ok(&cfg, "[ check ]\n\"select\" = ['PY003']\n  'max-file-size'=42\n[ \"severity\" ]\n\"sync-in-hot-loop\"=\"hint\"\n");
    cr_expect(has(&cfg.select, 0, "PY003") && cfg.max_file_bytes == 42);
    cr_expect(cfg.severity_count == 1 && cfg.severity[0].severity == SEVERITY_HINT);
    config_free(&cfg);
}

/* ---- errors --------------------------------------------------------------------- */

Test(config_errors, an_unknown_gpu_arch_is_named) {
    load_fails("[cuda]\ngpu-arch = \"sm_100\"\n", 2, "unknown gpu-arch 'sm_100'");
    load_fails("[cuda]\ngpu-arch = \"banana\"\n", 2, "knows sm_20 to sm_90 and sm_90a");
    Config cfg;
    config_init(&cfg);
    load_ok(&cfg, "[cuda]\ngpu-arch = \"compute_80\"\n");
    config_free(&cfg);
}

/* TOML defines a table or a key once: a second `select` used to replace the
 * first silently, turning rules off. */
Test(config_errors, a_key_or_a_table_defined_twice) {
    load_fails("[check]\nselect = [\"PY001\"]\nselect = [\"PY002\"]\n", 3,
               "this key is already set in this table (TOML allows a key once): check.select");
    load_fails("[check]\nselect = [\"PY001\"]\n[profile]\ndir = \"p\"\n[check]\nignore = [\"PY002\"]\n", 5,
               "this table is already defined (TOML allows a table once): [check]");
    load_fails("[severity]\nPY001 = \"error\"\n\"PY001\" = \"hint\"\n", 3, "severity.PY001");
    /* the same key in two tables is two keys */
    Config cfg;
    config_init(&cfg);
    char *error = NULL;
    char *path = write_temp("[check]\nselect = [\"PY001\"]\n[severity]\nPY001 = \"error\"\n");
    cr_expect(config_load_file(&cfg, path, &error), "%s", error ? error : "");
    free(error);
    unlink(path);
    free(path);
    config_free(&cfg);
}

Test(config_errors, unknown_tables_and_keys) {
    load_fails("[check]\n[nope]\n", 2, "unknown table");
    load_fails("# c\n\n[checks]\n", 3, "checks");
    load_fails("[check]\nselect = [\"PY003\"]\nbogus = 1\n", 3, "unknown key");
    load_fails("[check]\nselect = [\"PY003\"]\nbogus = 1\n", 3, "bogus");
    load_fails("[profile]\ndirectory = \"x\"\n", 2, "unknown key");
    load_fails("[check]\n\"select it\" = [\"PY003\"]\n", 2, "unknown key");
    load_fails("[check.sub]\n", 1, "nested tables");
    load_fails("[[check]]\n", 1, "");
    load_fails("select = [\"PY003\"]\n", 1, "inside a table");
}

Test(config_errors, wrong_types) {
    load_fails("[check]\nselect = \"PY003\"\n", 2, "wrong type");
    load_fails("[check]\nselect = \"PY003\"\n", 2, "'select' must be an array of strings");
    load_fails("[check]\nexclude = true\n", 2, "wrong type");
    load_fails("[check]\nmax-file-size = \"big\"\n", 2, "'max-file-size' must be an integer");
    load_fails("[check]\nfail-on = 3\n", 2, "'fail-on' must be a string");
    load_fails("[severity]\nPY003 = 1\n", 2, "wrong type");
    load_fails("[profile]\ndir = [\"a\"]\n", 2, "wrong type");
    load_fails("[check]\nselect = [1, 2]\n", 2, "arrays may hold only strings");
}

Test(config_errors, bad_values) {
    load_fails("[check]\n\nselect = [\"NOPE999\"]\n", 3, "unknown rule selector");
    load_fails("[check]\n\nselect = [\"NOPE999\"]\n", 3, "NOPE999");
    load_fails("[check]\nignore = [\"PY003\", \"sync-in-hot\"]\n", 2, "sync-in-hot");
    load_fails("[severity]\nno-such-rule = \"hint\"\n", 2, "unknown rule selector");
    load_fails("[severity]\nPY003 = \"loud\"\n", 2, "loud");
    load_fails("[check]\nfail-on = \"sometimes\"\n", 2, "sometimes");
    load_fails("[check]\nmax-file-size = 0\n", 2, "positive");
    load_fails("[check]\nmax-file-size = -5\n", 2, "positive");
    load_fails("[check]\nmax-file-size = 5-3\n", 2, "invalid integer");
    load_fails("[check]\nmax-file-size = 99999999999999999999999\n", 2, "invalid integer");
}

Test(config_errors, unterminated_strings) {
    load_fails("[check]\nselect = [\"PY003]\n", 2, "unterminated string");
    load_fails("[check]\nselect = [\n  \"PY003\",\n  \"PY\n]\n", 4, "unterminated string");
    load_fails("[profile]\ndir = \"abc", 2, "unterminated string");
    load_fails("[profile]\ndir = 'abc\n", 2, "unterminated string");
    load_fails("[profile]\ndir = \"abc\\", 2, "unterminated string");
    load_fails("[check]\nselect = [\"PY003\"\n", 2, "unterminated array");
    load_fails("[check]\nselect = [\n  \"PY003\",\n  # the end is missing\n", 2, "unterminated array");
    load_fails("[check]\nselect = [", 2, "unterminated array");
}

Test(config_errors, garbage) {
    load_fails("this is not toml\n", 1, "");
    load_fails("[check]\n@@@\n", 2, "expected a key");
    load_fails("[check]\nselect ~ [\"PY003\"]\n", 2, "expected '='");
    load_fails("[check]\nselect = [\"PY003\"] junk\n", 2, "unexpected text");
    load_fails("[check]\nmax-file-size = 12abc\n", 2, "");
    load_fails("[check]\nselect = [\"PY003\" \"PY\"]\n", 2, "expected ',' or ']'");
    load_fails("[check]\nselect =\n", 2, "");
    load_fails("[check]\nselect = {a = 1}\n", 2, "unsupported value");
    load_fails("[profile]\ndir = \"a\\q\"\n", 2, "unsupported escape");
    load_fails("[check\n", 1, "expected ']'");
    /* a value cut short at the end of the file: no reading past it */
    load_fails("[check]\nselect = tru", 2, "");
    load_fails("[check]\nselect = f", 2, "");
    load_fails("[check]\nselect = t", 2, "");
}

Test(config_errors, line_numbers_count_comments_arrays_and_crlf) {
    load_fails("# c\n\n[check]\n# c\nbogus = 1\n", 5, "bogus");
    load_fails("[check]\nignore = [\n  \"PY003\",  # why\n  # more\n]\nbogus = 1\n", 6, "bogus");
    load_fails("[check]\r\nselect = []\r\nbogus = 1\r\n", 3, "bogus");
    load_fails("[check]\nexclude = [\"a\",\n\"b\"] # c\n\n\n[nope]\n", 6, "nope");
}

Test(config_errors, binary_input) {
    static const char with_nul[] = "[check]\n\0\x01\x02\xff";
    load_fails_bytes(with_nul, sizeof with_nul - 1, 0, "not a text file");
    static const char png[] = "\x89PNG\r\n\x1a\n\x7f\xfe\xfd";
    load_fails_bytes(png, sizeof png - 1, 1, "");
    static const char high_bytes[] = "[check]\n\xff\xfe = 1\n";
    load_fails_bytes(high_bytes, sizeof high_bytes - 1, 2, "");
}

Test(config_errors, missing_file) {
    Config cfg;
    config_init(&cfg);
    char *error = NULL;
    cr_expect(!config_load_file(&cfg, "/nonexistent/advise-test/advise.toml", &error));
    cr_assert_not_null(error);
    cr_expect(strstr(error, "/nonexistent/advise-test/advise.toml") != NULL && strstr(error, "cannot read"));
    free(error);
    config_free(&cfg);
}

/* ---- selection ------------------------------------------------------------------ */

static const Rule fake_py = {.code = "PY012", .name = "fake-python-rule", .severity = SEVERITY_WARNING};
static const Rule fake_cu = {.code = "CU001", .name = "fake-cuda-rule", .severity = SEVERITY_ERROR};

static bool enabled(const char *select_csv, const char *ignore_csv, const Rule *rule) {
    Config cfg;
    config_init(&cfg);
    cr_assert(string_list_add_csv(&cfg.select, select_csv));
    cr_assert(string_list_add_csv(&cfg.ignore, ignore_csv));
    bool on = config_rule_enabled(&cfg, rule);
    config_free(&cfg);
    return on;
}

Test(selection, rule_enabled) {
    const Rule *py003 = rule_find("PY003");
    cr_assert_not_null(py003, "PY003 must be registered");
    cr_expect(enabled("", "", py003) && enabled("", "", &fake_cu), "no select: every rule");
    cr_expect(enabled("ALL", "", py003) && enabled("ALL", "", &fake_cu));
    cr_expect(enabled("PY", "", py003) && enabled("PY", "", &fake_py), "code prefix");
    cr_expect(!enabled("PY", "", &fake_cu));
    cr_expect(enabled("PY0", "", py003) && !enabled("PY01", "", py003) && enabled("PY01", "", &fake_py));
    cr_expect(enabled("PY003", "", py003) && !enabled("PY003", "", &fake_py), "exact code");
    cr_expect(!enabled("PY0031", "", py003), "a longer selector is not a prefix");
    cr_expect(enabled("sync-in-hot-loop", "", py003) && !enabled("sync-in-hot-loop", "", &fake_py), "name");
    cr_expect(!enabled("sync-in-hot", "", py003), "a name prefix selects nothing");
    cr_expect(!enabled("sync-in-hot-loop-x", "", py003));
    cr_expect(enabled("CU001, PY003", "", py003) && enabled("CU001, PY003", "", &fake_cu) &&
              !enabled("CU001, PY003", "", &fake_py), "several selectors");
    /* ignore beats select */
    cr_expect(!enabled("PY003", "PY003", py003));
    cr_expect(!enabled("ALL", "PY", py003) && enabled("ALL", "PY", &fake_cu));
    cr_expect(!enabled("sync-in-hot-loop", "PY", py003));
    cr_expect(!enabled("PY003", "sync-in-hot-loop", py003));
    cr_expect(!enabled("", "ALL", py003), "ignore ALL without select");
    cr_expect(enabled("", "CU", py003) && !enabled("", "CU", &fake_cu));
}

Test(selection, selector_valid) {
    cr_expect(config_selector_valid("ALL"));
    cr_expect(config_selector_valid("PY"));
    cr_expect(config_selector_valid("PY003"));
    cr_expect(config_selector_valid("sync-in-hot-loop"));
    cr_expect(!config_selector_valid("NOPE999"));
    cr_expect(!config_selector_valid(""));
    cr_expect(!config_selector_valid("sync"));

    Config cfg;
    config_init(&cfg);
    char *error = NULL;
    string_list_add(&cfg.select, "PY003");
    cr_expect(config_validate(&cfg, &error) && error == NULL);
    string_list_add(&cfg.ignore, "bogus-rule");
    cr_expect(!config_validate(&cfg, &error));
    cr_expect(error && strstr(error, "bogus-rule") && strstr(error, "ignore"), "message: %s", error ? error : "");
    free(error);
    config_free(&cfg);
}

static void override(Config *cfg, const char *selector, Severity s) {
    /* by hand: config_set_severity would refuse the fake rules' selectors */
    cr_assert(array_reserve(&cfg->severity, cfg->severity_count, &cfg->severity_cap, sizeof *cfg->severity, 4));
    cfg->severity[cfg->severity_count++] = (SeverityOverride){strdup(selector), s};
}

static Severity severity_with(const Rule *rule, const char *sel1, Severity s1, const char *sel2, Severity s2) {
    Config cfg;
    config_init(&cfg);
    if (sel1) override(&cfg, sel1, s1);
    if (sel2) override(&cfg, sel2, s2);
    Severity got = config_rule_severity(&cfg, rule, rule->severity);
    config_free(&cfg);
    return got;
}

Test(selection, rule_severity_most_specific_wins) {
    const Rule *r = rule_find("PY003");
    cr_assert_not_null(r);
    const Severity def = r->severity;
    cr_expect(severity_with(r, NULL, 0, NULL, 0) == def, "no override: the reported severity");
    cr_expect(severity_with(r, "CU", SEVERITY_HINT, "fake-rule", SEVERITY_HINT) == def, "overrides for other rules");
    cr_expect(severity_with(r, "ALL", SEVERITY_HINT, NULL, 0) == SEVERITY_HINT);
    /* in both orders: prefix over ALL, longer prefix over shorter, code over prefix, name over prefix */
    static const struct { const char *general, *specific; } pairs[] = {
        {"ALL", "PY"}, {"PY", "PY00"}, {"PY0", "PY003"}, {"ALL", "PY003"}, {"PY", "sync-in-hot-loop"},
        {"ALL", "sync-in-hot-loop"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        cr_expect(severity_with(r, pairs[i].general, SEVERITY_HINT, pairs[i].specific, SEVERITY_ERROR) ==
                      SEVERITY_ERROR,
                  "%s then %s", pairs[i].general, pairs[i].specific);
        cr_expect(severity_with(r, pairs[i].specific, SEVERITY_ERROR, pairs[i].general, SEVERITY_HINT) ==
                      SEVERITY_ERROR,
                  "%s then %s", pairs[i].specific, pairs[i].general);
    }
    /* the reported severity is what is overridden, not the default */
    Config cfg;
    config_init(&cfg);
    cr_expect(config_rule_severity(&cfg, r, SEVERITY_INFO) == SEVERITY_INFO);
    config_free(&cfg);
}

Test(selection, set_severity) {
    Config cfg;
    config_init(&cfg);
    cr_expect(config_set_severity(&cfg, "PY003", "hint"));
    cr_expect(config_set_severity(&cfg, "sync-in-hot-loop", "ERROR"));
    cr_expect(!config_set_severity(&cfg, "NOPE999", "hint"), "unknown selector");
    cr_expect(!config_set_severity(&cfg, "PY003", "loud"), "unknown severity");
    cr_expect(cfg.severity_count == 2);
    cr_expect(strcmp(cfg.severity[0].selector, "PY003") == 0 && cfg.severity[0].severity == SEVERITY_HINT);
    cr_expect(strcmp(cfg.severity[1].selector, "sync-in-hot-loop") == 0 &&
              cfg.severity[1].severity == SEVERITY_ERROR);
    config_free(&cfg);
    config_init(&cfg);
    cr_assert(config_set_severity(&cfg, "PY", "info"));
    cr_expect(config_rule_severity(&cfg, rule_find("PY003"), SEVERITY_WARNING) == SEVERITY_INFO);
    config_free(&cfg);
}

/* ---- config_find ---------------------------------------------------------------- */

static void make_file(const char *dir, const char *name) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot create %s", path);
    fputs("[check]\n", f);
    fclose(f);
}

static char *join(const char *a, const char *b) {
    char *s = malloc(strlen(a) + strlen(b) + 2);
    sprintf(s, "%s/%s", a, b);
    return s;
}

Test(config_find, walks_up_directories) {
    char tmpl[] = "/tmp/advise-find-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    char *root = realpath(tmpl, NULL);
    char *a = join(root, "a"), *ab = join(root, "a/b"), *abc = join(root, "a/b/c");
    cr_assert(mkdir(a, 0700) == 0 && mkdir(ab, 0700) == 0 && mkdir(abc, 0700) == 0);

    char *expected_root = join(root, "advise.toml");
    char *expected_a = join(root, "a/advise.toml");

    make_file(root, "advise.toml");
    char *found = config_find(abc);
    cr_expect(found && strcmp(found, expected_root) == 0, "found %s, expected %s", found ? found : "NULL",
              expected_root);
    free(found);
    found = config_find(root);
    cr_expect(found && strcmp(found, expected_root) == 0, "in the directory itself");
    free(found);

    /* the nearest wins */
    make_file(a, "advise.toml");
    found = config_find(abc);
    cr_expect(found && strcmp(found, expected_a) == 0, "found %s, expected %s", found ? found : "NULL", expected_a);
    free(found);

    /* a directory called advise.toml is not a settings file */
    char *dir_named = join(ab, "advise.toml");
    cr_assert(mkdir(dir_named, 0700) == 0);
    found = config_find(abc);
    cr_expect(found && strcmp(found, expected_a) == 0, "found %s, expected %s", found ? found : "NULL", expected_a);
    free(found);

    /* a relative and unnormalised start */
    char cwd[PATH_MAX];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    cr_assert(chdir(ab) == 0);
    found = config_find("c/../c/.");
    cr_expect(found && strcmp(found, expected_a) == 0, "relative: found %s", found ? found : "NULL");
    free(found);
    cr_assert(chdir(cwd) == 0);

    cr_expect(config_find("/nonexistent/advise-test/dir") == NULL);

    rmdir(dir_named);
    unlink(expected_a);
    unlink(expected_root);
    rmdir(abc);
    rmdir(ab);
    rmdir(a);
    rmdir(root);
    free(dir_named);
    free(expected_a);
    free(expected_root);
    free(abc);
    free(ab);
    free(a);
    free(root);
}

Test(config_find, nothing_found) {
    struct stat st;
    if (stat("/tmp/advise.toml", &st) == 0 || stat("/advise.toml", &st) == 0)
        cr_skip_test("an advise.toml above /tmp would be found");
    char tmpl[] = "/tmp/advise-find-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    char *found = config_find(tmpl);
    cr_expect(found == NULL, "found %s", found ? found : "");
    free(found);
    rmdir(tmpl);
}

/* ---- lists ------------------------------------------------------------------------ */

Test(string_list, add_csv) {
    StringList list = {0};
    cr_assert(string_list_add_csv(&list, "PY001, PY002,,sync-in-hot-loop , "));
    cr_assert(list.count == 3, "count %zu", list.count);
    cr_expect(has(&list, 0, "PY001") && has(&list, 1, "PY002") && has(&list, 2, "sync-in-hot-loop"));
    cr_assert(string_list_add_csv(&list, ""));
    cr_assert(string_list_add_csv(&list, " , ,"));
    cr_expect(list.count == 3, "blank items add nothing");
    cr_assert(string_list_add_csv(&list, "ALL"));
    cr_expect(list.count == 4 && has(&list, 3, "ALL"), "appends to what the list holds");
    string_list_free(&list);
    cr_expect(list.count == 0 && list.items == NULL);
}

Test(config_file, profile_cold) {
    Config cfg;
    config_init(&cfg);
    cr_expect_eq(cfg.profile_cold, PROFILE_COLD_HINT, "hint by default");
    load_ok(&cfg, "[profile]\ncold = \"hide\"\n");
    cr_expect_eq(cfg.profile_cold, PROFILE_COLD_HIDE);
    load_ok(&cfg, "[profile]\ncold = 'keep'\n");
    cr_expect_eq(cfg.profile_cold, PROFILE_COLD_KEEP);
    load_ok(&cfg, "[profile]\ncold = \"hint\"\n");
    cr_expect_eq(cfg.profile_cold, PROFILE_COLD_HINT);
    config_free(&cfg);
    load_fails("[profile]\ncold = \"drop\"\n", 2, "cold must be hint, hide or keep");
    load_fails("[profile]\ncold = true\n", 2, "must be a string");
}
