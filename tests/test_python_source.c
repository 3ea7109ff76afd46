/* The Python front end: incremental reparsing gives the tree a fresh parse
 * gives, the import table, syntax error reporting, and robustness on empty,
 * invalid and large inputs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/python/python_index.h"
#include "analysis/python/python_source.h"
#include "tests/python_edit.h"

static Document *doc_of(const char *text) {
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, text, strlen(text));
    cr_assert_not_null(doc);
    return doc;
}

static PySource *parse(const Document *doc) {
    PySource *src = py_source_new(doc);
    cr_assert_not_null(src, "py_source_new failed");
    return src;
}

/* the reparsed tree must equal the tree of a fresh parse of the same text */
static void expect_same_as_fresh(const PySource *src, const Document *doc, const char *when) {
    PySource *fresh = parse(doc);
    char *a = ts_node_string(ts_tree_root_node(src->tree));
    char *b = ts_node_string(ts_tree_root_node(fresh->tree));
    cr_expect(strcmp(a, b) == 0, "%s: incremental tree differs from a fresh parse\nincremental: %s\nfresh:       %s\ntext:\n%s",
              when, a, b, doc->text);
    cr_expect(ts_node_end_byte(ts_tree_root_node(src->tree)) == ts_node_end_byte(ts_tree_root_node(fresh->tree)));
    cr_expect(src->has_errors == fresh->has_errors, "%s: has_errors", when);
    cr_expect(src->first_error == fresh->first_error, "%s: first_error", when);
    cr_expect(src->import_count == fresh->import_count, "%s: %zu imports, fresh %zu", when, src->import_count,
              fresh->import_count);
    for (size_t i = 0; i < src->import_count && i < fresh->import_count; i++)
        cr_expect(strcmp(src->imports[i].local, fresh->imports[i].local) == 0 &&
                      strcmp(src->imports[i].qualified, fresh->imports[i].qualified) == 0,
                  "%s: import %zu", when, i);
    cr_expect(src->doc == doc, "the source follows the document it was reparsed with");
    free(a);
    free(b);
    py_source_free(fresh);
}


static size_t offset_of(const Document *doc, const char *needle) {
    const char *p = strstr(doc->text, needle);
    cr_assert_not_null(p, "\"%s\" not in the text", needle);
    return (size_t)(p - doc->text);
}

static void expect_resolves(const PySource *src, const char *local, const char *qualified) {
    const char *got = py_resolve_import(src, local, strlen(local));
    if (!qualified)
        cr_expect(got == NULL, "%s resolves to %s, expected nothing", local, got);
    else
        cr_expect(got && strcmp(got, qualified) == 0, "%s resolves to %s, expected %s", local, got ? got : "NULL",
                  qualified);
}

/* ---- incremental reparse -------------------------------------------------------- */

static const char BASE[] = "import torch\n"
                           "\n"
                           "\n"
                           "def f(x):\n"
                           "    return x + 1\n"
                           "\n"
                           "\n"
                           "class Net:\n"
                           "    def forward(self, x):\n"
                           "        for i in range(3):\n"
                           "            x = f(x)\n"
                           "        return x\n";

Test(reparse, point_at) {
    const char *text = "ab\ncd\n\nxyz";
    TSPoint p = py_point_at(text, 0);
    cr_expect(p.row == 0 && p.column == 0);
    p = py_point_at(text, 4);
    cr_expect(p.row == 1 && p.column == 1);
    p = py_point_at(text, 6);
    cr_expect(p.row == 2 && p.column == 0);
    p = py_point_at(text, 10);
    cr_expect(p.row == 3 && p.column == 3);
    p = py_point_at("\xC3\xA9x", 2); /* columns are bytes, as tree-sitter counts them */
    cr_expect(p.row == 0 && p.column == 2);
}

Test(reparse, insert_a_statement) {
    Document *doc = doc_of(BASE);
    PySource *src = parse(doc);
    size_t at = offset_of(doc, "    return x + 1");
    python_edit(src, doc, at, at, "    y = x * 2\n");
    cr_expect(strstr(doc->text, "    y = x * 2\n    return x + 1\n") != NULL);
    expect_same_as_fresh(src, doc, "insert a statement");
    py_source_free(src);
    document_free(doc);
}

Test(reparse, replace_an_expression) {
    Document *doc = doc_of(BASE);
    PySource *src = parse(doc);
    size_t at = offset_of(doc, "x + 1");
    python_edit(src, doc, at, at + 5, "torch.relu(x) * 2");
    expect_same_as_fresh(src, doc, "replace an expression");
    py_source_free(src);
    document_free(doc);
}

