#include "analysis/python/python_module_facts.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "analysis/finding.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_index.h"
#include "analysis/python/python_loaders.h"
#include "analysis/python/python_precision.h"
#include "analysis/python/python_roles.h"
#include "analysis/python/python_workspace.h"
#include "analysis/base/text_format.h"

#define MAX_CALLS 8       /* callees remembered per function or variable */
#define MAX_USES 4096     /* uses remembered per module */

typedef struct {
    const PySource *src;
    PyModuleFacts *m;
    bool oom;
    /* functions whose training role was worked out: start byte -> role bits */
    struct { uint32_t start; unsigned role; } *roles;
    size_t role_count, role_cap;
    PyGpuLoaders fed; /* calls of imported functions whose results go to the GPU as batches */
} Extract;

/* makes room for one more item in an array of `count` items; the arrays keep
 * no capacity, it is the power of two at or above count: full at 0 and at
 * each power of two (array_reserve doubles it then), else there is room,
 * which a capacity of count + 1 says */
static bool grow(Extract *x, void **items, size_t count, size_t size) {
    size_t cap = count != 0 && (count & (count - 1)) != 0 ? count + 1 : count;
    if (!array_reserve(items, count, &cap, size, 1)) {
        x->oom = true;
        return false;
    }
    return true;
}

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* `a.b.c` as written (identifier or attribute chain), heap; NULL otherwise */
static char *dotted_text(const PySource *src, TSNode n) {
    if (py_is(n, "identifier") || py_is(n, "dotted_name")) return py_text_dup(src, n);
    if (!py_is(n, "attribute")) return NULL;
    char *left = dotted_text(src, ts_node_child_by_field_name(n, "object", 6));
    char *right = left ? py_text_dup(src, ts_node_child_by_field_name(n, "attribute", 9)) : NULL;
    char *joined = right ? format_string("%s.%s", left, right) : NULL;
    free(left);
    free(right);
    return joined;
}

/* ---- imports -------------------------------------------------------------- */

/* The package a relative import with `dots` leading dots starts from. */
static char *relative_base(const PyModuleFacts *m, size_t dots) {
    char *base = strdup(m->name);
    if (!base) return NULL;
    size_t up = m->is_package ? dots - 1 : dots;
    for (size_t i = 0; i < up; i++) {
        char *dot = strrchr(base, '.');
        if (!dot) {
            base[0] = '\0';
            break;
        }
        *dot = '\0';
    }
    return base;
}

static void add_import(Extract *x, char *local, char *target) {
    PyModuleFacts *m = x->m;
    if (local && target && grow(x, (void **)&m->imports, m->import_count, sizeof *m->imports)) {
        m->imports[m->import_count++] = (PyFactImport){local, target};
        return;
    }
    free(local);
    free(target);
}

static char *join_dotted(const char *a, const char *b) {
    if (!a || !*a) return strdup(b);
    return format_string("%s.%s", a, b);
}

#define MAX_LOADED 1024 /* modules remembered as loaded by a module's imports */

static void add_loaded(Extract *x, char *dotted) {
    PyModuleFacts *m = x->m;
    if (dotted && *dotted && m->loaded_module_count < MAX_LOADED &&
        grow(x, (void **)&m->loaded_modules, m->loaded_module_count, sizeof *m->loaded_modules)) {
        m->loaded_modules[m->loaded_module_count++] = dotted;
        return;
    }
    free(dotted);
}

