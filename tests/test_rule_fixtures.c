/* Runs every static rule over its fixture, tests/fixtures/<language>/<CODE>.py:
 *
 *   # ruleid: PY001      the next code line must get a PY001 finding
 *   # ok: PY001          the next code line must not
 *
 * A fixture holds at least one flagged case and at least as many `ok` cases.
 * Where the rule offers fixes, <CODE>.py.fixed holds the text after applying
 * all of them (safe and unsafe), repeated until nothing changes.
 *
 * A rule whose findings depend on the whole file (one finding per program)
 * can only show its look-alikes as whole files: <CODE>.ok-<what>.py must
 * get no finding of that rule at all.
 *
 * Facts that cross files are shown by small projects,
 * tests/fixtures/python/workspace/<case>/ (each with a pyproject.toml, so
 * that it is a project of its own): every .py file there is checked as
 * `advise check` checks it, with the project's workspace index, and its
 * `ruleid:`/`ok:` comments are expectations for the rules they name. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/edits.h"
#include "../rules/engine.h"
#include "../server/check_file.h"

typedef struct {
    char code[16];
} RuleParam;

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static const char *fixture_dir(const Rule *rule) {
    return (rule->languages & LANGUAGE_PYTHON) ? "python" : "cuda";
}

static const char *fixture_ext(const Rule *rule) { return (rule->languages & LANGUAGE_PYTHON) ? "py" : "cu"; }

static bool run_rule(const Rule *rule, const char *path, const char *text, size_t len, FindingList *out) {
    Document *doc = document_new(path, language_for_path(path), text, len);
    Config cfg;
    config_init(&cfg);
    string_list_add(&cfg.select, rule->code);
    char *error = NULL;
    bool ok = engine_check(doc, NULL, &cfg, out, NULL, &error);
    if (!ok) cr_log_error("%s: %s", path, error ? error : "?");
    free(error);
    config_free(&cfg);
    document_free(doc);
    return ok;
}

ParameterizedTestParameters(fixtures, rule) {
    size_t count;
    const Rule *const *all = rules_all(&count);
    RuleParam *params = cr_malloc(sizeof(RuleParam) * (count ? count : 1));
    /* profile rules (no static check) are tested on profiles: tests/test_profile_rules.c */
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (all[i]->check) snprintf(params[n++].code, sizeof params[0].code, "%s", all[i]->code);
    return cr_make_param_array(RuleParam, params, n);
}

enum { EXPECT_NONE, EXPECT_FLAG, EXPECT_OK };

