/* The workspace index (analysis/python/python_workspace.h): facts that cross
 * Python files, resolved through imports (absolute, relative, re-exported,
 * src/ layouts), and kept current incrementally. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include "tests/temp_tree.h"

#include "analysis/python/python_module_facts.h"
#include "analysis/python/python_workspace.h"

/* a project folder (a pyproject.toml marks it), removed when the test process exits */
static char *temp_project(void) {
    char *dir = temp_tree("advise-ws");
    cr_assert_not_null(dir);
    char marker[PATH_MAX];
    snprintf(marker, sizeof marker, "%s/pyproject.toml", dir);
    FILE *f = fopen(marker, "w");
    cr_assert_not_null(f);
    fclose(f);
    return dir;
}

static void write_file(const char *dir, const char *rel, const char *text) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static const PyModuleFacts *module_at(const PyWorkspaceView *v, const char *dir, const char *rel) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    const PyModuleFacts *m = py_workspace_module(v, path);
    cr_assert_not_null(m, "no module for %s", rel);
    return m;
}

static const char model_py[] = "import torch\n"
                               "import torch.nn as nn\n"
                               "class Block(nn.Module):\n"
                               "    def __init__(self, d):\n"
                               "        super().__init__()\n"
                               "        self.fc = nn.Linear(d, d)\n"
                               "class GPT(nn.Module):\n"
                               "    def __init__(self, n):\n"
                               "        super().__init__()\n"
                               "        self.blocks = nn.ModuleList([Block(64) for _ in range(n)])\n"
                               "    def forward(self, x):\n"
                               "        return self.blocks[0](x)\n"
                               "    def sample_noise(self):\n"
                               "        return torch.randn(4)\n"
                               "class Tokenizer:\n"
                               "    def encode(self, s):\n"
                               "        return [ord(c) for c in s]\n"
                               "def build_model():\n"
                               "    model = GPT(2)\n"
                               "    return model.to('cuda')\n";

Test(workspace, classes_functions_and_variables_cross_files) {
    char *dir = temp_project();
    write_file(dir, "model.py", model_py);
    write_file(dir, "config.py", "import torch\ndevice = torch.device('cuda')\nbatch_size = 32\n");
    write_file(dir, "data.py",
               "import torch\n"
               "def get_batch(split):\n"
               "    ix = torch.randint(0, 10, (4,))\n"
               "    x = torch.stack([torch.zeros(3) for i in ix])\n"
               "    y = torch.stack([torch.ones(3) for i in ix])\n"
               "    return x, y\n"
               "def describe():\n"
               "    return 'data'\n");
    write_file(dir, "train.py", "from model import GPT, Tokenizer, build_model\n"
                                "import data\n"
                                "from config import device, batch_size\n");
    PyWorkspace *ws = py_workspace_new(dir);
    py_workspace_refresh(ws);
    PyWorkspaceView *v = py_workspace_view(ws);
    cr_expect_eq(py_workspace_module_count(v), 4);
    const PyModuleFacts *train = module_at(v, dir, "train.py");
    cr_expect_str_eq(py_module_name(train), "train");
    cr_expect(py_workspace_is_module_class(v, train, "GPT"));
    cr_expect_not(py_workspace_is_module_class(v, train, "Tokenizer"));
    cr_expect_eq(py_workspace_call_kinds(v, train, "GPT"), PY_VALUE_MODULE);
    cr_expect_eq(py_workspace_call_kinds(v, train, "Tokenizer"), 0);
    cr_expect(py_workspace_call_kinds(v, train, "build_model") & PY_VALUE_MODULE);
    cr_expect(py_workspace_call_kinds(v, train, "data.get_batch") & PY_VALUE_TENSOR);
    cr_expect_eq(py_workspace_call_kinds(v, train, "data.describe"), 0);
    cr_expect_eq(py_workspace_method_kinds(v, train, "GPT", "sample_noise"), PY_VALUE_TENSOR);
    cr_expect_eq(py_workspace_method_kinds(v, train, "Tokenizer", "encode"), 0);
    cr_expect(py_workspace_name_kinds(v, train, "device") & PY_VALUE_DEVICE);
    cr_expect_eq(py_workspace_name_kinds(v, train, "batch_size"), 0);
    /* GPT's matrix work is in its Block parts */
    cr_expect(py_workspace_has_matmul_work(v, train, "GPT"));
    cr_expect(py_workspace_has_matmul_work(v, train, "build_model"));
    cr_expect_not(py_workspace_has_matmul_work(v, train, "Tokenizer"));
    /* functions are known as functions, whatever their names say (`build_model` returns a model) */
    cr_expect(py_workspace_is_function(v, train, "build_model"));
    cr_expect(py_workspace_is_function(v, train, "data.describe"));
    cr_expect_not(py_workspace_is_function(v, train, "GPT"));
    cr_expect_not(py_workspace_is_function(v, train, "device"));
    cr_expect_not(py_workspace_is_function(v, train, "torch.zeros"));
    /* names nobody defines are not guessed */
    cr_expect_eq(py_workspace_call_kinds(v, train, "torch.zeros"), 0);
    cr_expect_eq(py_workspace_call_kinds(v, train, "missing_function"), 0);
    py_workspace_view_release(v);
    py_workspace_free(ws);
}