static void collect_import(Extract *x, TSNode stmt) {
    const PySource *src = x->src;
    if (py_is(stmt, "import_statement")) {
        uint32_t n = ts_node_named_child_count(stmt);
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_named_child(stmt, i);
            if (py_is(c, "aliased_import")) {
                add_import(x, py_text_dup(src, ts_node_child_by_field_name(c, "alias", 5)),
                           dotted_text(src, ts_node_child_by_field_name(c, "name", 4)));
                add_loaded(x, dotted_text(src, ts_node_child_by_field_name(c, "name", 4)));
            } else if (py_is(c, "dotted_name")) {
                add_loaded(x, py_text_dup(src, c));
                char *full = py_text_dup(src, c);
                char *dot = full ? strchr(full, '.') : NULL;
                if (dot) *dot = '\0';
                add_import(x, full, full ? strdup(full) : NULL);
            }
        }
        return;
    }
    TSNode module = ts_node_child_by_field_name(stmt, "module_name", 11);
    char *base = NULL;
    if (py_is(module, "relative_import")) {
        char *text = py_text_dup(src, module);
        if (!text) return;
        size_t dots = 0;
        while (text[dots] == '.') dots++;
        char *prefix = relative_base(x->m, dots);
        base = prefix && text[dots] ? join_dotted(prefix, text + dots) : prefix ? strdup(prefix) : NULL;
        free(prefix);
        free(text);
    } else if (py_is(module, "dotted_name")) {
        base = py_text_dup(src, module);
    }
    if (!base) return;
    add_loaded(x, strdup(base));
    uint32_t n = ts_node_named_child_count(stmt);
    for (uint32_t i = 0; i < n; i++) {
        TSNode c = ts_node_named_child(stmt, i);
        if (ts_node_eq(c, module)) continue;
        TSNode name = c, alias = c;
        if (py_is(c, "aliased_import")) {
            name = ts_node_child_by_field_name(c, "name", 4);
            alias = ts_node_child_by_field_name(c, "alias", 5);
        } else if (!py_is(c, "dotted_name")) {
            continue;
        }
        char *spelled = py_text_dup(src, name);
        add_import(x, py_text_dup(src, alias), spelled ? join_dotted(base, spelled) : NULL);
        add_loaded(x, spelled ? join_dotted(base, spelled) : NULL);
        free(spelled);
    }
    free(base);
}

static bool visit_imports(TSNode n, void *data) {
    if (py_is(n, "import_statement") || py_is(n, "import_from_statement")) {
        collect_import(data, n);
        return false;
    }
    const char *type = ts_node_type(n);
    return strcmp(type, "module") == 0 || strcmp(type, "block") == 0 || strstr(type, "statement") ||
           strstr(type, "definition") || strstr(type, "clause");
}

/* ---- values --------------------------------------------------------------- */

static bool is_dataloader(const PySource *src, TSNode expr) {
    static const char *const names[] = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
                                        NULL};
    if (py_is(expr, "identifier")) {
        TSNode value;
        return py_binding_before(src, expr, py_text_ptr(src, expr), py_text_len(expr), ts_node_start_byte(expr),
                                 &value) == BINDING_ASSIGNMENT &&
               py_is(value, "call") && py_callee_is_any(src, value, names);
    }
    return py_is(expr, "call") && py_callee_is_any(src, expr, names);
}

static unsigned value_kinds(const PySource *src, TSNode expr) {
    if (py_is(expr, "expression_list") || py_is(expr, "tuple")) {
        uint32_t n = ts_node_named_child_count(expr);
        for (uint32_t i = 0; i < n; i++)
            if (!py_is_tensor(src, ts_node_named_child(expr, i))) return 0;
        return n ? PY_VALUE_TENSOR : 0;
    }
    unsigned kinds = 0;
    if (py_is_tensor(src, expr)) kinds |= PY_VALUE_TENSOR;
    if (py_is_module_instance(src, expr)) kinds |= PY_VALUE_MODULE;
    if (py_is_optimizer(src, expr)) kinds |= PY_VALUE_OPTIMIZER;
    if (is_dataloader(src, expr)) kinds |= PY_VALUE_DATALOADER;
    if (py_is_device_expr(src, expr) && !py_is(expr, "identifier")) kinds |= PY_VALUE_DEVICE;
    return kinds;
}

/* `Net(cfg).to(device).eval()` -> `Net(cfg)` */
static TSNode strip_moves(const PySource *src, TSNode n) {
    static const char *const keeps[] = {"to", "cuda", "eval", "train", "half", "float", "bfloat16", NULL};
    for (int depth = 0; depth < 8; depth++) {
        if (py_is(n, "parenthesized_expression")) {
            n = ts_node_named_child(n, 0);
            continue;
        }
        TSNode name = py_method_name_node(n);
        bool keep = false;
        for (size_t i = 0; !ts_node_is_null(name) && keeps[i]; i++) keep |= py_text_eq(src, name, keeps[i]);
        if (!keep) break;
        n = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
    }
    return n;
}

/* The callee of a call that may be another module's function or class:
 * a dotted name that does not resolve to torch or a builtin. Heap or NULL. */