ParameterizedTest(RuleParam *param, fixtures, rule) {
    const Rule *rule = rule_find(param->code);
    cr_assert(rule != NULL);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s/%s.%s", ADVISE_SOURCE_DIR, fixture_dir(rule), rule->code,
             fixture_ext(rule));
    size_t len;
    char *text = read_file(path, &len);
    cr_assert(text != NULL, "rule %s has no fixture at %s", rule->code, path);

    Document *doc = document_new(path, language_for_path(path), text, len);
    int *expect = calloc(doc->line_count + 1, sizeof *expect);
    size_t flagged_cases = 0, ok_cases = 0;
    char want_flag[64], want_ok[64];
    snprintf(want_flag, sizeof want_flag, "ruleid: %s", rule->code);
    snprintf(want_ok, sizeof want_ok, "ok: %s", rule->code);
    int pending = EXPECT_NONE;
    for (size_t line = 0; line < doc->line_count; line++) {
        size_t a = doc->line_starts[line], b = document_line_end(doc, line);
        char *l = strndup(doc->text + a, b - a);
        const char *p = l;
        while (*p == ' ' || *p == '\t') p++;
        bool comment_only = *p == '#' || (p[0] == '/' && p[1] == '/');
        if (comment_only && strstr(p, want_flag)) pending = EXPECT_FLAG;
        else if (comment_only && strstr(p, want_ok)) pending = EXPECT_OK;
        else if (!comment_only && *p && pending != EXPECT_NONE) {
            expect[line] = pending;
            if (pending == EXPECT_FLAG) flagged_cases++;
            else ok_cases++;
            pending = EXPECT_NONE;
        }
        free(l);
    }
    cr_expect(flagged_cases >= 1, "%s: the fixture marks no `ruleid:` case", rule->code);
    cr_expect(ok_cases >= flagged_cases, "%s: %zu flagged cases but only %zu `ok:` cases", rule->code,
              flagged_cases, ok_cases);

    FindingList findings;
    finding_list_init(&findings);
    cr_assert(run_rule(rule, path, text, len, &findings));
    bool *hit = calloc(doc->line_count + 1, sizeof *hit);
    bool any_fix = false;
    for (size_t i = 0; i < findings.count; i++) {
        const Finding *f = &findings.items[i];
        size_t line = document_line_of(doc, f->range.start);
        hit[line] = true;
        any_fix |= f->fix_count > 0;
        cr_expect(expect[line] == EXPECT_FLAG, "%s:%zu: unexpected %s finding: %s", path, line + 1, f->code,
                  f->message);
        cr_expect(f->range.end >= f->range.start && f->range.end <= len, "%s:%zu: finding range out of bounds", path,
                  line + 1);
    }
    for (size_t line = 0; line < doc->line_count; line++)
        if (expect[line] == EXPECT_FLAG)
            cr_expect(hit[line], "%s:%zu: expected a %s finding, got none", path, line + 1, rule->code);

    /* fixes: apply them all, again and again, and compare with .fixed */
    char fixed_path[1100];
    snprintf(fixed_path, sizeof fixed_path, "%s.fixed", path);
    size_t expected_len;
    char *expected = read_file(fixed_path, &expected_len);
    if (any_fix) {
        cr_expect(expected != NULL, "%s: the rule offers fixes but %s is missing", rule->code, fixed_path);
    } else {
        cr_expect(expected == NULL, "%s: %s exists but the rule offered no fix", rule->code, fixed_path);
    }
    if (expected && any_fix) {
        char *current = strdup(text);
        size_t current_len = len;
        for (int pass = 0; pass < 10; pass++) {
            FindingList again;
            finding_list_init(&again);
            cr_assert(run_rule(rule, path, current, current_len, &again));
            size_t applied = 0, new_len = 0;
            char *next = fixes_apply(current, current_len, &again, true, &new_len, &applied);
            finding_list_free(&again);
            cr_assert(next != NULL, "%s: fixes overlap or fall outside the text", rule->code);
            free(current);
            current = next;
            current_len = new_len;
            if (applied == 0) break;
        }
        if (strcmp(current, expected) != 0) {
            char out_path[1200];
            snprintf(out_path, sizeof out_path, "/tmp/advise-%s.actual.%s", rule->code, fixture_ext(rule));
            FILE *f = fopen(out_path, "wb");
            if (f) {
                fwrite(current, 1, current_len, f);
                fclose(f);
            }
            cr_expect_fail("%s: fixed text differs from %s (actual written to %s)", rule->code, fixed_path, out_path);
        }
        free(current);
    }
    free(expected);
    free(hit);
    free(expect);
    finding_list_free(&findings);
    document_free(doc);
    free(text);
}

/* whole files that a rule must leave alone: tests/fixtures/<language>/<CODE>.ok-*.<ext> */
Test(fixtures, whole_file_look_alikes) {
    char pattern[1024];
    snprintf(pattern, sizeof pattern, "%s/tests/fixtures/*/*.ok-*.*", ADVISE_SOURCE_DIR);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) return; /* none */
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *path = g.gl_pathv[i];
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        char code[16];
        size_t n = strcspn(base, ".");
        if (n >= sizeof code) continue;
        memcpy(code, base, n);
        code[n] = '\0';
        const Rule *rule = rule_find(code);
        cr_expect(rule != NULL, "%s: no rule %s", path, code);
        if (!rule) continue;
        size_t len;
        char *text = read_file(path, &len);
        cr_assert(text != NULL);
        FindingList findings;
        finding_list_init(&findings);
        cr_assert(run_rule(rule, path, text, len, &findings));
        for (size_t k = 0; k < findings.count; k++)
            cr_expect_fail("%s: unexpected %s finding: %s", path, findings.items[k].code, findings.items[k].message);
        finding_list_free(&findings);
        free(text);
    }
    globfree(&g);
}

/* ---- projects: facts that cross files ------------------------------------ */

typedef struct {
    char code[16];
    int kind; /* EXPECT_FLAG or EXPECT_OK */
    size_t line;
} Expectation;

