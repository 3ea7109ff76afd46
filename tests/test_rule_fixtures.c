/* Runs every static rule over its fixture, tests/fixtures/<language>/<CODE>.py
 * (or .cu):
 *
 *   # ruleid: PY001      the next code line must get a PY001 finding
 *   # ok: PY001          the next code line must not
 *
 * A fixture holds at least one flagged case and at least as many `ok` cases.
 *
 * Beside each fixture, files this test compares exactly:
 *
 *   <CODE>.py.snap          the snapshot of the rule's findings, one block
 *                           each: line:column range (1-based, columns in
 *                           characters, as `advise check` prints them),
 *                           code, severity, the source line with a caret
 *                           under the range, the full message, related
 *                           locations, and every fix with its safety,
 *                           title and edits (range, old text, new text).
 *   <CODE>.py.fixed         the text after `advise check --fix`: the first
 *                           fix of each finding when it is safe, applied
 *                           again and again until nothing changes. Absent
 *                           when no safe fix changes the text.
 *   <CODE>.py.unsafe.fixed  the text after `advise check --fix
 *                           --unsafe-fixes` (safe and unsafe fixes alike).
 *                           Absent when it equals <CODE>.py.fixed (or the
 *                           fixture when that is absent too).
 *
 * ADVISE_UPDATE_SNAPSHOTS=1 build/test_rule_fixtures rewrites (or deletes)
 * these files from what the rules do now; review the change with `git diff`
 * before committing it. A mismatch fails with the difference shown.
 *
 * Fix safety: FIX_SAFETY below says, for every static rule, what its
 * documentation's "## Fix safety" section promises (no fix, safe fixes,
 * unsafe fixes, or both depending on the case), quoting the words that say
 * so; the test checks that the words are still there and that every fix the
 * rule offers on its fixture (and in the passes that follow) has that
 * safety. A rule that offers both kinds must show both in its fixture.
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
#include <unistd.h>

#include "analysis/edits.h"
#include "rules/engine/engine.h"
#include "server/workspace/check_file.h"
#include "server/render/check_output.h"
#include "server/render/unified_diff.h"

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

/* ---- snapshots ------------------------------------------------------------- */

static bool updating(void) {
    const char *v = getenv("ADVISE_UPDATE_SNAPSHOTS");
    return v && *v && strcmp(v, "0") != 0;
}

/* text as a C string literal, broken after each "\n" onto a new line that
 * starts with `indent` spaces */
static void put_quoted(FILE *out, const char *text, size_t len, int indent) {
    fputc('"', out);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        case '\n':
            fputs("\\n", out);
            if (i + 1 < len) fprintf(out, "\"\n%*s\"", indent, "");
            break;
        default:
            if (c < 32 || c == 127) fprintf(out, "\\x%02x", c);
            else fputc(c, out);
        }
    }
    fputc('"', out);
}

static void put_range(FILE *out, const Document *doc, ByteRange r) {
    size_t sl, sc, el, ec;
    display_position(doc, r.start, &sl, &sc);
    display_position(doc, r.end, &el, &ec);
    fprintf(out, "%zu:%zu-%zu:%zu", sl, sc, el, ec);
}

/* the range's first line, and a caret under the part of it in the range */
static void put_source(FILE *out, const Document *doc, ByteRange r) {
    size_t line = document_line_of(doc, r.start);
    size_t a = doc->line_starts[line], b = document_line_end(doc, line);
    size_t sl, sc, el, ec;
    display_position(doc, r.start, &sl, &sc);
    display_position(doc, r.end < b ? r.end : b, &el, &ec);
    fprintf(out, "  %5zu | %.*s\n        | %*s", line + 1, (int)(b - a), doc->text + a, (int)(sc - 1), "");
    for (size_t c = sc; c < ec || c == sc; c++) fputc('^', out);
    fputc('\n', out);
}