static char *project_callee(const PySource *src, TSNode call) {
    if (!py_is(call, "call")) return NULL;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    char q[PY_NAME_MAX];
    if (!py_qualified_name(src, fn, q, sizeof q)) return NULL;
    if (starts_with(q, "torch") || starts_with(q, "self.") || strcmp(q, "self") == 0) return NULL;
    static const char *const builtins[] = {"len", "int", "float", "str", "list", "dict", "tuple", "set", "range",
                                           "enumerate", "zip", "print", "sum", "min", "max", "abs", "round",
                                           "sorted", "isinstance", "getattr", "super", "iter", "next", "map",
                                           "open", "bool", "type", "any", "all", NULL};
    for (size_t i = 0; builtins[i]; i++)
        if (strcmp(q, builtins[i]) == 0) return NULL;
    return dotted_text(src, fn);
}

static void add_call(Extract *x, PyFactValue *v, char *callee) {
    if (!callee) return;
    for (size_t i = 0; i < v->call_count; i++)
        if (strcmp(v->calls[i], callee) == 0) {
            free(callee);
            return;
        }
    if (v->call_count < MAX_CALLS && grow(x, (void **)&v->calls, v->call_count, sizeof *v->calls))
        v->calls[v->call_count++] = callee;
    else
        free(callee);
}

/* What expr gives: its kinds, and the project callees it comes from. */
static void describe_value(Extract *x, PyFactValue *v, TSNode expr) {
    v->kinds |= value_kinds(x->src, expr);
    TSNode inner = strip_moves(x->src, expr);
    if (py_is(inner, "identifier")) {
        TSNode value;
        if (py_binding_before(x->src, inner, py_text_ptr(x->src, inner), py_text_len(inner), ts_node_start_byte(inner),
                              &value) == BINDING_ASSIGNMENT)
            inner = strip_moves(x->src, value);
    }
    add_call(x, v, project_callee(x->src, inner));
}

typedef struct {
    Extract *x;
    PyFactValue *v;
    TSNode fn;
} ReturnScan;

static bool visit_returns(TSNode n, void *data) {
    ReturnScan *s = data;
    if (!ts_node_eq(n, s->fn) &&
        (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")))
        return false;
    if (py_is(n, "return_statement") && ts_node_named_child_count(n) > 0) {
        describe_value(s->x, s->v, ts_node_named_child(n, 0));
        return false;
    }
    return true;
}

static uint32_t line_of(const PySource *src, TSNode n) {
    return (uint32_t)document_line_of(src->doc, ts_node_start_byte(n)) + 1;
}

static PyFactValue function_value(Extract *x, TSNode fn) {
    PyFactValue v = {0};
    v.name = py_text_dup(x->src, ts_node_child_by_field_name(fn, "name", 4));
    v.line = line_of(x->src, fn);
    ReturnScan s = {x, &v, fn};
    py_walk(fn, visit_returns, &s);
    return v;
}

static void free_value(PyFactValue *v) {
    free(v->name);
    for (size_t i = 0; i < v->call_count; i++) free(v->calls[i]);
    free(v->calls);
}

/* ---- classes -------------------------------------------------------------- */

static bool is_matmul_call(const PySource *src, TSNode call) {
    char q[PY_NAME_MAX];
    if (!py_callee_name(src, call, q, sizeof q)) return false;
    static const char *const layers[] = {"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                                         "ConvTranspose2d", "ConvTranspose3d", "MultiheadAttention", "Transformer",
                                         "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
                                         "TransformerDecoderLayer", "LSTM", "GRU", "RNN", NULL};
    static const char *const functions[] = {"torch.matmul", "torch.mm", "torch.bmm", "torch.einsum", "torch.baddbmm",
                                            "torch.addmm", "torch.nn.functional.linear",
                                            "torch.nn.functional.scaled_dot_product_attention", NULL};
    if (starts_with(q, "torch.nn.")) {
        const char *last = strrchr(q, '.') + 1;
        for (size_t i = 0; layers[i]; i++)
            if (strcmp(last, layers[i]) == 0) return true;
    }
    for (size_t i = 0; functions[i]; i++)
        if (strcmp(q, functions[i]) == 0) return true;
    return false;
}

typedef struct {
    Extract *x;
    PyFactClass *c;
} ClassScan;

static bool visit_class_body(TSNode n, void *data) {
    ClassScan *s = data;
    const PySource *src = s->x->src;
    if (py_is(n, "binary_operator")) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        if (py_text_eq(src, op, "@")) s->c->matmul_work = true;
    }
    if (py_is(n, "call")) {
        if (is_matmul_call(src, n)) s->c->matmul_work = true;
        /* the project's own layers it builds (`Block(cfg)`): their work is its work */
        char *callee = project_callee(src, n);
        const char *last = callee ? strrchr(callee, '.') : NULL;
        last = last ? last + 1 : callee;
        bool known = false;
        for (size_t i = 0; callee && i < s->c->part_count; i++) known |= strcmp(s->c->parts[i], callee) == 0;
        if (callee && !known && isupper((unsigned char)last[0]) && s->c->part_count < 32 &&
            grow(s->x, (void **)&s->c->parts, s->c->part_count, sizeof *s->c->parts)) {
            s->c->parts[s->c->part_count++] = callee;
            callee = NULL;
        }
        free(callee);
    }
    return true;
}

static char **class_bases(Extract *x, TSNode cls, size_t *count) {
    *count = 0;
    TSNode args = ts_node_child_by_field_name(cls, "superclasses", 12);
    uint32_t n = ts_node_named_child_count(args);
    char **bases = NULL;
    for (uint32_t i = 0; i < n; i++) {
        char *b = dotted_text(x->src, ts_node_named_child(args, i));
        if (!b) continue;
        if (!grow(x, (void **)&bases, *count, sizeof *bases)) {
            free(b);
            break;
        }
        bases[(*count)++] = b;
    }
    return bases;
}

static void add_class(Extract *x, TSNode cls) {
    PyModuleFacts *m = x->m;
    if (!grow(x, (void **)&m->classes, m->class_count, sizeof *m->classes)) return;
    PyFactClass *c = &m->classes[m->class_count++];
    memset(c, 0, sizeof *c);
    c->name = py_text_dup(x->src, ts_node_child_by_field_name(cls, "name", 4));
    c->line = line_of(x->src, cls);
    c->bases = class_bases(x, cls, &c->base_count);
    TSNode body = ts_node_child_by_field_name(cls, "body", 4);
    uint32_t n = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < n; i++) {
        TSNode def = ts_node_named_child(body, i);
        if (py_is(def, "decorated_definition")) def = ts_node_child_by_field_name(def, "definition", 10);
        if (!py_is(def, "function_definition")) continue;
        if (!grow(x, (void **)&c->methods, c->method_count, sizeof *c->methods)) break;
        c->methods[c->method_count++] = function_value(x, def);
    }
    ClassScan s = {x, c};
    py_walk(body, visit_class_body, &s);
}