Test(workspace, packages_relative_imports_and_reexports) {
    char *dir = temp_project();
    write_file(dir, "src/zoo/__init__.py", "from .nets import ResNet\nfrom . import heads\n");
    write_file(dir, "src/zoo/nets.py", "import torch.nn as nn\nclass ResNet(nn.Module):\n    pass\n");
    write_file(dir, "src/zoo/heads.py", "from torch import nn\nclass Head(nn.Linear):\n    pass\n");
    write_file(dir, "src/zoo/sub/deep.py", "from ..nets import ResNet\nfrom ..heads import Head as H\n");
    write_file(dir, "scripts/run.py", "import zoo\nfrom zoo import ResNet\nfrom zoo.heads import Head\n");
    PyWorkspace *ws = py_workspace_new(dir);
    py_workspace_refresh(ws);
    PyWorkspaceView *v = py_workspace_view(ws);
    const PyModuleFacts *deep = module_at(v, dir, "src/zoo/sub/deep.py");
    cr_expect_str_eq(py_module_name(deep), "src.zoo.sub.deep");
    cr_expect(py_workspace_is_module_class(v, deep, "ResNet"));
    cr_expect(py_workspace_is_module_class(v, deep, "H"));
    const PyModuleFacts *run = module_at(v, dir, "scripts/run.py");
    /* `import zoo` names src/zoo (a src/ layout): found by its name's end */
    cr_expect(py_workspace_is_module_class(v, run, "ResNet"));
    cr_expect(py_workspace_is_module_class(v, run, "zoo.ResNet"));
    cr_expect(py_workspace_is_module_class(v, run, "zoo.heads.Head"));
    cr_expect(py_workspace_is_module_class(v, run, "Head"));
    cr_expect_eq(py_workspace_call_kinds(v, run, "zoo.ResNet"), PY_VALUE_MODULE);
    py_workspace_view_release(v);
    py_workspace_free(ws);
}

Test(workspace, nearest_module_of_a_name_wins) {
    char *dir = temp_project();
    write_file(dir, "a/model.py", "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n");
    write_file(dir, "b/model.py", "class Net:\n    pass\n");
    write_file(dir, "a/main.py", "from model import Net\n");
    write_file(dir, "b/main.py", "from model import Net\n");
    PyWorkspace *ws = py_workspace_new(dir);
    py_workspace_refresh(ws);
    PyWorkspaceView *v = py_workspace_view(ws);
    cr_expect(py_workspace_is_module_class(v, module_at(v, dir, "a/main.py"), "Net"));
    cr_expect_not(py_workspace_is_module_class(v, module_at(v, dir, "b/main.py"), "Net"));
    py_workspace_view_release(v);
    py_workspace_free(ws);
}

