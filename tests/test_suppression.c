/* Suppression comments: what `# advise: ignore[...]` covers, how malformed
 * ones are treated, the C-family comment scanner, and the engine dropping
 * suppressed findings (PY003 as the rule under test). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/suppression.h"
#include "rules/engine/engine.h"

/* Reads `#` comments the simple way (the test texts hold no strings with '#'):
 * from '#' to the end of the line, own_line when only blanks precede it. */
static Suppressions scan_hash_comments(const Document *doc) {
    Suppressions s = {0};
    for (size_t line = 0; line < doc->line_count; line++) {
        size_t start = doc->line_starts[line], end = document_line_end(doc, line);
        bool own = true;
        for (size_t i = start; i < end; i++) {
            if (doc->text[i] == '#') {
                suppressions_add_comment(&s, doc, i, end, own);
                break;
            }
            if (doc->text[i] != ' ' && doc->text[i] != '\t') own = false;
        }
    }
    return s;
}

typedef struct {
    Document *doc;
    Suppressions s;
} Scanned;

static Scanned python(const char *text) {
    Scanned r;
    r.doc = document_new("t.py", LANGUAGE_PYTHON, text, strlen(text));
    cr_assert_not_null(r.doc);
    r.s = scan_hash_comments(r.doc);
    return r;
}

static Scanned c_family(const char *text) {
    Scanned r;
    r.doc = document_new("t.cu", LANGUAGE_CUDA, text, strlen(text));
    cr_assert_not_null(r.doc);
    r.s = (Suppressions){0};
    suppressions_scan_c_family(&r.s, r.doc);
    return r;
}

static void done(Scanned *r) {
    suppressions_free(&r->s);
    cr_expect(r->s.count == 0 && r->s.cap == 0 && r->s.items == NULL, "suppressions_free leaves an empty set");
    document_free(r->doc);
}

#define COVERS(r, line, code, name) suppressions_cover(&(r).s, (line), (code), (name))

Test(suppression, trailing_comment_covers_its_line_only) {
    Scanned r = python("x.item()  # advise: ignore[PY001]\ny.item()\n");
    cr_expect(COVERS(r, 0, "PY001", "host-sync-in-loop"));
    cr_expect(!COVERS(r, 0, "PY002", "other-rule"), "only the rule named");
    cr_expect(!COVERS(r, 1, "PY001", "host-sync-in-loop"), "a trailing comment does not cover the next line");
    done(&r);
}

Test(suppression, own_line_comment_covers_the_next_line) {
    Scanned r = python("a = 1\n    # advise: ignore[PY001]\nx.item()\ny.item()\n");
    cr_expect(!COVERS(r, 0, "PY001", "n"));
    cr_expect(COVERS(r, 1, "PY001", "n"));
    cr_expect(COVERS(r, 2, "PY001", "n"), "the line after an own-line comment");
    cr_expect(!COVERS(r, 3, "PY001", "n"), "only the one line after");
    cr_expect(!COVERS(r, 2, "PY002", "m"));
    done(&r);
}

Test(suppression, codes_names_and_several_selectors) {
    Scanned r = python("x  # advise: ignore[host-sync-in-loop, PY004,PY_x]\n");
    cr_expect(COVERS(r, 0, "PY001", "host-sync-in-loop"), "by name");
    cr_expect(COVERS(r, 0, "PY004", "anything"), "by code");
    cr_expect(!COVERS(r, 0, "PY005", "host-sync"), "neither a code prefix nor a name prefix");
    cr_expect(!COVERS(r, 0, "PY00", "x"));
    cr_assert(r.s.count == 1);
    cr_expect(r.s.items[0].selector_count == 3 && !r.s.items[0].all_rules && !r.s.items[0].whole_file);
    cr_expect(strcmp(r.s.items[0].selectors[0], "host-sync-in-loop") == 0);
    cr_expect(strcmp(r.s.items[0].selectors[1], "PY004") == 0);
    cr_expect(strcmp(r.s.items[0].selectors[2], "PY_x") == 0);
    done(&r);

    r = python("x  #advise:ignore[ PY001 ,\tPY002 ]\n");
    cr_expect(COVERS(r, 0, "PY001", "a") && COVERS(r, 0, "PY002", "b"), "spacing is free");
    done(&r);

    r = python("x  # fine here; advise: ignore[PY001] advise: ignore[PY002]\n");
    cr_expect(COVERS(r, 0, "PY001", "a") && COVERS(r, 0, "PY002", "b"), "two markers in one comment");
    cr_expect(!COVERS(r, 0, "PY003", "c"));
    done(&r);
}