Test(reparse, delete_lines) {
    Document *doc = doc_of(BASE);
    PySource *src = parse(doc);
    size_t start = offset_of(doc, "def f(x):"), end = offset_of(doc, "class Net:");
    python_edit(src, doc, start, end, "");
    cr_expect(strncmp(doc->text + start, "class Net:", 10) == 0);
    expect_same_as_fresh(src, doc, "delete a function");
    py_source_free(src);
    document_free(doc);
}

Test(reparse, replace_across_lines_changing_indentation) {
    Document *doc = doc_of(BASE);
    PySource *src = parse(doc);
    size_t start = offset_of(doc, "for i in range(3):"), end = offset_of(doc, "        return x\n");
    python_edit(src, doc, start, end, "with torch.no_grad():\n            x = x * 2\n");
    expect_same_as_fresh(src, doc, "replace a loop by a with block");
    py_source_free(src);
    document_free(doc);
}

Test(reparse, break_the_code_then_repair_it) {
    Document *doc = doc_of(BASE);
    PySource *src = parse(doc);
    cr_expect(!src->has_errors);
    size_t at = offset_of(doc, "def f(x):") + 5; /* after "def f" */
    python_edit(src, doc, at, at + 3, "(x");          /* "def f(x:" */
    cr_expect(src->has_errors, "a missing ')' is a syntax error");
    expect_same_as_fresh(src, doc, "break");
    python_edit(src, doc, at, at + 2, "(x)");
    cr_expect(!src->has_errors, "repaired");
    cr_expect(strcmp(doc->text, BASE) == 0);
    expect_same_as_fresh(src, doc, "repair");
    py_source_free(src);
    document_free(doc);
}

Test(reparse, imports_follow_edits) {
    Document *doc = doc_of(BASE);
    PySource *src = parse(doc);
    expect_resolves(src, "torch", "torch");
    expect_resolves(src, "np", NULL);
    size_t at = offset_of(doc, "import torch");
    python_edit(src, doc, at, at + 12, "import numpy as np\nimport torch.nn.functional as F");
    expect_resolves(src, "np", "numpy");
    expect_resolves(src, "F", "torch.nn.functional");
    expect_resolves(src, "torch", NULL);
    expect_same_as_fresh(src, doc, "imports");
    py_source_free(src);
    document_free(doc);
}

Test(reparse, many_random_edits) {
    static const char *snippets[] = {
        "", "x", "\n", "    ", "(", ")", ":", "import os\n", "def g():\n    pass\n", "for a in b:\n    c(a)\n",
        "# comment\n", "\"str\"", "'''doc\n'''", "1 + 2", "if x:\n", "    return\n", "\\\n", "lambda q: q",
        "from torch import nn as N\n",
    };
    Document *doc = doc_of(BASE);
    PySource *src = parse(doc);
    unsigned seed = 2024;
    for (int round = 0; round < 300; round++) {
        seed = seed * 1103515245u + 12345u;
        size_t start = (seed >> 8) % (doc->length + 1);
        seed = seed * 1103515245u + 12345u;
        size_t end = start + (seed >> 8) % 12;
        if (end > doc->length) end = doc->length;
        seed = seed * 1103515245u + 12345u;
        const char *text = snippets[(seed >> 8) % (sizeof snippets / sizeof *snippets)];
        python_edit(src, doc, start, end, text);
        char when[32];
        snprintf(when, sizeof when, "round %d", round);
        expect_same_as_fresh(src, doc, when);
        if (doc->length > 3000) python_edit(src, doc, 0, doc->length - 1000, "");
    }
    py_source_free(src);
    document_free(doc);
}

/* ---- imports ------------------------------------------------------------------- */

