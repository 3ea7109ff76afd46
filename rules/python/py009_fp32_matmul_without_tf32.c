/* PY009 fp32-matmul-without-tf32: a CUDA program whose float32 matmuls run
 * without TF32, autocast or a half-precision cast. File-level: one finding at
 * the first matmul-type site of an entry-point file, or at the construction
 * of a model whose matmul work is in another module of the project; silent
 * when any module of the program makes a precision choice. The analyses
 * live in analysis/python/python_precision.c (this file) and the workspace index
 * (other modules). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rule.h"
#include "analysis/base/growable.h"
#include "analysis/python/python_index.h"
#include "analysis/python/python_precision.h"
#include "analysis/python/python_workspace.h"
#include "analysis/base/text_format.h"
#include "rules/python/support/test_code.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a CUDA program that does float32 matrix multiplications at scale while enabling neither\n"
    "TF32 (`torch.backends.cuda.matmul.allow_tf32 = True`, `torch.set_float32_matmul_precision(...)`)\n"
    "nor autocast (`torch.autocast`, `torch.cuda.amp.autocast`, `torch.amp.autocast`), and without\n"
    "casting the model or data to half or bfloat16. Matmul work at scale is what the code shows to be\n"
    "big: an `nn.Linear` with a million weights (its sizes are literals, names bound to them,\n"
    "arithmetic of those, or what the file passes for a parameter), or one whose output is a\n"
    "vocabulary (`nn.Linear(1024, vocab_size)`); `nn.MultiheadAttention` and `nn.Transformer*` unless\n"
    "their width is shown below 256; a transformer-style torchvision model (`vit_*`, `swin_*`,\n"
    "`maxvit_*`, `convnext_*`); a `transformers` `from_pretrained` model; and `a @ b`,\n"
    "`torch.matmul`, `mm`, `bmm`, `einsum`, ... on a dense tensor this code builds with a million\n"
    "elements in its last two dimensions (`torch.randn(4096, 4096, device=\"cuda\")`). The program must\n"
    "put a model or tensors on a CUDA device (`.cuda()`, `.to(device)`, `device=`, `DDP(model)`,\n"
    "`fabric.setup(model)`) and run a model there (a model call, `backward()`), or do such a matmul.\n"
    "The rule reports once per file, at the first such site, with severity hint.\n"
    "\n"
    "Not evidence: layers and matmuls whose sizes the code does not show, small ones (an MNIST-sized\n"
    "MLP: its matmuls are launch-bound, TF32 changes nothing measurable), sparse products\n"
    "(`torch.sparse.mm`, operands named sparse/coo/csr: cuSPARSE, not the tensor cores), and models\n"
    "that never leave the CPU.\n"
    "\n"
    "Only entry points are reported, because the setting often lives in another file of the\n"
    "program: files with `if __name__ == \"__main__\":`, or that do GPU work at module level (a\n"
    "top-level loop, model call, backward or matmul, or a top-level call of a function of the file\n"
    "that does GPU work). A model file imported by a training script is not reported.\n"
    "\n"
    "Across files (when the file is checked in its project, as `advise check` and the editor do):\n"
    "the program is the entry point and the project modules it imports, directly or through each\n"
    "other (and the packages above them). A precision choice in any of them silences the rule\n"
    "(`utils.setup_precision()`, a config module calling `set_float32_matmul_precision`, a model file\n"
    "casting to bf16 or running its forward under autocast). An entry point with no matmul site of\n"
    "its own is reported when it builds a model whose class or builder function another module of\n"
    "the project defines with matmul work at scale (in its own layers, the project layers it builds,\n"
    "its base classes, or what the builder returns), puts that model on the GPU (`.cuda()`,\n"
    "`.to(device)` on it, or a name the code does not show staying on the CPU) and runs a model. The\n"
    "finding sits at the model's construction and names the module and line of the matmul work.\n"
    "Sizes the model file takes from parameters (`def __init__(self, width=4096)`) count only when\n"
    "the entry point passes no arguments to the construction: its own could make the layers small.\n"
    "A model file imported only by tests or by scripts that stay on the CPU is not reported.\n"
    "\n"
    "## Why is this slow?\n"
    "On Ampere and newer GPUs, float32 matmuls run on the tensor cores only in TF32 mode, which\n"
    "PyTorch leaves off for matmuls by default. Without it (or autocast to bf16/fp16), every\n"
    "`Linear` layer and attention product runs on the much slower FP32 CUDA cores: TF32 is\n"
    "typically several times faster for matmul-heavy models, with a 10-bit mantissa that training\n"
    "tolerates well. A product with a dimension that is not a multiple of 4 (an odd vocabulary size\n"
    "such as GPT-2's 50,257) gains less, 2.0-2.5x on an H200 against 4-6x for its aligned\n"
    "neighbours: pad that dimension to a multiple of 64 as well.\n"
    "\n"
    "Convolutions alone are not flagged: cuDNN convolutions already use TF32 by default\n"
    "(`torch.backends.cudnn.allow_tf32` defaults to True), and ResNet-style torchvision models are\n"
    "not counted as matmul work for that reason.\n"
    "\n"
    "Not flagged: programs that set `torch.backends.cuda.matmul.allow_tf32` or any\n"
    "`fp32_precision` knob to any value, call `set_float32_matmul_precision` with any argument\n"
    "(\"highest\" is a deliberate choice), or turn cuDNN TF32 off with\n"
    "`torch.backends.cudnn.allow_tf32 = False` (also a deliberate precision choice, which a matmul\n"
    "switch would not undo for convolutions anyway). Setting only `cudnn.allow_tf32 = True` does not\n"
    "count: it is the default and leaves matmuls in full FP32. Also not flagged: programs that\n"
    "use autocast or a `GradScaler`, mention half, bfloat16 or float64 dtypes (`.half()`,\n"
    "`.bfloat16()`, `.double()`, `torch.float16`, `torch.bfloat16`, `torch.float64`, strings such\n"
    "as \"bf16\"), pass `torch_dtype=` or a reduced `precision=`/`mixed_precision=` to a framework,\n"
    "or import a project module that does any of these; files that are not entry points, files\n"
    "that never mention CUDA or a device, and test files (`test_*.py`, `*_test.py`, `conftest.py`:\n"
    "a test compares results at default tolerances, which TF32 can break). A device read off a\n"
    "tensor the code already has (`torch.arange(n, device=x.device)`, `self.device` in a model,\n"
    "`device = next(model.parameters()).device`) is not evidence that the program uses the GPU:\n"
    "such device-agnostic model code runs on the CPU as well.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "import torch\n"
    "import torch.nn as nn\n"
    "\n"
    "model = nn.Sequential(nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 4096)).cuda()\n"
    "\n"
    "if __name__ == \"__main__\":\n"
    "    train(model)\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "import torch\n"
    "import torch.nn as nn\n"
    "torch.set_float32_matmul_precision(\"high\")  # TF32 tensor cores for float32 matmuls\n"
    "\n"
    "model = nn.Sequential(nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 4096)).cuda()\n"
    "```\n"
    "or run the forward pass under `torch.autocast(\"cuda\", dtype=torch.bfloat16)`.\n"
    "\n"
    "## Fix safety\n"
    "The fix inserts `torch.set_float32_matmul_precision(\"high\")` (the documented switch, equivalent\n"
    "to `torch.backends.cuda.matmul.allow_tf32 = True`) on a new line after the last top-level import,\n"
    "and only when the file has a top-level `import torch` before any GPU work. It is unsafe: TF32\n"
    "rounds matmul inputs to a 10-bit mantissa, which changes results and can hurt code that needs\n"
    "full float32 accuracy (solvers, scientific computing, some evaluation metrics).\n";

typedef struct {
    const PySource *src;
    bool suppressed; /* the program made a precision choice: TF32, autocast, casts, fp64 */
    TSNode site;     /* the first matmul-type site at scale */
    bool have_site;
    int budget;      /* tensor checks left */
    bool on_gpu;     /* the program puts a model or tensors on a CUDA device */
    bool runs_model; /* and runs work there: a model call, backward(), a matmul on a big tensor */
} Scan;