/* ---- module-level definitions ------------------------------------------------ */

static void add_function(Extract *x, TSNode fn) {
    PyModuleFacts *m = x->m;
    if (!grow(x, (void **)&m->functions, m->function_count, sizeof *m->functions)) return;
    m->functions[m->function_count++] = function_value(x, fn);
}

static void add_variable(Extract *x, TSNode assignment) {
    TSNode left = ts_node_child_by_field_name(assignment, "left", 4);
    TSNode right = ts_node_child_by_field_name(assignment, "right", 5);
    if (!py_is(left, "identifier") || ts_node_is_null(right)) return;
    PyModuleFacts *m = x->m;
    if (!grow(x, (void **)&m->variables, m->variable_count, sizeof *m->variables)) return;
    PyFactValue *v = &m->variables[m->variable_count++];
    memset(v, 0, sizeof *v);
    v->name = py_text_dup(x->src, left);
    v->line = line_of(x->src, assignment);
    describe_value(x, v, right);
    if (py_is_device_expr(x->src, right)) v->kinds |= PY_VALUE_DEVICE;
}

/* Top-level statements, and those in top-level if/try/with blocks. */
static void collect_definitions(Extract *x, TSNode block, int depth) {
    uint32_t n = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < n; i++) {
        TSNode s = ts_node_named_child(block, i);
        TSNode def = py_is(s, "decorated_definition") ? ts_node_child_by_field_name(s, "definition", 10) : s;
        if (py_is(def, "function_definition")) add_function(x, def);
        else if (py_is(def, "class_definition")) add_class(x, def);
        else if (py_is(s, "expression_statement") && py_is(ts_node_named_child(s, 0), "assignment"))
            add_variable(x, ts_node_named_child(s, 0));
        else if (depth < 3 && (py_is(s, "if_statement") || py_is(s, "try_statement") || py_is(s, "with_statement") ||
                               py_is(s, "else_clause") || py_is(s, "elif_clause") || py_is(s, "except_clause") ||
                               py_is(s, "finally_clause") || py_is(s, "block")))
            collect_definitions(x, s, depth + 1);
    }
}