/* The snapshot of a list of findings over doc: plain text, one block each. */
static char *render_snapshot(const Document *doc, const char *name, const FindingList *findings) {
    char *buf = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buf, &size);
    fprintf(out, "# %s: %zu finding%s. Written by tests/test_rule_fixtures.c (ADVISE_UPDATE_SNAPSHOTS=1).\n", name,
            findings->count, findings->count == 1 ? "" : "s");
    for (size_t i = 0; i < findings->count; i++) {
        const Finding *f = &findings->items[i];
        fprintf(out, "\n%s %s ", f->code, severity_name(f->severity));
        put_range(out, doc, f->range);
        fprintf(out, " [%s]\n", f->name ? f->name : "?");
        put_source(out, doc, f->range);
        fprintf(out, "  message: %s\n", f->message ? f->message : "");
        for (size_t k = 0; k < f->evidence_count; k++) {
            char *text = evidence_render(&f->evidence[k]);
            fprintf(out, "  %s: %s\n", evidence_kind_name(f->evidence[k].kind), text ? text : "?");
            free(text);
        }
        for (size_t k = 0; k < f->related_count; k++) {
            fputs("  related ", out);
            put_range(out, doc, f->related[k].range);
            fprintf(out, ": %s\n", f->related[k].message ? f->related[k].message : "");
        }
        if (f->fixes_withheld) fputs("  fixes withheld\n", out);
        for (size_t k = 0; k < f->fix_count; k++) {
            const Fix *fix = &f->fixes[k];
            fprintf(out, "  fix %zu (%s): %s\n", k + 1, fix->safe ? "safe" : "unsafe", fix->title ? fix->title : "");
            for (size_t e = 0; e < fix->edit_count; e++) {
                const TextEdit *ed = &fix->edits[e];
                fputs("    edit ", out);
                put_range(out, doc, ed->range);
                fputs("\n      old ", out);
                bool inside = ed->range.start <= ed->range.end && ed->range.end <= doc->length;
                put_quoted(out, inside ? doc->text + ed->range.start : "", inside ? ed->range.end - ed->range.start : 0,
                           10);
                fputs("\n      new ", out);
                put_quoted(out, ed->new_text ? ed->new_text : "", ed->new_text ? strlen(ed->new_text) : 0, 10);
                fputc('\n', out);
            }
        }
    }
    fclose(out);
    /* no machine-specific paths in snapshots */
    const char *root = ADVISE_SOURCE_DIR;
    size_t rlen = strlen(root);
    for (char *at; (at = strstr(buf, root));) {
        memcpy(at, "<src>", 5);
        memmove(at + 5, at + rlen, strlen(at + rlen) + 1);
    }
    return buf;
}

/* Compares text with the file at path (NULL text: the file must not exist).
 * With ADVISE_UPDATE_SNAPSHOTS set, writes (or deletes) the file instead. */
static void expect_file(const char *path, const char *what, const char *text, size_t len) {
    size_t have_len = 0;
    char *have = read_file(path, &have_len);
    bool same = text ? have && have_len == len && memcmp(have, text, len) == 0 : !have;
    if (same) {
        free(have);
        return;
    }
    if (updating()) {
        if (text) {
            FILE *f = fopen(path, "wb");
            cr_assert_not_null(f, "cannot write %s", path);
            fwrite(text, 1, len, f);
            fclose(f);
            cr_log_warn("updated %s", path);
        } else {
            cr_expect_eq(unlink(path), 0, "cannot delete %s", path);
            cr_log_warn("deleted %s", path);
        }
        free(have);
        return;
    }
    const char *hint = "run `ADVISE_UPDATE_SNAPSHOTS=1 build/test_rule_fixtures` to accept what the rules do now, "
                       "then review it with `git diff`";
    if (!have) {
        cr_expect_fail("%s %s is missing (%s)", what, path, hint);
    } else if (!text) {
        cr_expect_fail("%s %s should not exist: nothing produces it now (%s)", what, path, hint);
    } else {
        char *diff = NULL;
        size_t diff_size = 0;
        FILE *out = open_memstream(&diff, &diff_size);
        unified_diff_write(out, "expected", "actual", have, have_len, text, len);
        fclose(out);
        cr_expect_fail("%s %s differs from what the rules produce now (%s):\n%s", what, path, hint, diff);
        free(diff);
    }
    free(have);
}

/* ---- fix safety, as each rule's documentation states it -------------------------------- */

typedef enum { FIXES_NONE, FIXES_SAFE, FIXES_UNSAFE, FIXES_BOTH } FixSafety;