Test(imports, table) {
    Document *doc = doc_of("import torch.nn.functional as F\n"
                           "from torch.optim import AdamW as W\n"
                           "import torch.nn as nn\n"
                           "from time import perf_counter\n"
                           "import os.path\n"
                           "from torch import cuda, optim as O\n"
                           "from collections import (\n"
                           "    OrderedDict,\n"
                           "    defaultdict as dd,\n"
                           ")\n"
                           "import numpy as np, math\n"
                           "from . import sibling\n"
                           "from .models import Net\n"
                           "from ..pkg import thing as T\n"
                           "from typing import *\n");
    PySource *src = parse(doc);
    cr_expect(!src->has_errors);
    expect_resolves(src, "F", "torch.nn.functional");
    expect_resolves(src, "W", "torch.optim.AdamW");
    expect_resolves(src, "AdamW", NULL);
    expect_resolves(src, "nn", "torch.nn");
    expect_resolves(src, "perf_counter", "time.perf_counter");
    expect_resolves(src, "os", "os");
    expect_resolves(src, "cuda", "torch.cuda");
    expect_resolves(src, "O", "torch.optim");
    expect_resolves(src, "optim", NULL);
    expect_resolves(src, "OrderedDict", "collections.OrderedDict");
    expect_resolves(src, "dd", "collections.defaultdict");
    expect_resolves(src, "np", "numpy");
    expect_resolves(src, "math", "math");
    /* relative imports name project modules: ignored */
    expect_resolves(src, "sibling", NULL);
    expect_resolves(src, "Net", NULL);
    expect_resolves(src, "T", NULL);
    /* names that are not imported */
    expect_resolves(src, "torch", NULL); /* only "import torch.x as y" forms: torch itself is not bound */
    expect_resolves(src, "time", NULL);
    expect_resolves(src, "Fx", NULL);
    expect_resolves(src, "", NULL);
    /* the length decides: "F.softmax" cut at the dot */
    const char *expr = "F.softmax";
    const char *q = py_resolve_import(src, expr, 1);
    cr_expect(q && strcmp(q, "torch.nn.functional") == 0);
    cr_expect(py_resolve_import(src, expr, 2) == NULL);
    py_source_free(src);
    document_free(doc);
}

Test(imports, nested_scopes_and_later_imports_win) {
    Document *doc = doc_of("import numpy as np\n"
                           "try:\n"
                           "    import cupy as xp\n"
                           "except ImportError:\n"
                           "    import numpy as xp\n"
                           "def f():\n"
                           "    from time import monotonic as clock\n"
                           "    if True:\n"
                           "        import torch . nn as tnn\n"
                           "class C:\n"
                           "    import json\n"
                           "with open('x') as fh:\n"
                           "    import jax.numpy as np\n"
                           "@decorator\n"
                           "def g():\n"
                           "    import pickle as pk\n"
                           "x = __import__('os')\n"
                           "s = 'import fake as fk'\n");
    PySource *src = parse(doc);
    expect_resolves(src, "np", "jax.numpy");
    expect_resolves(src, "xp", "numpy");
    expect_resolves(src, "clock", "time.monotonic");
    expect_resolves(src, "tnn", "torch.nn");
    expect_resolves(src, "json", "json");
    expect_resolves(src, "pk", "pickle");
    expect_resolves(src, "fk", NULL);
    expect_resolves(src, "os", NULL);
    py_source_free(src);
    document_free(doc);
}

/* ---- syntax errors --------------------------------------------------------------- */

typedef struct {
    const char *text;
    bool uses_gpu;
} UsesGpuCase;

static void expect_uses_gpu(const UsesGpuCase *cases, size_t count) {
    for (size_t i = 0; i < count; i++) {
        Document *doc = doc_of(cases[i].text);
        PySource *src = parse(doc);
        cr_expect(src->uses_gpu == cases[i].uses_gpu, "uses_gpu %d in:\n%s", src->uses_gpu, cases[i].text);
        py_source_free(src);
        document_free(doc);
    }
}

Test(imports, a_torch_xla_program_is_no_gpu_program) {
    static const UsesGpuCase cases[] = {
        {"import torch\nimport torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n", false},
        {"import torch\nfrom torch_xla import runtime\nx = torch.ones(2, device=fabric.device)\n", false},
        {"import torch\nimport torch_xla\nif torch.cuda.is_available():\n    dev = 'cuda'\n", true},
        {"import torch\nx = torch.ones(2, device=device)\n", true},
    };
    expect_uses_gpu(cases, sizeof cases / sizeof *cases);
}

/* Hugging Face's per-device batch sizes name no device: a CPU run has them too */
Test(imports, a_per_device_batch_size_is_no_device) {
    static const UsesGpuCase cases[] = {
        {"import torch\nargs = TrainingArguments(per_device_train_batch_size=8, use_cpu=True)\n", false},
        {"import torch\nargs = dict(per_device_eval_batch_size=4)\nx = torch.ones(2)\n", false},
        {"import torch\nargs = TrainingArguments(per_device_train_batch_size=8)\nm = load(device_map='auto')\n",
         true},
        {"import torch\nx = torch.ones(2).to(device)\nargs = dict(per_device_eval_batch_size=4)\n", true},
        {"import torch\nnum_devices = 2\n", true},
    };
    expect_uses_gpu(cases, sizeof cases / sizeof *cases);
}