Test(workspace, how_other_modules_use_a_function) {
    char *dir = temp_project();
    write_file(dir, "data.py", "from torch.utils.data import DataLoader\n"
                               "def make_loader(ds):\n"
                               "    return DataLoader(ds, batch_size=32)\n"
                               "def make_eval_loader(ds):\n"
                               "    return DataLoader(ds, batch_size=64)\n"
                               "def decode(model, idx):\n"
                               "    for _ in range(10):\n"
                               "        idx = model(idx)\n"
                               "    return idx\n");
    write_file(dir, "main.py", "import torch\n"
                               "from data import make_loader, make_eval_loader, decode\n"
                               "device = torch.device('cuda')\n"
                               "def train(model, loader, opt):\n"
                               "    for x, y in loader:\n"
                               "        x, y = x.to(device), y.to(device)\n"
                               "        loss = model(x).sum()\n"
                               "        loss.backward()\n"
                               "        opt.step()\n"
                               "def generate(model, prompt):\n"
                               "    model.eval()\n"
                               "    return decode(model, prompt)\n"
                               "def main(model, ds, opt):\n"
                               "    loader = make_loader(ds)\n"
                               "    train(model, loader, opt)\n"
                               "    for batch in make_eval_loader(ds):\n"
                               "        print(batch)\n"
                               "    generate(model, None)\n");
    PyWorkspace *ws = py_workspace_new(dir);
    py_workspace_refresh(ws);
    PyWorkspaceView *v = py_workspace_view(ws);
    const PyModuleFacts *data = module_at(v, dir, "data.py");
    const PyModuleFacts *where = NULL;
    unsigned line = 0;
    unsigned uses = py_workspace_uses_of(v, data, "make_loader", &where, &line);
    cr_expect(uses & PY_USE_GPU_BATCHES, "uses %u", uses);
    cr_expect_str_eq(py_module_name(where), "main");
    cr_expect_eq(line, 14);
    /* iterated, but its batches stay on the host */
    cr_expect_not(py_workspace_uses_of(v, data, "make_eval_loader", NULL, NULL) & PY_USE_GPU_BATCHES);
    uses = py_workspace_uses_of(v, data, "decode", &where, &line);
    cr_expect(uses & PY_USE_INFERENCE, "uses %u", uses);
    cr_expect_not(uses & (PY_USE_NO_GRAD | PY_USE_TRAINING), "uses %u", uses);
    cr_expect_eq(line, 12);
    py_workspace_view_release(v);
    py_workspace_free(ws);
}

Test(workspace, refresh_reads_only_what_changed_and_editor_text_wins) {
    char *dir = temp_project();
    write_file(dir, "model.py", "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n");
    write_file(dir, "other.py", "x = 1\n");
    write_file(dir, "main.py", "from model import Net\n");
    PyWorkspace *ws = py_workspace_new(dir);
    py_workspace_refresh(ws);
    PyWorkspaceView *v1 = py_workspace_view(ws);
    const PyModuleFacts *other1 = module_at(v1, dir, "other.py");
    cr_expect(py_workspace_is_module_class(v1, module_at(v1, dir, "main.py"), "Net"));

    /* model.py changes on disk (a different size): re-read; other.py is the same record */
    write_file(dir, "model.py", "class Net:\n    pass\n");
    py_workspace_refresh(ws);
    PyWorkspaceView *v2 = py_workspace_view(ws);
    cr_expect_eq(module_at(v2, dir, "other.py"), other1);
    cr_expect_not(py_workspace_is_module_class(v2, module_at(v2, dir, "main.py"), "Net"));
    /* the old view is still whole for whoever holds it */
    cr_expect(py_workspace_is_module_class(v1, module_at(v1, dir, "main.py"), "Net"));
    py_workspace_view_release(v1);

    /* an editor's unsaved buffer replaces the file's facts, and a refresh keeps it */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/model.py", dir);
    const char *buffer = "import torch\nclass Net(torch.nn.Module):\n    pass\n";
    Document *doc = document_new(path, LANGUAGE_PYTHON, buffer, strlen(buffer));
    PySource *src = py_source_new(doc);
    py_workspace_update(ws, src);
    py_workspace_refresh(ws);
    PyWorkspaceView *v3 = py_workspace_view(ws);
    cr_expect(py_workspace_is_module_class(v3, module_at(v3, dir, "main.py"), "Net"));
    py_workspace_view_release(v3);
    /* closed without saving: the disk's text again */
    py_workspace_forget_editor(ws, path);
    PyWorkspaceView *v4 = py_workspace_view(ws);
    cr_expect_not(py_workspace_is_module_class(v4, module_at(v4, dir, "main.py"), "Net"));
    py_workspace_view_release(v4);
    py_workspace_view_release(v2);
    py_source_free(src);
    document_free(doc);
    py_workspace_free(ws);
}

