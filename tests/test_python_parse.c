/* The Python parse without Python 2's `print` statement (analysis/python/
 * python_parse.c): which `print`s the parser is shown as `pr1nt`, that
 * Python 3 code gets the tree it would get anyway, that Python 2's statement
 * is a syntax error, that incremental reparses stay exact while `print`s are
 * typed and deleted, and that a reparse reuses the nodes around `print`
 * calls instead of building them again. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/python/python_parse.h"
#include "analysis/python/python_source.h"
#include "tests/python_edit.h"

const TSLanguage *tree_sitter_python(void);

static char *masked(const char *text) {
    int failed = 0;
    char *m = py_parse_masked_text(text, strlen(text), &failed);
    cr_assert(!failed);
    return m;
}

Test(masking, only_print_standing_as_a_word) {
    cr_expect_null(masked("x = 1\nprinter(reprint, print_fn)\n"), "no word `print`: the text is parsed as it is");
    char *m = masked("print(x)\nself.print(y)\nprinter(print)\n# print here\ns = \"print\"\nprint");
    cr_assert_not_null(m);
    cr_expect_str_eq(m, "pr1nt(x)\nself.pr1nt(y)\nprinter(pr1nt)\n# pr1nt here\ns = \"pr1nt\"\npr1nt");
    free(m);
    /* a non-ASCII letter next to it makes it part of a longer name */
    cr_expect_null(masked("\xC3\xA9print = 1\nprint\xC3\xA9 = 2\n"));
}

static TSTree *parse_with(TSParser *parser, const char *text, bool mask) {
    return mask ? py_parse(parser, NULL, text, strlen(text)) : ts_parser_parse_string(parser, NULL, text, (uint32_t)strlen(text));
}

static char *tree_string(const char *text, bool mask) {
    TSParser *parser = ts_parser_new();
    cr_assert(ts_parser_set_language(parser, tree_sitter_python()));
    TSTree *tree = parse_with(parser, text, mask);
    cr_assert_not_null(tree);
    char *s = ts_node_string(ts_tree_root_node(tree));
    ts_tree_delete(tree);
    ts_parser_delete(parser);
    return s;
}

Test(masking, python3_code_gets_the_same_tree) {
    static const char *texts[] = {
        "print('a', b)\n",
        "print (a, b)\n",
        "def print_all(xs):\n    for x in xs:\n        print(x, end='')\n    print()\n",
        "print = logger.info\nprint('x')\nf(print=True)\n",
        "class P:\n    def print(self):\n        return self.print\n",
        "if x: print(y)\nelse: print(z, file=sys.stderr)\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char *plain = tree_string(texts[i], false), *mask = tree_string(texts[i], true);
        cr_expect_str_eq(mask, plain, "text %zu:\n%s", i, texts[i]);
        cr_expect(strstr(mask, "print_statement") == NULL, "text %zu reads as a print statement", i);
        free(plain);
        free(mask);
    }
}

Test(masking, unpacking_in_a_print_call_is_a_splat) {
    /* the forked parse read `*b.c()` after a call in a print call's arguments
     * as `(*b.c)()`, not as the unpacking of `b.c()` it is (seen in CPython's own
     * test harness) */
    const char *text = "print('==', a(), *b.c())\n";
    char *plain = tree_string(text, false), *mask = tree_string(text, true);
    cr_expect(strstr(plain, "(call function: (list_splat") != NULL, "the grammar alone calls a splat: %s", plain);
    cr_expect(strstr(mask, "(list_splat (call") != NULL, "%s", mask);
    cr_expect(strstr(mask, "ERROR") == NULL, "%s", mask);
    free(plain);
    free(mask);
}

Test(masking, a_shift_of_print_is_an_expression) {
    /* Python 2's `print >> f, x` is, in Python 3, a tuple of a shift: valid
     * syntax that fails when run; the grammar read the Python 2 statement */
    const char *text = "print >> f, 'x'\n";
    char *plain = tree_string(text, false), *mask = tree_string(text, true);
    cr_expect(strstr(plain, "print_statement") != NULL, "%s", plain);
    cr_expect(strstr(mask, "(expression_statement (binary_operator left: (identifier) right: (identifier)) (string") != NULL, "%s", mask);
    cr_expect(strstr(mask, "ERROR") == NULL, "%s", mask);
    free(plain);
    free(mask);
}