Test(errors, clean_code_has_none) {
    Document *doc = doc_of(BASE);
    PySource *src = parse(doc);
    cr_expect(!src->has_errors && src->first_error == 0);
    py_source_free(src);
    document_free(doc);
}

Test(errors, first_error_is_on_the_broken_line) {
    static const struct { const char *text; size_t line; } cases[] = {
        {"a = 1\nb = 2\nc = = 3\nd = 4\n", 2},
        {"import torch\n\ndef f(:\n    pass\n", 2},
        {"x = 1\ny = 2\nfor in range(3):\n    pass\nz = 3\n", 2},
        {"x = [1, 2\n", 0},
        {"ok = 1\nclass :\n    pass\nalso = 2\n", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Document *doc = doc_of(cases[i].text);
        PySource *src = parse(doc);
        cr_expect(src->has_errors, "%s", cases[i].text);
        cr_expect(src->first_error <= doc->length);
        size_t line = document_line_of(doc, src->first_error);
        cr_expect(line == cases[i].line, "first error at %zu (line %zu), expected line %zu in:\n%s", src->first_error,
                  line, cases[i].line, cases[i].text);
        py_source_free(src);
        document_free(doc);
    }
}

/* ---- robustness ------------------------------------------------------------------- */

Test(robustness, empty_text) {
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, "", 0);
    PySource *src = parse(doc);
    cr_expect(!src->has_errors && src->import_count == 0 && !src->uses_gpu);
    cr_expect(py_resolve_import(src, "x", 1) == NULL);
    cr_expect(ts_node_end_byte(ts_tree_root_node(src->tree)) == 0);
    /* and grow it from nothing */
    python_edit(src, doc, 0, 0, "import torch as t\nt.cuda.synchronize()\n");
    expect_resolves(src, "t", "torch");
    cr_expect(src->uses_gpu);
    expect_same_as_fresh(src, doc, "from empty");
    python_edit(src, doc, 0, doc->length, "");
    cr_expect(src->import_count == 0 && !src->has_errors);
    py_source_free(src);
    document_free(doc);
}

Test(robustness, invalid_utf8) {
    static const char bytes[] = "import torch as t\nx = '\xff\xfe'\n\xc3(\ny = \"\xed\xa0\x80\" # \x80\x80\n"
                                "z = 1\0\x01\nimport os\n\xf4\x90\x80\x80\n";
    Document *doc = document_new("t.py", LANGUAGE_PYTHON, bytes, sizeof bytes - 1);
    PySource *src = parse(doc);
    expect_resolves(src, "t", "torch");
    cr_expect(src->first_error <= doc->length);
    /* edits into the invalid bytes reparse too */
    size_t at = offset_of(doc, "x = '");
    python_edit(src, doc, at + 5, at + 6, "\xc3");
    expect_same_as_fresh(src, doc, "invalid UTF-8");
    py_source_free(src);
    document_free(doc);
}

Test(robustness, two_megabyte_file) {
    const char *unit = "def f_%06d(x, y=None):\n"
                       "    \"\"\"Docstring.\"\"\"\n"
                       "    for i in range(10):\n"
                       "        x = torch.relu(x) + i  # comment\n"
                       "    return x\n\n\n";
    size_t cap = 2u * 1024 * 1024 + 256, n = 0;
    char *text = malloc(cap + 1);
    n += (size_t)sprintf(text, "import torch\nimport torch.nn.functional as F\n\n\n");
    for (int i = 0; n + 200 < cap; i++) n += (size_t)sprintf(text + n, unit, i);
    cr_assert(n >= 2u * 1024 * 1024 - 200);
    Document *doc = document_new("big.py", LANGUAGE_PYTHON, text, n);
    /* valid Python parses in linear time: no wall-time limit here, which a
     * loaded machine under AddressSanitizer once passed (26.7 s against 20) */
    PySource *src = py_source_new_within(doc, 0);
    cr_assert_not_null(src);
    cr_expect(!src->has_errors);
    expect_resolves(src, "F", "torch.nn.functional");
    cr_expect(ts_node_end_byte(ts_tree_root_node(src->tree)) == n);
    /* an edit at the end of a large file */
    size_t at = doc->length;
    python_edit(src, doc, at, at, "import numpy as np\n");
    expect_resolves(src, "np", "numpy");
    cr_expect(!src->has_errors);
    py_source_free(src);
    document_free(doc);

    /* and random bytes (128 KiB: tree-sitter's error recovery takes about
     * 10 s per MiB of noise) */
    size_t noise = 128 * 1024;
    unsigned seed = 7;
    for (size_t i = 0; i < noise; i++) {
        seed = seed * 1103515245u + 12345u;
        text[i] = (char)(seed >> 16);
    }
    doc = document_new("noise.py", LANGUAGE_PYTHON, text, noise);
    src = parse(doc);
    cr_expect(src->has_errors);
    cr_expect(src->first_error <= doc->length);
    py_source_free(src);
    document_free(doc);
    free(text);
}