static const struct {
    const char *code;
    FixSafety safety;
    const char *doc_says; /* words of the rule's "## Fix safety" section that say so */
} FIX_SAFETY[] = {
    {"PY001", FIXES_NONE, "No automatic fix"},
    {"PY002", FIXES_BOTH, "outside loops the fix is safe. Inside a loop (a training loop that logs its step time) it "
                          "is unsafe"},
    {"PY003", FIXES_NONE, "No automatic fix"},
    {"PY004", FIXES_BOTH, "It is safe for deterministic factories"},
    {"PY005", FIXES_BOTH, "Adding `non_blocking=True` is unsafe"},
    {"PY006", FIXES_UNSAFE, "The fix is unsafe."},
    {"PY007", FIXES_UNSAFE, "All fixes are unsafe."},
    {"PY008", FIXES_UNSAFE, "The fix adds `fused=True` and is unsafe"},
    {"PY009", FIXES_UNSAFE, "It is unsafe: TF32"},
    {"PY010", FIXES_UNSAFE, "It is unsafe: the function's results"},
    {"PY011", FIXES_NONE, "No automatic fix"},
    {"PY012", FIXES_UNSAFE, "The fix removes the keyword and is unsafe"},
    {"PY013", FIXES_NONE, "No automatic fix"},
    {"PY014", FIXES_UNSAFE, "It is unsafe: worker processes change semantics"},
    {"PY015", FIXES_BOTH, "It is safe when the function's later uses of the accumulator are all known"},
    {"PY016", FIXES_NONE, "No automatic fix"},
    {"PY017", FIXES_BOTH, "It is safe when everything the code does with what it loaded copies it"},
    {"CU001", FIXES_BOTH, "It is safe in a `__global__` function"},
    {"CU002", FIXES_NONE, "No automatic fix"},
    {"CU003", FIXES_SAFE, "Padding changes only the layout"},
    {"CU004", FIXES_NONE, "No automatic fix"},
    {"CU005", FIXES_NONE, "No automatic fix"},
    {"CU006", FIXES_UNSAFE, "It is **unsafe**"},
    {"CU007", FIXES_SAFE, "It is **safe**"},
    {"CU008", FIXES_NONE, "No automatic fix"},
    {"CU009", FIXES_SAFE, "(a safe fix)"},
    {"CU010", FIXES_UNSAFE, "The fix is unsafe"},
    {"CU011", FIXES_UNSAFE, "an unsafe fix wraps the call"},
};

static const char *const SAFETY_NAMES[] = {"no fix", "safe fixes only", "unsafe fixes only", "safe and unsafe fixes"};

/* the rule's "## Fix safety" section with every run of whitespace made one space */
static char *fix_safety_section(const Rule *rule) {
    const char *doc = rule->documentation ? rule->documentation : "";
    const char *at = strstr(doc, "## Fix safety");
    if (!at) return NULL;
    at += strlen("## Fix safety");
    const char *end = strstr(at, "\n## ");
    size_t n = end ? (size_t)(end - at) : strlen(at), k = 0;
    char *out = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        bool space = at[i] == ' ' || at[i] == '\n' || at[i] == '\t';
        if (space && (k == 0 || out[k - 1] == ' ')) continue;
        out[k++] = space ? ' ' : at[i];
    }
    while (k && out[k - 1] == ' ') k--;
    out[k] = '\0';
    return out;
}

/* what a rule's documentation promises; FIXES_NONE with *known false when the table lacks it */
static FixSafety declared_safety(const Rule *rule, bool *known) {
    for (size_t i = 0; i < sizeof FIX_SAFETY / sizeof *FIX_SAFETY; i++)
        if (strcmp(FIX_SAFETY[i].code, rule->code) == 0) {
            *known = true;
            return FIX_SAFETY[i].safety;
        }
    *known = false;
    return FIXES_NONE;
}

typedef struct {
    size_t safe, unsafe;
} FixCount;

static void count_fixes(const FindingList *findings, FixCount *count) {
    for (size_t i = 0; i < findings->count; i++)
        for (size_t k = 0; k < findings->items[i].fix_count; k++) {
            if (findings->items[i].fixes[k].safe) count->safe++;
            else count->unsafe++;
        }
}

/* `advise check --fix` over the fixture: the first fix of each finding (the
 * safe ones only unless include_unsafe), pass after pass until nothing
 * changes. The first pass uses the fixture's findings, `first`; counts
 * every fix the later passes offer. */
