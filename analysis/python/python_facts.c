#define _GNU_SOURCE /* memmem */
#include "analysis/python/python_facts.h"
#include "analysis/python/python_expr.h"

#include "analysis/python/python_index.h"
#include "analysis/python/python_workspace.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DEPTH 24
#define MAX_REACHING 8 /* bindings followed into if/else arms */

/* ---- bindings ---------------------------------------------------------- */

static bool name_matches(const PySource *src, TSNode n, const char *name, size_t length) {
    return py_is(n, "identifier") && py_text_len(n) == length && memcmp(py_text_ptr(src, n), name, length) == 0;
}

/* the nearest visible binding of name in one scope; any_offset: every binding counts */
static bool scope_binding(const PySource *src, TSNode scope, const char *name, size_t length, size_t offset,
                          bool any_offset, BindingKind *kind, TSNode *value) {
    size_t count;
    const PyBinding *b = py_index_bindings(src, scope, name, length, &count);
    bool found = false;
    uint32_t best = 0;
    for (size_t i = 0; i < count; i++) {
        bool visible;
        switch (b[i].visibility) {
        case VISIBLE_INSIDE_PARENT: visible = offset >= b[i].from && offset < b[i].until; break;
        default: visible = any_offset || b[i].from <= offset; break;
        }
        if (visible && (!found || b[i].start >= best)) {
            found = true;
            best = b[i].start;
            *kind = (BindingKind)b[i].kind;
            *value = b[i].value;
        }
    }
    return found;
}

static bool parameter_binds(const PySource *src, TSNode fn, const char *name_text, size_t length, TSNode *param) {
    TSNode params = ts_node_child_by_field_name(fn, "parameters", 10);
    uint32_t n = ts_node_named_child_count(params);
    for (uint32_t i = 0; i < n; i++) {
        TSNode p = ts_node_named_child(params, i);
        TSNode name = p;
        if (py_is(p, "typed_parameter")) name = ts_node_named_child(p, 0);
        else if (py_is(p, "default_parameter") || py_is(p, "typed_default_parameter"))
            name = ts_node_child_by_field_name(p, "name", 4);
        if (name_matches(src, name, name_text, length)) {
            *param = p;
            return true;
        }
    }
    return false;
}

BindingKind py_binding_before(const PySource *src, TSNode at, const char *name, size_t length, size_t offset,
                              TSNode *value) {
    TSNode fn = py_enclosing_function(src, at);
    TSNode scope = ts_node_is_null(fn) ? ts_tree_root_node(src->tree) : ts_node_child_by_field_name(fn, "body", 4);
    BindingKind kind = BINDING_NONE;
    TSNode v = {0};
    if (!ts_node_is_null(scope) && scope_binding(src, scope, name, length, offset, false, &kind, &v)) {
        if (value) *value = v;
        return kind;
    }
    if (!ts_node_is_null(fn)) {
        TSNode param;
        if (parameter_binds(src, fn, name, length, &param)) {
            if (value) *value = param;
            return BINDING_PARAMETER;
        }
        /* a global read inside a function: the module's binding, wherever it is */
        TSNode module = ts_tree_root_node(src->tree);
        if (scope_binding(src, module, name, length, offset, true, &kind, &v)) {
            if (value) *value = v;
            return kind;
        }
    }
    return BINDING_NONE;
}

/* the binding's statement runs whenever the use does: its block holds the use */
static bool binding_dominates(const PyBinding *b, TSNode use) {
    if (ts_node_is_null(b->value)) return true;
    TSNode stmt = py_statement_of(b->value);
    TSNode block = ts_node_parent(stmt);
    if (ts_node_is_null(block) || py_is(block, "module")) return true;
    return py_is_within(use, block);
}

/* the bindings of one scope that may reach offset, nearest first */
static size_t scope_reaching(const PySource *src, TSNode scope, TSNode id, size_t offset, bool any_offset,
                             PyReachingBinding *out, size_t max) {
    size_t count;
    const PyBinding *b = py_index_bindings(src, scope, py_text_ptr(src, id), py_text_len(id), &count);
    size_t n = 0;
    for (size_t i = count; i-- > 0 && n < max;) { /* sorted by start: latest first */
        bool visible;
        switch (b[i].visibility) {
        case VISIBLE_INSIDE_PARENT: visible = offset >= b[i].from && offset < b[i].until; break;
        default: visible = any_offset || b[i].from <= offset; break;
        }
        if (!visible) continue;
        out[n++] = (PyReachingBinding){(BindingKind)b[i].kind, b[i].value};
        if (binding_dominates(&b[i], id)) break;
    }
    return n;
}

size_t py_reaching_bindings(const PySource *src, TSNode id, PyReachingBinding *out, size_t max) {
    if (!py_is(id, "identifier") || max == 0) return 0;
    size_t offset = ts_node_start_byte(id);
    TSNode fn = py_enclosing_function(src, id);
    TSNode scope = ts_node_is_null(fn) ? ts_tree_root_node(src->tree) : ts_node_child_by_field_name(fn, "body", 4);
    size_t n = ts_node_is_null(scope) ? 0 : scope_reaching(src, scope, id, offset, false, out, max);
    if (n || ts_node_is_null(fn)) return n;
    TSNode param;
    if (parameter_binds(src, fn, py_text_ptr(src, id), py_text_len(id), &param)) {
        out[0] = (PyReachingBinding){BINDING_PARAMETER, param};
        return 1;
    }
    return scope_reaching(src, ts_tree_root_node(src->tree), id, offset, true, out, max);
}

/* ---- what expressions hold ---------------------------------------------- */

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static bool in_list(const char *s, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0) return true;
    return false;
}

static const char *last_component(const char *q) {
    const char *dot = strrchr(q, '.');
    return dot ? dot + 1 : q;
}

/* torch.* functions that do not return tensors */
static bool is_torch_tensor_function(const char *q) {
    static const char *const not_tensor_modules[] = {
        "torch.cuda.", "torch.backends.", "torch.optim.", "torch.utils.", "torch.distributed.", "torch.jit.",
        "torch.onnx.", "torch.hub.", "torch.profiler.", "torch.compiler.", "torch._dynamo.", "torch.multiprocessing.",
        "torch.amp.", "torch.random.", "torch.testing.", "torch.fx.", "torch.export.", "torch.library.",
        "torch.overrides.", "torch.autograd.", "torch.nn.init.", "torch.nn.utils.", "torch.nn.parallel.", NULL};
    static const char *const not_tensor_functions[] = {
        "device", "manual_seed", "seed", "save", "load", "is_tensor", "no_grad", "inference_mode",
        "set_grad_enabled", "enable_grad", "compile", "set_float32_matmul_precision", "get_float32_matmul_precision",
        "set_default_dtype", "get_default_dtype", "set_default_device", "set_printoptions", "is_floating_point",
        "is_complex", "numel", "finfo", "iinfo", "use_deterministic_algorithms", "set_num_threads",
        "get_num_threads", "is_grad_enabled", "is_inference_mode_enabled", "typename", "broadcast_shapes",
        "autocast", "Generator", "Size", "dtype", "get_rng_state", "set_rng_state", "initial_seed", "is_nonzero",
        "chunk", "split", "unbind", "tensor_split", "meshgrid", "sort", "topk", "max", "min", "std_mean", "var_mean",
        "unique", "frexp", "lu", "qr", "svd", "histogram", NULL};
    if (!starts_with(q, "torch.")) return false;
    if (starts_with(q, "torch.nn.functional.")) return true;
    for (size_t i = 0; not_tensor_modules[i]; i++)
        if (starts_with(q, not_tensor_modules[i])) return false;
    const char *last = last_component(q);
    if (!islower((unsigned char)last[0])) return false; /* classes: torch.nn.Linear, torch.Generator */
    if (starts_with(q, "torch.nn.")) return false;
    return !in_list(last, not_tensor_functions);
}

/* tensor methods whose result is not a tensor (or is a tuple of them) */
static const char *const non_tensor_methods[] = {
    "item", "tolist", "numpy", "size", "dim", "numel", "element_size", "data_ptr", "stride", "is_contiguous",
    "backward", "storage", "untyped_storage", "nelement", "ndimension", "get_device", "is_floating_point",
    "register_hook", "__len__", "chunk", "split", "unbind", "tensor_split", "sort", "topk", "max", "min",
    "is_pinned", "is_complex", "equal", "allclose", "all_close", "dim_order", "is_set_to", "has_names",
    "record_stream", "share_memory_", "pin_memory", "keys", "values", "items", NULL};

static bool is_module_at(const PySource *src, TSNode expr, int depth);

/* follows an identifier to the value it was last assigned */
static bool identifier_value(const PySource *src, TSNode id, TSNode *value, BindingKind *kind) {
    TSNode v = {0};
    BindingKind k = py_binding_before(src, id, py_text_ptr(src, id), py_text_len(id), ts_node_start_byte(id), &v);
    if (kind) *kind = k;
    if (value) *value = v;
    return k == BINDING_ASSIGNMENT;
}

static bool annotation_says_tensor(const PySource *src, TSNode param) {
    TSNode type = ts_node_child_by_field_name(param, "type", 4);
    if (ts_node_is_null(type)) return false;
    char *text = py_text_dup(src, type);
    bool yes = text && strstr(text, "Tensor") && !strstr(text, "List") && !strstr(text, "list") &&
               !strstr(text, "Dict") && !strstr(text, "dict") && !strstr(text, "Tuple") && !strstr(text, "tuple") &&
               !strstr(text, "Sequence");
    free(text);
    return yes;
}

/* ---- calls of a function defined in this file ---------------------------- */

/* calls `name(...)` of a plain (not method) function */
static size_t calls_of_function(const PySource *src, TSNode fn, const TSNode **calls) {
    *calls = NULL;
    TSNode parent = ts_node_parent(fn);
    if (py_is(parent, "decorated_definition")) parent = ts_node_parent(parent);
    if (py_is(ts_node_parent(parent), "class_definition")) return 0; /* methods: self.name(...) */
    TSNode name = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name)) return 0;
    size_t count;
    *calls = py_index_calls(src, py_text_ptr(src, name), py_text_len(name), &count);
    return count < 64 ? count : 64;
}

/* the argument a call passes for parameter `param` (index among positional
 * parameters, and its name for keyword passing) */
static TSNode argument_for(const PySource *src, TSNode call, uint32_t index, TSNode param_name) {
    TSNode args = py_call_arguments(call);
    TSNode null = {0};
    if (!py_is(args, "argument_list")) return null;
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (!py_is(a, "keyword_argument")) continue;
        TSNode key = ts_node_child_by_field_name(a, "name", 4);
        if (!ts_node_is_null(key) && py_same_text(src, key, param_name)) return ts_node_child_by_field_name(a, "value", 5);
    }
    return py_call_positional(call, index);
}

/* The questions one outermost is_tensor_at may ask. Depth alone does not
 * bound the work: each parameter asks every call of its function, whose
 * arguments name parameters again, so a recursive function with several
 * calls of itself (tiny-cuda-nn's `P(l, m)` in scripts/gen_sh.py, four of
 * them) made one question take hours. Past the budget the answer is "don't
 * know". Per thread: the server's workers analyse files side by side. */
#define TENSOR_STEP_BUDGET 4096u
static __thread unsigned tensor_steps;
static __thread int tensor_nesting;

static bool tensor_at(const PySource *src, TSNode expr, int depth);

/* the parameters whose callers are being asked (parameter_is_tensor_by_callers) */
static __thread TSNode params_asked[MAX_DEPTH];
static __thread int params_asked_count;

void py_facts_thread_reset(void) {
    tensor_steps = 0;
    tensor_nesting = 0;
    params_asked_count = 0;
}

static bool is_tensor_at(const PySource *src, TSNode expr, int depth) {
    if (tensor_nesting == 0) tensor_steps = 0;
    if (++tensor_steps > TENSOR_STEP_BUDGET) return false;
    tensor_nesting++;
    bool tensor = tensor_at(src, expr, depth);
    tensor_nesting--;
    return tensor;
}

/* a parameter without annotation is a tensor when the file's calls of the
 * function pass tensors for it (and nothing that is clearly not one). A
 * parameter already being asked about further out is not asked again: a
 * function that calls itself passes its own parameters on, which says nothing. */