/* bounds on the statements an entry-point check looks at */
#define STATEMENT_BUDGET 128
/* calls whose callee the workspace is asked about, looking for a model of another module */
#define REMOTE_CALL_BUDGET 1024

/* A device that may be CUDA and is the program's choice: not one read off a
 * tensor it already has (`device=x.device` in a model's forward follows its
 * input, and a model that never leaves the CPU runs such code too). */
static bool placed_on_cuda(const PySource *src, TSNode dev) {
    return !ts_node_is_null(dev) && py_is_cuda_device(src, dev) && !py_device_follows_tensor(src, dev);
}

/* The program runs on the GPU: it moves a model or tensors to a CUDA device
 * (`.cuda()`, `.to(device)`, `device="cuda"`, `fabric.setup(model)`,
 * `DDP(model)`), and it runs a model there (a model call, `backward()`). */
static void note_gpu_work(Scan *s, TSNode call) {
    const PySource *src = s->src;
    TSNode recv;
    if (!s->on_gpu) {
        TSNode dev = py_call_keyword(src, call, "device");
        if (py_method_call(src, call, "cuda", &recv) || placed_on_cuda(src, dev))
            s->on_gpu = true;
        else if (py_method_call(src, call, "to", &recv)) {
            TSNode target = py_call_positional(call, 0);
            s->on_gpu = placed_on_cuda(src, ts_node_is_null(target) ? dev : target);
        } else {
            char q[PY_NAME_MAX];
            static const char *const wrappers[] = {"torch.nn.parallel.DistributedDataParallel",
                                                   "torch.nn.DataParallel", NULL};
            TSNode method = py_method_name_node(call);
            s->on_gpu = py_callee_is_any(src, call, wrappers) ||
                        (!ts_node_is_null(method) && (py_text_eq(src, method, "setup") ||
                                                      py_text_eq(src, method, "prepare"))) ||
                        (py_callee_name(src, call, q, sizeof q) && strstr(q, "DistributedDataParallel"));
        }
    }
    if (!s->runs_model) {
        if (py_method_call(src, call, "backward", &recv)) s->runs_model = true;
        else if (s->budget > 0) {
            TSNode fn = ts_node_child_by_field_name(call, "function", 8);
            --s->budget;
            s->runs_model = py_is(fn, "identifier") && py_is_module_instance(src, fn);
        }
    }
}

