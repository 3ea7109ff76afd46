#include "analysis/python/python_precision.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/python/python_facts.h"
#include "analysis/python/python_index.h"

/* null-safe text comparison (missing fields in broken code are null nodes) */
static bool text_is(const PySource *src, TSNode n, const char *text) {
    return !ts_node_is_null(n) && py_text_eq(src, n, text);
}

/* ---- names --------------------------------------------------------------- */

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

/* ---- matmul work at scale ------------------------------------------------ */

/* Sizes are worked out within one site's check: from_parameters says a
 * parameter's value was used. */
typedef struct {
    const PySource *src;
    bool from_parameters;
} Sizes;

#define MIN_WEIGHTS (1L << 20) /* a matmul whose operand has a million elements keeps tensor cores busy */
#define MIN_ATTENTION_DIM 256
#define MAX_SIZE (1L << 30) /* sizes are clamped here: products of two stay far from overflow */

static bool int_value(Sizes *z, TSNode e, long *out, int depth);
static bool largest_int_in(Sizes *z, TSNode e, long *out, int depth);

/* A parameter's value where the file shows it: what the first call of its
 * function (or, for `__init__`, of its class) that passes it gives, or its
 * default. */
static bool parameter_value(Sizes *z, TSNode param, long *out, int depth) {
    const PySource *src = z->src;
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
        if (!ts_node_is_null(arg) && !py_is_within(arg, fn)) return int_value(z, arg, out, depth + 1);
    }
    TSNode def = ts_node_child_by_field_name(param, "value", 5);
    return !ts_node_is_null(def) && int_value(z, def, out, depth + 1);
}

/* The largest integer in a list the code spells out: `[1024, 2048]`,
 * `args.sizes or [1024, 4096]`, `[1024] if cuda else [128]`, a name bound
 * to one of these. */
static bool largest_int_in(Sizes *z, TSNode e, long *out, int depth) {
    const PySource *src = z->src;
    if (ts_node_is_null(e) || depth > 16) return false;
    if (py_is(e, "parenthesized_expression")) return largest_int_in(z, ts_node_named_child(e, 0), out, depth + 1);
    if (py_is(e, "identifier")) {
        TSNode value = {0};
        if (py_binding_before(src, e, py_text_ptr(src, e), py_text_len(e), ts_node_start_byte(e), &value) !=
            BINDING_ASSIGNMENT)
            return false;
        return largest_int_in(z, value, out, depth + 1);
    }
    bool found = false;
    long best = 0, v;
    if (py_is(e, "list") || py_is(e, "tuple")) {
        uint32_t n = ts_node_named_child_count(e);
        for (uint32_t i = 0; i < n; i++)
            if (int_value(z, ts_node_named_child(e, i), &v, depth + 1) && (!found || v > best)) best = v, found = true;
    } else if (py_is(e, "boolean_operator") || py_is(e, "conditional_expression")) {
        uint32_t n = ts_node_named_child_count(e);
        for (uint32_t i = 0; i < n; i++) {
            if (py_is(e, "conditional_expression") && i == 1) continue; /* the condition */
            if (largest_int_in(z, ts_node_named_child(e, i), &v, depth + 1) && (!found || v > best))
                best = v, found = true;
        }
    }
    if (found) *out = best;
    return found;
}

/* an integer the code spells out: a literal, a name bound to one, a
 * parameter given one, a loop over listed sizes (the largest), or
 * arithmetic of those (`7 * 7 * 32`, `hidden_size * 2`) */