static bool parameter_is_tensor_by_callers(const PySource *src, TSNode param, int depth) {
    if (depth > MAX_DEPTH - 4 || params_asked_count == MAX_DEPTH) return false;
    for (int i = 0; i < params_asked_count; i++)
        if (ts_node_eq(params_asked[i], param)) return false;
    TSNode params = ts_node_parent(param);
    TSNode fn = ts_node_parent(params);
    if (!py_is(params, "parameters") || !py_is(fn, "function_definition")) return false;
    TSNode name = param;
    if (py_is(param, "default_parameter")) name = ts_node_child_by_field_name(param, "name", 4);
    if (!py_is(name, "identifier")) return false;
    uint32_t index = 0;
    uint32_t count = ts_node_named_child_count(params);
    for (uint32_t i = 0; i < count; i++) {
        TSNode p = ts_node_named_child(params, i);
        if (ts_node_eq(p, param)) break;
        if (py_is(p, "identifier") || py_is(p, "default_parameter") || py_is(p, "typed_parameter") ||
            py_is(p, "typed_default_parameter"))
            index++;
    }
    const TSNode *calls;
    size_t n = calls_of_function(src, fn, &calls);
    bool tensor = false, other = false;
    params_asked[params_asked_count++] = param;
    for (size_t i = 0; i < n; i++) {
        TSNode arg = argument_for(src, calls[i], index, name);
        if (ts_node_is_null(arg)) continue;
        if (is_tensor_at(src, arg, depth + 1)) tensor = true;
        else if (py_is(arg, "integer") || py_is(arg, "float") || py_is(arg, "string") || py_is(arg, "none") ||
                 py_is(arg, "list") || py_is(arg, "tuple") || py_is(arg, "dictionary"))
            other = true;
    }
    params_asked_count--;
    return tensor && !other;
}

/* ---- local inference: what this file's own code reveals ------------------
 * Single-file facts that name no torch API: a name the code calls .backward()
 * on is a tensor; a name that a training loop calls like a model or a loss
 * (or whose .parameters() it takes) is a model, and its calls return tensors;
 * tensor methods and torch functions that return tuples give tensors when
 * unpacked or indexed; a function of this file whose returns are all tensors
 * returns a tensor. A workspace index (a model class defined in another
 * file) can add to these; each entry point below is one function. */

static unsigned workspace_call_kinds(const PySource *src, TSNode fn);
static bool local_backward_target(const PySource *src, TSNode id);
static bool local_trained_callable(const PySource *src, TSNode id);
static bool local_call_returns_tensor(const PySource *src, TSNode call, int index, int depth);
static bool local_tuple_element_is_tensor(const PySource *src, TSNode id, TSNode value, int depth);
static bool local_tensor_tuple(const PySource *src, TSNode expr, int depth);
static bool local_callee_is_tensor_function(const PySource *src, TSNode fn);
static bool local_iterates_tensor(const PySource *src, TSNode id, TSNode iterable, int depth);
static bool local_loss_function_call(const PySource *src, TSNode call, int depth);

typedef bool (*NamedCallVisitor)(const PySource *src, TSNode call, TSNode name, void *data);

/* Each call in [from, to) whose callee is `word` or ends in `.word`
 * (`suffix`: or an identifier ending in `word`, such as `_backward`); found
 * by searching the text, then asking the tree. The visitor returns true to
 * stop; returns whether it stopped. */
static bool each_call_named(const PySource *src, size_t from, size_t to, const char *word, bool suffix,
                            NamedCallVisitor visit, void *data) {
    const char *text = src->doc->text;
    size_t wl = strlen(word);
    if (to > src->doc->length) to = src->doc->length;
    TSNode root = ts_tree_root_node(src->tree);
    for (size_t at = from; at + wl <= to;) {
        const char *p = memmem(text + at, to - at, word, wl);
        if (!p) break;
        size_t pos = (size_t)(p - text);
        at = pos + 1;
        size_t q = pos + wl;
        while (q < to && (text[q] == ' ' || text[q] == '\t')) q++;
        if (q >= to || text[q] != '(') continue;
        TSNode name = ts_node_descendant_for_byte_range(root, (uint32_t)pos, (uint32_t)(pos + wl));
        if (!py_is(name, "identifier") || ts_node_end_byte(name) != pos + wl) continue;
        if (!suffix && ts_node_start_byte(name) != pos) continue;
        TSNode parent = ts_node_parent(name), call = {0};
        if (py_is(parent, "call") && ts_node_eq(ts_node_child_by_field_name(parent, "function", 8), name))
            call = parent;
        else if (py_is(parent, "attribute") && ts_node_eq(ts_node_child_by_field_name(parent, "attribute", 9), name) &&
                 py_is(ts_node_parent(parent), "call") &&
                 ts_node_eq(ts_node_child_by_field_name(ts_node_parent(parent), "function", 8), parent))
            call = ts_node_parent(parent);
        if (ts_node_is_null(call)) continue;
        if (visit(src, call, name, data)) return true;
    }
    return false;
}

/* `loss`, `(loss / n)`, `loss * w`: the leftmost operand */
static TSNode leftmost_operand(TSNode n) {
    for (int i = 0; i < 16; i++) {
        if (py_is(n, "parenthesized_expression")) n = ts_node_named_child(n, 0);
        else if (py_is(n, "binary_operator")) n = ts_node_child_by_field_name(n, "left", 4);
        else break;
    }
    return n;
}

static bool name_says_optimizer(const PySource *src, TSNode n) {
    if (py_is(n, "attribute")) n = ts_node_child_by_field_name(n, "attribute", 9);
    if (!py_is(n, "identifier")) return false;
    const char *t = py_text_ptr(src, n);
    size_t len = py_text_len(n);
    for (size_t i = 0; i + 5 <= len; i++)
        if (memcmp(t + i, "optim", 5) == 0) return true;
    return (len == 3 && memcmp(t, "opt", 3) == 0) || (len > 4 && memcmp(t, "opt_", 4) == 0) ||
           (len > 4 && memcmp(t + len - 4, "_opt", 4) == 0);
}

typedef bool (*OptimizerArgumentVisitor)(const PySource *src, TSNode call, void *data);

/* each call in [from, to) that is handed a name that says optimizer
 * (`loss_scaler(loss, optimizer)`, `train_step(model, batch, opt)`) */
static bool each_call_with_optimizer(const PySource *src, size_t from, size_t to, OptimizerArgumentVisitor visit,
                                     void *data) {
    const char *text = src->doc->text;
    TSNode root = ts_tree_root_node(src->tree);
    if (to > src->doc->length) to = src->doc->length;
    for (size_t at = from; at + 3 <= to;) {
        const char *p = memmem(text + at, to - at, "opt", 3);
        if (!p) break;
        size_t pos = (size_t)(p - text);
        at = pos + 1;
        TSNode id = ts_node_descendant_for_byte_range(root, (uint32_t)pos, (uint32_t)(pos + 3));
        if (!py_is(id, "identifier") || !name_says_optimizer(src, id)) continue;
        at = ts_node_end_byte(id);
        TSNode parent = ts_node_parent(id);
        if (py_is(parent, "keyword_argument")) {
            if (!ts_node_eq(ts_node_child_by_field_name(parent, "value", 5), id)) continue;
            parent = ts_node_parent(parent);
        }
        if (!py_is(parent, "argument_list")) continue;
        TSNode call = ts_node_parent(parent);
        if (!py_is(call, "call")) continue;
        /* not an optimizer's own construction or a scheduler built on it */
        char q[PY_NAME_MAX];
        if (py_callee_name(src, call, q, sizeof q) && starts_with(q, "torch.optim.")) continue;
        if (visit(src, call, data)) return true;
    }
    return false;
}

/* the value is plainly no tensor: a literal, `x.item()`, `float(x)`, `len(x)` */
static bool clearly_not_tensor(const PySource *src, TSNode v) {
    static const char *const literal[] = {"integer", "float", "string", "none", "true", "false", "list",
                                          "dictionary", "tuple", "concatenated_string", NULL};
    static const char *const host_methods[] = {"item", "tolist", "numpy", "size", "dim", "numel", "__len__", NULL};
    static const char *const builtins[] = {"float", "int", "len", "str", "bool", "round", NULL};
    for (size_t i = 0; literal[i]; i++)
        if (py_is(v, literal[i])) return true;
    if (!py_is(v, "call")) return false;
    TSNode fn = ts_node_child_by_field_name(v, "function", 8);
    if (py_is(fn, "identifier")) {
        for (size_t i = 0; builtins[i]; i++)
            if (py_text_eq(src, fn, builtins[i])) return true;
        return false;
    }
    TSNode m = py_method_name_node(v);
    for (size_t i = 0; host_methods[i] && !ts_node_is_null(m); i++)
        if (py_text_eq(src, m, host_methods[i])) return true;
    return false;
}

/* The names a scope hands to backward: `loss.backward()`, `(loss / n).backward()`,
 * `scaler.scale(loss).backward()`, `fabric.backward(loss)`, `_backward(loss)`,
 * and `loss_scaler(loss, optimizer, ...)` (a scaler that steps). */
#define MAX_LOSS_NAMES 8
typedef struct {
    TSNode names[MAX_LOSS_NAMES];
    size_t count;
} LossNames;

static void add_loss_name(const PySource *src, LossNames *l, TSNode target) {
    TSNode scaled;
    if (py_method_call(src, target, "scale", &scaled)) target = leftmost_operand(py_call_positional(target, 0));
    if (!py_is(target, "identifier") || l->count == MAX_LOSS_NAMES) return;
    for (size_t i = 0; i < l->count; i++)
        if (py_same_text(src, l->names[i], target)) return;
    l->names[l->count++] = target;
}

static bool visit_loss_of_backward(const PySource *src, TSNode call, TSNode name, void *data) {
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (py_is(fn, "attribute") && py_text_eq(src, name, "backward") && py_call_positional_count(call) == 0)
        add_loss_name(src, data, leftmost_operand(ts_node_child_by_field_name(fn, "object", 6)));
    else
        add_loss_name(src, data, leftmost_operand(py_call_positional(call, 0)));
    return false;
}

/* `loss_scaler(loss, optimizer, ...)`, `scaler_step(loss, opt)`: a scaler that
 * is handed the loss first and the optimizer steps it (not any call handed an
 * optimizer: `save_checkpoint(model, optimizer)` gets no loss) */
static bool visit_loss_of_scaler(const PySource *src, TSNode call, void *data) {
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode name = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "attribute", 9) : fn;
    if (!py_is(name, "identifier")) return false;
    const char *t = py_text_ptr(src, name);
    size_t len = py_text_len(name);
    bool scaler = false;
    for (size_t i = 0; i + 5 <= len && !scaler; i++) scaler = strncasecmp(t + i, "scale", 5) == 0;
    if (scaler) add_loss_name(src, data, leftmost_operand(py_call_positional(call, 0)));
    return false;
}

static void scope_loss_names(const PySource *src, TSNode scope, LossNames *out) {
    out->count = 0;
    if (ts_node_is_null(scope)) return;
    /* asked once per tensor-like name in the scope: a search of the whole
     * scope's text each time (the module's, for module-level code) made
     * PY001 quadratic in a long script; the answer is kept per scope */
    bool fresh;
    LossNames *memo = py_index_scope_memo(src, scope, PY_MEMO_LOSS_NAMES, sizeof *memo, &fresh);
    if (memo && !fresh) {
        *out = *memo;
        return;
    }
    size_t from = ts_node_start_byte(scope), to = ts_node_end_byte(scope);
    each_call_named(src, from, to, "backward", true, visit_loss_of_backward, out);
    each_call_with_optimizer(src, from, to, visit_loss_of_scaler, out);
    if (memo) *memo = *out;
}

static bool is_loss_name(const PySource *src, const LossNames *l, TSNode id) {
    for (size_t i = 0; i < l->count; i++)
        if (py_same_text(src, l->names[i], id)) return true;
    return false;
}

/* The scope that holds id hands a name spelt like it to backward (and the
 * binding id reads is not plainly something else: `loss = loss.item()`). */
