/* A one-statement pass (the language server's quick pass, run on each
 * keystroke) must do work that does not grow with the module around the
 * statement. PY004 once walked the whole tree on every run, region passes
 * included: 10 ms per keystroke on a 6,000-line module, unseen by every
 * other test. Work is counted, not timed (py_walk_work: nodes visited by
 * py_walk, top-level statements stepped over by rule_walk), so the test
 * does not depend on the machine's speed. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/document.h"
#include "analysis/finding.h"
#include "analysis/python/python_query.h"
#include "analysis/python/python_source.h"
#include "rules/engine/config.h"
#include "rules/engine/engine.h"

/* A short training script with module-level loops, a model class and GPU
 * lines: each copy gives the module about forty top-level statements. */
static const char BLOCK[] = "import torch\n"
                            "import torch.nn as nn\n"
                            "import torch.nn.functional as F\n"
                            "\n"
                            "device = torch.device(\"cuda\")\n"
                            "\n"
                            "class Model(nn.Module):\n"
                            "    def __init__(self, width=256):\n"
                            "        super().__init__()\n"
                            "        self.inner = nn.Linear(width, width * 2)\n"
                            "        self.outer = nn.Linear(width * 2, 4)\n"
                            "\n"
                            "    def forward(self, x):\n"
                            "        return self.outer(F.relu(self.inner(x))) + torch.zeros(4).cuda()\n"
                            "\n"
                            "model = Model().to(device)\n"
                            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                            "inputs = torch.randn(1024, 256)\n"
                            "targets = torch.randint(0, 4, (1024,))\n"
                            "history = []\n"
                            "for it in range(100):\n"
                            "    pick = torch.randint(0, 1024, (32,))\n"
                            "    x = inputs[pick].to(device)\n"
                            "    y = targets[pick].to(device)\n"
                            "    loss = F.cross_entropy(model(x), y)\n"
                            "    opt.zero_grad()\n"
                            "    loss.backward()\n"
                            "    opt.step()\n"
                            "    history.append(loss.item())\n"
                            "    if it % 10 == 0:\n"
                            "        torch.cuda.synchronize()\n"
                            "        print(it, loss.item())\n"
                            "hits = 0\n"
                            "for start in range(0, 1024, 128):\n"
                            "    guess = model(inputs[start:start + 128].cuda()).argmax(dim=1).cpu()\n"
                            "    hits += (guess == targets[start:start + 128]).sum().item()\n"
                            "print(\"accuracy\", hits / 1024)\n"
                            "scale = torch.zeros(8).cuda()\n";

static char *repeated(size_t copies) {
    size_t n = strlen(BLOCK);
    char *text = malloc(n * copies + 1);
    cr_assert_not_null(text);
    for (size_t i = 0; i < copies; i++) memcpy(text + i * n, BLOCK, n);
    text[n * copies] = '\0';
    return text;
}

/* [start, end) of the statement of the middle copy that begins with `head` */
static ByteRange middle_statement(const char *text, size_t copies, const char *head) {
    size_t n = strlen(BLOCK);
    const char *copy = text + (copies / 2) * n;
    const char *at = strstr(copy, head);
    cr_assert(at && at < copy + n, "no `%s` in the middle copy", head);
    return (ByteRange){(size_t)(at - text), 0};
}

/* Work of the second region pass over the statement at `head` of the
 * middle copy (the first may build what is kept until the next reparse,
 * as the server's quick pass does after a carry), and its findings. */
static uint64_t region_work(size_t copies, const char *head, size_t *found) {
    char *text = repeated(copies);
    Document *doc = document_new("train.py", LANGUAGE_PYTHON, text, strlen(text));
    cr_assert_not_null(doc);
    PySource *py = py_source_new(doc);
    cr_assert_not_null(py);
    ByteRange region = middle_statement(text, copies, head);
    TSNode stmt = ts_node_named_descendant_for_byte_range(ts_tree_root_node(py->tree), (uint32_t)region.start,
                                                          (uint32_t)region.start);
    while (!ts_node_is_null(ts_node_parent(stmt)) && !ts_node_is_null(ts_node_parent(ts_node_parent(stmt))))
        stmt = ts_node_parent(stmt); /* up to the module's child */
    region.end = ts_node_end_byte(stmt);
    Config cfg;
    config_init(&cfg);
    uint64_t work = 0;
    for (int pass = 0; pass < 2; pass++) {
        FindingList out;
        finding_list_init(&out);
        char *error = NULL;
        uint64_t before = py_walk_work();
        cr_assert(engine_check_region(doc, py, &cfg, region, &out, NULL, &error), "%s", error ? error : "");
        work = py_walk_work() - before;
        *found = out.count;
        finding_list_free(&out);
    }
    config_free(&cfg);
    py_source_free(py);
    document_free(doc);
    free(text);
    return work;
}

static void check_flat(const char *head) {
    size_t few_found, many_found;
    uint64_t few = region_work(8, head, &few_found);
    uint64_t many = region_work(200, head, &many_found);
    cr_log_info("%s: work %llu with 8 copies, %llu with 200", head, (unsigned long long)few, (unsigned long long)many);
    /* the region's own findings, whatever the module's length */
    cr_expect_eq(few_found, many_found, "findings: %zu with 8 copies, %zu with 200", few_found, many_found);
    cr_expect_gt(few_found, 0, "the region should hold findings, or the rules were not run on it");
    /* 25 times the module: a walk over it would multiply the work */
    cr_expect_leq(many, few + few / 4 + 16, "work %llu with 8 copies, %llu with 200: it grows with the module",
                  (unsigned long long)few, (unsigned long long)many);
}

Test(region_work, a_module_level_loop) { check_flat("for it in range(100):"); }

Test(region_work, a_class) { check_flat("class Model(nn.Module):"); }

Test(region_work, a_module_level_statement) { check_flat("scale = torch.zeros(8).cuda()"); }