Test(masking, python2_print_statement_is_a_syntax_error) {
    char *plain = tree_string("print 'hello'\n", false), *mask = tree_string("print 'hello'\n", true);
    cr_expect(strstr(plain, "print_statement") != NULL, "the grammar reads it as Python 2: %s", plain);
    cr_expect(strstr(mask, "ERROR") != NULL, "Python 3 has no print statement: %s", mask);
    free(plain);
    free(mask);
}

/* ---- incremental reparses -------------------------------------------------------- */


Test(reparse, typing_and_deleting_print_stays_exact) {
    static const char base[] = "import torch\n\nfor i in range(3):\n    x = torch.ones(2)\n    print(x)\n\nprint('done')\n";
    static const char *snippets[] = {"p", "r", "i", "n", "t", "print", "print(", "print(x)\n", "rint", "pr", "int",
                                     " ", "(", ")", "x", "\n", "    print x\n", "_", "self.", "#", "'"};
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, base, strlen(base));
    cr_assert_not_null(doc);
    PySource *src = py_source_new(doc);
    cr_assert_not_null(src);
    unsigned seed = 7;
    for (int round = 0; round < 400; round++) {
        seed = seed * 1103515245u + 12345u;
        size_t start = (seed >> 8) % (doc->length + 1);
        seed = seed * 1103515245u + 12345u;
        size_t end = start + (seed >> 8) % 4;
        if (end > doc->length) end = doc->length;
        seed = seed * 1103515245u + 12345u;
        python_edit(src, doc, start, end, snippets[(seed >> 8) % (sizeof snippets / sizeof *snippets)]);
        PySource *fresh = py_source_new(doc);
        cr_assert_not_null(fresh);
        char *a = ts_node_string(ts_tree_root_node(src->tree)), *b = ts_node_string(ts_tree_root_node(fresh->tree));
        cr_expect_str_eq(a, b, "round %d: incremental differs from fresh on:\n%s", round, doc->text);
        free(a);
        free(b);
        py_source_free(fresh);
        if (doc->length > 2000) python_edit(src, doc, 0, doc->length - 500, "");
    }
    py_source_free(src);
    document_free(doc);
}

/* ---- reuse --------------------------------------------------------------------- */

static int fragile_calls;

static void count_fragile(void *payload, TSLogType type, const char *message) {
    (void)payload;
    if (type == TSLogTypeParse && strstr(message, "cant_reuse_node_is_fragile") && strstr(message, "tree:call"))
        fragile_calls++;
}

Test(reuse, print_calls_are_reused_by_a_reparse) {
    /* before the mask, every `print(...)` call was built while the parser was
     * forked, was fragile, and was parsed again at every keystroke */
    char text[8192] = "import torch\n";
    for (int i = 0; i < 40; i++) {
        char line[64];
        snprintf(line, sizeof line, "x%d = torch.ones(%d)\nprint(x%d)\n", i, i, i);
        strcat(text, line);
    }
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, text, strlen(text));
    cr_assert_not_null(doc);
    PySource *src = py_source_new(doc);
    cr_assert_not_null(src);
    ts_parser_set_logger(src->parser, (TSLogger){NULL, count_fragile});
    size_t at = strlen(text) - 3; /* inside the last print's argument */
    python_edit(src, doc, at, at, "1");
    ts_parser_set_logger(src->parser, (TSLogger){NULL, NULL});
    cr_expect(!src->has_errors);
    cr_expect(fragile_calls == 0, "%d print calls refused as fragile", fragile_calls);

    /* the same reparse without the mask refuses them: the test can tell */
    TSParser *parser = ts_parser_new();
    cr_assert(ts_parser_set_language(parser, tree_sitter_python()));
    TSTree *old = ts_parser_parse_string(parser, NULL, doc->text, (uint32_t)doc->length);
    TSInputEdit nothing = {.start_byte = (uint32_t)at, .old_end_byte = (uint32_t)at, .new_end_byte = (uint32_t)at};
    nothing.start_point = nothing.old_end_point = nothing.new_end_point = py_point_at(doc->text, at);
    ts_tree_edit(old, &nothing);
    fragile_calls = 0;
    ts_parser_set_logger(parser, (TSLogger){NULL, count_fragile});
    TSTree *again = ts_parser_parse_string(parser, old, doc->text, (uint32_t)doc->length);
    cr_expect(fragile_calls >= 30, "without the mask only %d print calls were fragile", fragile_calls);
    ts_tree_delete(again);
    ts_tree_delete(old);
    ts_parser_delete(parser);
    py_source_free(src);
    document_free(doc);
}