static bool visit_scan(TSNode n, void *data) {
    Scan *s = data;
    const PySource *src = s->src;
    if (s->suppressed) return false;
    if (py_node_makes_precision_choice(src, n)) {
        s->suppressed = true;
        return false;
    }
    if (py_is(n, "string")) return false; /* judged whole */
    if (py_is(n, "call")) note_gpu_work(s, n);
    if ((py_is(n, "call") || py_is(n, "binary_operator")) && !s->have_site &&
        py_is_matmul_at_scale(src, n, &s->budget, NULL)) {
        s->site = n;
        s->have_site = true;
    }
    return true;
}

/* ---- is this file an entry point? -------------------------------------- */

/* the module's statements, gathered once with a cursor (indexing children one
 * by one walks the sibling list each time) */
typedef struct {
    TSNode *items;
    size_t count;
} TopLevel;

static bool top_level_collect(TSNode root, TopLevel *top) {
    size_t cap = 0;
    top->items = NULL;
    top->count = 0;
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    bool ok = true;
    if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
            TSNode c = ts_tree_cursor_current_node(&cursor);
            if (!ts_node_is_named(c)) continue;
            if (!array_reserve(&top->items, top->count, &cap, sizeof *top->items, 32)) {
                ok = false;
                break;
            }
            top->items[top->count++] = c;
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
    return ok;
}

