/* PY009 fp32-matmul-without-tf32: a CUDA program whose float32 matmuls run
 * without TF32, autocast or a half-precision cast. File-level: one finding at
 * the first matmul-type site of an entry-point file. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rule.h"
#include "../../analysis/python_index.h"

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
    "## Why is this slow?\n"
    "On Ampere and newer GPUs, float32 matmuls run on the tensor cores only in TF32 mode, which\n"
    "PyTorch leaves off for matmuls by default. Without it (or autocast to bf16/fp16), every\n"
    "`Linear` layer and attention product runs on the much slower FP32 CUDA cores: TF32 is\n"
    "typically several times faster for matmul-heavy models, with a 10-bit mantissa that training\n"
    "tolerates well.\n"
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
    "files that are not entry points, and files that never mention CUDA or a device.\n"
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

/* null-safe text comparisons (missing fields in broken code are null nodes) */
static bool text_is(const PySource *src, TSNode n, const char *text) {
    return !ts_node_is_null(n) && py_text_eq(src, n, text);
}

static bool same_text(const PySource *src, TSNode a, TSNode b) {
    return !ts_node_is_null(a) && !ts_node_is_null(b) && py_same_text(src, a, b);
}

/* ---- what the file says about precision -------------------------------- */

static const char *const matmul_functions[] = {
    "torch.matmul", "torch.mm", "torch.bmm", "torch.addmm", "torch.baddbmm", "torch.addbmm", "torch.einsum",
    "torch.tensordot", "torch.linalg.matmul", "torch.linalg.multi_dot", "torch.chain_matmul",
    "torch.nn.functional.linear", "torch.nn.functional.bilinear", NULL};
static const char *const matmul_methods[] = {"matmul", "mm", "bmm", "addmm", "baddbmm", NULL};
/* torchvision models whose work is mostly matmuls (the rest are convolutions) */
static const char *const matmul_vision_prefixes[] = {"vit_", "swin", "maxvit", "convnext", "mvit",
                                                     "VisionTransformer", "SwinTransformer", NULL};
static const char *const precision_setters[] = {"torch.set_float32_matmul_precision", NULL};
static const char *const scalers[] = {"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler",
                                      "torch.cuda.amp.grad_scaler.GradScaler", NULL};
static const char *const reduced_dtypes[] = {"torch.float16", "torch.half", "torch.bfloat16", "torch.float64",
                                             "torch.double", NULL};
static const char *const dtype_words[] = {"float16", "half", "bfloat16", "float64", "double", NULL};
static const char *const cast_methods[] = {"half", "bfloat16", "double", NULL};
static const char *const precision_strings[] = {"bf16", "fp16", "float16", "bfloat16", "float64", "fp64", NULL};

typedef struct {
    const PySource *src;
    bool suppressed; /* the program made a precision choice: TF32, autocast, casts, fp64 */
    TSNode site;     /* the first matmul-type site */
    bool have_site;
    int budget;      /* tensor checks left */
    bool on_gpu;     /* the program puts a model or tensors on a CUDA device */
    bool runs_model; /* and runs work there: a model call, backward(), a matmul on a big tensor */
} Scan;

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static bool in_list(const char *s, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0) return true;
    return false;
}

static bool text_in_list(const PySource *src, TSNode n, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (text_is(src, n, list[i])) return true;
    return false;
}

static const char *last_component(const char *q) {
    const char *dot = strrchr(q, '.');
    return dot ? dot + 1 : q;
}

/* `name=value` keyword arguments that say the program runs in reduced precision */
static bool keyword_sets_precision(const PySource *src, TSNode kwarg) {
    TSNode key = ts_node_child_by_field_name(kwarg, "name", 4);
    TSNode value = ts_node_child_by_field_name(kwarg, "value", 5);
    if (ts_node_is_null(key) || ts_node_is_null(value)) return false;
    if (text_is(src, key, "torch_dtype")) {
        char q[PY_NAME_MAX];
        if (py_qualified_name(src, value, q, sizeof q) && strcmp(q, "torch.float32") == 0) return false;
        return !text_is(src, value, "\"float32\"") && !text_is(src, value, "'float32'") &&
               !text_is(src, value, "None");
    }
    if (text_is(src, key, "precision") || text_is(src, key, "mixed_precision")) {
        static const char *const full[] = {"32", "\"32\"", "'32'", "\"32-true\"", "'32-true'", "\"no\"", "'no'",
                                           "\"fp32\"", "'fp32'", "None", NULL};
        return !text_in_list(src, value, full);
    }
    if (text_is(src, key, "bf16") || text_is(src, key, "fp16") || text_is(src, key, "tf32") ||
        text_is(src, key, "use_amp") || text_is(src, key, "amp"))
        return !text_is(src, value, "False") && !text_is(src, value, "None");
    return false;
}