Test(suppression, bare_ignore_means_every_rule) {
    Scanned r = python("x  # advise: ignore\ny\n");
    cr_expect(COVERS(r, 0, "PY001", "a") && COVERS(r, 0, "CU999", "z"));
    cr_expect(!COVERS(r, 1, "PY001", "a"));
    done(&r);

    r = python("# advise: ignore -- reason: measured, this is fine\ny\nz\n");
    cr_expect(COVERS(r, 1, "PY007", "q"), "own-line bare ignore covers the next line, followed by a reason");
    cr_expect(!COVERS(r, 2, "PY007", "q"));
    done(&r);
}

Test(suppression, ignore_file) {
    Scanned r = python("import torch\n\n\n# advise: ignore-file[PY009, sync-in-hot-loop]\n");
    for (size_t line = 0; line < 50; line++) {
        cr_expect(COVERS(r, line, "PY009", "x"), "line %zu", line);
        cr_expect(COVERS(r, line, "PY003", "sync-in-hot-loop"), "line %zu", line);
        cr_expect(!COVERS(r, line, "PY001", "y"), "line %zu", line);
    }
    cr_assert(r.s.count == 1, "an own-line ignore-file is recorded once, got %zu", r.s.count);
    cr_expect(r.s.items[0].whole_file);
    done(&r);

    r = python("x = 1  # advise: ignore-file\n");
    cr_expect(COVERS(r, 0, "PY001", "a") && COVERS(r, 7, "CU001", "b"), "bare ignore-file: every rule everywhere");
    done(&r);
}

Test(suppression, malformed_lists_suppress_nothing) {
    static const char *texts[] = {
        "x  # advise: ignore[]\n",
        "x  # advise: ignore[ ]\n",
        "x  # advise: ignore[PY001\n",
        "x  # advise: ignore[PY001;PY002]\n",
        "x  # advise: ignore[PY001.x]\n",
        "x  # advise: ignore[\"PY001\"]\n",
        "x  # advise: ignore-file[\n",
        "x  # advise: ignore-file[,]\n",
        "# advise: ignore[PY001\nx\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        Scanned r = python(texts[i]);
        cr_expect(r.s.count == 0, "%s: recorded %zu suppressions", texts[i], r.s.count);
        for (size_t line = 0; line < 3; line++)
            cr_expect(!COVERS(r, line, "PY001", "host-sync-in-loop"), "%s: covers line %zu", texts[i], line);
        done(&r);
    }
}

Test(suppression, prose_is_not_a_suppression) {
    static const char *texts[] = {
        "x  # advise: ignored on purpose\n",
        "x  # advise: ignores[PY001]\n",
        "x  # advise: ignore_this\n",
        "x  # advise: ignore-files\n",
        "x  # advise: ignore-filed[PY001]\n",
        "x  # advise: do not ignore[PY001]\n",
        "x  # advise ignore[PY001]\n",
        "x  # ignore[PY001]\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        Scanned r = python(texts[i]);
        cr_expect(r.s.count == 0, "%s: recorded %zu suppressions", texts[i], r.s.count);
        cr_expect(!COVERS(r, 0, "PY001", "host-sync-in-loop"), "%s", texts[i]);
        done(&r);
    }
}

Test(suppression, only_the_comment_text_is_read) {
    /* the range handed over is all that counts: a marker after it is not read */
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, "# note  advise: ignore[PY001]", 29);
    Suppressions s = {0};
    suppressions_add_comment(&s, doc, 0, 7, false);
    cr_expect(s.count == 0);
    suppressions_add_comment(&s, doc, 0, 29, false);
    cr_expect(s.count == 1 && suppressions_cover(&s, 0, "PY001", "x"));
    suppressions_free(&s);
    document_free(doc);
}

/* ---- C family --------------------------------------------------------------- */

Test(c_family, line_comments) {
    Scanned r = c_family("launch();  // advise: ignore[CU001]\nnext();\n");
    cr_expect(COVERS(r, 0, "CU001", "x"));
    cr_expect(!COVERS(r, 1, "CU001", "x"), "a trailing // comment does not cover the next line");
    done(&r);

    r = c_family("int a;\n  // advise: ignore[CU001, shared-bank-conflict]\nkernel<<<1, 1>>>();\nother();\n");
    cr_expect(COVERS(r, 2, "CU001", "x") && COVERS(r, 2, "CU777", "shared-bank-conflict"));
    cr_expect(!COVERS(r, 3, "CU001", "x") && !COVERS(r, 0, "CU001", "x"));
    done(&r);
}