static bool local_backward_target(const PySource *src, TSNode id) {
    TSNode value = {0};
    BindingKind kind = py_binding_before(src, id, py_text_ptr(src, id), py_text_len(id), ts_node_start_byte(id), &value);
    if (kind == BINDING_NONE || kind == BINDING_LOOP_TARGET) return false;
    if (kind == BINDING_ASSIGNMENT && clearly_not_tensor(src, value)) return false;
    LossNames losses;
    scope_loss_names(src, py_scope_of(src, id), &losses);
    return is_loss_name(src, &losses, id);
}

/* The scope where the binding that `at` reads lives: the function whose
 * body or parameters bind it, or the module (a null node). */
static bool binding_scope(const PySource *src, TSNode at, TSNode *scope) {
    TSNode value = {0};
    BindingKind kind = py_binding_before(src, at, py_text_ptr(src, at), py_text_len(at), ts_node_start_byte(at), &value);
    if (kind == BINDING_NONE || kind == BINDING_LOOP_TARGET || ts_node_is_null(value)) return false;
    *scope = py_enclosing_function(src, value);
    if (kind == BINDING_PARAMETER) *scope = ts_node_parent(ts_node_parent(value)); /* parameters -> def */
    return true;
}

static bool same_binding_scope(const PySource *src, TSNode other, TSNode scope) {
    TSNode s;
    if (!binding_scope(src, other, &s)) return false;
    return ts_node_is_null(s) ? ts_node_is_null(scope) : (!ts_node_is_null(scope) && ts_node_eq(s, scope));
}

typedef struct {
    TSNode id;
    TSNode scope; /* the binding's function, or null for the module */
    bool found;
} ModuleMethodSearch;

static bool visit_module_method(const PySource *src, TSNode call, TSNode name, void *data) {
    (void)name;
    ModuleMethodSearch *s = data;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode recv = ts_node_child_by_field_name(fn, "object", 6);
    if (py_is(fn, "attribute") && py_is(recv, "identifier") && py_same_text(src, recv, s->id) &&
        same_binding_scope(src, recv, s->scope))
        s->found = true;
    return s->found;
}

/* The loss's right side computes from `call` or from name `id`: they are the
 * loss call itself or its arguments, through operators, attributes,
 * subscripts and method receivers (`criterion(out.view(-1, v), y)`), but not
 * through the arguments of another call (`criterion(model(ids), y)` does
 * not compute from `ids` directly: the model does). */
static bool feeds(const PySource *src, TSNode n, TSNode call, TSNode id, bool top, int depth) {
    if (ts_node_is_null(n) || depth > 24) return false;
    if (!ts_node_is_null(call) && ts_node_eq(n, call)) return true;
    if (py_is(n, "identifier")) return !ts_node_is_null(id) && py_same_text(src, n, id);
    if (py_is(n, "parenthesized_expression") || py_is(n, "binary_operator") || py_is(n, "unary_operator")) {
        uint32_t c = ts_node_named_child_count(n);
        for (uint32_t i = 0; i < c; i++)
            if (feeds(src, ts_node_named_child(n, i), call, id, top, depth + 1)) return true;
        return false;
    }
    if (py_is(n, "attribute")) return feeds(src, ts_node_child_by_field_name(n, "object", 6), call, id, top, depth + 1);
    if (py_is(n, "subscript")) return feeds(src, ts_node_child_by_field_name(n, "value", 5), call, id, top, depth + 1);
    if (py_is(n, "keyword_argument")) return feeds(src, ts_node_child_by_field_name(n, "value", 5), call, id, top, depth + 1);
    if (!py_is(n, "call")) return false;
    TSNode fn = ts_node_child_by_field_name(n, "function", 8);
    if (py_is(fn, "attribute") && feeds(src, ts_node_child_by_field_name(fn, "object", 6), call, id, top, depth + 1))
        return true;
    if (!top) return false;
    TSNode args = py_call_arguments(n);
    uint32_t c = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < c; i++)
        if (feeds(src, ts_node_named_child(args, i), call, id, false, depth + 1)) return true;
    return false;
}

/* The assignment whose right side holds node, within its statement. */
static TSNode assignment_holding(TSNode node) {
    TSNode null = {0};
    TSNode child = node;
    for (TSNode n = ts_node_parent(node); !ts_node_is_null(n); child = n, n = ts_node_parent(n)) {
        if (py_is(n, "assignment"))
            return ts_node_eq(ts_node_child_by_field_name(n, "right", 5), child) ? n : null;
        if (py_is(n, "block") || py_is(n, "module") || py_is(n, "function_definition") || py_is(n, "lambda"))
            return null;
    }
    return null;
}

/* The result of `call` flows into what the scope hands to backward: it is
 * assigned to the loss (`loss = criterion(out, y)`, `loss, _ = model(x)`),
 * sits in the loss's right side (`loss = criterion(model(x), y)`), or is
 * assigned to a name that the loss's right side reads (`out = model(x)`
 * then `loss = criterion(out, y)`). */
static bool result_reaches_loss(const PySource *src, TSNode call) {
    TSNode scope = py_scope_of(src, call);
    LossNames losses;
    scope_loss_names(src, scope, &losses);
    if (losses.count == 0) return false;
    TSNode assign = assignment_holding(call);
    TSNode targets[8];
    size_t nt = 0;
    if (!ts_node_is_null(assign)) {
        TSNode left = ts_node_child_by_field_name(assign, "left", 4);
        if (py_is(left, "identifier")) targets[nt++] = left;
        else if (py_is(left, "pattern_list") || py_is(left, "tuple_pattern")) {
            uint32_t n = ts_node_named_child_count(left);
            for (uint32_t i = 0; i < n && nt < 8; i++)
                if (py_is(ts_node_named_child(left, i), "identifier")) targets[nt++] = ts_node_named_child(left, i);
        }
    }
    for (size_t i = 0; i < nt; i++)
        if (is_loss_name(src, &losses, targets[i])) return true;
    for (size_t l = 0; l < losses.count; l++) {
        size_t count;
        const PyBinding *b = py_index_bindings(src, scope, py_text_ptr(src, losses.names[l]),
                                               py_text_len(losses.names[l]), &count);
        for (size_t k = 0; k < count && k < 16; k++) {
            TSNode rhs = b[k].value;
            if (b[k].kind == BINDING_LOOP_TARGET || ts_node_is_null(rhs)) continue;
            TSNode none = {0};
            if (py_is_within(call, rhs) && feeds(src, rhs, call, none, true, 0)) return true;
            for (size_t i = 0; i < nt; i++)
                if (ts_node_start_byte(rhs) > ts_node_end_byte(call) && feeds(src, rhs, none, targets[i], true, 0))
                    return true;
        }
    }
    return false;
}

/* A name (a variable or a parameter, not an import or a def) whose calls
 * return tensors: some call of it (through the same binding) feeds the loss
 * the code hands to backward (a model, a loss function), or the code takes
 * its .parameters() or puts it in .eval() mode (a model). */
static bool local_trained_callable(const PySource *src, TSNode id) {
    if (!py_is(id, "identifier")) return false;
    TSNode scope;
    if (!binding_scope(src, id, &scope)) return false;
    size_t from = ts_node_is_null(scope) ? 0 : ts_node_start_byte(scope);
    size_t to = ts_node_is_null(scope) ? src->doc->length : ts_node_end_byte(scope);
    size_t count;
    const TSNode *calls = py_index_calls(src, py_text_ptr(src, id), py_text_len(id), &count);
    if (count == 0) return false; /* never called: not a model's output we could be asked about */
    ModuleMethodSearch ms = {id, scope, false};
    static const char *const module_methods[] = {"parameters", "named_parameters", "eval", NULL};
    for (size_t i = 0; module_methods[i] && !ms.found; i++)
        each_call_named(src, from, to, module_methods[i], false, visit_module_method, &ms);
    if (ms.found) return true;
    if (count > 64) count = 64;
    for (size_t i = 0; i < count; i++) {
        TSNode call = calls[i];
        if (ts_node_start_byte(call) < from || ts_node_end_byte(call) > to) continue;
        if (!same_binding_scope(src, ts_node_child_by_field_name(call, "function", 8), scope)) continue;
        if (result_reaches_loss(src, call)) return true;
    }
    return false;
}

/* `criterion = F.cross_entropy` then `criterion(out, y)` */
static bool local_callee_is_tensor_function(const PySource *src, TSNode fn) {
    if (!py_is(fn, "identifier")) return false;
    TSNode value = {0};
    if (py_binding_before(src, fn, py_text_ptr(src, fn), py_text_len(fn), ts_node_start_byte(fn), &value) !=
        BINDING_ASSIGNMENT)
        return false;
    char q[PY_NAME_MAX];
    return (py_is(value, "attribute") || py_is(value, "identifier")) && py_qualified_name(src, value, q, sizeof q) &&
           is_torch_tensor_function(q);
}

/* `criterion(out, y)`, `loss_fn(logits, labels)`: a variable or parameter
 * named like a loss function, called on a tensor */
static bool local_loss_function_call(const PySource *src, TSNode call, int depth) {
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (!py_is(fn, "identifier") || depth > MAX_DEPTH - 4) return false;
    const char *t = py_text_ptr(src, fn);
    size_t len = py_text_len(fn);
    bool named = false;
    for (size_t i = 0; i < len && !named; i++)
        named = (i + 4 <= len && strncasecmp(t + i, "loss", 4) == 0) ||
                (i + 9 <= len && strncasecmp(t + i, "criterion", 9) == 0);
    if (!named) return false;
    BindingKind kind = py_binding_before(src, fn, t, len, ts_node_start_byte(fn), NULL);
    if (kind != BINDING_PARAMETER && kind != BINDING_ASSIGNMENT) return false;
    uint32_t n = py_call_positional_count(call);
    for (uint32_t i = 0; i < n && i < 4; i++)
        if (is_tensor_at(src, py_call_positional(call, i), depth + 1)) return true;
    return false;
}

/* `def NAME` (decorated or not) among the statements of block: the last,
 * which is the one the name is bound to */
static TSNode def_in_block(const PySource *src, TSNode block, TSNode name) {
    TSNode found = {0};
    uint32_t n = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < n; i++) {
        TSNode c = ts_node_named_child(block, i);
        if (py_is(c, "decorated_definition")) c = ts_node_child_by_field_name(c, "definition", 10);
        if (!py_is(c, "function_definition")) continue;
        TSNode def_name = ts_node_child_by_field_name(c, "name", 4);
        if (!ts_node_is_null(def_name) && py_same_text(src, def_name, name)) found = c;
    }
    return found;
}

TSNode py_local_function_of_call(const PySource *src, TSNode call) {
    TSNode null = {0};
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (!py_is(fn, "identifier") || py_resolve_import(src, py_text_ptr(src, fn), py_text_len(fn))) return null;
    if (py_binding_before(src, fn, py_text_ptr(src, fn), py_text_len(fn), ts_node_start_byte(fn), NULL) !=
        BINDING_NONE)
        return null;
    for (TSNode outer = py_enclosing_function(src, call); !ts_node_is_null(outer);
         outer = py_enclosing_function(src, outer)) {
        TSNode def = def_in_block(src, ts_node_child_by_field_name(outer, "body", 4), fn);
        if (!ts_node_is_null(def)) return def;
    }
    TSNode def = py_index_top_level(src, py_text_ptr(src, fn), py_text_len(fn));
    return py_is(def, "function_definition") ? def : null;
}

TSNode py_self_method_of_call(const PySource *src, TSNode call) {
    TSNode null = {0};
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (!py_is(fn, "attribute")) return null;
    TSNode object = ts_node_child_by_field_name(fn, "object", 6);
    TSNode name = ts_node_child_by_field_name(fn, "attribute", 9);
    if (!py_is(object, "identifier") || !py_text_eq(src, object, "self") || ts_node_is_null(name)) return null;
    TSNode method = py_enclosing_function(src, call);
    if (ts_node_is_null(method)) return null;
    /* `self` is the method's own first parameter */
    TSNode params = ts_node_child_by_field_name(method, "parameters", 10);
    TSNode first = ts_node_is_null(params) ? null : ts_node_named_child(params, 0);
    if (!py_is(first, "identifier") || !py_text_eq(src, first, "self")) return null;
    TSNode holder = ts_node_parent(method);
    if (py_is(holder, "decorated_definition")) holder = ts_node_parent(holder);
    if (!py_is(holder, "block") || !py_is(ts_node_parent(holder), "class_definition")) return null;
    return def_in_block(src, holder, name);
}

