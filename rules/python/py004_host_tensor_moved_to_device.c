#define _GNU_SOURCE /* memmem */
/* PY004 host-tensor-moved-to-device: a tensor built by a torch factory in host
 * memory and moved to the GPU right away, `torch.zeros(n).cuda()`, instead of
 * being created there with `device=`. */
#include <stdlib.h>
#include <string.h>

#include "rules/rule.h"
#include "analysis/python/python_expr.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_workspace.h"
#include "analysis/base/text_format.h"
#include "rules/python/support/test_code.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a tensor that a torch factory creates in host memory and that is moved to the GPU\n"
    "straight away: `torch.zeros(...).cuda()`, `torch.arange(n).to(device)`,\n"
    "`torch.randn(...).to(\"cuda\")`, `torch.eye(3).cuda(1)`, `.to(device=dev)`.\n"
    "\n"
    "Factories: `zeros`, `ones`, `empty`, `empty_strided`, `full`, `arange`, `linspace`, `logspace`,\n"
    "`eye`, `scalar_tensor`, `tril_indices`, `triu_indices`, the window functions (`hann_window`, ...),\n"
    "and the random ones: `rand`, `randn`, `randint`, `randperm`, `normal` (with a size).\n"
    "\n"
    "A device is any common idiom for the GPU when there is one (`\"cuda\" if ... else \"cpu\"`,\n"
    "`f\"cuda:{rank}\"`, `torch.device(\"cuda\", local_rank)`, `torch.cuda.current_device()`,\n"
    "`torch.accelerator.current_accelerator()`, `fabric.device`, `args.device`), also a name that an\n"
    "if/else binds to the accelerator in one arm and to the CPU in the other.\n"
    "\n"
    "Not flagged: a move to the host or to a device the code shows is not CUDA (`.to(\"cpu\")`,\n"
    "`dev = \"cpu\"; .to(dev)`, a name that every arm binds to the CPU), `.to(torch.float16)`, `.to(other_tensor)` and `.to(dtype=...)`\n"
    "alone; factories that already pass `device=` (even `device=\"cpu\"`), `out=`, `pin_memory=`\n"
    "(a pinned staging buffer is deliberate), `generator=` (a host generator cannot draw on the GPU)\n"
    "or `**kwargs` (they may carry `device=`); a tensor with no elements (`torch.empty(0).to(device)`, an\n"
    "accumulator to concatenate onto: nothing to fill or copy); moves with `*args`/`**kwargs`; `*_like`\n"
    "factories (they follow their input's device); a move after some other\n"
    "method (`torch.arange(n).float().cuda()`); and `torch.tensor(data)`, `torch.as_tensor(data)`,\n"
    "`torch.from_numpy(array)`: their data lives in host memory, and `torch.tensor(data,\n"
    "device=\"cuda\")` still builds the tensor on the host and copies it, so `device=` saves nothing.\n"
    "Nor in test code (files named `test_*.py`, `*_test.py`, `conftest.py`, and `def test_*`\n"
    "functions): a test's inputs are made once, small, and often on the host on purpose (the same\n"
    "random numbers whichever device runs the test); nor inside `torch.jit.trace(...)`, where the\n"
    "move is what the trace records; nor when the file, or a module of the project that imports it,\n"
    "makes CUDA the default device of torch's factories (`torch.set_default_device(\"cuda\")`,\n"
    "`torch.set_default_tensor_type(torch.cuda.HalfTensor)`, as llama's generation.py does before it\n"
    "builds the model): the factory then already builds on the GPU, and the move does nothing.\n"
    "\n"
    "## Why is this slow?\n"
    "The factory allocates and fills the tensor on the CPU, then the move allocates it again on\n"
    "the GPU and copies it over PCIe from pageable memory, a copy that the host waits for. Created\n"
    "with `device=`, the tensor is filled by a kernel on the GPU: no host allocation, no transfer,\n"
    "and nothing for the host to wait on. Inside a training step this is paid every iteration.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "mask = torch.ones(n, n).cuda()\n"
    "positions = torch.arange(seq_len).to(device)\n"
    "noise = torch.randn(batch, dim).to(device, non_blocking=True)\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "mask = torch.ones(n, n, device=\"cuda\")\n"
    "positions = torch.arange(seq_len, device=device)\n"
    "noise = torch.randn(batch, dim, device=device)\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "The fix passes the move's device to the factory (`.cuda()` becomes `device=\"cuda\"`, `.cuda(1)`\n"
    "becomes `device=\"cuda:1\"`, `.to(dev)` becomes `device=dev`) and drops the move;\n"
    "`non_blocking=` is dropped, and a dtype given to `.to` becomes the factory's `dtype=` (no fix when\n"
    "the factory already has one, or when `.to` has other arguments such as `copy=` or\n"
    "`memory_format=`).\n"
    "\n"
    "It is safe for deterministic factories (`zeros`, `ones`, `empty`, `full`, `arange`, `linspace`,\n"
    "`eye`, ...): the values are the same. It is unsafe when:\n"
    "- the factory is random (`rand`, `randn`, `randint`, `randperm`, `normal`): the GPU generator\n"
    "  draws different numbers than the CPU one for the same seed, so results change;\n"
    "- the factory has `requires_grad=` (other than `False`): `torch.zeros(n, requires_grad=True).cuda()`\n"
    "  returns a non-leaf copy whose `.grad` stays empty; created on the device it is the leaf and gets\n"
    "  gradients, which changes what the program does;\n"
    "- a dtype moves into the factory for anything but `zeros`, `ones`, `empty` and `eye`: values\n"
    "  computed directly in the new dtype can differ in the last bit from values computed in the\n"
    "  default dtype and then converted.\n"
    "\n"
    "A move with `*args`/`**kwargs` (`.to(*args)`) is not flagged: its device is unknown. A factory\n"
    "with `*shape` is flagged and fixed (`torch.zeros(*shape, device=dev)` is valid). No fix when a\n"
    "comment sits in the text the fix would delete.\n";

typedef struct {
    const char *name;
    bool random;
    bool exact_in_any_dtype; /* zeros, ones, empty, eye: a dtype change alters no value */
} Factory;

static const Factory factories[] = {
    {"zeros", false, true},          {"ones", false, true},
    {"empty", false, true},          {"eye", false, true},
    {"empty_strided", false, true},  {"full", false, false},
    {"arange", false, false},        {"linspace", false, false},
    {"logspace", false, false},      {"scalar_tensor", false, false},
    {"tril_indices", false, false},  {"triu_indices", false, false},
    {"hann_window", false, false},   {"hamming_window", false, false},
    {"blackman_window", false, false}, {"bartlett_window", false, false},
    {"kaiser_window", false, false}, {"rand", true, false},
    {"randn", true, false},          {"randint", true, false},
    {"randperm", true, false},       {"normal", true, false},
    {NULL, false, false},
};

static const Factory *factory_of(const RuleContext *ctx, TSNode call) {
    char q[PY_NAME_MAX];
    if (!py_callee_name(ctx->py, call, q, sizeof q) || strncmp(q, "torch.", 6) != 0) return NULL;
    const char *last = q + 6;
    for (size_t i = 0; factories[i].name; i++)
        if (strcmp(last, factories[i].name) == 0) return &factories[i];
    return NULL;
}

static bool bound_to_other_device(const RuleContext *ctx, TSNode expr) { return py_device_not_cuda(ctx->py, expr); }

static bool is_cuda_device(const RuleContext *ctx, TSNode expr) { return py_is_cuda_device(ctx->py, expr); }

static bool is_false(const RuleContext *ctx, TSNode n) { return py_text_eq(ctx->py, n, "False"); }

/* What the move says, in factory terms. */
typedef struct {
    TSNode device;      /* expression, or null for `.cuda()` */
    bool cuda_method;   /* .cuda(...) */
    TSNode dtype;       /* .to(dev, dtype) / dtype= */
    bool fixable;       /* no argument the fix cannot carry over */
} Move;

static bool keyword_name_is(const RuleContext *ctx, TSNode kwarg, const char *name) {
    TSNode key = ts_node_child_by_field_name(kwarg, "name", 4);
    return !ts_node_is_null(key) && py_text_eq(ctx->py, key, name);
}

/* Reads `.cuda(...)` / `.to(...)`; false when it is not a move to a CUDA device. */
static bool read_move(const RuleContext *ctx, TSNode call, TSNode *receiver, Move *m) {
    memset(m, 0, sizeof *m);
    m->fixable = true;
    if (py_call_has_splat(call)) return false;
    TSNode args = py_call_arguments(call);
    if (!py_is(args, "argument_list")) return false;
    bool cuda = py_method_call(ctx->py, call, "cuda", receiver);
    if (!cuda && !py_method_call(ctx->py, call, "to", receiver)) return false;
    m->cuda_method = cuda;
    uint32_t n = ts_node_named_child_count(args), positional = 0;
    for (uint32_t i = 0; i < n; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (py_is(a, "comment")) {
            m->fixable = false;
            continue;
        }
        if (py_is(a, "keyword_argument")) {
            TSNode value = ts_node_child_by_field_name(a, "value", 5);
            if (keyword_name_is(ctx, a, "device")) m->device = value;
            else if (keyword_name_is(ctx, a, "dtype") && !cuda) m->dtype = value;
            else if (keyword_name_is(ctx, a, "non_blocking")) continue;
            else if (keyword_name_is(ctx, a, "copy") && is_false(ctx, value)) continue;
            else m->fixable = false;
            continue;
        }
        /* positional: .cuda(device, non_blocking) / .to(device, dtype, non_blocking, copy) */
        if (positional == 0) m->device = a;
        else if (positional == 1 && !cuda) m->dtype = a;
        else if ((positional == 1 && cuda) || (positional == 2 && !cuda)) { /* non_blocking: dropped */
        } else if (!(positional == 3 && !cuda && is_false(ctx, a))) m->fixable = false;
        positional++;
    }
    if (cuda) {
        /* .cuda(), .cuda(1), .cuda("cuda:1"), .cuda(device=dev) */
        if (ts_node_is_null(m->device) || py_is(m->device, "integer")) return true;
        if (py_is(m->device, "none")) {
            m->device = (TSNode){0};
            return true;
        }
        return !bound_to_other_device(ctx, m->device);
    }
    return is_cuda_device(ctx, m->device);
}

static char *device_text(const RuleContext *ctx, const Move *m) {
    if (ts_node_is_null(m->device)) return strdup("\"cuda\"");
    if (m->cuda_method && py_is(m->device, "integer"))
        return format_string("\"cuda:%.*s\"", (int)py_text_len(m->device), py_text_ptr(ctx->py, m->device));
    return py_text_dup(ctx->py, m->device);
}

static bool text_has_comment(const RuleContext *ctx, size_t start, size_t end) {
    return memchr(ctx->py->doc->text + start, '#', end - start) != NULL;
}

static void add_fix(RuleContext *ctx, Finding *f, TSNode factory_call, const Factory *fac, TSNode receiver,
                    TSNode move_call, const Move *m) {
    if (!m->fixable || py_call_has_splat(move_call)) return;
    bool has_dtype = !ts_node_is_null(m->dtype);
    if (has_dtype && !ts_node_is_null(py_call_keyword(ctx->py, factory_call, "dtype"))) return;
    size_t del_start = ts_node_end_byte(receiver), del_end = ts_node_end_byte(move_call);
    if (text_has_comment(ctx, del_start, del_end)) return;

    TSNode grad = py_call_keyword(ctx->py, factory_call, "requires_grad");
    bool grad_changes = !ts_node_is_null(grad) && !is_false(ctx, grad);
    bool dtype_changes_values = has_dtype && !fac->exact_in_any_dtype;
    bool safe = !fac->random && !grad_changes && !dtype_changes_values;

    char *device = device_text(ctx, m);
    char *value = NULL;
    if (device && has_dtype) {
        char *dtype = py_text_dup(ctx->py, m->dtype);
        if (dtype) value = format_string("%s, dtype=%s", device, dtype);
        free(dtype);
    } else if (device) {
        value = strdup(device);
    }
    size_t offset = 0;
    char *insertion = value ? py_keyword_insertion(ctx->py, factory_call, "device", value, &offset) : NULL;
    if (insertion && offset <= del_start) {
        const char *title;
        if (fac->random)
            title = "Create it on the device with device= (the GPU generator draws different numbers for the same "
                    "seed)";
        else if (grad_changes)
            title = "Create it on the device with device= (the tensor becomes the leaf that receives .grad)";
        else if (dtype_changes_values)
            title = "Create it on the device with device= and dtype= (values may differ in the last bit)";
        else
            title = "Create it on the device with device=";
        Fix *fix = finding_add_fix(f, title, safe);
        if (fix) {
            fix_add_edit(fix, offset, offset, insertion);
            fix_add_edit(fix, del_start, del_end, "");
        }
    }
    free(insertion);
    free(value);
    free(device);
}

/* `torch.jit.trace(lambda: torch.ones([]).to(device), ...)`: the move is
 * what the trace records (a device node to patch), run once at load */
static bool inside_jit_trace(const PySource *src, TSNode n) {
    static const char *const tracers[] = {"torch.jit.trace", "torch.jit.trace_module", NULL};
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); p = ts_node_parent(p)) {
        if (py_is(p, "call") && py_callee_is_any(src, p, tracers)) return true;
        if (py_is(p, "function_definition") || py_is(p, "class_definition")) return false;
    }
    return false;
}