Test(c_family, block_comments) {
    Scanned r = c_family("x(); /* advise: ignore[CU002] */ y();\nz();\n");
    cr_expect(COVERS(r, 0, "CU002", "n"));
    cr_expect(!COVERS(r, 1, "CU002", "n"), "a block comment after code does not cover the next line");
    done(&r);

    r = c_family("/*\n * advise: ignore-file[CU003]\n */\nint main(void) { return 0; }\n");
    cr_expect(COVERS(r, 3, "CU003", "n") && COVERS(r, 100, "CU003", "n"));
    cr_expect(!COVERS(r, 3, "CU001", "n"));
    done(&r);

    r = c_family("/* advise: ignore[CU004]\n");
    cr_expect(COVERS(r, 0, "CU004", "n"), "an unterminated block comment runs to the end");
    done(&r);
}

Test(c_family, own_line_block_comment_covers_the_next_line) {
    /* "the same words" as `//`: on a line of its own, the next line too */
    Scanned r = c_family("int a;\n    /* advise: ignore[CU001] */\nkernel<<<1, 1>>>();\nother();\n");
    cr_expect(COVERS(r, 1, "CU001", "n"));
    cr_expect(COVERS(r, 2, "CU001", "n"), "an own-line block comment covers the next line");
    cr_expect(!COVERS(r, 3, "CU001", "n"));
    done(&r);

    /* a comment over several lines covers the line after its end */
    r = c_family("/* Measured: fine.\n   advise: ignore[CU001] */\nkernel<<<1, 1>>>();\nother();\n");
    cr_expect(COVERS(r, 2, "CU001", "n"), "the line after a multi-line own-line block comment");
    cr_expect(!COVERS(r, 3, "CU001", "n"));
    done(&r);

    /* code after the comment on its line: that line only */
    r = c_family("/* advise: ignore[CU001] */ x();\ny();\n");
    cr_expect(COVERS(r, 0, "CU001", "n"));
    cr_expect(!COVERS(r, 1, "CU001", "n"), "a block comment followed by code is not on a line of its own");
    done(&r);
}

Test(c_family, strings_and_chars_are_not_comments) {
    static const char *texts[] = {
        "puts(\"// advise: ignore\"); bad();\n",
        "puts(\"/* advise: ignore */\"); bad();\n",
        "puts(\"\\\" // advise: ignore\"); bad();\n", /* an escaped quote does not end the string */
        "const char *s = \"a\\\\\"; const char *t = \"// advise: ignore\";\n",
        "char c = '\"'; const char *t = \"// advise: ignore\";\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        Scanned r = c_family(texts[i]);
        cr_expect(r.s.count == 0, "%s: recorded %zu suppressions", texts[i], r.s.count);
        cr_expect(!COVERS(r, 0, "CU001", "x"), "%s", texts[i]);
        done(&r);
    }
    /* a quote inside a character literal does not start a string that hides a real comment */
    Scanned r = c_family("char q = '\"'; // advise: ignore[CU001]\n");
    cr_expect(COVERS(r, 0, "CU001", "x"));
    done(&r);
    r = c_family("puts(\"x\"); // advise: ignore[CU001]\n");
    cr_expect(COVERS(r, 0, "CU001", "x"), "a real comment after a string");
    done(&r);
}

/* ---- through the engine ------------------------------------------------------ */

static size_t check_py003(const char *text, size_t *suppressed) {
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, text, strlen(text));
    cr_assert_not_null(doc);
    Config cfg;
    config_init(&cfg);
    cr_assert(string_list_add(&cfg.select, "PY003"));
    FindingList out;
    finding_list_init(&out);
    EngineReport report;
    char *error = NULL;
    cr_assert(engine_check(doc, NULL, &cfg, &out, &report, &error), "engine_check: %s", error ? error : "?");
    cr_expect(!report.syntax_error, "test text should parse");
    size_t n = 0;
    for (size_t i = 0; i < out.count; i++)
        if (strcmp(out.items[i].code, "PY003") == 0) n++;
    *suppressed = report.suppressed;
    finding_list_free(&out);
    config_free(&cfg);
    document_free(doc);
    return n;
}

#define LOOP_HEAD "import torch\n\n\ndef f(xs):\n    for x in xs:\n"

Test(engine, unsuppressed_finding_is_reported) {
    size_t suppressed = 99;
    cr_expect(check_py003(LOOP_HEAD "        torch.cuda.empty_cache()\n", &suppressed) == 1);
    cr_expect(suppressed == 0);
}