typedef struct {
    const PySource *src;
    int index; /* -1: the returned value; else that element of a returned tuple */
    int depth;
    int returns;
    bool all_tensors;
} ReturnSearch;

static bool visit_return(TSNode n, void *data) {
    ReturnSearch *s = data;
    if (!s->all_tensors) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (py_is(n, "yield")) {
        s->all_tensors = false;
        return false;
    }
    if (!py_is(n, "return_statement")) return true;
    TSNode value = ts_node_named_child(n, 0);
    if (ts_node_is_null(value) || py_is(value, "comment")) return false; /* a bare return */
    if (py_is(value, "none")) return false;
    s->returns++;
    if (s->index >= 0) {
        if (py_is(value, "parenthesized_expression")) value = ts_node_named_child(value, 0);
        if (!py_is(value, "expression_list") && !py_is(value, "tuple")) {
            s->all_tensors = false;
            return false;
        }
        value = ts_node_named_child(value, (uint32_t)s->index);
    }
    if (!is_tensor_at(s->src, value, s->depth + 1)) s->all_tensors = false;
    return false;
}

/* a call of a function of this file whose every return (of a value) is a
 * tensor, or, for index >= 0, a tuple whose element `index` is */
static bool local_call_returns_tensor(const PySource *src, TSNode call, int index, int depth) {
    if (depth > MAX_DEPTH - 6) return false;
    TSNode def = py_local_function_of_call(src, call);
    if (ts_node_is_null(def) || py_is_within(call, def)) return false; /* recursion */
    TSNode body = ts_node_child_by_field_name(def, "body", 4);
    ReturnSearch s = {src, index, depth + 4, 0, true};
    py_walk(body, visit_return, &s);
    return s.returns > 0 && s.all_tensors;
}

static bool is_tuple_method(const char *m) {
    static const char *const tuple_methods[] = {"max", "min", "sort", "topk", "chunk", "split", "unbind",
                                                "tensor_split", "kthvalue", "median", "mode", "aminmax",
                                                "std_mean", "var_mean", "frexp", "unique", NULL};
    return in_list(m, tuple_methods);
}

/* the expression is a tuple (or list) of tensors: `x.max(1)`, `x.topk(k)`,
 * `torch.sort(x)`, `x.chunk(3)`, a model's tuple output */
static bool local_tensor_tuple(const PySource *src, TSNode expr, int depth) {
    if (depth > MAX_DEPTH) return false;
    if (py_is(expr, "parenthesized_expression")) return local_tensor_tuple(src, ts_node_named_child(expr, 0), depth + 1);
    if (!py_is(expr, "call")) return false;
    TSNode fn = ts_node_child_by_field_name(expr, "function", 8);
    char q[PY_NAME_MAX];
    if (py_qualified_name(src, fn, q, sizeof q) && starts_with(q, "torch.") && strchr(q + 6, '.') == NULL &&
        is_tuple_method(q + 6))
        return true; /* torch.max(x, 1), torch.chunk(x, 2) */
    if (py_is(fn, "attribute")) {
        TSNode method = ts_node_child_by_field_name(fn, "attribute", 9);
        char m[32];
        size_t len = py_text_len(method);
        if (len >= sizeof m) return false;
        memcpy(m, py_text_ptr(src, method), len);
        m[len] = '\0';
        return is_tuple_method(m) && is_tensor_at(src, ts_node_child_by_field_name(fn, "object", 6), depth + 1);
    }
    return is_module_at(src, fn, depth + 1); /* loss, aux = model(x) */
}

/* `_, pred = out.max(1)`, `loss, _, _ = model(x)`, `a, b = step()`: is the
 * element that id names a tensor? value is the assignment's right side. */
static bool local_tuple_element_is_tensor(const PySource *src, TSNode id, TSNode value, int depth) {
    TSNode assignment = ts_node_parent(value);
    if (!py_is(assignment, "assignment") || !ts_node_eq(ts_node_child_by_field_name(assignment, "right", 5), value))
        return false;
    TSNode left = ts_node_child_by_field_name(assignment, "left", 4);
    if (!py_is(left, "pattern_list") && !py_is(left, "tuple_pattern")) return false;
    int index = -1;
    uint32_t n = ts_node_named_child_count(left);
    for (uint32_t i = 0; i < n; i++) {
        TSNode c = ts_node_named_child(left, i);
        if (py_is(c, "identifier") && py_same_text(src, c, id)) index = (int)i;
    }
    if (index < 0) return false;
    if (local_tensor_tuple(src, value, depth + 1)) return true;
    if (!py_is(value, "call")) return false;
    /* a function of another module whose returns are all tensors or tuples of them */
    if (workspace_call_kinds(src, ts_node_child_by_field_name(value, "function", 8)) & PY_VALUE_TENSOR) return true;
    return local_call_returns_tensor(src, value, index, depth + 1);
}

/* ---- where a model's parameters live ----------------------------------- */

typedef struct {
    TSNode id;
    TSNode scope;
    bool moved;
} MoveSearch;

/* `model.cuda()`, `model.to(device)` (not `.to("cpu")`), `model.to_empty(...)` */
static bool visit_model_move(const PySource *src, TSNode call, TSNode name, void *data) {
    (void)name;
    MoveSearch *s = data;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode recv = ts_node_child_by_field_name(fn, "object", 6);
    if (!py_is(fn, "attribute") || !py_is(recv, "identifier") || !py_same_text(src, recv, s->id)) return false;
    if (py_method_call(src, call, "to", NULL)) {
        TSNode dev = py_call_positional(call, 0);
        if (ts_node_is_null(dev)) dev = py_call_keyword(src, call, "device");
        if (ts_node_is_null(dev) || py_device_not_cuda(src, dev)) return false; /* .to(dtype), .to("cpu") */
    }
    s->moved = true;
    return true;
}

/* a callee that may put a model on a device: `fabric.setup(model)`,
 * `accelerator.prepare(model)`, `DDP(model, ...)`, `FSDP(model)`, `wrap(model)` */
static bool callee_may_move(const PySource *src, TSNode call) {
    static const char *const words[] = {"setup", "prepare", "DistributedDataParallel", "DataParallel", "DDP", "FSDP",
                                        "wrap", "device", "cuda", "launch", "to_", NULL};
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode name = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "attribute", 9) : fn;
    if (!py_is(name, "identifier")) return true;
    const char *t = py_text_ptr(src, name);
    size_t len = py_text_len(name);
    for (size_t w = 0; words[w]; w++) {
        size_t wl = strlen(words[w]);
        for (size_t i = 0; i + wl <= len; i++)
            if (memcmp(t + i, words[w], wl) == 0) return true;
    }
    return false;
}

static bool visit_model_argument(TSNode n, void *data) {
    void **args = data;
    const PySource *src = args[0];
    MoveSearch *s = args[1];
    if (s->moved) return false;
    if (!py_is(n, "call")) return true;
    TSNode list = py_call_arguments(n);
    uint32_t c = ts_node_named_child_count(list);
    for (uint32_t i = 0; i < c && !s->moved; i++) {
        TSNode a = ts_node_named_child(list, i);
        if (py_is(a, "keyword_argument")) a = ts_node_child_by_field_name(a, "value", 5);
        if (py_is(a, "identifier") && py_same_text(src, a, s->id) && callee_may_move(src, n)) s->moved = true;
    }
    return !s->moved;
}

/* a model built here from a class: `Net(...)`, `nn.Linear(...)`,
 * `torchvision.models.resnet18()`, with no device= */
static bool is_fresh_model(const PySource *src, TSNode v) {
    if (!py_is(v, "call") || !ts_node_is_null(py_call_keyword(src, v, "device")) || py_call_has_splat(v)) return false;
    TSNode fn = ts_node_child_by_field_name(v, "function", 8);
    TSNode name = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "attribute", 9) : fn;
    if (!py_is(name, "identifier")) return false;
    char q[PY_NAME_MAX];
    if (py_qualified_name(src, fn, q, sizeof q) && starts_with(q, "torchvision.models.")) return true;
    return isupper((unsigned char)*py_text_ptr(src, name)) != 0;
}

static bool stays_on_host_at(const PySource *src, TSNode id, int depth) {
    if (!py_is(id, "identifier") || depth > 4) return false;
    PyReachingBinding reach[MAX_REACHING];
    size_t n = py_reaching_bindings(src, id, reach, MAX_REACHING);
    if (n == 0 || n == MAX_REACHING) return false;
    for (size_t i = 0; i < n; i++) {
        if (reach[i].kind != BINDING_ASSIGNMENT) return false;
        TSNode v = reach[i].value;
        if (py_is(v, "identifier") ? !stays_on_host_at(src, v, depth + 1) : !is_fresh_model(src, v)) return false;
    }
    /* nothing in the binding's scope moves it, or hands it to something that may */
    TSNode scope;
    if (!binding_scope(src, id, &scope)) return false;
    TSNode range = ts_node_is_null(scope) ? ts_tree_root_node(src->tree) : scope;
    MoveSearch ms = {id, scope, false};
    each_call_named(src, ts_node_start_byte(range), ts_node_end_byte(range), "cuda", false, visit_model_move, &ms);
    if (!ms.moved)
        each_call_named(src, ts_node_start_byte(range), ts_node_end_byte(range), "to", false, visit_model_move, &ms);
    if (!ms.moved)
        each_call_named(src, ts_node_start_byte(range), ts_node_end_byte(range), "to_empty", false, visit_model_move,
                        &ms);
    if (!ms.moved) {
        void *args[2] = {(void *)src, &ms};
        py_walk(range, visit_model_argument, args);
    }
    return !ms.moved;
}

bool py_module_stays_on_host(const PySource *src, TSNode expr) { return stays_on_host_at(src, expr, 0); }

/* `x` in `for x in t` or `[... for x in t]`, where t is a tensor (the target
 * a plain name, not a tuple: `for i, x in enumerate(t)` is not followed) */
static bool local_iterates_tensor(const PySource *src, TSNode id, TSNode iterable, int depth) {
    TSNode target = ts_node_prev_named_sibling(iterable);
    if (!py_is(target, "identifier") || !py_same_text(src, target, id)) return false;
    return is_tensor_at(src, iterable, depth + 1);
}

/* ---- end of local inference ------------------------------------------- */

/* ---- facts from the project's other modules (python_workspace.h) ---------
 * Asked only when this file's own code does not tell: a model class, a
 * function returning tensors, a device or optimizer that another module of
 * the project defines and this one imports. Without a workspace (a file
 * checked on its own) every answer is "don't know". */

/* `models.resnet50` as written (an identifier or attribute chain) */
static bool spelled_dotted(const PySource *src, TSNode n, char *buf, size_t size, size_t *used, int depth) {
    if (depth > 16) return false;
    if (py_is(n, "identifier")) {
        size_t len = py_text_len(n);
        if (*used + len + 1 >= size) return false;
        memcpy(buf + *used, py_text_ptr(src, n), len);
        *used += len;
        buf[*used] = '\0';
        return true;
    }
    if (!py_is(n, "attribute") ||
        !spelled_dotted(src, ts_node_child_by_field_name(n, "object", 6), buf, size, used, depth + 1))
        return false;
    if (*used + 2 >= size) return false;
    buf[(*used)++] = '.';
    buf[*used] = '\0';
    return spelled_dotted(src, ts_node_child_by_field_name(n, "attribute", 9), buf, size, used, depth + 1);
}

static bool has_workspace(const PySource *src) { return src->workspace && src->module; }

/* what calling fn gives, by the workspace */
static unsigned workspace_call_kinds(const PySource *src, TSNode fn) {
    char spelled[PY_NAME_MAX];
    size_t used = 0;
    if (!has_workspace(src) || !spelled_dotted(src, fn, spelled, sizeof spelled, &used, 0)) return 0;
    return py_workspace_call_kinds(src->workspace, src->module, spelled);
}