/* the expectations a file's comments state, for every rule they name */
static size_t read_expectations(const Document *doc, Expectation *out, size_t max) {
    size_t count = 0;
    Expectation pending[8];
    size_t pending_count = 0;
    for (size_t line = 0; line < doc->line_count; line++) {
        size_t a = doc->line_starts[line], b = document_line_end(doc, line);
        char *l = strndup(doc->text + a, b - a);
        const char *p = l;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#') {
            const char *flag = strstr(p, "ruleid: "), *ok = strstr(p, "ok: ");
            const char *at = flag ? flag + 8 : ok ? ok + 4 : NULL;
            if (at && pending_count < 8) {
                Expectation *e = &pending[pending_count++];
                snprintf(e->code, sizeof e->code, "%.*s", (int)strcspn(at, " \t,"), at);
                e->kind = flag ? EXPECT_FLAG : EXPECT_OK;
            }
        } else if (*p && pending_count) {
            for (size_t i = 0; i < pending_count && count < max; i++) {
                out[count] = pending[i];
                out[count++].line = line;
            }
            pending_count = 0;
        }
        free(l);
    }
    return count;
}

Test(fixtures, projects) {
    char pattern[1024];
    snprintf(pattern, sizeof pattern, "%s/tests/fixtures/python/workspace/*/", ADVISE_SOURCE_DIR);
    glob_t cases;
    cr_assert_eq(glob(pattern, GLOB_ONLYDIR, NULL, &cases), 0, "no projects under tests/fixtures/python/workspace");
    PyWorkspaces *workspaces = py_workspaces_new();
    size_t flagged = 0;
    for (size_t c = 0; c < cases.gl_pathc; c++) {
        char files_pattern[1200];
        snprintf(files_pattern, sizeof files_pattern, "%s*.py", cases.gl_pathv[c]);
        glob_t files;
        if (glob(files_pattern, 0, NULL, &files) != 0) continue;
        for (size_t f = 0; f < files.gl_pathc; f++) {
            const char *path = files.gl_pathv[f];
            size_t len;
            char *text = read_file(path, &len);
            cr_assert_not_null(text);
            Document *doc = document_new(path, LANGUAGE_PYTHON, text, len);
            Expectation expect[256];
            size_t n = read_expectations(doc, expect, 256);
            Config cfg;
            config_init(&cfg);
            for (size_t i = 0; i < n; i++) string_list_add(&cfg.select, expect[i].code);
            if (n) {
                CheckedFile checked;
                char *error = NULL;
                cr_assert(check_file_text(path, text, len, &cfg, NULL, cases.gl_pathv[c], workspaces, &checked, &error),
                          "%s: %s", path, error ? error : "?");
                for (size_t i = 0; i < n; i++) {
                    bool hit = false;
                    for (size_t k = 0; k < checked.findings.count; k++) {
                        const Finding *fi = &checked.findings.items[k];
                        if (strcmp(fi->code, expect[i].code) == 0 &&
                            document_line_of(doc, fi->range.start) == expect[i].line)
                            hit = true;
                    }
                    if (expect[i].kind == EXPECT_FLAG) flagged++;
                    cr_expect(hit == (expect[i].kind == EXPECT_FLAG), "%s:%zu: %s %s", path, expect[i].line + 1,
                              expect[i].kind == EXPECT_FLAG ? "expected a finding of" : "unexpected finding of",
                              expect[i].code);
                }
                for (size_t k = 0; k < checked.findings.count; k++) { /* nothing the comments do not expect */
                    const Finding *fi = &checked.findings.items[k];
                    size_t line = document_line_of(doc, fi->range.start);
                    bool expected = false;
                    for (size_t i = 0; i < n; i++)
                        expected |= expect[i].line == line && strcmp(expect[i].code, fi->code) == 0;
                    cr_expect(expected, "%s:%zu: unexpected %s finding: %s", path, line + 1, fi->code, fi->message);
                }
                checked_file_free(&checked);
            }
            config_free(&cfg);
            document_free(doc);
            free(text);
        }
        globfree(&files);
    }
    cr_expect(flagged >= 1, "the projects flag nothing");
    py_workspaces_free(workspaces);
    globfree(&cases);
}