static bool is_main_guard(const PySource *src, TSNode stmt) {
    if (!py_is(stmt, "if_statement")) return false;
    TSNode cond = ts_node_child_by_field_name(stmt, "condition", 9);
    if (!py_is(cond, "comparison_operator") || ts_node_named_child_count(cond) != 2) return false;
    TSNode a = ts_node_named_child(cond, 0), b = ts_node_named_child(cond, 1);
    bool main_a = py_text_eq(src, a, "\"__main__\"") || py_text_eq(src, a, "'__main__'");
    bool main_b = py_text_eq(src, b, "\"__main__\"") || py_text_eq(src, b, "'__main__'");
    return (py_text_eq(src, a, "__name__") && main_b) || (py_text_eq(src, b, "__name__") && main_a);
}

/* identifiers assigned by module-level code: only these can hold a model there */
typedef struct {
    TSNode *items;
    size_t count, cap;
    bool failed;
} NameSet;

static bool visit_assigned(TSNode n, void *data) {
    NameSet *set = data;
    if (set->failed || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda"))
        return false;
    if (!py_is(n, "assignment")) return true;
    TSNode left = ts_node_child_by_field_name(n, "left", 4);
    if (!py_is(left, "identifier")) return true;
    if (!array_reserve(&set->items, set->count, &set->cap, sizeof *set->items, 32)) {
        set->failed = true;
        return false;
    }
    set->items[set->count++] = left;
    return true;
}

static bool name_assigned(const PySource *src, const NameSet *set, TSNode id) {
    for (size_t i = 0; i < set->count; i++)
        if (py_same_text_present(src, set->items[i], id)) return true;
    return false;
}

typedef struct {
    const PySource *src;
    const NameSet *assigned;
    int *budget; /* tensor and model checks left, shared by all statements */
    bool found;
} ComputeSearch;

/* a model call, backward(), optimizer.step() or a matmul, outside nested definitions */
static bool visit_compute(TSNode n, void *data) {
    ComputeSearch *s = data;
    if (s->found || *s->budget <= 0) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (!py_is(n, "call")) {
        if (py_is_matmul_at_scale(s->src, n, s->budget, NULL)) s->found = true;
        return !s->found;
    }
    TSNode recv;
    TSNode fn = ts_node_child_by_field_name(n, "function", 8);
    if (py_method_call(s->src, n, "backward", &recv)) {
        s->found = true;
    } else if (py_is_matmul_function_call(s->src, n)) {
        s->found = true;
    } else if (py_method_call(s->src, n, "step", &recv)) {
        --*s->budget;
        s->found = py_is_optimizer(s->src, recv);
    } else if (py_is(fn, "identifier") && name_assigned(s->src, s->assigned, fn)) {
        --*s->budget;
        s->found = py_is_module_instance(s->src, fn);
    }
    return !s->found;
}

static bool does_compute(const PySource *src, const NameSet *assigned, int *budget, TSNode node) {
    ComputeSearch s = {src, assigned, budget, false};
    py_walk(node, visit_compute, &s);
    return s.found;
}

static TSNode unwrap_definition(TSNode n) {
    if (py_is(n, "decorated_definition")) return ts_node_child_by_field_name(n, "definition", 10);
    return n;
}

static bool is_import(TSNode n) {
    return py_is(n, "import_statement") || py_is(n, "import_from_statement") || py_is(n, "future_import_statement");
}

/* a top-level function of this file, by name, that does GPU work */
static bool calls_local_gpu_function(const PySource *src, const TopLevel *top, TSNode stmt) {
    if (!py_is(stmt, "expression_statement")) return false;
    TSNode call = ts_node_named_child(stmt, 0);
    if (!py_is(call, "call")) return false;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (!py_is(fn, "identifier")) return false;
    for (size_t i = 0; i < top->count; i++) {
        TSNode def = unwrap_definition(top->items[i]);
        if (!py_is(def, "function_definition")) continue;
        TSNode name = ts_node_child_by_field_name(def, "name", 4);
        if (ts_node_is_null(name) || !py_same_text_present(src, name, fn)) continue;
        TSNode body = ts_node_child_by_field_name(def, "body", 4);
        return !ts_node_is_null(body) && py_does_gpu_work(src, body);
    }
    return false;
}

static bool is_entry_point(const PySource *src, const TopLevel *top) {
    for (size_t i = 0; i < top->count; i++)
        if (is_main_guard(src, top->items[i])) return true;
    /* GPU work at module level; each check follows bindings, so look at a bounded number of statements */
    NameSet assigned = {0};
    for (size_t i = 0; i < top->count && !assigned.failed; i++) py_walk(top->items[i], visit_assigned, &assigned);
    int checks = PY_MATMUL_CHECK_BUDGET;
    bool entry = false;
    int budget = STATEMENT_BUDGET;
    for (size_t i = 0; i < top->count && budget > 0; i++) {
        TSNode stmt = top->items[i];
        TSNode def = unwrap_definition(stmt);
        if (py_is(def, "function_definition") || py_is(def, "class_definition") || is_import(stmt) ||
            py_is(stmt, "comment"))
            continue;
        budget--;
        if (py_is(stmt, "for_statement") || py_is(stmt, "while_statement") || py_is(stmt, "with_statement"))
            entry = py_does_gpu_work(src, stmt);
        else /* all of these are GPU work in a CUDA file */
            entry = does_compute(src, &assigned, &checks, stmt) || calls_local_gpu_function(src, top, stmt);
        if (entry) break;
    }
    free(assigned.items);
    return entry && !assigned.failed;
}

/* ---- the fix ------------------------------------------------------------ */

/* `import torch` (or `import torch.x`) as a statement of the module itself */
static bool imports_torch(const PySource *src, TSNode stmt) {
    if (!py_is(stmt, "import_statement")) return false;
    uint32_t n = ts_node_named_child_count(stmt);
    for (uint32_t i = 0; i < n; i++) {
        TSNode c = ts_node_named_child(stmt, i);
        if (!py_is(c, "dotted_name") || ts_node_named_child_count(c) == 0) continue;
        if (py_text_eq(src, ts_node_named_child(c, 0), "torch")) return true;
    }
    return false;
}

static void add_fix(RuleContext *ctx, Finding *f, const TopLevel *top) {
    const PySource *src = ctx->py;
    const char *resolved = py_resolve_import(src, "torch", 5);
    if (!resolved || strcmp(resolved, "torch") != 0) return;
    TSNode last = {0};
    bool torch_seen = false;
    for (size_t i = 0; i < top->count; i++) {
        TSNode stmt = top->items[i];
        if (!is_import(stmt)) continue;
        last = stmt;
        if (imports_torch(src, stmt)) torch_seen = true;
    }
    if (ts_node_is_null(last) || !torch_seen || ts_node_has_error(last)) return;
    /* the rest of the import's line must be blank or a comment */
    const char *text = src->doc->text;
    size_t len = src->doc->length, at = ts_node_end_byte(last);
    while (at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r')) at++;
    if (at < len && text[at] == '#')
        while (at < len && text[at] != '\n') at++;
    if (at < len && text[at] != '\n') return;
    /* nothing before the insertion point may do GPU work or start the program */
    int budget = STATEMENT_BUDGET;
    for (size_t i = 0; i < top->count; i++) {
        TSNode stmt = top->items[i];
        if (ts_node_start_byte(stmt) >= at) break;
        if (is_import(stmt) || py_is(stmt, "comment")) continue;
        if (--budget < 0) return;
        if (is_main_guard(src, stmt) || py_does_gpu_work(src, stmt)) return;
        if (ts_node_start_byte(stmt) <= f->range.start && f->range.start < ts_node_end_byte(stmt)) return;
    }
    static const char line[] = "torch.set_float32_matmul_precision(\"high\")";
    char *insert = at < len ? format_string("%s\n", line) : format_string("\n%s\n", line);
    size_t offset = at < len ? at + 1 : len;
    if (!insert) return;
    Fix *fix = finding_add_fix(f, "Enable TF32 matmuls with torch.set_float32_matmul_precision(\"high\")", false);
    if (fix) fix_add_edit(fix, offset, offset, insert);
    free(insert);
}

/* ---- a model whose matmul work is in another module ----------------------- */

/* The callee as the file spells it (`GPT`, `models.vit.build`), when it is a
 * plain dotted name. */
static bool spelled_callee(const PySource *src, TSNode call, char *buf, size_t size) {
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (!py_is(fn, "identifier") && !py_is(fn, "attribute")) return false;
    size_t len = py_text_len(fn);
    if (len == 0 || len >= size) return false;
    const char *text = py_text_ptr(src, fn);
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)text[i]) && text[i] != '_' && text[i] != '.') return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    return strncmp(buf, "self.", 5) != 0;
}