/* what `recv.method(...)` gives when recv holds an instance of a class of the
 * workspace (`loader = Loader(); loader.next_batch()`) */
static unsigned workspace_method_kinds(const PySource *src, TSNode recv, TSNode method) {
    if (!has_workspace(src) || !py_is(recv, "identifier")) return 0;
    TSNode value;
    if (!identifier_value(src, recv, &value, NULL) || !py_is(value, "call")) return 0;
    char cls[PY_NAME_MAX], name[64];
    size_t used = 0, len = py_text_len(method);
    if (!spelled_dotted(src, ts_node_child_by_field_name(value, "function", 8), cls, sizeof cls, &used, 0) ||
        len >= sizeof name)
        return 0;
    memcpy(name, py_text_ptr(src, method), len);
    name[len] = '\0';
    return py_workspace_method_kinds(src->workspace, src->module, cls, name);
}

/* what a name this file does not bind holds (`from config import device`) */
static unsigned workspace_name_kinds(const PySource *src, TSNode expr) {
    char spelled[PY_NAME_MAX];
    size_t used = 0;
    if (!has_workspace(src) || !spelled_dotted(src, expr, spelled, sizeof spelled, &used, 0)) return 0;
    if (py_is(expr, "identifier") &&
        py_binding_before(src, expr, py_text_ptr(src, expr), py_text_len(expr), ts_node_start_byte(expr), NULL) !=
            BINDING_NONE)
        return 0;
    return py_workspace_name_kinds(src->workspace, src->module, spelled);
}

static bool tensor_at(const PySource *src, TSNode expr, int depth) {
    if (ts_node_is_null(expr) || depth > MAX_DEPTH) return false;
    const char *type = ts_node_type(expr);
    if (strcmp(type, "parenthesized_expression") == 0)
        return is_tensor_at(src, ts_node_named_child(expr, 0), depth + 1);
    if (strcmp(type, "call") == 0) {
        char q[PY_NAME_MAX];
        TSNode fn = ts_node_child_by_field_name(expr, "function", 8);
        if (py_qualified_name(src, fn, q, sizeof q) && is_torch_tensor_function(q)) return true;
        if (py_is(fn, "attribute")) {
            TSNode recv = ts_node_child_by_field_name(fn, "object", 6);
            TSNode method = ts_node_child_by_field_name(fn, "attribute", 9);
            char m[64];
            size_t len = py_text_len(method);
            if (len >= sizeof m) return false;
            memcpy(m, py_text_ptr(src, method), len);
            m[len] = '\0';
            if (is_module_at(src, recv, depth + 1)) return strcmp(m, "forward") == 0;
            /* x.max(), x.min(): a tensor; x.max(1): a tuple of them */
            if ((strcmp(m, "max") == 0 || strcmp(m, "min") == 0 || strcmp(m, "median") == 0) &&
                py_call_positional_count(expr) == 0 && ts_node_is_null(py_call_keyword(src, expr, "dim")))
                return is_tensor_at(src, recv, depth + 1);
            if (in_list(m, non_tensor_methods)) return false;
            if (is_tensor_at(src, recv, depth + 1)) return true;
            /* `data.get_batch(...)`, `loader.next_batch()` of the project's other modules */
            return ((workspace_call_kinds(src, fn) | workspace_method_kinds(src, recv, method)) & PY_VALUE_TENSOR) != 0;
        }
        return is_module_at(src, fn, depth + 1) /* model(x), criterion(out, y) */ ||
               local_callee_is_tensor_function(src, fn) || local_loss_function_call(src, expr, depth) ||
               local_call_returns_tensor(src, expr, -1, depth) || (workspace_call_kinds(src, fn) & PY_VALUE_TENSOR);
    }
    if (strcmp(type, "identifier") == 0) {
        TSNode value;
        BindingKind kind;
        if (identifier_value(src, expr, &value, &kind)) {
            if (is_tensor_at(src, value, depth + 1)) return true;
        } else if (kind == BINDING_PARAMETER) {
            if (annotation_says_tensor(src, value) || parameter_is_tensor_by_callers(src, value, depth)) return true;
        } else if (kind == BINDING_OTHER) {
            if (local_tuple_element_is_tensor(src, expr, value, depth)) return true;
        } else if (kind == BINDING_LOOP_TARGET) {
            /* `for row in t` / `[x.item() for x in t]`: iterating a tensor gives tensors */
            return local_iterates_tensor(src, expr, value, depth);
        } else if (kind == BINDING_NONE && (workspace_name_kinds(src, expr) & PY_VALUE_TENSOR)) {
            return true;
        }
        return local_backward_target(src, expr);
    }
    if (strcmp(type, "attribute") == 0) {
        TSNode attr = ts_node_child_by_field_name(expr, "attribute", 9);
        static const char *const tensor_attrs[] = {"T", "mT", "H", "mH", "grad", "data", "real", "imag", NULL};
        char a[16];
        size_t len = py_text_len(attr);
        if (len >= sizeof a) return false;
        memcpy(a, py_text_ptr(src, attr), len);
        a[len] = '\0';
        return in_list(a, tensor_attrs) && is_tensor_at(src, ts_node_child_by_field_name(expr, "object", 6), depth + 1);
    }
    if (strcmp(type, "subscript") == 0) {
        TSNode value = ts_node_child_by_field_name(expr, "value", 5);
        return is_tensor_at(src, value, depth + 1) || local_tensor_tuple(src, value, depth + 1);
    }
    if (strcmp(type, "binary_operator") == 0)
        return is_tensor_at(src, ts_node_child_by_field_name(expr, "left", 4), depth + 1) ||
               is_tensor_at(src, ts_node_child_by_field_name(expr, "right", 5), depth + 1);
    if (strcmp(type, "unary_operator") == 0)
        return is_tensor_at(src, ts_node_child_by_field_name(expr, "argument", 8), depth + 1);
    if (strcmp(type, "comparison_operator") == 0) {
        /* `a is None`, `x in xs` are plain bools */
        uint32_t n = ts_node_child_count(expr);
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_child(expr, i);
            if (!ts_node_is_named(c)) {
                const char *op = ts_node_type(c);
                if (strcmp(op, "is") == 0 || strcmp(op, "in") == 0 || strcmp(op, "not") == 0 ||
                    strcmp(op, "is not") == 0 || strcmp(op, "not in") == 0)
                    return false;
            }
        }
        return is_tensor_at(src, ts_node_named_child(expr, 0), depth + 1) ||
               is_tensor_at(src, ts_node_named_child(expr, 1), depth + 1);
    }
    if (strcmp(type, "conditional_expression") == 0)
        return is_tensor_at(src, ts_node_named_child(expr, 0), depth + 1) &&
               is_tensor_at(src, ts_node_named_child(expr, 2), depth + 1);
    return false;
}

bool py_is_tensor(const PySource *src, TSNode expr) { return is_tensor_at(src, expr, 0); }

/* a class defined in this file that derives from torch.nn.Module */
static bool is_module_class(const PySource *src, const char *name, size_t length, int depth) {
    if (depth > 8) return false;
    TSNode c = py_index_top_level(src, name, length);
    if (!py_is(c, "class_definition")) return false;
    TSNode bases = ts_node_child_by_field_name(c, "superclasses", 12);
    uint32_t nb = ts_node_named_child_count(bases);
    for (uint32_t b = 0; b < nb; b++) {
        TSNode base = ts_node_named_child(bases, b);
        char q[PY_NAME_MAX];
        if (!py_qualified_name(src, base, q, sizeof q)) continue;
        if (starts_with(q, "torch.nn.") || strcmp(q, "nn.Module") == 0) return true;
        if (py_is(base, "identifier") && is_module_class(src, py_text_ptr(src, base), py_text_len(base), depth + 1))
            return true;
    }
    return false;
}

bool py_class_stays_on_host(const char *name, size_t len) {
    static const char *const host_side[] = {"Tokenizer", "Processor", "FeatureExtractor", "Config", "ModelCard",
                                            "Scheduler", NULL};
    for (size_t k = 0; host_side[k]; k++)
        if (memmem(name, len, host_side[k], strlen(host_side[k]))) return true;
    return false;
}

/* `transformers.AutoModelForCausalLM.from_pretrained` loads a model (so do
 * `AutoBackbone`, `SpeechT5HifiGan`, `BertGenerationEncoder`); a tokenizer,
 * processor, feature extractor, configuration or model card does not. */
bool py_is_transformers_model_load(const char *q) {
    size_t n = strlen(q);
    static const char suffix[] = ".from_pretrained";
    if (!starts_with(q, "transformers.") || n < sizeof suffix || strcmp(q + n - (sizeof suffix - 1), suffix) != 0)
        return false;
    const char *cls_end = q + n - (sizeof suffix - 1), *cls = cls_end;
    while (cls > q && cls[-1] != '.') cls--;
    return !py_class_stays_on_host(cls, (size_t)(cls_end - cls));
}

bool py_returns_its_module(const PySource *src, TSNode call, TSNode *module) {
    static const char *const keeps_module[] = {"to", "cuda", "eval", "train", "half", "float", "bfloat16",
                                               "double", "requires_grad_", "to_empty", "cpu", NULL};
    for (size_t i = 0; keeps_module[i]; i++)
        if (py_method_call(src, call, keeps_module[i], module)) return true;
    return false;
}

static bool is_module_at(const PySource *src, TSNode expr, int depth) {
    if (ts_node_is_null(expr) || depth > MAX_DEPTH) return false;
    if (py_is(expr, "parenthesized_expression")) return is_module_at(src, ts_node_named_child(expr, 0), depth + 1);
    if (py_is(expr, "identifier")) {
        TSNode value;
        if (identifier_value(src, expr, &value, NULL) && is_module_at(src, value, depth + 1)) return true;
        return local_trained_callable(src, expr) || (workspace_name_kinds(src, expr) & PY_VALUE_MODULE);
    }
    if (!py_is(expr, "call")) return false;
    char q[PY_NAME_MAX];
    TSNode fn = ts_node_child_by_field_name(expr, "function", 8);
    if (py_qualified_name(src, fn, q, sizeof q)) {
        const char *last = last_component(q);
        if (starts_with(q, "torch.nn.") && !starts_with(q, "torch.nn.functional.") && !starts_with(q, "torch.nn.init.") &&
            !starts_with(q, "torch.nn.utils.") && isupper((unsigned char)last[0]) && strcmp(last, "Parameter") != 0)
            return true;
        if (starts_with(q, "torchvision.models.")) return true;
        if (py_is_transformers_model_load(q)) return true;
        if (strcmp(q, "torch.compile") == 0) return is_module_at(src, py_call_positional(expr, 0), depth + 1);
        if (py_is(fn, "identifier") && is_module_class(src, py_text_ptr(src, fn), py_text_len(fn), 0)) return true;
    }
    if (py_is(fn, "attribute")) {
        TSNode module;
        if (py_returns_its_module(src, expr, &module)) return is_module_at(src, module, depth + 1);
        TSNode method = ts_node_child_by_field_name(fn, "attribute", 9);
        char m[32];
        size_t len = py_text_len(method);
        if (len >= sizeof m) return false;
        memcpy(m, py_text_ptr(src, method), len);
        m[len] = '\0';
        /* frameworks that wrap the model they are handed: fabric.setup_module(model), accelerator.prepare(model) */
        static const char *const wraps_module[] = {"setup_module", "setup", "prepare", "prepare_model", NULL};
        if (in_list(m, wraps_module) && py_call_positional_count(expr) == 1)
            return is_module_at(src, py_call_positional(expr, 0), depth + 1);
    }
    /* a model class, or a function building one, of the project's other modules */
    return (workspace_call_kinds(src, fn) & PY_VALUE_MODULE) != 0;
}

bool py_is_module_instance(const PySource *src, TSNode expr) { return is_module_at(src, expr, 0); }