/* ---- how the module uses what it imports ------------------------------------ */

enum { ROLE_TRAINS = 1, ROLE_EVALUATES = 2, ROLE_HOOK = 4 };

/* The training and evaluation role of fn, worked out once per function. */
static unsigned function_role(Extract *x, TSNode fn) {
    uint32_t start = ts_node_start_byte(fn);
    for (size_t i = 0; i < x->role_count; i++)
        if (x->roles[i].start == start) return x->roles[i].role;
    unsigned role = 0;
    if (py_function_trains(x->src, fn)) role |= ROLE_TRAINS;
    if (py_function_named_like_evaluation(x->src, fn) || py_function_switches_to_eval(x->src, fn))
        role |= ROLE_EVALUATES;
    if (py_function_is_test_or_step_hook(x->src, fn)) role |= ROLE_HOOK;
    if (!array_reserve(&x->roles, x->role_count, &x->role_cap, sizeof *x->roles, 16)) return role;
    x->roles[x->role_count].start = start;
    x->roles[x->role_count++].role = role;
    return role;
}

/* The call is of a function the module imports (by its callee's first name). */
static bool imports_callee(const PyModuleFacts *m, const char *callee) {
    size_t head = strcspn(callee, ".");
    for (size_t i = 0; i < m->import_count; i++)
        if (strlen(m->imports[i].local) == head && strncmp(m->imports[i].local, callee, head) == 0) return true;
    return false;
}

/* for py_gpu_loaders_of: a call of an imported project function counts as a loader */
static bool imported_call(const PySource *src, TSNode call, void *data) {
    Extract *x = data;
    char *callee = project_callee(src, call);
    bool yes = callee && imports_callee(x->m, callee);
    free(callee);
    return yes;
}

static bool fed_to_gpu(const Extract *x, TSNode call) {
    for (size_t i = 0; i < x->fed.loader_count; i++)
        if (ts_node_eq(x->fed.loaders[i].call, call)) return true;
    return false;
}

static bool visit_uses(TSNode n, void *data) {
    Extract *x = data;
    if (!py_is(n, "call")) return true;
    PyModuleFacts *m = x->m;
    if (m->use_count >= MAX_USES) return false;
    char *callee = project_callee(x->src, n);
    if (!callee) return true;
    if (!imports_callee(m, callee)) { /* only names the module imports: its own functions are read directly */
        free(callee);
        return true;
    }
    unsigned uses = 0;
    TSNode fn = py_enclosing_function(x->src, n);
    if (py_grad_disabled_at(x->src, n)) {
        uses |= PY_USE_NO_GRAD;
    } else if (!ts_node_is_null(fn)) {
        unsigned role = function_role(x, fn);
        if (role & ROLE_TRAINS) uses |= PY_USE_TRAINING;
        else if ((role & ROLE_EVALUATES) && !(role & ROLE_HOOK)) uses |= PY_USE_INFERENCE;
    }
    if (fed_to_gpu(x, n)) uses |= PY_USE_GPU_BATCHES;
    if (uses && grow(x, (void **)&m->uses, m->use_count, sizeof *m->uses)) {
        m->uses[m->use_count++] = (PyFactUse){callee, uses, line_of(x->src, n)};
        callee = NULL;
    }
    free(callee);
    return true;
}

/* ---- precision ------------------------------------------------------------- */

typedef struct {
    Extract *x;
    int budget; /* tensor checks left (python_precision.h) */
} PrecisionScan;

/* keeps the first site, or a later one whose sizes do not come from parameters */
static void note_site(uint32_t *line, bool *from_parameters, uint32_t at, bool site_from_parameters) {
    if (*line == 0 || (*from_parameters && !site_from_parameters)) {
        *line = at;
        *from_parameters = site_from_parameters;
    }
}

/* the site counts for the module, and for the classes, functions and
 * variables (by the line of their definition) that hold it */