Test(workspace, roots) {
    char *dir = temp_project();
    write_file(dir, "pkg/sub/mod.py", "x = 1\n");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/pkg/sub/mod.py", dir);
    char *root = py_workspace_root_for(path);
    char *real = realpath(dir, NULL);
    cr_expect_str_eq(root, real);
    free(root);
    /* no marker: the folder above the outermost package */
    char *bare = temp_tree("advise-ws-bare");
    cr_assert_not_null(bare);
    write_file(bare, "proj/pkg/__init__.py", "");
    write_file(bare, "proj/pkg/mod.py", "x = 1\n");
    snprintf(path, sizeof path, "%s/proj/pkg/mod.py", bare);
    root = py_workspace_root_for(path);
    char expected[PATH_MAX];
    char *bare_real = realpath(bare, NULL);
    snprintf(expected, sizeof expected, "%s/proj", bare_real);
    cr_expect_str_eq(root, expected);
    free(root);
    free(real);
    free(bare_real);
}

/* Below a loose folder (no project marker: a scratch folder, /tmp), a
 * folder with its own `.git` is another project and is not indexed: a loose
 * file beside 30 clones indexed 5,683 modules, 45 s. Inside a project, a
 * submodule or vendored checkout is code the project imports, and is. */
Test(workspace, nested_repositories) {
    char *loose = temp_tree("advise-ws-loose");
    cr_assert_not_null(loose);
    write_file(loose, "script.py", "x = 1\n");
    write_file(loose, "clone/.git/HEAD", "ref: refs/heads/main\n");
    write_file(loose, "clone/lib.py", "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n");
    write_file(loose, "checkout/.git", "gitdir: /elsewhere\n"); /* a worktree's or submodule's .git is a file */
    write_file(loose, "checkout/lib.py", "y = 2\n");
    write_file(loose, "plain/lib.py", "z = 3\n");
    PyWorkspace *ws = py_workspace_new(loose);
    py_workspace_refresh(ws);
    PyWorkspaceView *v = py_workspace_view(ws);
    module_at(v, loose, "script.py");
    module_at(v, loose, "plain/lib.py");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/clone/lib.py", loose);
    cr_expect_null(py_workspace_module(v, path), "a clone beside a loose script was indexed");
    snprintf(path, sizeof path, "%s/checkout/lib.py", loose);
    cr_expect_null(py_workspace_module(v, path), "a checkout beside a loose script was indexed");
    py_workspace_view_release(v);
    py_workspace_free(ws);

    char *dir = temp_project();
    write_file(dir, "train.py", "from common.precision import setup\n");
    write_file(dir, "common/.git", "gitdir: ../.git/modules/common\n");
    write_file(dir, "common/precision.py", "def setup():\n    pass\n");
    ws = py_workspace_new(dir);
    py_workspace_refresh(ws);
    v = py_workspace_view(ws);
    module_at(v, dir, "common/precision.py");
    py_workspace_view_release(v);
    py_workspace_free(ws);
}

/* PY009's questions: which modules the program imports make a precision
 * choice, and where a model's float32 matmul work at scale is */