Test(engine, suppressed_by_code_or_name) {
    size_t suppressed = 0;
    cr_expect(check_py003(LOOP_HEAD "        torch.cuda.empty_cache()  # advise: ignore[PY003]\n", &suppressed) == 0);
    cr_expect(suppressed == 1, "suppressed %zu", suppressed);
    suppressed = 0;
    cr_expect(check_py003(LOOP_HEAD "        torch.cuda.empty_cache()  # advise: ignore[sync-in-hot-loop]\n",
                          &suppressed) == 0);
    cr_expect(suppressed == 1);
    suppressed = 0;
    cr_expect(check_py003(LOOP_HEAD "        # advise: ignore[PY003]\n        torch.cuda.empty_cache()\n",
                          &suppressed) == 0,
              "an own-line comment above");
    cr_expect(suppressed == 1);
    suppressed = 0;
    cr_expect(check_py003("# advise: ignore-file[PY003]\n" LOOP_HEAD "        torch.cuda.empty_cache()\n"
                          "    for y in xs:\n        torch.cuda.empty_cache()\n",
                          &suppressed) == 0);
    cr_expect(suppressed == 2, "both findings counted, got %zu", suppressed);
}

Test(engine, other_rules_or_other_lines_do_not_suppress) {
    size_t suppressed = 99;
    cr_expect(check_py003(LOOP_HEAD "        torch.cuda.empty_cache()  # advise: ignore[PY001]\n", &suppressed) == 1);
    cr_expect(suppressed == 0);
    cr_expect(check_py003(LOOP_HEAD "        x = x  # advise: ignore[PY003]\n        torch.cuda.empty_cache()\n",
                          &suppressed) == 1,
              "a trailing comment on the previous line");
    cr_expect(suppressed == 0);
}

Test(engine, a_string_literal_is_not_a_comment) {
    size_t suppressed = 99;
    cr_expect(check_py003(LOOP_HEAD "        torch.cuda.empty_cache(); s = \"# advise: ignore\"\n", &suppressed) == 1);
    cr_expect(suppressed == 0);
    cr_expect(check_py003(LOOP_HEAD "        torch.cuda.empty_cache(); s = '# advise: ignore[PY003]'\n",
                          &suppressed) == 1);
    cr_expect(suppressed == 0);
    /* were the middle line a comment on its own line, it would cover the call on the next line */
    cr_expect(check_py003(LOOP_HEAD "        \"\"\"\n        # advise: ignore[PY003]\n"
                          "        \"\"\"; torch.cuda.empty_cache()\n",
                          &suppressed) == 1,
              "a comment-looking line inside a triple-quoted string");
    cr_expect(suppressed == 0);
    cr_expect(check_py003("s = '# advise: ignore-file'\n" LOOP_HEAD "        torch.cuda.empty_cache()\n",
                          &suppressed) == 1);
    cr_expect(suppressed == 0);
}

/* ---- stopping between rules (the LSP server's exit, an edit that supersedes a full pass) ---- */

static bool stop_after(void *arg) {
    int *calls_left = arg;
    return (*calls_left)-- <= 0;
}

/* every rule, or until the stop answers true after `asks` questions; returns the findings */
static size_t check_all_rules(const char *text, int asks, bool *cancelled) {
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, text, strlen(text));
    cr_assert_not_null(doc);
    Config cfg;
    config_init(&cfg);
    FindingList out;
    finding_list_init(&out);
    EngineReport report;
    char *error = NULL;
    int left = asks;
    EngineStop stop = {stop_after, &left};
    cr_assert(engine_check_stoppable(doc, NULL, &cfg, asks >= 0 ? &stop : NULL, &out, &report, &error),
              "engine_check_stoppable: %s", error ? error : "?");
    *cancelled = report.cancelled;
    size_t n = out.count;
    finding_list_free(&out);
    config_free(&cfg);
    document_free(doc);
    return n;
}

/* two rules' findings: PY003 (empty_cache in a loop) and PY004 (made on the host, then moved) */
#define TWO_RULES LOOP_HEAD "        torch.cuda.empty_cache()\n        t = torch.zeros(4).cuda()\n"

Test(engine, a_stop_that_never_answers_true_changes_nothing) {
    bool cancelled = true;
    size_t all = check_all_rules(TWO_RULES, -1, &cancelled);
    cr_expect(!cancelled);
    cr_expect(all >= 2, "findings without a stop: %zu", all);
    cr_expect(check_all_rules(TWO_RULES, 1000, &cancelled) == all);
    cr_expect(!cancelled, "a stop that never says stop does not cancel");
}

Test(engine, stops_between_rules_when_asked) {
    bool cancelled = false;
    cr_expect(check_all_rules(TWO_RULES, 0, &cancelled) == 0, "stopped before the first rule: no findings");
    cr_expect(cancelled);
    size_t all = check_all_rules(TWO_RULES, -1, &cancelled);
    size_t partial = check_all_rules(TWO_RULES, 1, &cancelled); /* one rule ran */
    cr_expect(cancelled);
    cr_expect(partial < all, "one rule of many: %zu of %zu findings", partial, all);
}