static void attribute_site(Extract *x, TSNode site, bool from_parameters) {
    PyModuleFacts *m = x->m;
    uint32_t at = line_of(x->src, site);
    if (m->matmul_at_scale_line == 0) m->matmul_at_scale_line = at;
    for (TSNode n = ts_node_parent(site); !ts_node_is_null(n); n = ts_node_parent(n)) {
        bool cls = py_is(n, "class_definition"), fn = py_is(n, "function_definition");
        bool var = py_is(n, "assignment") && py_is(ts_node_parent(n), "expression_statement");
        if (!cls && !fn && !var) continue;
        uint32_t line = line_of(x->src, n);
        for (size_t i = 0; cls && i < m->class_count; i++)
            if (m->classes[i].line == line)
                note_site(&m->classes[i].matmul_at_scale_line, &m->classes[i].matmul_at_scale_from_parameters, at,
                          from_parameters);
        for (size_t i = 0; fn && i < m->function_count; i++)
            if (m->functions[i].line == line)
                note_site(&m->functions[i].matmul_at_scale_line, &m->functions[i].matmul_at_scale_from_parameters,
                          at, from_parameters);
        for (size_t i = 0; var && i < m->variable_count; i++)
            if (m->variables[i].line == line)
                note_site(&m->variables[i].matmul_at_scale_line, &m->variables[i].matmul_at_scale_from_parameters,
                          at, from_parameters);
    }
}

static bool visit_precision(TSNode n, void *data) {
    PrecisionScan *s = data;
    const PySource *src = s->x->src;
    if (s->x->m->precision_choice_line == 0 && py_node_makes_precision_choice(src, n))
        s->x->m->precision_choice_line = line_of(src, n);
    if (s->x->m->cuda_default_line == 0 && py_call_sets_cuda_default(src, n))
        s->x->m->cuda_default_line = line_of(src, n);
    if (py_is(n, "string")) return false; /* judged whole */
    bool from_parameters;
    if ((py_is(n, "call") || py_is(n, "binary_operator")) && py_is_matmul_at_scale(src, n, &s->budget, &from_parameters))
        attribute_site(s->x, n, from_parameters);
    return true;
}

/* ---- the summary ---------------------------------------------------------- */

PyModuleFacts *py_module_facts_extract(const PySource *src, const char *path, const char *name, bool is_package) {
    PyModuleFacts *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->refcount = 1;
    m->path = strdup(path);
    m->name = strdup(name);
    m->is_package = is_package;
    m->uses_gpu = src->uses_gpu;
    m->other_accelerator = src->other_accelerator;
    Extract x = {.src = src, .m = m};
    if (!m->path || !m->name) x.oom = true;
    TSNode root = ts_tree_root_node(src->tree);
    if (!x.oom) py_walk(root, visit_imports, &x);
    if (!x.oom) collect_definitions(&x, root, 0);
    /* calls of imported functions whose results a loop moves to the GPU, as PY005 sees DataLoaders */
    if (!x.oom && !py_gpu_loaders_of(src, imported_call, &x, &x.fed)) x.oom = true;
    if (!x.oom) py_walk(root, visit_uses, &x);
    py_gpu_loaders_free(&x.fed);
    PrecisionScan precision = {&x, PY_MATMUL_CHECK_BUDGET};
    if (!x.oom) py_walk(root, visit_precision, &precision);
    free(x.roles);
    if (x.oom) {
        py_module_facts_unref(m);
        return NULL;
    }
    return m;
}

void py_module_facts_ref(PyModuleFacts *m) {
    if (m) __atomic_add_fetch(&m->refcount, 1, __ATOMIC_RELAXED);
}

static void free_class(PyFactClass *c) {
    free(c->name);
    for (size_t i = 0; i < c->base_count; i++) free(c->bases[i]);
    free(c->bases);
    for (size_t i = 0; i < c->method_count; i++) free_value(&c->methods[i]);
    free(c->methods);
    for (size_t i = 0; i < c->part_count; i++) free(c->parts[i]);
    free(c->parts);
}

void py_module_facts_unref(PyModuleFacts *m) {
    if (!m || __atomic_sub_fetch(&m->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
    for (size_t i = 0; i < m->import_count; i++) {
        free(m->imports[i].local);
        free(m->imports[i].target);
    }
    free(m->imports);
    for (size_t i = 0; i < m->function_count; i++) free_value(&m->functions[i]);
    free(m->functions);
    for (size_t i = 0; i < m->class_count; i++) free_class(&m->classes[i]);
    free(m->classes);
    for (size_t i = 0; i < m->variable_count; i++) free_value(&m->variables[i]);
    free(m->variables);
    for (size_t i = 0; i < m->use_count; i++) free(m->uses[i].callee);
    free(m->uses);
    for (size_t i = 0; i < m->loaded_module_count; i++) free(m->loaded_modules[i]);
    free(m->loaded_modules);
    free(m->path);
    free(m->name);
    free(m);
}