Test(workspace, precision_choices_and_matmul_at_scale) {
    char *dir = temp_project();
    write_file(dir, "layers.py", "import torch.nn as nn\n"
                                 "class Mixer(nn.Module):\n"
                                 "    def __init__(self):\n"
                                 "        super().__init__()\n"
                                 "        self.fc = nn.Linear(2048, 2048)\n"
                                 "class Scaled(nn.Module):\n"
                                 "    def __init__(self, width=4096):\n"
                                 "        super().__init__()\n"
                                 "        self.fc = nn.Linear(width, width)\n"
                                 "class Small(nn.Module):\n"
                                 "    def __init__(self):\n"
                                 "        super().__init__()\n"
                                 "        self.fc = nn.Linear(64, 10)\n");
    write_file(dir, "net.py", "import torch.nn as nn\n"
                              "from layers import Mixer, Scaled, Small\n"
                              "class Net(nn.Module):\n"
                              "    def __init__(self):\n"
                              "        super().__init__()\n"
                              "        self.a = Scaled()\n"
                              "        self.b = Mixer()\n"
                              "class Deeper(Net):\n"
                              "    pass\n"
                              "class Tiny(nn.Module):\n"
                              "    def __init__(self):\n"
                              "        super().__init__()\n"
                              "        self.s = Small()\n"
                              "def build():\n"
                              "    return Deeper()\n"
                              "def build_head():\n"
                              "    return nn.Sequential(nn.Linear(1024, 8192))\n"
                              "shared = Tiny()\n"
                              "def pick(name):\n"
                              "    if name == 'big':\n"
                              "        return Net()\n"
                              "    return Tiny()\n"
                              "def pick_big(name):\n"
                              "    if name == 'a':\n"
                              "        return Net()\n"
                              "    return Deeper()\n");
    write_file(dir, "tools/__init__.py", "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n");
    write_file(dir, "tools/io.py", "def save(x):\n    return x\n");
    write_file(dir, "setup_run.py", "import tools.io\n");
    write_file(dir, "amp.py", "import torch\nctx = torch.autocast('cuda', dtype=torch.bfloat16)\n");
    write_file(dir, "cycle_a.py", "import cycle_b\n");
    write_file(dir, "cycle_b.py", "from cycle_a import *\nfrom amp import ctx\n");
    write_file(dir, "plain.py", "import net\nimport cycle_c\n");
    write_file(dir, "cycle_c.py", "import plain\n");
    PyWorkspace *ws = py_workspace_new(dir);
    py_workspace_refresh(ws);
    PyWorkspaceView *v = py_workspace_view(ws);
    const PyModuleFacts *net = module_at(v, dir, "net.py"), *layers = module_at(v, dir, "layers.py");
    cr_expect_eq(layers->matmul_at_scale_line, 5);
    cr_expect_eq(layers->classes[0].matmul_at_scale_line, 5);
    cr_expect_not(layers->classes[0].matmul_at_scale_from_parameters);
    cr_expect_eq(layers->classes[1].matmul_at_scale_line, 9);
    cr_expect(layers->classes[1].matmul_at_scale_from_parameters);
    cr_expect_eq(layers->classes[2].matmul_at_scale_line, 0);
    cr_expect_eq(net->functions[1].matmul_at_scale_line, 17); /* build_head's own layer */
    cr_expect_eq(layers->precision_choice_line, 0);

    const PyModuleFacts *where;
    unsigned line;
    bool from_parameters;
    /* through a base and its parts; a site whose sizes are literals wins over one from a default */
    cr_expect(py_workspace_matmul_at_scale(v, net, "build", &where, &line, &from_parameters));
    cr_expect_eq(where, layers);
    cr_expect_eq(line, 5);
    cr_expect_not(from_parameters);
    cr_expect(py_workspace_matmul_at_scale(v, net, "Scaled", &where, &line, &from_parameters));
    cr_expect_eq(line, 9);
    cr_expect(from_parameters);
    cr_expect(py_workspace_matmul_at_scale(v, net, "build_head", &where, &line, NULL));
    cr_expect_eq(where, net);
    cr_expect_not(py_workspace_matmul_at_scale(v, net, "Tiny", NULL, NULL, NULL));
    cr_expect_not(py_workspace_matmul_at_scale(v, net, "shared", NULL, NULL, NULL));
    cr_expect_not(py_workspace_matmul_at_scale(v, net, "nn.Linear", NULL, NULL, NULL));
    /* a builder returning one of several models: all of them, or it says nothing */
    cr_expect_not(py_workspace_matmul_at_scale(v, net, "pick", NULL, NULL, NULL));
    cr_expect(py_workspace_matmul_at_scale(v, net, "pick_big", &where, &line, &from_parameters));
    cr_expect_eq(line, 5);

    /* `import tools.io` runs tools/__init__.py first, which sets TF32 */
    cr_expect(py_workspace_imports_precision_choice(v, module_at(v, dir, "setup_run.py"), &where, &line));
    cr_expect_str_eq(py_module_name(where), "tools");
    cr_expect_eq(line, 2);
    /* through an import cycle; the module asked about is not counted itself */
    cr_expect(py_workspace_imports_precision_choice(v, module_at(v, dir, "cycle_a.py"), NULL, NULL));
    cr_expect_not(py_workspace_imports_precision_choice(v, module_at(v, dir, "amp.py"), NULL, NULL));
    cr_expect_not(py_workspace_imports_precision_choice(v, module_at(v, dir, "plain.py"), &where, &line));
    cr_expect_null(where);
    cr_expect_eq(line, 0);
    py_workspace_view_release(v);
    py_workspace_free(ws);
}