/* `torch.empty(0)`, `torch.zeros(0, dim)`, `torch.ones((0,))`: a size of the
 * literal 0 makes a tensor with no elements, which costs nothing to fill or
 * copy (an accumulator to `torch.cat` onto). Only for the factories whose
 * positional arguments are all sizes. */
static bool has_no_elements(const PySource *src, TSNode call, const Factory *fac) {
    static const char *const sized[] = {"zeros", "ones", "empty", "rand", "randn", NULL};
    bool sizes_only = false;
    for (size_t i = 0; sized[i] && !sizes_only; i++) sizes_only = strcmp(fac->name, sized[i]) == 0;
    if (!sizes_only) return false;
    uint32_t n = py_call_positional_count(call);
    for (uint32_t i = 0; i < n && i < 8; i++) {
        TSNode a = py_call_positional(call, i);
        if (py_is(a, "integer") && py_text_eq(src, a, "0")) return true;
        if (py_is(a, "tuple") || py_is(a, "list")) {
            uint32_t m = ts_node_named_child_count(a);
            for (uint32_t k = 0; k < m && k < 8; k++) {
                TSNode d = ts_node_named_child(a, k);
                if (py_is(d, "integer") && py_text_eq(src, d, "0")) return true;
            }
        }
    }
    return false;
}

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    if (!py_is(n, "call")) return true;
    TSNode receiver = {0};
    /* the cheap, syntactic tests first; the device test may search bindings */
    if (!py_method_call(ctx->py, n, "cuda", &receiver) && !py_method_call(ctx->py, n, "to", &receiver)) return true;
    TSNode factory_call = py_unparen(receiver);
    if (!py_is(factory_call, "call")) return true;
    const Factory *fac = factory_of(ctx, factory_call);
    if (!fac || py_call_has_argument(factory_call, "dictionary_splat") || has_no_elements(ctx->py, factory_call, fac))
        return true;
    static const char *const deliberate[] = {"device", "out", "pin_memory", "generator", NULL};
    for (size_t i = 0; deliberate[i]; i++)
        if (!ts_node_is_null(py_call_keyword(ctx->py, factory_call, deliberate[i]))) return true;
    if (strcmp(fac->name, "normal") == 0 && ts_node_is_null(py_call_keyword(ctx->py, factory_call, "size")) &&
        py_call_positional_count(factory_call) < 3)
        return true; /* normal(mean_tensor, std_tensor) follows its inputs' device */
    Move m;
    if (!read_move(ctx, n, &receiver, &m)) return true;
    if (py_in_test_function(ctx->py, n) || inside_jit_trace(ctx->py, n)) return true;

    Finding *f = rule_report_node(ctx, n,
                                  "torch.%s() fills this tensor in host memory and then copies it to the GPU: "
                                  "create it there with device=",
                                  fac->name);
    if (f) add_fix(ctx, f, factory_call, fac, receiver, n, &m);
    return true;
}