typedef struct {
    const PySource *src;
    TSNode id;
    size_t after;
    TSNode use;
} UseSearch;

static bool visit_use(TSNode n, void *data) {
    UseSearch *s = data;
    if (!ts_node_is_null(s->use)) return false;
    if (ts_node_end_byte(n) <= s->after) return true;
    if (py_is(n, "identifier") && ts_node_start_byte(n) >= s->after && py_same_text(s->src, n, s->id)) {
        s->use = n;
        return false;
    }
    return true;
}

/* The model that `call` builds goes to a CUDA device: the construction is
 * moved there (`Net().to(device)`, `Net().cuda()`), or it is bound to a name
 * that the code does not show staying on the host (py_module_stays_on_host,
 * asked at the name's next use). Built with a device= that is not CUDA: no. */
static bool model_goes_to_gpu(const PySource *src, TSNode call) {
    TSNode built_on = py_call_keyword(src, call, "device");
    if (!ts_node_is_null(built_on) && !py_is_cuda_device(src, built_on)) return false;
    TSNode n = call;
    for (int depth = 0; depth < 8; depth++) {
        TSNode attr = ts_node_parent(n), outer = ts_node_parent(attr);
        if (!py_is(attr, "attribute") || !ts_node_eq(ts_node_child_by_field_name(attr, "object", 6), n) ||
            !py_is(outer, "call"))
            break;
        TSNode recv;
        if (py_method_call(src, outer, "cuda", &recv)) return true;
        if (py_method_call(src, outer, "to", &recv)) {
            TSNode dev = py_call_positional(outer, 0);
            if (ts_node_is_null(dev)) dev = py_call_keyword(src, outer, "device");
            if (!ts_node_is_null(dev) && py_is_cuda_device(src, dev)) return true;
        }
        n = outer;
    }
    TSNode assignment = ts_node_parent(n);
    if (!py_is(assignment, "assignment") || !ts_node_eq(ts_node_child_by_field_name(assignment, "right", 5), n))
        return false;
    TSNode name = ts_node_child_by_field_name(assignment, "left", 4);
    if (!py_is(name, "identifier")) return false;
    TSNode scope = py_scope_of(src, assignment);
    if (ts_node_is_null(scope)) scope = ts_tree_root_node(src->tree);
    UseSearch s = {.src = src, .id = name, .after = ts_node_end_byte(assignment)};
    py_walk(scope, visit_use, &s);
    return !ts_node_is_null(s.use) && !py_module_stays_on_host(src, s.use);
}