/* A module whose functions call themselves several times (tiny-cuda-nn's
 * scripts/gen_sh.py, spherical harmonics with sympy): summarising it asked
 * "is this a tensor?" of each argument of each call, and each parameter
 * asked every call of its function again, to a depth of 20: the summary of
 * an 86-line file took hours, and `advise check` of any file in the project
 * with it. python_facts.c now asks no parameter again inside its own
 * question and gives one question a budget of work; the summary still says
 * what returns a tensor. The timeout is a hang's, not a speed limit: the
 * summary takes milliseconds. */
Test(workspace, recursive_functions_summarised_in_bounded_work, .timeout = 120) {
    static const char text[] =
        "import torch\n"
        "\n"
        "def P(l, m):\n"
        "    if l == 0 and m == 0:\n"
        "        return 1\n"
        "    if l == m:\n"
        "        return (1 - 2 * m) * P(m - 1, m - 1)\n"
        "    if l == m + 1:\n"
        "        return (2 * m + 1) * P(m, m)\n"
        "    return ((2 * l - 1) * P(l - 1, m) - (l + m - 1) * P(l - 2, m)) / (l - m)\n"
        "\n"
        "def Y(l, m):\n"
        "    if m > 0:\n"
        "        return K(l, m) * C[m] * P(l, m)\n"
        "    if m < 0:\n"
        "        return K(l, m) * S[-m] * P(l, -m)\n"
        "    return K(l, m) * P(l, m)\n"
        "\n"
        "def K(l, m):\n"
        "    return (2 * l + 1) * P(l - abs(m), m) / P(l + abs(m), m)\n"
        "\n"
        "def ones():\n"
        "    return torch.ones(3, device='cuda')\n"
        "\n"
        "for l in range(8):\n"
        "    for m in range(-l, l + 1):\n"
        "        o = Y(l, m)\n"
        "        o = o.subs(P(l, m), K(l, m))\n";
    Document *doc = document_new("/p/gen_sh.py", LANGUAGE_PYTHON, text, strlen(text));
    PySource *src = py_source_new(doc);
    cr_assert_not_null(src);
    PyModuleFacts *facts = py_module_facts_extract(src, "/p/gen_sh.py", "gen_sh", false);
    cr_assert_not_null(facts);
    bool ones_is_tensor = false;
    for (size_t i = 0; i < facts->function_count; i++)
        if (strcmp(facts->functions[i].name, "ones") == 0) ones_is_tensor = facts->functions[i].kinds & PY_VALUE_TENSOR;
    cr_expect(ones_is_tensor, "ones() returns a tensor");
    py_module_facts_unref(facts);
    py_source_free(src);
    document_free(doc);
}