static bool int_value(Sizes *z, TSNode e, long *out, int depth) {
    const PySource *src = z->src;
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
    if (py_is(e, "parenthesized_expression")) return int_value(z, ts_node_named_child(e, 0), out, depth + 1);
    if (py_is(e, "identifier")) {
        TSNode value = {0};
        BindingKind kind = py_binding_before(src, e, py_text_ptr(src, e), py_text_len(e), ts_node_start_byte(e), &value);
        if (kind == BINDING_PARAMETER) {
            if (!parameter_value(z, value, out, depth + 1)) return false;
            z->from_parameters = true;
            return true;
        }
        if (kind == BINDING_LOOP_TARGET) return largest_int_in(z, value, out, depth + 1); /* for n in sizes */
        if (kind != BINDING_ASSIGNMENT) return false;
        return int_value(z, value, out, depth + 1);
    }
    if (py_is(e, "binary_operator")) {
        long a, b;
        if (!int_value(z, ts_node_child_by_field_name(e, "left", 4), &a, depth + 1) ||
            !int_value(z, ts_node_child_by_field_name(e, "right", 5), &b, depth + 1))
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
static bool linear_at_scale(Sizes *z, TSNode call) {
    const PySource *src = z->src;
    TSNode in = argument(src, call, 0, "in_features"), out = argument(src, call, 1, "out_features");
    long a = 0, b = 0;
    bool ka = int_value(z, in, &a, 0), kb = int_value(z, out, &b, 0);
    if (ka && kb) return a * b >= MIN_WEIGHTS;
    if (ka && !ts_node_is_null(out) && a >= 512 && text_mentions(src, out, "vocab")) return true;
    if (kb && !ts_node_is_null(in) && b >= 512 && text_mentions(src, in, "vocab")) return true;
    return false;
}

/* attention or a transformer, unless the code shows a small width */
static bool attention_at_scale(Sizes *z, TSNode call, bool transformer) {
    const PySource *src = z->src;
    TSNode dim = transformer ? argument(src, call, 0, "d_model") : argument(src, call, 0, "embed_dim");
    long d;
    if (!ts_node_is_null(dim) && int_value(z, dim, &d, 0)) return d >= MIN_ATTENTION_DIM;
    return true; /* unknown, or the default width (512) */
}

/* a dense CUDA tensor built here with a million elements in its last two
 * dimensions: `torch.randn(4096, 4096, device="cuda")` */
static bool tensor_at_scale(Sizes *z, TSNode e, int depth) {
    const PySource *src = z->src;
    if (ts_node_is_null(e) || depth > 6) return false;
    if (py_is(e, "parenthesized_expression")) return tensor_at_scale(z, ts_node_named_child(e, 0), depth + 1);
    if (py_is(e, "identifier")) {
        TSNode value = {0};
        if (py_binding_before(src, e, py_text_ptr(src, e), py_text_len(e), ts_node_start_byte(e), &value) !=
            BINDING_ASSIGNMENT)
            return false;
        return tensor_at_scale(z, value, depth + 1);
    }
    if (!py_is(e, "call")) return false;
    /* x.t(), x.transpose(0, 1), x.contiguous(), x.float(), x.cuda(), x.to(dev), x.clone(): the same size */
    static const char *const same_size[] = {"t", "transpose", "contiguous", "float", "cuda", "to", "clone", NULL};
    TSNode recv;
    for (size_t i = 0; same_size[i]; i++)
        if (py_method_call(src, e, same_size[i], &recv)) return tensor_at_scale(z, recv, depth + 1);
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
            if (!int_value(z, ts_node_named_child(first, i), &dims[nd++], 0)) return false;
    } else if (!py_callee_is_any(src, e, sized_by_tuple)) {
        for (uint32_t i = 0; i < n && nd < 8; i++)
            if (!int_value(z, py_call_positional(e, i), &dims[nd++], 0)) return false;
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
static bool matmul_site_at_scale(Sizes *z, TSNode n, int *budget) {
    const PySource *src = z->src;
    if (py_is(n, "binary_operator")) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        if (ts_node_is_null(op) || strcmp(ts_node_type(op), "@") != 0 || *budget <= 0) return false;
        --*budget;
        TSNode l = ts_node_child_by_field_name(n, "left", 4), r = ts_node_child_by_field_name(n, "right", 5);
        return !is_sparse(src, l) && !is_sparse(src, r) && (tensor_at_scale(z, l, 0) || tensor_at_scale(z, r, 0));
    }
    if (!py_is(n, "call")) return false;
    char q[PY_NAME_MAX];
    if (py_callee_name(src, n, q, sizeof q)) {
        if (strcmp(q, "torch.nn.Linear") == 0 || strcmp(q, "torch.nn.Bilinear") == 0) return linear_at_scale(z, n);
        if (strcmp(q, "torch.nn.MultiheadAttention") == 0) return attention_at_scale(z, n, false);
        if (starts_with(q, "torch.nn.Transformer")) return attention_at_scale(z, n, true);
        if (starts_with(q, "torchvision.models.")) {
            const char *last = last_component(q);
            for (size_t i = 0; matmul_vision_prefixes[i]; i++)
                if (starts_with(last, matmul_vision_prefixes[i])) return true;
            return false;
        }
        if (py_is_transformers_model_load(q)) return true;
        if (in_list(q, matmul_functions)) {
            if (starts_with(q, "torch.sparse") || *budget <= 0) return false;
            --*budget;
            uint32_t k = py_call_positional_count(n);
            for (uint32_t i = 0; i < k; i++) {
                TSNode a = py_call_positional(n, i);
                if (is_sparse(src, a)) return false;
            }
            for (uint32_t i = 0; i < k; i++)
                if (tensor_at_scale(z, py_call_positional(n, i), 0)) return true;
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
        return tensor_at_scale(z, recv, 0) || tensor_at_scale(z, other, 0);
    }
    return false;
}

bool py_is_matmul_at_scale(const PySource *src, TSNode node, int *budget, bool *from_parameters) {
    Sizes z = {src, false};
    bool yes = matmul_site_at_scale(&z, node, budget);
    if (from_parameters) *from_parameters = yes && z.from_parameters;
    return yes;
}

bool py_matmul_site_is_tensor_work(const PySource *src, TSNode site) {
    if (py_is(site, "binary_operator")) return true;
    char q[PY_NAME_MAX];
    if (py_callee_name(src, site, q, sizeof q) && in_list(q, matmul_functions)) return true;
    TSNode name = py_method_name_node(site);
    return !ts_node_is_null(name) && text_in_list(src, name, matmul_methods);
}

bool py_is_matmul_function_call(const PySource *src, TSNode call) {
    char q[PY_NAME_MAX];
    return py_is(call, "call") && py_callee_name(src, call, q, sizeof q) && in_list(q, matmul_functions);
}

/* ---- precision choices ---------------------------------------------------- */

bool py_node_makes_precision_choice(const PySource *src, TSNode n) {
    if (py_is(n, "assignment")) {
        char q[PY_NAME_MAX];
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        TSNode right = ts_node_child_by_field_name(n, "right", 5);
        if (py_qualified_name(src, left, q, sizeof q) && starts_with(q, "torch.backends.")) {
            const char *last = last_component(q);
            /* cuDNN TF32 True is the default; anything else is a deliberate choice */
            if (strcmp(q, "torch.backends.cudnn.allow_tf32") == 0) return !text_is(src, right, "True");
            return strcmp(last, "allow_tf32") == 0 || strcmp(last, "fp32_precision") == 0;
        }
    } else if (py_is(n, "call")) {
        char q[PY_NAME_MAX];
        if (py_callee_name(src, n, q, sizeof q)) {
            if (in_list(q, precision_setters) || in_list(q, scalers)) return true;
            if (starts_with(q, "torch.") && strcmp(last_component(q), "autocast") == 0) return true;
        }
        TSNode name = py_method_name_node(n);
        return !ts_node_is_null(name) && text_in_list(src, name, cast_methods);
    } else if (py_is(n, "keyword_argument")) {
        return keyword_sets_precision(src, n);
    } else if (py_is(n, "attribute")) {
        TSNode attr = ts_node_child_by_field_name(n, "attribute", 9);
        char q[PY_NAME_MAX];
        return !ts_node_is_null(attr) && text_in_list(src, attr, dtype_words) &&
               py_qualified_name(src, n, q, sizeof q) && in_list(q, reduced_dtypes);
    } else if (py_is(n, "identifier")) {
        char q[PY_NAME_MAX];
        return text_in_list(src, n, dtype_words) && py_qualified_name(src, n, q, sizeof q) &&
               in_list(q, reduced_dtypes);
    } else if (py_is(n, "string")) {
        return string_mentions_precision(src, n);
    }
    return false;
}
