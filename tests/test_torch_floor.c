/* The oldest torch a project declares (rules/python/support/torch_floor.c),
 * and PY008 standing down in a project that supports one older than 2.4. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/document.h"
#include "rules/engine/config.h"
#include "rules/engine/engine.h"
#include "rules/python/support/torch_floor.h"

static bool floor_of(const char *text, TorchVersion *v) { return torch_floor_in_text(text, strlen(text), v); }

static void expect_floor(const char *text, int major, int minor) {
    TorchVersion v = -1;
    cr_expect(floor_of(text, &v), "no floor found in <%s>", text);
    cr_expect_eq(v, TORCH_VERSION(major, minor), "<%s>: %d, want %d.%d", text, v, major, minor);
}

static void expect_none(const char *text) {
    TorchVersion v = -1;
    cr_expect_not(floor_of(text, &v), "<%s> gave a floor of %d", text, v);
}

Test(torch_floor, requirement_spellings) {
    expect_floor("numpy>=1.18\ntorch>=1.8.0  # see pytorch.org\ntorchvision>=0.9.0\n", 1, 8);
    expect_floor("torch==1.7.1\n", 1, 7);
    expect_floor("torch ~= 2.1\n", 2, 1);
    expect_floor("torch<3,>=2.2.0\n", 2, 2);
    expect_floor("torch[opt-einsum]>=2.0\n", 2, 0);
    expect_floor("dependencies = [\n    \"einops\",\n    \"torch>=2.0\",\n]\n", 2, 0);
    expect_floor("install_requires=['torch>=1.6', 'tqdm']", 1, 6);
    expect_floor("dependencies:\n  - python=3.9\n  - pytorch=1.10\n  - cudatoolkit=11.3\n", 1, 10);
    expect_floor("  - pytorch::pytorch=1.12.1\n", 1, 12);
    expect_floor("[tool.poetry.dependencies]\ntorch = \"^2.1\"\n", 2, 1);
    expect_floor("install_requires =\n    torch (>=1.9)\n", 1, 9);
    /* the lowest of several */
    expect_floor("torch>=2.4\n-r base.txt\ntorch>=1.13\n", 1, 13);
}

Test(torch_floor, no_declared_floor) {
    expect_none("torch\n");
    expect_none("torch<2.0\n"); /* an upper bound alone */
    expect_none("torchvision>=0.15\ntorchaudio==2.0.1\ntorch-geometric>=2.3\n");
    expect_none("pytorch-lightning>=1.9\n");
    expect_none("# torch>=1.8 is what we tested\n");
    expect_none("import torch.nn as nn\nx = torch.zeros(3)\n");
    expect_none("[tool.ruff]\nline-length = 120\n");
    expect_none("");
}

/* a scratch project folder: requirements text at its root (none when NULL), a
 * .git beside it, and the source file in src/ */
static void make_project(char *root, size_t size, const char *requirements) {
    snprintf(root, size, "/tmp/advise-floor-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    char path[512];
    snprintf(path, sizeof path, "%s/.git", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/src", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    if (requirements) {
        snprintf(path, sizeof path, "%s/requirements.txt", root);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(requirements, f);
        fclose(f);
    }
}

static void remove_project(const char *root) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_expect_eq(system(cmd), 0);
}

Test(torch_floor, read_from_the_nearest_project_folder) {
    char root[64], path[512];
    make_project(root, sizeof root, "torch>=1.8.0\n");
    snprintf(path, sizeof path, "%s/src/train.py", root);
    TorchVersion v = -1;
    cr_expect(torch_floor_of_project(path, &v));
    cr_expect_eq(v, TORCH_VERSION(1, 8));
    remove_project(root);

    make_project(root, sizeof root, NULL);
    snprintf(path, sizeof path, "%s/src/train.py", root);
    cr_expect_not(torch_floor_of_project(path, &v), "no dependency file: no floor");
    cr_expect_not(torch_floor_of_project(NULL, &v));
    remove_project(root);
}

/* the model on the GPU before the optimizer is built over it */
static const char moved_first[] = "import torch\n"
                                  "model = torch.nn.Linear(4, 4).cuda()\n"
                                  "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n";
/* the model still in host memory when the optimizer is built (moved later, as accelerate does) */
static const char moved_later[] = "import torch\n"
                                  "model = torch.nn.Linear(4, 4)\n"
                                  "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
                                  "model = model.cuda()\n";

/* the findings of the one rule code on text at path; *caveats: how many carry a caveat */
static size_t rule_findings(const char *code, const char *path, const char *text, size_t *caveats) {
    Document *doc = document_new(path, LANGUAGE_PYTHON, text, strlen(text));
    Config cfg;
    config_init(&cfg);
    string_list_add(&cfg.select, code);
    FindingList findings;
    finding_list_init(&findings);
    char *error = NULL;
    cr_assert(engine_check(doc, NULL, &cfg, &findings, NULL, &error), "%s", error ? error : "?");
    size_t count = findings.count;
    *caveats = 0;
    for (size_t i = 0; i < count; i++)
        for (size_t k = 0; k < findings.items[i].evidence_count; k++)
            if (findings.items[i].evidence[k].kind == EVIDENCE_CAVEAT) (*caveats)++;
    finding_list_free(&findings);
    config_free(&cfg);
    document_free(doc);
    return count;
}

static size_t py008_findings(const char *path, const char *text, size_t *caveats) {
    return rule_findings("PY008", path, text, caveats);
}

Test(torch_floor, py008_by_the_declared_torch) {
    static const struct {
        const char *requirements; /* NULL: no dependency file */
        const char *text;
        size_t findings, caveats;
    } cases[] = {
        {"torch>=1.8.0\n", moved_first, 0, 0}, /* no fused= for AdamW before 2.0 */
        {"torch>=2.0\n", moved_first, 1, 1},   /* there, on CUDA parameters only: said */
        {"torch>=2.0\n", moved_later, 0, 0},   /* refused: the parameters are on the host */
        {"torch>=2.4\n", moved_later, 1, 0},   {"torch>=2.4\n", moved_first, 1, 0},
        {"torch\n", moved_first, 1, 0},        {NULL, moved_later, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char root[64], path[512];
        make_project(root, sizeof root, cases[i].requirements);
        snprintf(path, sizeof path, "%s/src/train.py", root);
        size_t caveats;
        cr_expect_eq(py008_findings(path, cases[i].text, &caveats), cases[i].findings, "case %zu: requirements <%s>",
                     i, cases[i].requirements ? cases[i].requirements : "(none)");
        cr_expect_eq(caveats, cases[i].caveats, "case %zu: %zu caveats", i, caveats);
        remove_project(root);
    }
}

/* PY006 on written-out attention, by the project's declared torch */
static size_t py006_findings(const char *path) {
    static const char text[] = "import torch\n"
                               "def attention(q, k, v):\n"
                               "    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5\n"
                               "    return torch.softmax(scores, dim=-1) @ v\n";
    size_t caveats;
    return rule_findings("PY006", path, text, &caveats);
}

Test(torch_floor, py006_not_before_torch_2_0) {
    static const struct {
        const char *requirements;
        size_t findings;
    } cases[] = {{"torch==1.13.1\n", 0}, {"torch>=2.0\n", 1}, {NULL, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char root[64], path[512];
        make_project(root, sizeof root, cases[i].requirements);
        snprintf(path, sizeof path, "%s/src/model.py", root);
        cr_expect_eq(py006_findings(path), cases[i].findings, "case %zu", i);
        remove_project(root);
    }
}