/* Every tree-sitter node function advise calls answers a null node as an
 * empty leaf (analysis/python/tree_sitter_null_safe.c, linked with --wrap) instead
 * of dereferencing it: `class X:` has no "superclasses" field, and asking
 * that null node for its children crashed the process. */
Test(robustness, null_nodes_read_as_empty_leaves) {
    TSNode null_node = {{0, 0, 0, 0}, NULL, NULL};
    cr_assert_str_eq(ts_node_type(null_node), "");
    cr_assert_eq(ts_node_symbol(null_node), 0);
    cr_assert_eq(ts_node_end_byte(null_node), 0);
    cr_assert_eq(ts_node_child_count(null_node), 0);
    cr_assert_eq(ts_node_named_child_count(null_node), 0);
    cr_assert(ts_node_is_null(ts_node_child(null_node, 0)));
    cr_assert(ts_node_is_null(ts_node_named_child(null_node, 0)));
    cr_assert(ts_node_is_null(ts_node_child_by_field_name(null_node, "superclasses", 12)));
    cr_assert(ts_node_is_null(ts_node_parent(null_node)));
    cr_assert(ts_node_is_null(ts_node_next_sibling(null_node)));
    cr_assert(ts_node_is_null(ts_node_prev_sibling(null_node)));
    cr_assert(ts_node_is_null(ts_node_next_named_sibling(null_node)));
    cr_assert(ts_node_is_null(ts_node_prev_named_sibling(null_node)));
    cr_assert(ts_node_is_null(ts_node_descendant_for_byte_range(null_node, 0, 1)));
    cr_assert(ts_node_is_null(ts_node_named_descendant_for_byte_range(null_node, 0, 1)));
    cr_assert_null(ts_node_field_name_for_child(null_node, 0));
    cr_assert_not(ts_node_is_named(null_node));
    cr_assert_not(ts_node_is_missing(null_node));
    cr_assert_not(ts_node_has_error(null_node));
    cr_assert_not(ts_node_has_changes(null_node));
    TSPoint p = ts_node_end_point(null_node);
    cr_assert_eq(p.row, 0);
    cr_assert_null(ts_node_string(null_node));
}

/* ts_node_child_by_field_name keeps the field ids of the names it was asked
 * for (tree_sitter_null_safe.c): a name's answer is the library's, also for
 * another name at the same address, of the same length. */
Test(robustness, child_by_field_name_answers_as_the_library) {
    const char *text = "def f(a, b):\n    return a\n";
    Document *doc = document_new("f.py", LANGUAGE_PYTHON, text, strlen(text));
    PySource *src = py_source_new(doc);
    cr_assert_not_null(src);
    TSNode def = ts_node_named_child(ts_tree_root_node(src->tree), 0);
    cr_assert_str_eq(ts_node_type(def), "function_definition");
    const TSLanguage *language = ts_tree_language(src->tree);
    char name[32];
    const char *names[] = {"name", "body", "parameters", "name", "return_type", "superclasses", "nope", "body"};
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            snprintf(name, sizeof name, "%s", names[i]); /* one address for every name */
            uint32_t length = (uint32_t)strlen(name);
            TSNode got = ts_node_child_by_field_name(def, name, length);
            TSFieldId id = ts_language_field_id_for_name(language, names[i], length);
            TSNode want = id ? ts_node_child_by_field_id(def, id) : (TSNode){{0, 0, 0, 0}, NULL, NULL};
            cr_expect(ts_node_eq(got, want) || (ts_node_is_null(got) && ts_node_is_null(want)), "%s", names[i]);
        }
    cr_expect_str_eq(ts_node_type(ts_node_child_by_field_name(def, "name", 4)), "identifier");
    cr_expect_str_eq(ts_node_type(ts_node_child_by_field_name(def, "body", 4)), "block");
    cr_expect(ts_node_is_null(ts_node_child_by_field_name(def, "superclasses", 12)));
    cr_expect(ts_node_is_null(ts_node_child_by_field_name(def, "nope", 4)));
    cr_expect_str_eq(ts_node_type(ts_node_child_by_field_name(def, "namex", 4)), "identifier"); /* the length counts */
    py_source_free(src);
    document_free(doc);
}