typedef struct {
    const PySource *src;
    TSNode call;                 /* the model's construction */
    const PyModuleFacts *module; /* where its matmul work at scale is */
    unsigned line;
    int budget;                  /* workspace questions left */
} RemoteModel;

static bool visit_remote_model(TSNode n, void *data) {
    RemoteModel *r = data;
    const PySource *src = r->src;
    if (!ts_node_is_null(r->call) || r->budget <= 0) return false;
    if (!py_is(n, "call")) return true;
    char spelled[PY_NAME_MAX], q[PY_NAME_MAX];
    if (!spelled_callee(src, n, spelled, sizeof spelled)) return true;
    if (py_callee_name(src, n, q, sizeof q) && (strncmp(q, "torch.", 6) == 0 || strcmp(q, "torch") == 0))
        return true;
    r->budget--;
    if (!(py_workspace_call_kinds(src->workspace, src->module, spelled) & PY_VALUE_MODULE)) return true;
    const PyModuleFacts *where;
    unsigned line;
    bool from_parameters;
    if (!py_workspace_matmul_at_scale(src->workspace, src->module, spelled, &where, &line, &from_parameters) ||
        where == src->module)
        return true;
    /* sizes taken from parameters say nothing when this call passes its own */
    if (from_parameters && ts_node_named_child_count(py_call_arguments(n)) > 0) return true;
    if (!model_goes_to_gpu(src, n)) return true;
    r->call = n;
    r->module = where;
    r->line = line;
    return false;
}