static bool is_optimizer_at(const PySource *src, TSNode expr, int depth) {
    if (ts_node_is_null(expr) || depth > MAX_DEPTH) return false;
    if (py_is(expr, "identifier")) {
        TSNode value;
        return identifier_value(src, expr, &value, NULL) && is_optimizer_at(src, value, depth + 1);
    }
    if (!py_is(expr, "call")) return false;
    char q[PY_NAME_MAX];
    if (!py_callee_name(src, expr, q, sizeof q)) return false;
    if (starts_with(q, "torch.optim.") && !starts_with(q, "torch.optim.lr_scheduler.") &&
        isupper((unsigned char)last_component(q)[0]))
        return true;
    return (workspace_call_kinds(src, ts_node_child_by_field_name(expr, "function", 8)) & PY_VALUE_OPTIMIZER) != 0;
}

bool py_is_optimizer(const PySource *src, TSNode expr) { return is_optimizer_at(src, expr, 0); }

/* the text inside a string literal's quotes starts with `word` */
static bool string_starts_with(const PySource *src, TSNode s, const char *word) {
    const char *t = py_text_ptr(src, s);
    size_t len = py_text_len(s), i = 0, n = strlen(word);
    while (i < len && isalpha((unsigned char)t[i])) i++; /* f, r, b prefixes */
    while (i < len && (t[i] == '"' || t[i] == '\'')) i++;
    return len - i >= n && strncmp(t + i, word, n) == 0;
}

static bool string_says_cuda(const PySource *src, TSNode s) { return string_starts_with(src, s, "cuda"); }

static bool name_says_device(const char *name, size_t len) {
    return (len >= 6 && memcmp(name + len - 6, "device", 6) == 0) || (len == 3 && memcmp(name, "dev", 3) == 0);
}

/* names that hold a GPU's index where a device is expected: `.to(local_rank)`,
 * `model.cuda(args.gpu)`, `torch.device("cuda", rank)` */
static bool name_says_gpu_index(const char *name, size_t len) {
    static const char *const names[] = {"local_rank", "rank", "gpu", "gpu_id", "gpu_index", "device_id", NULL};
    for (size_t i = 0; names[i]; i++)
        if (strlen(names[i]) == len && memcmp(name, names[i], len) == 0) return true;
    return false;
}

static bool is_device_at(const PySource *src, TSNode expr, int depth) {
    if (ts_node_is_null(expr) || depth > MAX_DEPTH) return false;
    if (py_is(expr, "string")) return string_says_cuda(src, expr);
    if (py_is(expr, "parenthesized_expression")) return is_device_at(src, ts_node_named_child(expr, 0), depth + 1);
    if (py_is(expr, "conditional_expression"))
        return is_device_at(src, ts_node_named_child(expr, 0), depth + 1) ||
               is_device_at(src, ts_node_named_child(expr, 2), depth + 1);
    if (py_is(expr, "binary_operator")) /* "cuda:" + str(rank) */
        return py_is(ts_node_child_by_field_name(expr, "left", 4), "string") &&
               is_device_at(src, ts_node_child_by_field_name(expr, "left", 4), depth + 1);
    if (py_is(expr, "call")) {
        static const char *const device_ctor[] = {"torch.device", NULL};
        static const char *const current[] = {"torch.accelerator.current_accelerator", "torch.cuda.current_device",
                                              NULL};
        if (py_callee_is_any(src, expr, current)) return true;
        if (!py_callee_is_any(src, expr, device_ctor)) return false;
        TSNode arg = py_call_positional(expr, 0);
        if (ts_node_is_null(arg)) arg = py_call_keyword(src, expr, "type");
        return py_is(arg, "integer") || is_device_at(src, arg, depth + 1); /* torch.device(0) is cuda:0 */
    }
    if (py_is(expr, "attribute")) {
        TSNode attr = ts_node_child_by_field_name(expr, "attribute", 9);
        const char *name = py_text_ptr(src, attr);
        size_t len = py_text_len(attr);
        if (name_says_device(name, len) || name_says_gpu_index(name, len)) return true;
        /* torch.accelerator.current_accelerator().type, x.device.type */
        return len == 4 && memcmp(name, "type", 4) == 0 &&
               is_device_at(src, ts_node_child_by_field_name(expr, "object", 6), depth + 1);
    }
    if (py_is(expr, "identifier")) {
        const char *name = py_text_ptr(src, expr);
        size_t len = py_text_len(expr);
        if (name_says_device(name, len) || name_says_gpu_index(name, len)) return true;
        /* any binding that may reach it: `if accel: dev = current_accelerator()` / `else: dev = "cpu"` */
        PyReachingBinding reach[MAX_REACHING];
        size_t n = py_reaching_bindings(src, expr, reach, MAX_REACHING);
        for (size_t i = 0; i < n; i++)
            if (reach[i].kind == BINDING_ASSIGNMENT && is_device_at(src, reach[i].value, depth + 1)) return true;
        return n == 0 && (workspace_name_kinds(src, expr) & PY_VALUE_DEVICE); /* `from config import gpu` */
    }
    return false;
}

bool py_is_device_expr(const PySource *src, TSNode expr) { return is_device_at(src, expr, 0); }

static bool not_cuda_at(const PySource *src, TSNode expr, int depth) {
    if (ts_node_is_null(expr) || depth > 8) return false;
    if (py_is(expr, "string")) return !string_says_cuda(src, expr);
    if (py_is(expr, "parenthesized_expression")) return not_cuda_at(src, ts_node_named_child(expr, 0), depth + 1);
    if (py_is(expr, "conditional_expression"))
        return not_cuda_at(src, ts_node_named_child(expr, 0), depth + 1) &&
               not_cuda_at(src, ts_node_named_child(expr, 2), depth + 1);
    if (py_is(expr, "call")) {
        static const char *const device_ctor[] = {"torch.device", NULL};
        TSNode arg = py_call_positional(expr, 0);
        return py_callee_is_any(src, expr, device_ctor) && py_is(arg, "string") && !string_says_cuda(src, arg);
    }
    if (py_is(expr, "identifier")) {
        /* every binding that may reach it says so */
        PyReachingBinding reach[MAX_REACHING];
        size_t n = py_reaching_bindings(src, expr, reach, MAX_REACHING);
        if (n == 0 || n == MAX_REACHING) return false;
        for (size_t i = 0; i < n; i++)
            if (reach[i].kind != BINDING_ASSIGNMENT || !not_cuda_at(src, reach[i].value, depth + 1)) return false;
        return true;
    }
    return false;
}

bool py_device_not_cuda(const PySource *src, TSNode expr) { return not_cuda_at(src, expr, 0); }

/* Names that hold a run's settings, whose .device is the device the program
 * chose (`args.device`, `cfg.device`), not one read off a tensor. */
static bool names_settings(const PySource *src, TSNode id) {
    static const char *const names[] = {"self", "cls", "args", "opt", "opts", "options", "config", "cfg", "conf",
                                        "hparams", "hp", "params", "settings", "flags", "FLAGS", "accelerator",
                                        "fabric", "trainer", "torch", NULL};
    for (size_t i = 0; names[i]; i++)
        if (py_text_eq(src, id, names[i])) return true;
    return false;
}

/* x.device where x is a tensor the code has: a parameter or local that is not
 * a settings object, `self.weight`, `next(model.parameters())` */
static bool tensor_device_attribute(const PySource *src, TSNode expr) {
    if (!py_is(expr, "attribute")) return false;
    TSNode attr = ts_node_child_by_field_name(expr, "attribute", 9);
    if (!py_text_eq(src, attr, "device")) return false;
    TSNode obj = py_unparen(ts_node_child_by_field_name(expr, "object", 6));
    if (py_is(obj, "identifier") && py_text_eq(src, obj, "self")) { /* a model's own device (a property) */
        TSNode c = expr;
        while (!ts_node_is_null(c) && !py_is(c, "class_definition")) c = ts_node_parent(c);
        TSNode name = ts_node_is_null(c) ? c : ts_node_child_by_field_name(c, "name", 4);
        return !ts_node_is_null(name) && is_module_class(src, py_text_ptr(src, name), py_text_len(name), 0);
    }
    if (py_is(obj, "identifier")) return !names_settings(src, obj);
    if (py_is(obj, "attribute")) { /* self.weight.device; not self.args.device or args.model.device */
        TSNode root = py_unparen(ts_node_child_by_field_name(obj, "object", 6));
        TSNode leaf = ts_node_child_by_field_name(obj, "attribute", 9);
        return py_is(root, "identifier") && py_text_eq(src, root, "self") && !names_settings(src, leaf) &&
               !py_text_eq(src, leaf, "device");
    }
    if (py_is(obj, "call")) { /* next(model.parameters()).device */
        static const char *const next[] = {"next", NULL};
        TSNode arg = py_call_positional(obj, 0), recv;
        return py_callee_is_any(src, obj, next) && !ts_node_is_null(arg) &&
               (py_method_call(src, arg, "parameters", &recv) || py_method_call(src, arg, "buffers", &recv));
    }
    return false;
}

static bool follows_tensor_at(const PySource *src, TSNode expr, int depth) {
    if (ts_node_is_null(expr) || depth > MAX_DEPTH) return false;
    expr = py_unparen(expr);
    if (tensor_device_attribute(src, expr)) return true;
    if (!py_is(expr, "identifier")) return false;
    PyReachingBinding reach[MAX_REACHING];
    size_t n = py_reaching_bindings(src, expr, reach, MAX_REACHING);
    if (n == 0 || n == MAX_REACHING) return false;
    for (size_t i = 0; i < n; i++) {
        if (reach[i].kind == BINDING_ASSIGNMENT && follows_tensor_at(src, reach[i].value, depth + 1)) continue;
        /* `_, n, device = *x.shape, x.device`: an unpacking whose values hold a tensor's device and no
         * other device */
        if (reach[i].kind != BINDING_OTHER || !py_is(reach[i].value, "expression_list")) return false;
        bool tensor_device = false;
        for (uint32_t k = 0; k < ts_node_named_child_count(reach[i].value); k++) {
            TSNode item = ts_node_named_child(reach[i].value, k);
            if (tensor_device_attribute(src, item)) tensor_device = true;
            else if (is_device_at(src, item, depth + 1)) return false;
        }
        if (!tensor_device) return false;
    }
    return true;
}

bool py_device_follows_tensor(const PySource *src, TSNode expr) { return follows_tensor_at(src, expr, 0); }

bool py_is_cuda_device(const PySource *src, TSNode expr) {
    return !ts_node_is_null(expr) && py_is_device_expr(src, expr) && !py_device_not_cuda(src, expr);
}

/* ---- GPU work ----------------------------------------------------------- */

static bool has_cuda_device_arg(const PySource *src, TSNode call) {
    TSNode dev = py_call_keyword(src, call, "device");
    return !ts_node_is_null(dev) && py_is_device_expr(src, dev);
}

bool py_is_host_factory(const PySource *src, TSNode call) {
    static const char *const factories[] = {
        "torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.zeros",    "torch.ones",
        "torch.empty",  "torch.full",      "torch.arange",     "torch.rand",     "torch.randn",
        "torch.randint", "torch.randperm", "torch.linspace",   "torch.logspace", "torch.eye",
        "torch.Tensor", "torch.LongTensor", "torch.FloatTensor", NULL};
    return py_callee_is_any(src, call, factories) && !has_cuda_device_arg(src, call);
}

bool py_call_sets_cuda_default(const PySource *src, TSNode call) {
    static const char *const set_device[] = {"torch.set_default_device", NULL};
    static const char *const set_type[] = {"torch.set_default_tensor_type", NULL};
    if (!py_is(call, "call")) return false;
    TSNode arg = py_call_positional(call, 0);
    if (ts_node_is_null(arg)) return false;
    if (py_callee_is_any(src, call, set_device)) return py_is_cuda_device(src, arg);
    if (!py_callee_is_any(src, call, set_type)) return false;
    const char *t = py_text_ptr(src, arg);
    size_t len = py_text_len(arg);
    if (py_is(arg, "string") && len > 2) { /* "torch.cuda.HalfTensor" */
        t++;
        len -= 2;
    } else if (!py_is(arg, "attribute")) {
        return false;
    }
    return len > 11 && strncmp(t, "torch.cuda.", 11) == 0;
}