/* The shape that crashed every Python rule that asks for a class's bases. */
Test(robustness, class_without_bases_in_a_gpu_loop) {
    const char *text = "import torch\n"
                       "class Loader:\n"
                       "    def next_batch(self):\n"
                       "        return torch.zeros(4)\n"
                       "loader = Loader()\n"
                       "model = torch.nn.Linear(4, 4).cuda()\n"
                       "for step in range(10):\n"
                       "    x = loader.next_batch()\n"
                       "    print(x.item())\n";
    Document *doc = document_new("loader.py", LANGUAGE_PYTHON, text, strlen(text));
    PySource *src = py_source_new(doc);
    cr_assert_not_null(src);
    TSNode cls = ts_node_named_child(ts_tree_root_node(src->tree), 1);
    cr_assert_str_eq(ts_node_type(cls), "class_definition");
    TSNode bases = ts_node_child_by_field_name(cls, "superclasses", 12);
    cr_assert(ts_node_is_null(bases));
    cr_assert_eq(ts_node_named_child_count(bases), 0);
    py_source_free(src);
    document_free(doc);
}

/* ---- the module's bindings carried over a reparse (python_index.h) ----------- */

static const char CARRY[] = "import torch\n"
                            "device = torch.device(\"cuda\")\n"
                            "\n"
                            "\n"
                            "class Net:\n"
                            "    def forward(self, x):\n"
                            "        return x + 1\n"
                            "\n"
                            "\n"
                            "model = Net()\n"
                            "for step in range(3):\n"
                            "    y = model(step) if (n := step) else None\n"
                            "total = [p for p in range(3)]\n";

static const char *const CARRY_NAMES[] = {"device", "model", "step", "y", "n", "p", "total", "x", "torch"};

/* the module scope's bindings of src answer as those of a fresh parse of its text */
static void expect_module_bindings_fresh(const PySource *src, const char *when) {
    PySource *fresh = parse(src->doc);
    for (size_t k = 0; k < sizeof CARRY_NAMES / sizeof *CARRY_NAMES; k++) {
        const char *name = CARRY_NAMES[k];
        size_t n1, n2;
        const PyBinding *a = py_index_bindings(src, ts_tree_root_node(src->tree), name, strlen(name), &n1);
        const PyBinding *b = py_index_bindings(fresh, ts_tree_root_node(fresh->tree), name, strlen(name), &n2);
        cr_expect(n1 == n2, "%s: %zu bindings of %s, fresh %zu", when, n1, name, n2);
        for (size_t i = 0; i < n1 && i < n2; i++) {
            cr_expect(a[i].name == src->doc->text + (b[i].name - fresh->doc->text) && a[i].length == b[i].length,
                      "%s: %s's name", when, name);
            cr_expect(a[i].kind == b[i].kind && a[i].visibility == b[i].visibility && a[i].start == b[i].start &&
                          a[i].from == b[i].from && a[i].until == b[i].until,
                      "%s: %s's binding %zu", when, name, i);
            cr_expect(ts_node_is_null(a[i].value) == ts_node_is_null(b[i].value), "%s: %s's value", when, name);
            if (!ts_node_is_null(a[i].value) && !ts_node_is_null(b[i].value)) {
                cr_expect(ts_node_start_byte(a[i].value) == ts_node_start_byte(b[i].value) &&
                              ts_node_end_byte(a[i].value) == ts_node_end_byte(b[i].value) &&
                              ts_node_symbol(a[i].value) == ts_node_symbol(b[i].value),
                          "%s: %s's value node", when, name);
                cr_expect(ts_tree_root_node(src->tree).tree == a[i].value.tree, "%s: %s's value in the new tree", when,
                          name);
            }
        }
    }
    py_source_free(fresh);
}

/* One edit of doc as the server notes it before the reparse: the new text
 * is a document of its own, the old one stays readable until then. */
static Document *noted_edit(PySource *src, const Document *now, size_t start, size_t end, const char *piece) {
    size_t len = strlen(piece);
    char *buf = malloc(now->length - (end - start) + len + 1);
    cr_assert_not_null(buf);
    memcpy(buf, now->text, start);
    memcpy(buf + start, piece, len);
    memcpy(buf + start + len, now->text + end, now->length - end + 1);
    Document *next = doc_of(buf);
    free(buf);
    py_source_note_edit(src, start, end, start + len, py_point_at(now->text, start), py_point_at(now->text, end),
                        py_point_at(next->text, start + len));
    return next;
}

