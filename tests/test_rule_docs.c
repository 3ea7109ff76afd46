/* The rules' documentation pages and their index (server/render/rule_docs.c):
 * what `advise rules --format markdown --output-dir DIR` writes, that
 * `advise rule CODE` prints the same page, and that the index's fix column,
 * which is read from each rule's "## Fix safety" section, says what the
 * rule's fixes on its fixture really are. That the committed docs/rules.md
 * and docs/rules/ are up to date is tests/check_rule_docs.sh's job (ctest
 * rule_docs_current). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <jansson.h>

#include "tests/cli_harness.h"
#include "rules/rule.h"
#include "server/render/rule_docs.h"

Test(rule_docs, output_dir_writes_the_index_and_one_page_a_rule) {
    char *dir = temp_dir();
    char *pages = path_in(dir, "rules");
    mkdir(pages, 0755);
    write_text(path_in(pages, "ZZ999.md"), "a page of a rule that no longer exists\n");
    write_text(path_in(pages, "notes.md"), "not a rule page: kept\n");
    RunResult r = run_advise("rules", "--format", "markdown", "--output-dir", dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_result_free(&r);

    size_t count;
    const Rule *const *all = rules_all(&count);
    char *index = harness_slurp(path_in(dir, "rules.md"));
    for (size_t i = 0; i < count; i++) {
        char link[64];
        snprintf(link, sizeof link, "| [%s](rules/%s.md) | `%s` |", all[i]->code, all[i]->code, all[i]->name);
        cr_expect(strstr(index, link), "the index has no row for %s", all[i]->code);
        /* the page is what `advise rule CODE` prints */
        char name[16];
        snprintf(name, sizeof name, "%s.md", all[i]->code);
        char *page = harness_slurp(path_in(pages, name));
        RunResult rule = run_advise("rule", all[i]->code);
        cr_expect_eq(rule.status, 0);
        cr_expect_str_eq(page, rule.out, "docs page and `advise rule %s` differ", all[i]->code);
        cr_expect(strstr(page, all[i]->documentation), "%s: the page holds the whole documentation", all[i]->code);
        run_result_free(&rule);
        free(page);
    }
    free(index);
    cr_expect(access(path_in(pages, "ZZ999.md"), F_OK) != 0, "a page of no rule is removed");
    cr_expect(access(path_in(pages, "notes.md"), F_OK) == 0, "files that are not rule pages stay");
}

Test(rule_docs, markdown_without_output_dir_prints_the_index) {
    RunResult r = run_advise("rules", "--format=markdown");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "# Rules\n"), "%s", r.out);
    cr_expect(strstr(r.out, "| [PY001](rules/PY001.md) | `host-sync-in-loop` | python | warning | none |"), "%s", r.out);
    run_result_free(&r);
}

Test(rule_docs, usage_errors) {
    static const char *const cases[][4] = {
        {"rules", "--output-dir", "/tmp/x", NULL}, /* text has no folder form */
        {"rules", "--format", "html", NULL},
        {"rules", "--format", NULL, NULL},
        {"rules", "extra", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        RunResult r = run_advise_in(NULL, cases[i]);
        cr_expect_eq(r.status, 2, "case %zu: %s", i, r.err);
        cr_expect(strstr(r.err, "advise rules:"), "case %zu: %s", i, r.err);
        run_result_free(&r);
    }
}

/* The fix column against the fixes each rule makes on its own fixture
 * (tests/fixtures/python/CODE.py, tests/fixtures/cuda/CODE.cu), all checked
 * by one `advise check` run. */
static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

Test(rule_docs, fix_column_matches_the_fixes_rules_make_on_their_fixtures, .timeout = 900) {
    size_t count, n = 0, compared = 0;
    const Rule *const *all = rules_all(&count);
    const Rule *rules[64];
    char fixtures[64][512], tails[64][32];
    const char *args[80] = {"check", "--no-config", "--no-profile", "--format", "json", "--fail-on", "never"};
    size_t argc = 7;
    for (size_t i = 0; i < count && n < 64; i++) {
        const Rule *rule = all[i];
        bool python = rule->languages & LANGUAGE_PYTHON;
        snprintf(tails[n], sizeof tails[n], "/%s.%s", rule->code, python ? "py" : "cu");
        snprintf(fixtures[n], sizeof fixtures[n], ADVISE_SOURCE_DIR "/tests/fixtures/%s%s", python ? "python" : "cuda",
                 tails[n]);
        if (rule_needs_profile(rule) || access(fixtures[n], R_OK) != 0) continue;
        if (strcmp(rule_fix_safety(rule), "see page") == 0) {
            fprintf(stderr, "test_rule_docs: %s: its Fix safety section says neither safe nor unsafe\n", rule->code);
            continue;
        }
        rules[n] = rule;
        args[argc++] = fixtures[n];
        n++;
    }
    args[argc] = NULL;
    RunResult r = run_advise_in(NULL, args);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert(doc, "advise check gave no JSON: %s", r.err);
    for (size_t i = 0; i < n; i++) {
        size_t k, j;
        json_t *item, *fix;
        bool parsed = true, safe = false, unsafe = false;
        json_array_foreach(json_object_get(doc, "parse_failures"), k, item)
            if (ends_with(json_string_value(json_object_get(item, "path")), tails[i])) parsed = false;
        if (!parsed) { /* no CUDA headers here */
            fprintf(stderr, "test_rule_docs: %s: the fixture does not compile here; its fixes are not compared\n",
                    rules[i]->code);
            continue;
        }
        json_array_foreach(json_object_get(doc, "findings"), k, item) {
            if (strcmp(json_string_value(json_object_get(item, "code")), rules[i]->code) != 0 ||
                !ends_with(json_string_value(json_object_get(item, "path")), tails[i]))
                continue;
            json_array_foreach(json_object_get(item, "fixes"), j, fix) {
                if (json_is_true(json_object_get(fix, "safe"))) safe = true;
                else unsafe = true;
            }
        }
        const char *column = rule_fix_safety(rules[i]);
        const char *seen = safe && unsafe ? "safe or unsafe" : safe ? "safe" : unsafe ? "unsafe" : "none";
        cr_expect_str_eq(column, seen,
                         "%s: the rules table says its fixes are \"%s\", its fixture shows \"%s\" (the table is "
                         "read from the \"## Fix safety\" section of the rule's documentation)",
                         rules[i]->code, column, seen);
        compared++;
    }
    json_decref(doc);
    run_result_free(&r);
    cr_expect(compared >= 20, "only %zu rules compared", compared);
}