bool py_call_is_device_work(const PySource *src, TSNode call) {
    TSNode recv;
    if (py_method_call(src, call, "backward", &recv) || py_method_call(src, call, "cuda", &recv)) return true;
    if (py_method_call(src, call, "step", &recv)) return py_is_optimizer(src, recv);
    if (py_method_call(src, call, "to", &recv)) {
        TSNode dev = py_call_positional(call, 0);
        if (ts_node_is_null(dev)) dev = py_call_keyword(src, call, "device");
        return py_is_device_expr(src, dev);
    }
    if (has_cuda_device_arg(src, call)) return true;
    return py_is_module_instance(src, ts_node_child_by_field_name(call, "function", 8));
}

bool py_call_does_gpu_work(const PySource *src, TSNode call) {
    if (!src->uses_gpu || !py_is(call, "call") || py_is_host_factory(src, call)) return false;
    TSNode recv;
    if (py_method_call(src, call, "backward", &recv)) return true;
    if (py_method_call(src, call, "step", &recv)) return py_is_optimizer(src, recv);
    if (py_method_call(src, call, "cuda", &recv)) return true;
    if (py_method_call(src, call, "to", &recv)) {
        TSNode dev = py_call_positional(call, 0);
        if (ts_node_is_null(dev)) dev = py_call_keyword(src, call, "device");
        return py_is_device_expr(src, dev);
    }
    return py_is_tensor(src, call);
}

typedef struct {
    const PySource *src;
    bool found;
} GpuSearch;

static bool visit_gpu(TSNode n, void *data) {
    GpuSearch *s = data;
    if (s->found) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (py_is(n, "call") && py_call_does_gpu_work(s->src, n)) {
        s->found = true;
        return false;
    }
    if (py_is(n, "binary_operator")) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        if (!ts_node_is_null(op) && strcmp(ts_node_type(op), "@") == 0 && s->src->uses_gpu &&
            (py_is_tensor(s->src, ts_node_child_by_field_name(n, "left", 4)) ||
             py_is_tensor(s->src, ts_node_child_by_field_name(n, "right", 5)))) {
            s->found = true;
            return false;
        }
    }
    return true;
}

bool py_does_gpu_work(const PySource *src, TSNode node) {
    if (!src->uses_gpu) return false;
    GpuSearch s = {src, false};
    py_walk(node, visit_gpu, &s);
    return s.found;
}

/* ---- how often a statement runs ----------------------------------------- */

typedef struct {
    const PySource *src;
    TSNode loop;
    bool found;
} NameSearch;

static bool has_operator(TSNode n, const char *op, int depth) {
    if (depth > 16 || ts_node_is_null(n)) return false;
    if (py_is(n, "binary_operator")) {
        TSNode o = ts_node_child_by_field_name(n, "operator", 8);
        if (!ts_node_is_null(o) && strcmp(ts_node_type(o), op) == 0) return true;
    }
    uint32_t c = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < c; i++)
        if (has_operator(ts_node_named_child(n, i), op, depth + 1)) return true;
    return false;
}

/* the identifier changes every iteration: the loop's target, or a counter
 * the loop body increments */
static bool is_loop_counter(const PySource *src, TSNode id, TSNode loop) {
    if (!py_is(id, "identifier")) return false;
    TSNode value;
    BindingKind kind = py_binding_before(src, id, py_text_ptr(src, id), py_text_len(id), ts_node_start_byte(id), &value);
    if (kind == BINDING_LOOP_TARGET) return true;
    if (kind == BINDING_OTHER) {
        /* `step += 1` inside the loop */
        return py_is_within(value, loop);
    }
    return false;
}

/* the counter itself or arithmetic on it (`i`, `i + 1`, `(step - start)`),
 * not a value looked up through it: `group["norm_type"] == 2` in a loop over
 * parameter groups tests each group, not the iteration */
static bool counter_arithmetic(const PySource *src, TSNode n, TSNode loop, int depth) {
    if (depth > 8 || ts_node_is_null(n)) return false;
    if (py_is(n, "parenthesized_expression")) return counter_arithmetic(src, ts_node_named_child(n, 0), loop, depth + 1);
    if (py_is(n, "binary_operator"))
        return counter_arithmetic(src, ts_node_child_by_field_name(n, "left", 4), loop, depth + 1) ||
               counter_arithmetic(src, ts_node_child_by_field_name(n, "right", 5), loop, depth + 1);
    return is_loop_counter(src, n, loop);
}

static bool is_integer_side(TSNode n) {
    return py_is(n, "integer") || (py_is(n, "binary_operator") && py_is(ts_node_named_child(n, 1), "integer")) ||
           py_is(n, "call") /* len(loader) - 1 */;
}

static bool condition_is_periodic(const PySource *src, TSNode cond, TSNode loop) {
    if (has_operator(cond, "%", 0)) return true;
    /* `if step == 0:` / `if i == len(loader) - 1:` with a counter on one side */
    if (py_is(cond, "comparison_operator") && ts_node_named_child_count(cond) == 2) {
        TSNode a = ts_node_named_child(cond, 0), b = ts_node_named_child(cond, 1);
        bool eq = false;
        uint32_t n = ts_node_child_count(cond);
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_child(cond, i);
            if (!ts_node_is_named(c) && strcmp(ts_node_type(c), "==") == 0) eq = true;
        }
        if (eq && ((is_integer_side(b) && counter_arithmetic(src, a, loop, 0)) ||
                   (is_integer_side(a) && counter_arithmetic(src, b, loop, 0))))
            return true;
        /* `if i < 4:`: only the first few iterations (a debug print of the first rows) */
        bool below = false;
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_child(cond, i);
            if (!ts_node_is_named(c) && (strcmp(ts_node_type(c), "<") == 0 || strcmp(ts_node_type(c), "<=") == 0))
                below = true;
        }
        if (below && py_is(b, "integer") && py_text_len(b) <= 2 && is_loop_counter(src, a, loop)) return true;
    }
    if (py_is(cond, "boolean_operator")) {
        /* `a and b`: periodic when either side is */
        TSNode op = ts_node_child_by_field_name(cond, "operator", 8);
        if (!ts_node_is_null(op) && strcmp(ts_node_type(op), "and") == 0)
            return condition_is_periodic(src, ts_node_child_by_field_name(cond, "left", 4), loop) ||
                   condition_is_periodic(src, ts_node_child_by_field_name(cond, "right", 5), loop);
    }
    if (py_is(cond, "parenthesized_expression")) return condition_is_periodic(src, ts_node_named_child(cond, 0), loop);
    return false;
}

static bool block_ends_loop(TSNode block) {
    uint32_t n = ts_node_named_child_count(block);
    for (uint32_t i = n; i-- > 0;) {
        TSNode last = ts_node_named_child(block, i);
        if (py_is(last, "comment")) continue;
        return py_is(last, "break_statement") || py_is(last, "return_statement") || py_is(last, "raise_statement");
    }
    return false;
}

/* py_is_periodic below a loop, or below a function (bound): there a block
 * that ends in return says nothing about how often it runs */
static bool periodic_below(const PySource *src, TSNode node, TSNode loop) {
    bool in_function = py_is(loop, "function_definition");
    TSNode child = node;
    for (TSNode n = ts_node_parent(node); !ts_node_is_null(n) && !ts_node_eq(n, loop);
         child = n, n = ts_node_parent(n)) {
        if (!in_function && py_is(n, "block") && block_ends_loop(n)) return true;
        if (py_is(n, "if_statement") || py_is(n, "elif_clause")) {
            TSNode cons = ts_node_child_by_field_name(n, "consequence", 11);
            if (ts_node_eq(child, cons) &&
                condition_is_periodic(src, ts_node_child_by_field_name(n, "condition", 9), loop))
                return true;
        }
    }
    return false;
}

bool py_is_periodic(const PySource *src, TSNode node, TSNode loop) { return periodic_below(src, node, loop); }

bool py_is_cpu_device(const PySource *src, TSNode expr) {
    if (py_is(expr, "string")) return py_text_eq(src, expr, "\"cpu\"") || py_text_eq(src, expr, "'cpu'");
    static const char *const device_ctor[] = {"torch.device", NULL};
    return py_is(expr, "call") && py_callee_is_any(src, expr, device_ctor) &&
           py_is_cpu_device(src, py_call_positional(expr, 0));
}

bool py_is_blocking_to_cpu(const PySource *src, TSNode call) {
    if (!py_method_call(src, call, "to", NULL)) return false;
    TSNode dev = py_call_positional(call, 0);
    if (ts_node_is_null(dev)) dev = py_call_keyword(src, call, "device");
    if (ts_node_is_null(dev) || !py_is_cpu_device(src, dev)) return false;
    TSNode nb = py_call_keyword(src, call, "non_blocking");
    return ts_node_is_null(nb) || py_text_eq(src, nb, "False");
}

bool py_is_sync_call(const PySource *src, TSNode call) {
    static const char *const sync_methods[] = {"item", "cpu", "numpy", "tolist", "synchronize", NULL};
    static const char *const sync_functions[] = {"torch.cuda.synchronize", "torch.cuda.current_stream",
                                                 "torch.cuda.Event.synchronize", NULL};
    TSNode name = py_method_name_node(call);
    if (!ts_node_is_null(name)) {
        for (size_t i = 0; sync_methods[i]; i++)
            if (py_text_eq(src, name, sync_methods[i])) return true;
    }
    return py_callee_is_any(src, call, sync_functions) && !py_method_call(src, call, "current_stream", NULL);
}

/* ---- autograd state ----------------------------------------------------- */

static bool disables_grad(const PySource *src, TSNode expr) {
    static const char *const off[] = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                                      "torch.autograd.inference_mode", "torch.autograd.grad_mode.no_grad", NULL};
    static const char *const toggles[] = {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", NULL};
    if (py_is(expr, "decorator")) expr = ts_node_named_child(expr, 0);
    if (py_is(expr, "call")) {
        if (py_callee_is_any(src, expr, off)) return true;
        if (py_callee_is_any(src, expr, toggles)) return py_text_eq(src, py_call_positional(expr, 0), "False");
        return false;
    }
    char q[PY_NAME_MAX];
    return py_qualified_name(src, expr, q, sizeof q) && in_list(q, off); /* @torch.no_grad */
}

/* A project's own decorator named for what it does: `@smart_inference_mode()`
 * (yolov5: a factory that returns `torch.inference_mode()(fn)`, or no_grad on
 * old versions), `@no_grad_wrapper`. Defined in another file, so its body is
 * out of sight; its last name part containing `inference_mode` or `no_grad`
 * is taken at its word. Decorators only: such a factory is no context manager. */
static bool names_grad_off_decorator(const PySource *src, TSNode decorator) {
    TSNode e = ts_node_named_child(decorator, 0);
    if (py_is(e, "call")) e = ts_node_child_by_field_name(e, "function", 8);
    if (py_is(e, "attribute")) e = ts_node_child_by_field_name(e, "attribute", 9);
    if (!py_is(e, "identifier")) return false;
    const char *name = py_text_ptr(src, e);
    size_t len = py_text_len(e);
    return memmem(name, len, "inference_mode", 14) != NULL || memmem(name, len, "no_grad", 7) != NULL;
}

/* `stack.enter_context(torch.no_grad())` (contextlib.ExitStack, detectron2's
 * inference_on_dataset): gradients stay off until the stack closes, at the
 * end of its `with` block at the earliest, so from here to the end of this
 * block. */
static bool enters_grad_off_context(const PySource *src, TSNode expr) {
    return py_is(expr, "call") && py_method_call(src, expr, "enter_context", NULL) &&
           py_is(py_call_positional(expr, 0), "call") && disables_grad(src, py_call_positional(expr, 0));
}

/* where the first statement of the block that turns gradients off starts
 * (SIZE_MAX: none), found with a cursor (ts_node_named_child(block, i) walks
 * from the first child each time) */
static size_t first_grad_off(const PySource *src, TSNode block) {
    TSTreeCursor c = ts_tree_cursor_new(block);
    size_t found = SIZE_MAX;
    if (ts_tree_cursor_goto_first_child(&c)) do {
            TSNode stmt = ts_tree_cursor_current_node(&c);
            if (ts_node_is_named(stmt) && py_is(stmt, "expression_statement") &&
                (disables_grad(src, ts_node_named_child(stmt, 0)) ||
                 enters_grad_off_context(src, ts_node_named_child(stmt, 0)))) {
                found = ts_node_start_byte(stmt);
                break;
            }
        } while (ts_tree_cursor_goto_next_sibling(&c));
    ts_tree_cursor_delete(&c);
    return found;
}