static bool string_mentions_precision(const PySource *src, TSNode s) {
    char *text = py_text_dup(src, s);
    if (!text) return false;
    for (char *p = text; *p; p++) *p = (char)tolower((unsigned char)*p);
    bool yes = false;
    for (size_t i = 0; precision_strings[i] && !yes; i++) yes = strstr(text, precision_strings[i]) != NULL;
    free(text);
    return yes;
}

/* tensor checks follow bindings through the file: bound their number */
#define TENSOR_CHECK_BUDGET 256
#define STATEMENT_BUDGET 128

/* ---- matmul work at scale ------------------------------------------------ */

#define MIN_WEIGHTS (1L << 20) /* a matmul whose operand has a million elements keeps tensor cores busy */
#define MIN_ATTENTION_DIM 256
#define MAX_SIZE (1L << 30) /* sizes are clamped here: products of two stay far from overflow */

static bool int_value(const PySource *src, TSNode e, long *out, int depth);
static bool largest_int_in(const PySource *src, TSNode e, long *out, int depth);

/* A parameter's value where the file shows it: what the first call of its
 * function (or, for `__init__`, of its class) that passes it gives, or its
 * default. */
static bool parameter_value(const PySource *src, TSNode param, long *out, int depth) {
    TSNode params = ts_node_parent(param), fn = ts_node_parent(params);
    if (!py_is(params, "parameters") || !py_is(fn, "function_definition") || depth > 8) return false;
    TSNode name = param;
    if (py_is(param, "default_parameter") || py_is(param, "typed_default_parameter"))
        name = ts_node_child_by_field_name(param, "name", 4);
    if (!py_is(name, "identifier")) return false;
    uint32_t index = 0, count = ts_node_named_child_count(params);
    for (uint32_t i = 0; i < count; i++) {
        TSNode p = ts_node_named_child(params, i);
        if (ts_node_eq(p, param)) break;
        index++;
    }
    /* the callee: the function, or the class whose __init__ this is (self is not passed) */
    TSNode callee_name = ts_node_child_by_field_name(fn, "name", 4);
    TSNode owner = ts_node_parent(fn);
    if (py_is(owner, "decorated_definition")) owner = ts_node_parent(owner);
    if (py_is(owner, "block") && py_is(ts_node_parent(owner), "class_definition")) {
        if (!py_text_eq(src, callee_name, "__init__") || index == 0) return false;
        callee_name = ts_node_child_by_field_name(ts_node_parent(owner), "name", 4);
        index--;
    }
    size_t n;
    const TSNode *calls = py_index_calls(src, py_text_ptr(src, callee_name), py_text_len(callee_name), &n);
    for (size_t i = 0; i < n && i < 16; i++) {
        if (py_call_has_splat(calls[i])) continue;
        TSNode arg = {0};
        uint32_t k = ts_node_named_child_count(py_call_arguments(calls[i]));
        for (uint32_t j = 0; j < k; j++) {
            TSNode a = ts_node_named_child(py_call_arguments(calls[i]), j);
            TSNode key = ts_node_child_by_field_name(a, "name", 4);
            if (py_is(a, "keyword_argument") && py_same_text(src, key, name))
                arg = ts_node_child_by_field_name(a, "value", 5);
        }
        if (ts_node_is_null(arg)) arg = py_call_positional(calls[i], index);
        if (!ts_node_is_null(arg) && !py_is_within(arg, fn)) return int_value(src, arg, out, depth + 1);
    }
    TSNode def = ts_node_child_by_field_name(param, "value", 5);
    return !ts_node_is_null(def) && int_value(src, def, out, depth + 1);
}

/* The largest integer in a list the code spells out: `[1024, 2048]`,
 * `args.sizes or [1024, 4096]`, `[1024] if cuda else [128]`, a name bound
 * to one of these. */