typedef struct {
    const PySource *src;
    bool found;
} DefaultSearch;

static bool visit_cuda_default(TSNode n, void *data) {
    DefaultSearch *s = data;
    if (py_call_sets_cuda_default(s->src, n)) s->found = true;
    return !s->found;
}

/* The file, or another module of the project that loads it, makes CUDA the
 * default device of torch's factories (llama's generation.py calls
 * `torch.set_default_tensor_type(torch.cuda.HalfTensor)` before building the
 * model of model.py, whose `torch.zeros(...).cuda()` then moves nothing). */
static bool cuda_is_the_default(const RuleContext *ctx) {
    const PySource *src = ctx->py;
    if (src->workspace && src->module && py_workspace_default_cuda_for(src->workspace, src->module, NULL, NULL))
        return true;
    /* the file spells a setter's name, aliased or not (the import names it):
     * without one no call can set the default, and the walk over the whole
     * tree (10 ms per keystroke on a 6,000-line module) is skipped */
    if (!memmem(ctx->doc->text, ctx->doc->length, "set_default_device", 18) &&
        !memmem(ctx->doc->text, ctx->doc->length, "set_default_tensor_type", 23))
        return false;
    DefaultSearch s = {src, false};
    py_walk(ts_tree_root_node(src->tree), visit_cuda_default, &s);
    return s.found;
}

/* Test files stand down as a whole: a test's inputs are made once, small,
 * and on the host on purpose (the same random numbers on every device). */
static void check(RuleContext *ctx) {
    if (py_is_test_path(ctx->doc->path) || cuda_is_the_default(ctx)) return;
    rule_walk(ctx, visit, ctx);
}

const Rule rule_py004_host_tensor_moved_to_device = {
    .code = "PY004", .name = "host-tensor-moved-to-device", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_COPY_AVOIDED,
    .summary = "Tensor created on the host by a torch factory, then moved to the GPU",
    .documentation = documentation};