static char *apply_fixes_repeatedly(const Rule *rule, const char *path, const char *text, size_t len,
                                    const FindingList *first, bool include_unsafe, size_t *out_len,
                                    FixCount *offered) {
    char *current = strndup(text, len);
    size_t current_len = len;
    for (int pass = 0; pass < 10; pass++) {
        FindingList again;
        finding_list_init(&again);
        if (pass > 0) {
            cr_assert(run_rule(rule, path, current, current_len, &again));
            count_fixes(&again, offered);
        }
        size_t applied = 0, new_len = 0;
        char *next = fixes_apply(current, current_len, pass ? &again : first, include_unsafe, &new_len, &applied);
        finding_list_free(&again);
        cr_assert(next != NULL, "%s: fixes overlap or fall outside the text", rule->code);
        bool same = new_len == current_len && memcmp(next, current, current_len) == 0;
        free(current);
        current = next;
        current_len = new_len;
        if (applied == 0 || same) break;
    }
    *out_len = current_len;
    return current;
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
    for (size_t i = 0; i < findings.count; i++) {
        const Finding *f = &findings.items[i];
        size_t line = document_line_of(doc, f->range.start);
        hit[line] = true;
        cr_expect(expect[line] == EXPECT_FLAG, "%s:%zu: unexpected %s finding: %s", path, line + 1, f->code,
                  f->message);
        cr_expect(f->range.end >= f->range.start && f->range.end <= len, "%s:%zu: finding range out of bounds", path,
                  line + 1);
    }
    for (size_t line = 0; line < doc->line_count; line++)
        if (expect[line] == EXPECT_FLAG)
            cr_expect(hit[line], "%s:%zu: expected a %s finding, got none", path, line + 1, rule->code);

    /* the snapshot of every finding */
    const char *base = strrchr(path, '/') + 1;
    char *snap = render_snapshot(doc, base, &findings);
    char snap_path[1100];
    snprintf(snap_path, sizeof snap_path, "%s.snap", path);
    expect_file(snap_path, "the snapshot", snap, strlen(snap));
    free(snap);

    /* fixes: safe ones only (.fixed), then all of them (.unsafe.fixed) */
    FixCount offered = {0, 0};
    count_fixes(&findings, &offered);
    size_t safe_len = 0, all_len = 0;
    char *safe_text = apply_fixes_repeatedly(rule, path, text, len, &findings, false, &safe_len, &offered);
    char *all_text = apply_fixes_repeatedly(rule, path, text, len, &findings, true, &all_len, &offered);
    bool safe_changes = safe_len != len || memcmp(safe_text, text, len) != 0;
    bool unsafe_changes = all_len != safe_len || memcmp(all_text, safe_text, safe_len) != 0;
    char fixed_path[1100], unsafe_path[1100];
    snprintf(fixed_path, sizeof fixed_path, "%s.fixed", path);
    snprintf(unsafe_path, sizeof unsafe_path, "%s.unsafe.fixed", path);
    expect_file(fixed_path, "the text after the safe fixes", safe_changes ? safe_text : NULL, safe_len);
    expect_file(unsafe_path, "the text after all fixes", unsafe_changes ? all_text : NULL, all_len);
    free(safe_text);
    free(all_text);

    /* the fixes' safety against what the documentation promises */
    bool known = false;
    FixSafety declared = declared_safety(rule, &known);
    cr_expect(known, "%s: FIX_SAFETY in tests/test_rule_fixtures.c does not say what its fixes are", rule->code);
    char *section = fix_safety_section(rule);
    cr_expect(section != NULL, "%s: its documentation has no \"## Fix safety\" section", rule->code);
    for (size_t i = 0; known && section && i < sizeof FIX_SAFETY / sizeof *FIX_SAFETY; i++)
        if (strcmp(FIX_SAFETY[i].code, rule->code) == 0)
            cr_expect(strstr(section, FIX_SAFETY[i].doc_says) != NULL,
                      "%s: its \"## Fix safety\" section no longer says \"%s\" (FIX_SAFETY has it as %s): "
                      "check the fixes against the new words and update the table\n--- the section:\n%s",
                      rule->code, FIX_SAFETY[i].doc_says, SAFETY_NAMES[declared], section);
    free(section);
    if (known) {
        bool ok = true;
        switch (declared) {
        case FIXES_NONE: ok = offered.safe == 0 && offered.unsafe == 0; break;
        case FIXES_SAFE: ok = offered.unsafe == 0 && offered.safe > 0; break;
        case FIXES_UNSAFE: ok = offered.safe == 0 && offered.unsafe > 0; break;
        case FIXES_BOTH: ok = offered.safe > 0 && offered.unsafe > 0; break;
        }
        cr_expect(ok,
                  "%s: its documentation promises %s, but its fixture and the fix passes that follow get %zu safe "
                  "and %zu unsafe fixes",
                  rule->code, SAFETY_NAMES[declared], offered.safe, offered.unsafe);
    }
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

/* A test compares results at default tolerances, which TF32 can break
 * (minGPT's tests/test_huggingface_import.py checks logits with
 * torch.allclose): PY009 leaves test files alone, and flags the same text
 * elsewhere. */
/* PY003, PY004, PY007, PY009 and PY011 stand down in test files (a test's inputs and
 * reference math are its purpose): each rule's own fixture, which it flags
 * under a program's name, gives nothing under a test's. */
static void expect_silent_in_test_files(const char *code) {
    const Rule *rule = rule_find(code);
    cr_assert_not_null(rule);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/python/%s.py", ADVISE_SOURCE_DIR, code);
    size_t len;
    char *text = read_file(path, &len);
    cr_assert_not_null(text);
    static const struct {
        const char *path;
        bool test;
    } paths[] = {{"/project/train.py", false},           {"/project/tests/helpers.py", false},
                 {"/project/tests/test_model.py", true}, {"/project/model_test.py", true},
                 {"/project/conftest.py", true}};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        FindingList findings;
        finding_list_init(&findings);
        cr_assert(run_rule(rule, paths[i].path, text, len, &findings));
        cr_expect_eq(findings.count > 0, !paths[i].test, "%s %s: %zu findings", code, paths[i].path, findings.count);
        finding_list_free(&findings);
    }
    free(text);
}