static bool largest_int_in(const PySource *src, TSNode e, long *out, int depth) {
    if (ts_node_is_null(e) || depth > 16) return false;
    if (py_is(e, "parenthesized_expression")) return largest_int_in(src, ts_node_named_child(e, 0), out, depth + 1);
    if (py_is(e, "identifier")) {
        TSNode value = {0};
        if (py_binding_before(src, e, py_text_ptr(src, e), py_text_len(e), ts_node_start_byte(e), &value) !=
            BINDING_ASSIGNMENT)
            return false;
        return largest_int_in(src, value, out, depth + 1);
    }
    bool found = false;
    long best = 0, v;
    if (py_is(e, "list") || py_is(e, "tuple")) {
        uint32_t n = ts_node_named_child_count(e);
        for (uint32_t i = 0; i < n; i++)
            if (int_value(src, ts_node_named_child(e, i), &v, depth + 1) && (!found || v > best)) best = v, found = true;
    } else if (py_is(e, "boolean_operator") || py_is(e, "conditional_expression")) {
        uint32_t n = ts_node_named_child_count(e);
        for (uint32_t i = 0; i < n; i++) {
            if (py_is(e, "conditional_expression") && i == 1) continue; /* the condition */
            if (largest_int_in(src, ts_node_named_child(e, i), &v, depth + 1) && (!found || v > best))
                best = v, found = true;
        }
    }
    if (found) *out = best;
    return found;
}

/* an integer the code spells out: a literal, a name bound to one, a
 * parameter given one, a loop over listed sizes (the largest), or
 * arithmetic of those (`7 * 7 * 32`, `hidden_size * 2`) */
static bool int_value(const PySource *src, TSNode e, long *out, int depth) {
    if (ts_node_is_null(e) || depth > 16) return false;
    if (py_is(e, "integer")) {
        char buf[32];
        size_t len = py_text_len(e);
        if (len >= sizeof buf) return false;
        memcpy(buf, py_text_ptr(src, e), len);
        buf[len] = '\0';
        char *end;
        long v = strtol(buf, &end, 0);
        if (*end || v < 0) return false;
        *out = v > MAX_SIZE ? MAX_SIZE : v;
        return true;
    }
    if (py_is(e, "parenthesized_expression")) return int_value(src, ts_node_named_child(e, 0), out, depth + 1);
    if (py_is(e, "identifier")) {
        TSNode value = {0};
        BindingKind kind = py_binding_before(src, e, py_text_ptr(src, e), py_text_len(e), ts_node_start_byte(e), &value);
        if (kind == BINDING_PARAMETER) return parameter_value(src, value, out, depth + 1);
        if (kind == BINDING_LOOP_TARGET) return largest_int_in(src, value, out, depth + 1); /* for n in sizes */
        if (kind != BINDING_ASSIGNMENT) return false;
        return int_value(src, value, out, depth + 1);
    }
    if (py_is(e, "binary_operator")) {
        long a, b;
        if (!int_value(src, ts_node_child_by_field_name(e, "left", 4), &a, depth + 1) ||
            !int_value(src, ts_node_child_by_field_name(e, "right", 5), &b, depth + 1))
            return false;
        TSNode op = ts_node_child_by_field_name(e, "operator", 8);
        const char *o = ts_node_type(op);
        if (a < 0 || b < 0 || a > MAX_SIZE || b > MAX_SIZE) return false;
        long v;
        if (strcmp(o, "*") == 0) v = a * b;
        else if (strcmp(o, "+") == 0) v = a + b;
        else if (strcmp(o, "-") == 0) v = a - b;
        else if (strcmp(o, "//") == 0 && b) v = a / b;
        else return false;
        *out = v < 0 ? 0 : v > MAX_SIZE ? MAX_SIZE : v;
        return true;
    }
    return false;
}

static TSNode argument(const PySource *src, TSNode call, uint32_t index, const char *keyword) {
    TSNode a = py_call_positional(call, index);
    return ts_node_is_null(a) ? py_call_keyword(src, call, keyword) : a;
}

static bool text_mentions(const PySource *src, TSNode n, const char *word) {
    const char *t = py_text_ptr(src, n);
    size_t len = py_text_len(n), wl = strlen(word);
    for (size_t i = 0; i + wl <= len; i++)
        if (strncasecmp(t + i, word, wl) == 0) return true;
    return false;
}

/* nn.Linear(in, out) with a million weights, or an output over a vocabulary
 * (`nn.Linear(1024, vocab_size)`) */