/* replaces [start, end) with text in a new document (the old one stays
 * readable, as the server keeps it until the reparse is done), carrying the
 * module's bindings over the reparse; returns what put said */
static bool carry_edit(PySource *src, Document **doc, size_t start, size_t end, const char *text) {
    Document *old = *doc;
    size_t len = strlen(text);
    PyCarriedBindings *carried = py_index_take_module(src);
    cr_assert_not_null(carried, "the module scope was indexed: something to carry");
    Document *now = noted_edit(src, old, start, end, text);
    cr_assert(py_source_reparse(src, now));
    bool put = py_index_put_module(src, carried, start, end, start + len);
    document_free(old);
    *doc = now;
    return put;
}

Test(python_index, module_bindings_carried_over_an_edit_inside_a_definition) {
    Document *doc = doc_of(CARRY);
    PySource *src = parse(doc);
    size_t n;
    py_index_bindings(src, ts_tree_root_node(src->tree), "model", 5, &n); /* indexes the module scope */
    cr_assert_eq(n, 1);
    PySource *other = parse(doc);
    cr_expect_null(py_index_take_module(other), "nothing indexed, nothing to take");
    py_source_free(other);
    /* a name typed inside the method: offsets after it move by two */
    cr_expect(carry_edit(src, &doc, offset_of(doc, "x + 1") + 1, offset_of(doc, "x + 1") + 1, "_2"));
    expect_module_bindings_fresh(src, "inside the method");
    /* a line typed at the class's end, then a deletion inside it */
    size_t end = offset_of(doc, "x_2 + 1") + strlen("x_2 + 1");
    cr_expect(carry_edit(src, &doc, end, end, "\n        z = 1"));
    expect_module_bindings_fresh(src, "a new line at the class's end");
    size_t z = offset_of(doc, "z = 1");
    cr_expect(carry_edit(src, &doc, z, z + 4, ""));
    expect_module_bindings_fresh(src, "a deletion inside the method");
    py_source_free(src);
    document_free(doc);
}

Test(python_index, module_bindings_not_carried_over_an_edit_of_a_module_value) {
    Document *doc = doc_of(CARRY);
    PySource *src = parse(doc);
    size_t n;
    py_index_bindings(src, ts_tree_root_node(src->tree), "device", 6, &n);
    cr_assert_eq(n, 1);
    /* inside `torch.device("cuda")`: put refuses, and the next question indexes the module afresh */
    size_t at = offset_of(doc, "cuda");
    cr_expect_not(carry_edit(src, &doc, at, at + 4, "cpu"));
    expect_module_bindings_fresh(src, "after a refused carry");
    /* a renamed module binding: its name no longer reads the same, put refuses */
    py_index_bindings(src, ts_tree_root_node(src->tree), "device", 6, &n);
    at = offset_of(doc, "model = ");
    cr_expect_not(carry_edit(src, &doc, at, at + 1, "M"));
    expect_module_bindings_fresh(src, "after a renamed binding");
    py_source_free(src);
    document_free(doc);
}

/* ---- imports over incremental reparses ---------------------------------------- */

/* The imports a reparse left, against a fresh parse's, where the tree holds
 * no syntax error (only then may a reparse keep them; and error recovery
 * may shape an incrementally parsed tree unlike a fresh one, and even a
 * reparse of the same text unlike the last). */
static void expect_imports_fresh(const PySource *src, const Document *doc, int round) {
    if (src->has_errors) return;
    PySource *fresh = parse(doc);
    cr_assert_eq(src->import_count, fresh->import_count, "round %d: %zu imports, fresh %zu\n%s", round,
                 src->import_count, fresh->import_count, doc->text);
    for (size_t i = 0; i < src->import_count; i++) {
        cr_assert_str_eq(src->imports[i].local, fresh->imports[i].local, "round %d, import %zu", round, i);
        cr_assert_str_eq(src->imports[i].qualified, fresh->imports[i].qualified, "round %d, import %zu", round, i);
    }
    cr_assert_eq(src->imports_torch, fresh->imports_torch, "round %d", round);
    py_source_free(fresh);
}

/* the offset of the start of line `line` (clamped to the text's end) */
static size_t line_start_of(const char *text, size_t length, size_t line) {
    size_t at = 0;
    while (line-- > 0) {
        const char *nl = memchr(text + at, '\n', length - at);
        if (!nl) return length;
        at = (size_t)(nl - text) + 1;
    }
    return at;
}