Test(fixtures, py009_leaves_test_files_alone) { expect_silent_in_test_files("PY009"); }
Test(fixtures, py004_leaves_test_files_alone) { expect_silent_in_test_files("PY004"); }
Test(fixtures, py007_leaves_test_files_alone) { expect_silent_in_test_files("PY007"); }
Test(fixtures, py011_leaves_test_files_alone) { expect_silent_in_test_files("PY011"); }
Test(fixtures, py003_leaves_test_files_alone) { expect_silent_in_test_files("PY003"); }

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

/* ---- CU011: a checker that would run the call twice is not offered ---------- */

/* the fixes offered for `cudaFree(p);` in a file whose checking macro is defined as given */
static size_t cu011_fixes_with(const char *define) {
    char text[1024];
    snprintf(text, sizeof text,
             "#include <cstdio>\n#include <cstdlib>\n#include <cuda_runtime.h>\n%s\n"
             "void run(float *p, float *q) {\n"
             "    CHECK_CUDA(cudaMalloc(&q, 64));\n"
             "    cudaFree(p);\n"
             "}\n",
             define);
    FindingList findings;
    finding_list_init(&findings);
    cr_assert(run_rule(rule_find("CU011"), "/project/free.cu", text, strlen(text), &findings));
    cr_assert_eq(findings.count, 1, "%zu findings", findings.count);
    size_t fixes = findings.items[0].fix_count;
    finding_list_free(&findings);
    return fixes;
}

Test(fixtures, cu011_fix_only_with_a_checker_that_evaluates_once) {
    cr_expect_eq(cu011_fixes_with("#define CHECK_CUDA(call) \\\n"
                                  "    do { cudaError_t e_ = (call); if (e_ != cudaSuccess) exit(1); } while (0)"),
                 1);
    /* cutlass-style: `call` is evaluated in the test and again for the message */
    cr_expect_eq(cu011_fixes_with("#define CHECK_CUDA(call) \\\n"
                                  "    if ((call) != cudaSuccess) { \\\n"
                                  "        printf(\"%s\\n\", cudaGetErrorString(call)); \\\n"
                                  "        exit(1); \\\n"
                                  "    }"),
                 0);
}

/* A parameter of a function that calls itself is a tensor when the file
 * hands it one from outside: the recursive call's own `x / 2` says nothing
 * either way (python_facts.c no longer asks the same parameter again). */
Test(fixtures, a_recursive_function_s_tensor_parameter) {
    static const char text[] =
        "import torch\n"
        "\n"
        "def show(x, n):\n"
        "    for i in range(n):\n"
        "        print(x.sum().item())\n"
        "    if n > 0:\n"
        "        show(x / 2, n - 1)\n"
        "\n"
        "show(torch.ones(4, device='cuda'), 3)\n";
    const Rule *rule = rule_find("PY001");
    cr_assert_not_null(rule);
    FindingList findings;
    finding_list_init(&findings);
    cr_assert(run_rule(rule, "/project/train.py", text, sizeof text - 1, &findings));
    cr_expect_eq(findings.count, 1, "%zu findings", findings.count);
    if (findings.count) cr_expect_eq(findings.items[0].range.start, (size_t)(strstr(text, "x.sum().item()") - text));
    finding_list_free(&findings);
}