static bool linear_at_scale(const PySource *src, TSNode call) {
    TSNode in = argument(src, call, 0, "in_features"), out = argument(src, call, 1, "out_features");
    long a = 0, b = 0;
    bool ka = int_value(src, in, &a, 0), kb = int_value(src, out, &b, 0);
    if (ka && kb) return a * b >= MIN_WEIGHTS;
    if (ka && !ts_node_is_null(out) && a >= 512 && text_mentions(src, out, "vocab")) return true;
    if (kb && !ts_node_is_null(in) && b >= 512 && text_mentions(src, in, "vocab")) return true;
    return false;
}

/* attention or a transformer, unless the code shows a small width */
static bool attention_at_scale(const PySource *src, TSNode call, bool transformer) {
    TSNode dim = transformer ? argument(src, call, 0, "d_model") : argument(src, call, 0, "embed_dim");
    long d;
    if (!ts_node_is_null(dim) && int_value(src, dim, &d, 0)) return d >= MIN_ATTENTION_DIM;
    return true; /* unknown, or the default width (512) */
}

/* a dense CUDA tensor built here with a million elements in its last two
 * dimensions: `torch.randn(4096, 4096, device="cuda")` */
static bool tensor_at_scale(const PySource *src, TSNode e, int depth) {
    if (ts_node_is_null(e) || depth > 6) return false;
    if (py_is(e, "parenthesized_expression")) return tensor_at_scale(src, ts_node_named_child(e, 0), depth + 1);
    if (py_is(e, "identifier")) {
        TSNode value = {0};
        if (py_binding_before(src, e, py_text_ptr(src, e), py_text_len(e), ts_node_start_byte(e), &value) !=
            BINDING_ASSIGNMENT)
            return false;
        return tensor_at_scale(src, value, depth + 1);
    }
    if (!py_is(e, "call")) return false;
    /* x.t(), x.transpose(0, 1), x.contiguous(), x.float(), x.cuda(), x.to(dev), x.clone(): the same size */
    static const char *const same_size[] = {"t", "transpose", "contiguous", "float", "cuda", "to", "clone", NULL};
    TSNode recv;
    for (size_t i = 0; same_size[i]; i++)
        if (py_method_call(src, e, same_size[i], &recv)) return tensor_at_scale(src, recv, depth + 1);
    static const char *const factories[] = {"torch.randn", "torch.rand", "torch.ones", "torch.zeros", "torch.empty",
                                            "torch.full", NULL};
    static const char *const sized_by_tuple[] = {"torch.full", NULL};
    if (!py_callee_is_any(src, e, factories)) return false;
    uint32_t n = py_call_positional_count(e);
    TSNode first = py_call_positional(e, 0);
    long dims[8];
    uint32_t nd = 0;
    if (py_is(first, "tuple") || py_is(first, "list")) {
        uint32_t k = ts_node_named_child_count(first);
        for (uint32_t i = 0; i < k && nd < 8; i++)
            if (!int_value(src, ts_node_named_child(first, i), &dims[nd++], 0)) return false;
    } else if (!py_callee_is_any(src, e, sized_by_tuple)) {
        for (uint32_t i = 0; i < n && nd < 8; i++)
            if (!int_value(src, py_call_positional(e, i), &dims[nd++], 0)) return false;
    }
    if (nd < 2) return false;
    return dims[nd - 1] * dims[nd - 2] >= MIN_WEIGHTS;
}

static bool is_sparse(const PySource *src, TSNode e) {
    return !ts_node_is_null(e) && (text_mentions(src, e, "sparse") || text_mentions(src, e, "coo") ||
                                   text_mentions(src, e, "csr"));
}

/* A matmul site that does float32 work at scale: a big nn.Linear, attention
 * or a transformer, a transformer-style pretrained model, or a matmul on a
 * big dense tensor this code builds. Sizes the code does not show, sparse
 * operands and tiny layers are no evidence. */