/* `model.py` when the module lies in the checked file's folder or below,
 * else its dotted name */
static void module_display(const PySource *src, const PyModuleFacts *m, char *buf, size_t size) {
    const char *path = py_module_path(m), *doc = src->doc->path ? src->doc->path : "";
    char *abs = realpath(doc, NULL);
    const char *here = abs ? abs : doc;
    const char *slash = strrchr(here, '/');
    size_t dir = slash ? (size_t)(slash - here) + 1 : 0;
    if (dir && strncmp(path, here, dir) == 0) snprintf(buf, size, "%s", path + dir);
    else snprintf(buf, size, "module %s", py_module_name(m));
    free(abs);
}

static void check(RuleContext *ctx) {
    const PySource *src = ctx->py;
    /* a test compares results at default tolerances, which TF32 can break */
    if (!src->uses_gpu || py_is_test_path(ctx->doc->path)) return;
    TSNode root = ts_tree_root_node(src->tree);
    Scan s = {.src = src, .budget = PY_MATMUL_CHECK_BUDGET};
    py_walk(root, visit_scan, &s);
    if (s.suppressed || !s.on_gpu) return;
    /* a matmul on a big tensor is GPU work of its own; a layer needs a model run on the GPU */
    bool local = s.have_site && (s.runs_model || py_matmul_site_is_tensor_work(src, s.site));
    bool workspace = src->workspace && src->module;
    RemoteModel remote = {.src = src, .budget = REMOTE_CALL_BUDGET};
    if (!local && (!workspace || !s.runs_model)) return;
    TopLevel top;
    if (!top_level_collect(root, &top) || !is_entry_point(src, &top)) {
        free(top.items);
        return;
    }
    if (!local) py_walk(root, visit_remote_model, &remote);
    /* the program's other modules may make the choice (`utils.setup_precision()`, a config module) */
    if ((local || !ts_node_is_null(remote.call)) &&
        !(workspace && py_workspace_imports_precision_choice(src->workspace, src->module, NULL, NULL))) {
        Finding *f = NULL;
        if (local) {
            f = rule_report_node(ctx, s.site,
                                 "float32 matmuls in this program run without TF32 or autocast, so they miss "
                                 "the tensor cores and run several times slower on Ampere and newer GPUs");
        } else {
            char where[512];
            module_display(src, remote.module, where, sizeof where);
            f = rule_report_node(ctx, remote.call,
                                 "this model does float32 matmul work at scale (%s, line %u) without TF32 or "
                                 "autocast anywhere in the program, so its matmuls miss the tensor cores and run "
                                 "several times slower on Ampere and newer GPUs",
                                 where, remote.line);
        }
        if (f) add_fix(ctx, f, &top);
    }
    free(top.items);
}

const Rule rule_py009_fp32_matmul_without_tf32 = {
    .code = "PY009", .name = "fp32-matmul-without-tf32", .severity = SEVERITY_HINT,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_FP32_GEMM,
    .whole_file = true, /* one finding per program */
    .summary = "float32 matmuls without TF32, autocast or a half-precision cast",
    .documentation = documentation};