/* asked for every node inside the block, so the answer is kept per block */
static bool scope_turns_grad_off_before(const PySource *src, TSNode block, size_t offset) {
    bool fresh;
    size_t *memo = py_index_scope_memo(src, block, PY_MEMO_GRAD_OFF, sizeof *memo, &fresh);
    size_t first = memo && !fresh ? *memo : first_grad_off(src, block);
    if (memo) *memo = first;
    return first < offset;
}

bool py_grad_disabled_at(const PySource *src, TSNode node) {
    for (TSNode n = ts_node_parent(node); !ts_node_is_null(n); n = ts_node_parent(n)) {
        if (py_is(n, "with_statement")) {
            TSNode clause = ts_node_named_child(n, 0);
            uint32_t k = ts_node_named_child_count(clause);
            for (uint32_t i = 0; i < k; i++) {
                TSNode item = ts_node_named_child(clause, i);
                TSNode value = ts_node_child_by_field_name(item, "value", 5);
                if (py_is(value, "as_pattern")) value = ts_node_named_child(value, 0);
                if (disables_grad(src, value)) return true;
            }
        }
        if (py_is(n, "decorated_definition")) {
            uint32_t k = ts_node_named_child_count(n);
            for (uint32_t i = 0; i < k; i++) {
                TSNode d = ts_node_named_child(n, i);
                if (py_is(d, "decorator") && (disables_grad(src, d) || names_grad_off_decorator(src, d))) return true;
            }
        }
        if ((py_is(n, "block") || py_is(n, "module")) && scope_turns_grad_off_before(src, n, ts_node_start_byte(node)))
            return true;
    }
    return false;
}

/* ---- device context -------------------------------------------------------- */

static bool node_mentions(const PySource *src, TSNode node, const char *word) {
    const char *text = py_text_ptr(src, node);
    size_t len = py_text_len(node), wl = strlen(word);
    for (size_t i = 0; i + wl <= len; i++)
        if (memcmp(text + i, word, wl) == 0) return true;
    return false;
}

static bool runs_on_device(const PySource *src, TSNode node, int depth) {
    if (!src->uses_gpu) return false;
    TSNode fn = py_enclosing_function(src, node);
    if (ts_node_is_null(fn)) return true; /* module level of a file that uses CUDA */
    if (node_mentions(src, fn, "cuda") || node_mentions(src, fn, "device")) return true;
    if (depth >= 3) return false;
    const TSNode *calls;
    size_t n = calls_of_function(src, fn, &calls);
    bool yes = false;
    for (size_t i = 0; i < n && !yes; i++) {
        TSNode caller = py_enclosing_function(src, calls[i]);
        if (ts_node_is_null(caller) || !ts_node_eq(caller, fn)) yes = runs_on_device(src, calls[i], depth + 1);
    }
    return yes;
}

bool py_runs_on_device(const PySource *src, TSNode node) { return runs_on_device(src, node, 0); }

/* ---- hot code: work queued on every iteration ---------------------------- */

static bool is_statement_loop(TSNode n) { return py_is(n, "for_statement") || py_is(n, "while_statement"); }

/* `x.to(device)`, `x.cuda()`: moving a batch's fields, not computing */
static bool is_move_call(const PySource *src, TSNode call) {
    return py_method_call(src, call, "to", NULL) || py_method_call(src, call, "cuda", NULL);
}

static bool is_matmul_of_tensor(const PySource *src, TSNode n) {
    if (!py_is(n, "binary_operator")) return false;
    TSNode op = ts_node_child_by_field_name(n, "operator", 8);
    return !ts_node_is_null(op) && strcmp(ts_node_type(op), "@") == 0 &&
           (py_is_tensor(src, ts_node_child_by_field_name(n, "left", 4)) ||
            py_is_tensor(src, ts_node_child_by_field_name(n, "right", 5)));
}

typedef struct {
    const PySource *src;
    bool found;
} InnerWork;

/* a loop that computes on the GPU (not one that only moves a batch's
 * tensors to the device) */
static bool visit_inner(TSNode n, void *data) {
    InnerWork *w = data;
    if (w->found) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if ((py_is(n, "call") && py_call_does_gpu_work(w->src, n) && !is_move_call(w->src, n)) ||
        is_matmul_of_tensor(w->src, n))
        w->found = true;
    return !w->found;
}

typedef struct {
    const PySource *src;
    bool found;
} LoopSearch;

static bool visit_gpu_loop(TSNode n, void *data) {
    LoopSearch *s = data;
    if (s->found) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (is_statement_loop(n)) {
        InnerWork inner = {s->src, false};
        py_walk(n, visit_inner, &inner);
        s->found = inner.found;
        return false;
    }
    return true;
}

static bool function_has_busy_loop(const PySource *src, TSNode fn, bool parameters_only);

/* a call of a function of this file whose body runs a loop of GPU work, or a
 * loop that calls what it was handed (`run_benchmark(fn, a, b)`,
 * `train_one_epoch(...)`): a whole sweep, not a step */
static bool calls_local_loop(const PySource *src, TSNode call) {
    TSNode def = py_local_function_of_call(src, call);
    if (ts_node_is_null(def) || py_is_within(call, def)) return false;
    LoopSearch s = {src, false};
    py_walk(ts_node_child_by_field_name(def, "body", 4), visit_gpu_loop, &s);
    return s.found || function_has_busy_loop(src, def, true);
}

typedef struct {
    const PySource *src;
    TSNode loop;      /* the loop (or function) whose own work is counted */
    bool work;        /* GPU work at its own level */
    bool device_work; /* of which some certainly runs on a device */
    bool inner_loop;  /* a nested loop, or a helper's loop, does GPU work */
} LoopWork;

static bool visit_work(TSNode n, void *data) {
    LoopWork *w = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (is_statement_loop(n)) {
        if (py_is_periodic(w->src, n, w->loop)) return false; /* an evaluation every N steps */
        InnerWork inner = {w->src, false};
        py_walk(n, visit_inner, &inner);
        if (inner.found) w->inner_loop = true;
        return false;
    }
    if (py_is(n, "call")) {
        if (py_call_does_gpu_work(w->src, n)) {
            w->work = true;
            if (py_call_is_device_work(w->src, n)) w->device_work = true;
        } else if (!py_is_periodic(w->src, n, w->loop) && calls_local_loop(w->src, n)) {
            w->inner_loop = true;
        }
    }
    if (is_matmul_of_tensor(w->src, n)) w->work = true;
    return true;
}

static bool own_work_is_hot(const PySource *src, const LoopWork *w, TSNode at) {
    (void)src;
    /* an outer (per-epoch, per-configuration) loop: its statements run once per inner loop */
    if (!w->work || w->inner_loop) return false;
    return w->device_work || py_runs_on_device(src, at);
}

bool py_loop_is_hot(const PySource *src, TSNode loop) {
    if (!src->uses_gpu || ts_node_is_null(loop)) return false;
    LoopWork w = {src, loop, false, false, false};
    if (is_statement_loop(loop)) {
        TSNode cond = ts_node_child_by_field_name(loop, "condition", 9);
        if (py_is(loop, "while_statement") && !ts_node_is_null(cond)) py_walk(cond, visit_work, &w);
        TSNode body = ts_node_child_by_field_name(loop, "body", 4);
        if (ts_node_is_null(body)) return false;
        py_walk(body, visit_work, &w);
    } else {
        /* a comprehension: its first iterable runs once, the rest per element */
        uint32_t n = ts_node_named_child_count(loop);
        bool first_clause = true;
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_named_child(loop, i);
            if (first_clause && py_is(c, "for_in_clause")) {
                first_clause = false;
                continue;
            }
            py_walk(c, visit_work, &w);
        }
    }
    return own_work_is_hot(src, &w, loop);
}

typedef struct {
    const PySource *src;
    TSNode fn;
    bool parameters_only; /* count only calls of the function's parameters */
    bool found;
} BusyLoopSearch;

static bool visit_non_move_call(TSNode n, void *data) {
    BusyLoopSearch *s = data;
    if (s->found) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (!py_is(n, "call") || is_move_call(s->src, n)) return true;
    if (!s->parameters_only) {
        s->found = true;
    } else {
        TSNode callee = ts_node_child_by_field_name(n, "function", 8);
        s->found = py_is(callee, "identifier") &&
                   py_binding_before(s->src, callee, py_text_ptr(s->src, callee), py_text_len(callee),
                                     ts_node_start_byte(callee), NULL) == BINDING_PARAMETER;
    }
    return !s->found;
}

/* a loop (not a periodic one) that calls anything but device moves: it may
 * run the work many times (`for _ in range(iters): fn(x)`) */
static bool visit_busy_loop(TSNode n, void *data) {
    BusyLoopSearch *s = data;
    if (s->found) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (!is_statement_loop(n)) return true;
    if (py_is_periodic(s->src, n, s->fn)) return false;
    BusyLoopSearch inner = {s->src, s->fn, s->parameters_only, false};
    py_walk(ts_node_child_by_field_name(n, "body", 4), visit_non_move_call, &inner);
    s->found = inner.found;
    return false;
}

/* a loop in fn (not a periodic one) that calls anything but device moves,
 * or (parameters_only) that calls what fn was handed: `fn(x)` */
static bool function_has_busy_loop(const PySource *src, TSNode fn, bool parameters_only) {
    TSNode body = ts_node_child_by_field_name(fn, "body", 4);
    if (ts_node_is_null(body)) return false;
    BusyLoopSearch busy = {src, fn, parameters_only, false};
    py_walk(body, visit_busy_loop, &busy);
    return busy.found;
}

bool py_function_is_step(const PySource *src, TSNode fn) {
    if (!src->uses_gpu || !py_is(fn, "function_definition")) return false;
    TSNode body = ts_node_child_by_field_name(fn, "body", 4);
    if (ts_node_is_null(body) || function_has_busy_loop(src, fn, false)) return false;
    LoopWork w = {src, fn, false, false, false};
    py_walk(body, visit_work, &w);
    return own_work_is_hot(src, &w, body);
}

/* leftmost identifier of a dotted callee: `nn` in nn.DataParallel */
static TSNode callee_root_identifier(TSNode expr) {
    for (int depth = 0; depth < 32 && py_is(expr, "attribute"); depth++)
        expr = ts_node_child_by_field_name(expr, "object", 6);
    TSNode null = {0};
    return py_is(expr, "identifier") ? expr : null;
}

/* a class or function called `name` directly in block `body` */
static bool block_defines_name(const PySource *src, TSNode body, TSNode name) {
    uint32_t n = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < n; i++) {
        TSNode c = ts_node_named_child(body, i);
        if (py_is(c, "decorated_definition")) c = ts_node_child_by_field_name(c, "definition", 10);
        if (!py_is(c, "class_definition") && !py_is(c, "function_definition")) continue;
        TSNode def_name = ts_node_child_by_field_name(c, "name", 4);
        if (!ts_node_is_null(def_name) && py_same_text(src, def_name, name)) return true;
    }
    return false;
}

/* The name the callee starts with is not (only) the import: the file defines
 * a class or function of that name, at module level or in an enclosing
 * function, or assigns it, or takes it as a parameter. */
bool py_callee_shadowed(const PySource *src, TSNode call, TSNode callee) {
    TSNode id = callee_root_identifier(callee);
    if (ts_node_is_null(id)) return true; /* not a dotted name: not ours to judge */
    const char *name = py_text_ptr(src, id);
    size_t length = py_text_len(id);
    if (!ts_node_is_null(py_index_top_level(src, name, length))) return true;
    if (py_binding_before(src, call, name, length, ts_node_start_byte(call), NULL) != BINDING_NONE) return true;
    for (TSNode fn = py_enclosing_function(src, call); !ts_node_is_null(fn);
         fn = py_enclosing_function(src, fn)) {
        TSNode body = ts_node_child_by_field_name(fn, "body", 4);
        if (!ts_node_is_null(body) && block_defines_name(src, body, id)) return true;
    }
    return false;
}