static bool is_matmul_site(const PySource *src, TSNode n, int *budget) {
    if (py_is(n, "binary_operator")) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        if (ts_node_is_null(op) || strcmp(ts_node_type(op), "@") != 0 || *budget <= 0) return false;
        --*budget;
        TSNode l = ts_node_child_by_field_name(n, "left", 4), r = ts_node_child_by_field_name(n, "right", 5);
        return !is_sparse(src, l) && !is_sparse(src, r) && (tensor_at_scale(src, l, 0) || tensor_at_scale(src, r, 0));
    }
    if (!py_is(n, "call")) return false;
    char q[PY_NAME_MAX];
    if (py_callee_name(src, n, q, sizeof q)) {
        if (strcmp(q, "torch.nn.Linear") == 0 || strcmp(q, "torch.nn.Bilinear") == 0) return linear_at_scale(src, n);
        if (strcmp(q, "torch.nn.MultiheadAttention") == 0) return attention_at_scale(src, n, false);
        if (starts_with(q, "torch.nn.Transformer")) return attention_at_scale(src, n, true);
        if (starts_with(q, "torchvision.models.")) {
            const char *last = last_component(q);
            for (size_t i = 0; matmul_vision_prefixes[i]; i++)
                if (starts_with(last, matmul_vision_prefixes[i])) return true;
            return false;
        }
        if (starts_with(q, "transformers.") && strcmp(last_component(q), "from_pretrained") == 0) return true;
        if (in_list(q, matmul_functions)) {
            if (starts_with(q, "torch.sparse") || *budget <= 0) return false;
            --*budget;
            uint32_t k = py_call_positional_count(n);
            for (uint32_t i = 0; i < k; i++) {
                TSNode a = py_call_positional(n, i);
                if (is_sparse(src, a)) return false;
            }
            for (uint32_t i = 0; i < k; i++)
                if (tensor_at_scale(src, py_call_positional(n, i), 0)) return true;
            return false;
        }
    }
    TSNode name = py_method_name_node(n);
    if (!ts_node_is_null(name) && text_in_list(src, name, matmul_methods)) {
        if (*budget <= 0) return false;
        --*budget;
        TSNode recv = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
        TSNode other = py_call_positional(n, 0);
        if (is_sparse(src, recv) || is_sparse(src, other)) return false;
        return tensor_at_scale(src, recv, 0) || tensor_at_scale(src, other, 0);
    }
    return false;
}

/* The program runs on the GPU: it moves a model or tensors to a CUDA device
 * (`.cuda()`, `.to(device)`, `device="cuda"`, `fabric.setup(model)`,
 * `DDP(model)`), and it runs a model there (a model call, `backward()`). */