/* Lines typed, deleted and replaced around imports, a name typed into a
 * line, half an `import` typed and finished, one edit per reparse and now
 * and then two: the imports a reparse keeps (it skips collecting them when
 * the edit touches no statement that spells `import`, in trees without a
 * syntax error) are always a fresh parse's, and they are kept often. */
Test(python_source, imports_follow_incremental_edits) {
    static const char *lines[] = {"x = 1\n", "import os\n", "from torch import nn as tnn\n", "y = x + 2\n",
                                  "def f():\n    import math\n    return math.pi\n", "print(x)\n",
                                  "class K:\n    pass\n", "import numpy as np\n", "z = [1,\n     2]\n",
                                  "w = 'import'\n", "imp", "ort json\n", "# import sys\n", "\n",
                                  "s = \"\"\"\n", "\"\"\" # \"\"\"\n", ", \"\"\""};
    Document *doc = doc_of("import torch\nfrom torch.nn import functional as F\n\nx = torch.zeros(3)\n\n"
                           "def g(a):\n    return F.relu(a)\n\nclass C:\n    import json\n");
    PySource *src = parse(doc);
    unsigned seed = 2026;
    size_t kept = 0;
    int broken = 0; /* reparses in a row that left a syntax error */
    for (int round = 0; round < 1500; round++) {
        int edits = round % 7 == 6 ? 2 : 1;
        Document *now = doc;
        for (int e = 0; e < edits; e++) {
            seed = seed * 1103515245u + 12345u;
            unsigned kind = (seed >> 8) % 5;
            seed = seed * 1103515245u + 12345u;
            size_t at = line_start_of(now->text, now->length, (seed >> 8) % 40);
            seed = seed * 1103515245u + 12345u;
            const char *piece = lines[(seed >> 8) % (sizeof lines / sizeof *lines)];
            size_t end = at;
            if (kind == 1 || kind == 2) { /* delete, or replace, the line */
                const char *nl = memchr(now->text + at, '\n', now->length - at);
                end = nl ? (size_t)(nl - now->text) + 1 : now->length;
            }
            if (kind == 1) piece = "";
            if (kind == 4) { /* a piece typed at the end of the line's first token */
                while (at < now->length && now->text[at] != '\n' && now->text[at] != ' ') at++;
                end = at;
            }
            if (kind == 3) { /* a name typed into the line */
                while (at < now->length && now->text[at] != '\n' && !(now->text[at] >= 'a' && now->text[at] <= 'z')) at++;
                end = at;
                piece = "q";
            }
            Document *next = noted_edit(src, now, at, end, piece);
            if (now != doc) document_free(now); /* the first text stays: src reads it until the reparse */
            now = next;
        }
        bool clean_before = !src->has_errors;
        cr_assert(py_source_reparse(src, now));
        document_free(doc);
        doc = now;
        expect_imports_fresh(src, doc, round);
        kept += clean_before && !src->has_errors;
        broken = src->has_errors ? broken + 1 : 0;
        if (doc->length > 1200 || broken > 2) { /* start again from a short text without errors */
            py_source_free(src);
            Document *fresh = doc_of(round % 2 ? "import torch\nimport numpy\n\ny = 2\n"
                                               : "x = 0\n\ndef h():\n    return 1\n\nfrom os import path\n");
            document_free(doc);
            doc = fresh;
            src = parse(doc);
        }
    }
    cr_log_info("%zu reparses between trees without errors", kept);
    cr_expect_gt(kept, 300, "only %zu of the 1500 reparses were between trees without errors", kept);
    py_source_free(src);
    document_free(doc);
}

/* A string opened before an import turns it into text, and a later `"""`
 * closes the string again, so both trees parse without an error while the
 * statement the edit touched grows over the import (found by a review):
 * the imports are collected again, in both directions. */
Test(python_source, imports_follow_a_string_that_swallows_an_import) {
    Document *doc = doc_of("a = 1\nb = \"\"\"\nimport os\n\"\"\" # \"\"\"\n");
    PySource *src = parse(doc);
    cr_assert_eq(src->import_count, 0);
    Document *now = noted_edit(src, doc, 5, 5, ", \"\"\"");
    cr_assert(py_source_reparse(src, now));
    cr_assert_not(src->has_errors, "the example needs two trees without errors");
    expect_imports_fresh(src, now, 0);
    cr_expect_eq(src->import_count, 1);
    document_free(doc);
    doc = now;
    now = noted_edit(src, doc, 5, 10, "");
    cr_assert(py_source_reparse(src, now));
    expect_imports_fresh(src, now, 1);
    cr_expect_eq(src->import_count, 0);
    document_free(doc);
    py_source_free(src);
    document_free(now);
}