static void note_gpu_work(Scan *s, TSNode call) {
    const PySource *src = s->src;
    TSNode recv;
    if (!s->on_gpu) {
        TSNode dev = py_call_keyword(src, call, "device");
        if (py_method_call(src, call, "cuda", &recv) || (!ts_node_is_null(dev) && py_is_cuda_device(src, dev)))
            s->on_gpu = true;
        else if (py_method_call(src, call, "to", &recv)) {
            TSNode target = py_call_positional(call, 0);
            if (ts_node_is_null(target)) target = dev;
            s->on_gpu = !ts_node_is_null(target) && py_is_cuda_device(src, target);
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
    if (py_is(n, "assignment")) {
        char q[PY_NAME_MAX];
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        TSNode right = ts_node_child_by_field_name(n, "right", 5);
        if (py_qualified_name(src, left, q, sizeof q) && starts_with(q, "torch.backends.")) {
            const char *last = last_component(q);
            if (strcmp(q, "torch.backends.cudnn.allow_tf32") == 0) {
                /* True is the default; anything else is a deliberate choice */
                if (!text_is(src, right, "True")) s->suppressed = true;
            } else if (strcmp(last, "allow_tf32") == 0 || strcmp(last, "fp32_precision") == 0) {
                s->suppressed = true;
            }
        }
    } else if (py_is(n, "call")) {
        char q[PY_NAME_MAX];
        if (py_callee_name(src, n, q, sizeof q)) {
            if (in_list(q, precision_setters) || in_list(q, scalers)) s->suppressed = true;
            if (starts_with(q, "torch.") && strcmp(last_component(q), "autocast") == 0) s->suppressed = true;
        }
        TSNode name = py_method_name_node(n);
        if (!ts_node_is_null(name) && text_in_list(src, name, cast_methods)) s->suppressed = true;
        note_gpu_work(s, n);
        if (!s->have_site && is_matmul_site(src, n, &s->budget)) {
            s->site = n;
            s->have_site = true;
        }
    } else if (py_is(n, "keyword_argument")) {
        if (keyword_sets_precision(src, n)) s->suppressed = true;
    } else if (py_is(n, "attribute")) {
        TSNode attr = ts_node_child_by_field_name(n, "attribute", 9);
        char q[PY_NAME_MAX];
        if (!ts_node_is_null(attr) && text_in_list(src, attr, dtype_words) &&
            py_qualified_name(src, n, q, sizeof q) && in_list(q, reduced_dtypes))
            s->suppressed = true;
    } else if (py_is(n, "identifier")) {
        char q[PY_NAME_MAX];
        if (text_in_list(src, n, dtype_words) && py_qualified_name(src, n, q, sizeof q) && in_list(q, reduced_dtypes))
            s->suppressed = true;
    } else if (py_is(n, "string")) {
        if (string_mentions_precision(src, n)) s->suppressed = true;
        return false;
    } else if (py_is(n, "binary_operator")) {
        if (!s->have_site && is_matmul_site(src, n, &s->budget)) {
            s->site = n;
            s->have_site = true;
        }
    }
    return !s->suppressed;
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
            if (top->count == cap) {
                size_t grown_cap = cap ? cap * 2 : 32;
                TSNode *grown = realloc(top->items, grown_cap * sizeof *grown);
                if (!grown) {
                    ok = false;
                    break;
                }
                top->items = grown;
                cap = grown_cap;
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
    bool main_a = text_is(src, a, "\"__main__\"") || text_is(src, a, "'__main__'");
    bool main_b = text_is(src, b, "\"__main__\"") || text_is(src, b, "'__main__'");
    return (text_is(src, a, "__name__") && main_b) || (text_is(src, b, "__name__") && main_a);
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
    if (set->count == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 32;
        TSNode *grown = realloc(set->items, cap * sizeof *grown);
        if (!grown) {
            set->failed = true;
            return false;
        }
        set->items = grown;
        set->cap = cap;
    }
    set->items[set->count++] = left;
    return true;
}

static bool name_assigned(const PySource *src, const NameSet *set, TSNode id) {
    for (size_t i = 0; i < set->count; i++)
        if (same_text(src, set->items[i], id)) return true;
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
        if (is_matmul_site(s->src, n, s->budget)) s->found = true;
        return !s->found;
    }
    TSNode recv;
    TSNode fn = ts_node_child_by_field_name(n, "function", 8);
    char q[PY_NAME_MAX];
    if (py_method_call(s->src, n, "backward", &recv)) {
        s->found = true;
    } else if (py_callee_name(s->src, n, q, sizeof q) && in_list(q, matmul_functions)) {
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
        if (ts_node_is_null(name) || !same_text(src, name, fn)) continue;
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
    int checks = TENSOR_CHECK_BUDGET;
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
        if (text_is(src, ts_node_named_child(c, 0), "torch")) return true;
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

/* the site is a matmul on tensors (`a @ b`, torch.mm, x.matmul), not a layer's construction */
static bool site_is_tensor_work(const PySource *src, TSNode site) {
    if (py_is(site, "binary_operator")) return true;
    char q[PY_NAME_MAX];
    if (py_callee_name(src, site, q, sizeof q) && in_list(q, matmul_functions)) return true;
    TSNode name = py_method_name_node(site);
    return !ts_node_is_null(name) && text_in_list(src, name, matmul_methods);
}

static void check(RuleContext *ctx) {
    const PySource *src = ctx->py;
    if (!src->uses_gpu) return;
    TSNode root = ts_tree_root_node(src->tree);
    Scan s = {.src = src, .budget = TENSOR_CHECK_BUDGET};
    py_walk(root, visit_scan, &s);
    /* a matmul on a big tensor is GPU work of its own; a layer needs a model run on the GPU */
    if (s.suppressed || !s.have_site || !s.on_gpu) return;
    if (!s.runs_model && !site_is_tensor_work(src, s.site)) return;
    TopLevel top;
    if (top_level_collect(root, &top) && is_entry_point(src, &top)) {
        Finding *f = rule_report_node(ctx, s.site,
                                      "float32 matmuls in this program run without TF32 or autocast, so they miss "
                                      "the tensor cores and run several times slower on Ampere and newer GPUs");
        if (f) add_fix(ctx, f, &top);
    }
    free(top.items);
}

const Rule rule_py009_fp32_matmul_without_tf32 = {
    .code = "PY009",
    .name = "fp32-matmul-without-tf32",
    .severity = SEVERITY_HINT,
    .languages = LANGUAGE_PYTHON,
    .summary = "float32 matmuls without TF32, autocast or a half-precision cast",
    .documentation = documentation,
    .check = check,
    .measure = MEASURE_FP32_GEMM,
    .whole_file = true, /* one finding per program */
};
