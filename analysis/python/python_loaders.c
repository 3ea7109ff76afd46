#include "analysis/python/python_loaders.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "analysis/finding.h"
#include "analysis/python/python_expr.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_workspace.h"
#include "analysis/base/text_format.h"

/* the analysis's state: the file, what counts as a loader, and whether memory ran out */
typedef struct {
    const PySource *py;
    PyLoaderPredicate is_loader;
    void *data;
    bool out_of_memory;
} LoaderContext;

#define MAX_DEPTH 12

static const char *const dataloader_names[] = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
                                               NULL};
static const char *const progress_names[] = {"tqdm.tqdm",          "tqdm.auto.tqdm", "tqdm.notebook.tqdm",
                                             "tqdm.std.tqdm",      "tqdm.rich.tqdm", "tqdm.autonotebook.tqdm",
                                             NULL};


bool py_is_dataloader_call(const PySource *src, TSNode n) {
    return py_is(n, "call") && py_callee_is_any(src, n, dataloader_names);
}

static bool is_dataloader_call(const LoaderContext *ctx, TSNode n) {
    return py_is(n, "call") && ctx->is_loader(ctx->py, n, ctx->data);
}

static bool dataloader_predicate(const PySource *src, TSNode call, void *data) {
    (void)data;
    return py_is_dataloader_call(src, call);
}

/* ---- the state of one check --------------------------------------------- */

typedef struct {
    size_t *starts; /* a set of DataLoader calls, by start offset */
    size_t count, capacity;
} Marks;

static void mark(LoaderContext *ctx, Marks *marks, TSNode loader) {
    size_t start = ts_node_start_byte(loader);
    for (size_t i = 0; i < marks->count; i++)
        if (marks->starts[i] == start) return;
    if (!array_reserve(&marks->starts, marks->count, &marks->capacity, sizeof *marks->starts, 8)) {
        ctx->out_of_memory = true;
        return;
    }
    marks->starts[marks->count++] = start;
}

static bool is_marked(const Marks *marks, TSNode loader) {
    size_t start = ts_node_start_byte(loader);
    for (size_t i = 0; i < marks->count; i++)
        if (marks->starts[i] == start) return true;
    return false;
}

typedef struct {
    TSNode *calls; /* every call of a plain name, `f(...)`, collected once */
    size_t count, capacity;
    bool collected;
    bool failed;
} CallSites;

static bool visit_collect_call(TSNode n, void *data) {
    CallSites *sites = data;
    if (sites->failed) return false;
    if (!py_is(n, "call") || !py_is(ts_node_child_by_field_name(n, "function", 8), "identifier")) return true;
    if (!array_reserve(&sites->calls, sites->count, &sites->capacity, sizeof *sites->calls, 64)) {
        sites->failed = true;
        return false;
    }
    sites->calls[sites->count++] = n;
    return true;
}

typedef struct {
    LoaderContext *ctx;
    PyGpuLoaders *out;  /* where the moves go */
    Marks marks;        /* DataLoader calls whose batches go to the GPU */
    Marks gpu_datasets; /* DataLoader calls whose dataset is on the GPU already */
    Marks host_datasets;
    CallSites sites;
} State;

/* ---- devices ------------------------------------------------------------ */

/* the code shows the device is not CUDA: `dev = "cpu"`, `dev = torch.device("mps")` */
static bool bound_to_other_device(State *st, TSNode expr) { return py_device_not_cuda(st->ctx->py, expr); }

typedef struct {
    TSNode receiver;
    TSNode device;       /* null for `.cuda()` */
    TSNode non_blocking; /* its value, or null when absent */
    bool cuda_method;
} Move;

/* The syntax of `recv.to(...)` / `recv.cuda(...)`, without splats (cheap). */
static bool read_move_syntax(const LoaderContext *ctx, TSNode call, Move *m) {
    memset(m, 0, sizeof *m);
    if (!py_is(call, "call")) return false;
    bool cuda = py_method_call(ctx->py, call, "cuda", &m->receiver);
    if (!cuda && !py_method_call(ctx->py, call, "to", &m->receiver)) return false;
    if (py_call_has_splat(call)) return false;
    m->cuda_method = cuda;
    m->device = py_call_positional(call, 0);
    if (ts_node_is_null(m->device)) m->device = py_call_keyword(ctx->py, call, "device");
    m->non_blocking = py_call_keyword(ctx->py, call, "non_blocking");
    if (ts_node_is_null(m->non_blocking)) m->non_blocking = py_call_positional(call, cuda ? 1 : 2);
    return cuda || !ts_node_is_null(m->device);
}

/* The move goes to a CUDA device (may look up bindings: call it last). */
static bool move_targets_cuda(State *st, const Move *m) {
    if (m->cuda_method)
        return ts_node_is_null(m->device) || py_is(m->device, "integer") || !bound_to_other_device(st, m->device);
    return py_is_device_expr(st->ctx->py, m->device) && !bound_to_other_device(st, m->device);
}

static bool read_move(State *st, TSNode call, Move *m) {
    return read_move_syntax(st->ctx, call, m) && move_targets_cuda(st, m);
}

/* ---- datasets already on the GPU ------------------------------------------ */

typedef struct {
    State *st;
    const LoaderContext *ctx;
    int depth;
    int budget; /* nodes left to look at */
    bool found;
} GpuDataSearch;

static bool keyword_device_is_cuda(State *st, TSNode call) {
    TSNode dev = py_call_keyword(st->ctx->py, call, "device");
    return !ts_node_is_null(dev) && py_is_device_expr(st->ctx->py, dev) && !bound_to_other_device(st, dev);
}

/* an identifier read as a value: not `torch` in `torch.randn`, not the callee
 * in `Pairs(n)`, not a keyword's name */
static bool is_value_name(TSNode id) {
    TSNode parent = ts_node_parent(id);
    if (py_is(parent, "attribute")) return false;
    if (py_is(parent, "keyword_argument")) return !ts_node_eq(id, ts_node_child_by_field_name(parent, "name", 4));
    if (py_is(parent, "call")) return !ts_node_eq(id, ts_node_child_by_field_name(parent, "function", 8));
    return true;
}

static bool visit_gpu_data(TSNode n, void *data) {
    GpuDataSearch *s = data;
    if (s->found || --s->budget <= 0) return false;
    if (py_is(n, "lambda") || py_is(n, "function_definition") || py_is(n, "class_definition")) return false;
    Move m;
    if (py_is(n, "call") && (read_move(s->st, n, &m) || keyword_device_is_cuda(s->st, n))) {
        s->found = true;
        return false;
    }
    if (py_is(n, "call")) { /* MyData(root, device): a dataset told where to put its tensors */
        uint32_t count = py_call_positional_count(n);
        for (uint32_t i = 0; i < count && i < 16; i++) {
            TSNode a = py_call_positional(n, i);
            if ((py_is(a, "identifier") || py_is(a, "attribute")) && py_is_device_expr(s->ctx->py, a) &&
                !bound_to_other_device(s->st, a)) {
                s->found = true;
                return false;
            }
        }
    }
    if (py_is(n, "identifier") && s->depth < 3 && is_value_name(n)) {
        TSNode value = {0};
        BindingKind kind = py_binding_before(s->ctx->py, n, py_text_ptr(s->ctx->py, n), py_text_len(n),
                                             ts_node_start_byte(n), &value);
        if ((kind == BINDING_ASSIGNMENT || kind == BINDING_OTHER) && py_is(ts_node_parent(value), "assignment") &&
            !py_is_within(n, value)) {
            s->depth++;
            py_walk(value, visit_gpu_data, s);
            s->depth--;
        }
    }
    return true;
}

/* The loader's dataset shows tensors moved to, or created on, the GPU:
 * `DataLoader(TensorDataset(x.cuda(), y.cuda()))`. Its batches are on the GPU
 * already (and pin_memory=True would fail on them). */
static bool dataset_on_gpu(State *st, TSNode loader) {
    if (is_marked(&st->gpu_datasets, loader)) return true;
    if (is_marked(&st->host_datasets, loader)) return false;
    TSNode ds = py_call_keyword(st->ctx->py, loader, "dataset");
    if (ts_node_is_null(ds)) ds = py_call_positional(loader, 0);
    GpuDataSearch s = {st, st->ctx, 0, 2000, false};
    if (!ts_node_is_null(ds)) py_walk(ds, visit_gpu_data, &s);
    mark(st->ctx, s.found ? &st->gpu_datasets : &st->host_datasets, loader);
    return s.found;
}

/* ---- loaders ------------------------------------------------------------ */

static TSNode resolve_loader(const LoaderContext *ctx, TSNode expr, int depth);

static TSNode enclosing_class(TSNode n) {
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); p = ts_node_parent(p))
        if (py_is(p, "class_definition")) return p;
    return (TSNode){0};
}

/* `self.name` is an attribute of `self` */
static bool is_self_attribute(const LoaderContext *ctx, TSNode n, TSNode attr_name) {
    if (!py_is(n, "attribute")) return false;
    TSNode obj = ts_node_child_by_field_name(n, "object", 6);
    TSNode attr = ts_node_child_by_field_name(n, "attribute", 9);
    return py_is(obj, "identifier") && py_text_eq(ctx->py, obj, "self") && !ts_node_is_null(attr) &&
           py_same_text(ctx->py, attr, attr_name);
}

typedef struct {
    const LoaderContext *ctx;
    TSNode attr_name;
    TSNode value;
    int count;
} SelfSearch;

static bool visit_self_assignment(TSNode n, void *data) {
    SelfSearch *s = data;
    if (py_is(n, "assignment") || py_is(n, "augmented_assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        if (is_self_attribute(s->ctx, left, s->attr_name)) {
            s->count++;
            s->value = ts_node_child_by_field_name(n, "right", 5);
        } else if (py_is(left, "pattern_list") || py_is(left, "tuple_pattern")) {
            uint32_t k = ts_node_named_child_count(left);
            for (uint32_t i = 0; i < k; i++)
                if (is_self_attribute(s->ctx, ts_node_named_child(left, i), s->attr_name)) s->count += 2;
        }
    }
    return true;
}

/* `self.loader` assigned exactly once in the class, to a DataLoader */
static TSNode resolve_self_attribute(const LoaderContext *ctx, TSNode expr, int depth) {
    TSNode null = {0};
    TSNode obj = ts_node_child_by_field_name(expr, "object", 6);
    TSNode attr = ts_node_child_by_field_name(expr, "attribute", 9);
    if (!py_is(obj, "identifier") || !py_text_eq(ctx->py, obj, "self") || ts_node_is_null(attr)) return null;
    TSNode cls = enclosing_class(expr);
    if (ts_node_is_null(cls)) return null;
    SelfSearch s = {ctx, attr, null, 0};
    py_walk(cls, visit_self_assignment, &s);
    if (s.count != 1 || ts_node_is_null(s.value)) return null;
    return resolve_loader(ctx, s.value, depth + 1);
}

/* The DataLoader(...) call that expr evaluates to, or a null node. */
static TSNode resolve_loader(const LoaderContext *ctx, TSNode expr, int depth) {
    TSNode null = {0};
    if (depth > MAX_DEPTH || ts_node_is_null(expr)) return null;
    expr = py_unparen(expr);
    if (is_dataloader_call(ctx, expr)) return expr;
    if (py_is(expr, "identifier")) {
        TSNode value = {0};
        if (py_binding_before(ctx->py, expr, py_text_ptr(ctx->py, expr), py_text_len(expr), ts_node_start_byte(expr),
                              &value) != BINDING_ASSIGNMENT)
            return null;
        return resolve_loader(ctx, value, depth + 1);
    }
    if (py_is(expr, "attribute")) return resolve_self_attribute(ctx, expr, depth);
    return null;
}

TSNode py_unwrap_iterable(const PySource *src, TSNode iter, int *enumerates) {
    *enumerates = 0;
    for (int i = 0; i < 4; i++) {
        iter = py_unparen(iter);
        if (!py_is(iter, "call")) break;
        TSNode fn = ts_node_child_by_field_name(iter, "function", 8);
        if (py_is(fn, "identifier") && py_text_eq(src, fn, "enumerate") &&
            !py_resolve_import(src, "enumerate", 9)) {
            (*enumerates)++;
        } else if (!py_callee_is_any(src, iter, progress_names)) {
            break;
        }
        TSNode inner = py_call_positional(iter, 0);
        if (ts_node_is_null(inner)) inner = py_call_keyword(src, iter, "iterable");
        if (ts_node_is_null(inner)) return (TSNode){0};
        iter = inner;
    }
    return py_unparen(iter);
}

/* ---- batches ------------------------------------------------------------ */

typedef struct {
    TSNode loop;
    TSNode body;
    TSNode batch; /* the part of the loop target that holds the batch */
} Loop;

static bool read_loop(const LoaderContext *ctx, TSNode loop, TSNode *base, Loop *out) {
    TSNode left = ts_node_child_by_field_name(loop, "left", 4);
    TSNode right = ts_node_child_by_field_name(loop, "right", 5);
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    if (ts_node_is_null(left) || ts_node_is_null(right) || ts_node_is_null(body)) return false;
    int enumerates = 0;
    *base = py_unwrap_iterable(ctx->py, right, &enumerates);
    if (ts_node_is_null(*base)) return false;
    out->loop = loop;
    out->body = body;
    out->batch = left;
    if (enumerates == 1) { /* for i, batch in enumerate(loader) */
        if (!(py_is(left, "pattern_list") || py_is(left, "tuple_pattern")) || ts_node_named_child_count(left) != 2)
            return false;
        out->batch = ts_node_named_child(left, 1);
    } else if (enumerates > 1) {
        return false;
    }
    out->batch = py_unparen(out->batch);
    return true;
}

static bool pattern_has(const LoaderContext *ctx, TSNode pattern, TSNode name, int depth) {
    if (depth > 8 || ts_node_is_null(pattern)) return false;
    if (py_is(pattern, "identifier")) return py_same_text(ctx->py, pattern, name);
    if (py_is(pattern, "pattern_list") || py_is(pattern, "tuple_pattern") || py_is(pattern, "list_pattern") ||
        py_is(pattern, "parenthesized_expression") || py_is(pattern, "tuple") || py_is(pattern, "list")) {
        uint32_t n = ts_node_named_child_count(pattern);
        for (uint32_t i = 0; i < n; i++)
            if (pattern_has(ctx, ts_node_named_child(pattern, i), name, depth + 1)) return true;
    }
    return false;
}

typedef struct {
    const LoaderContext *ctx;
    TSNode name;
    bool found;
} LoopBindingSearch;

static bool visit_loop_binding(TSNode n, void *data) {
    LoopBindingSearch *s = data;
    if (s->found || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda"))
        return false;
    if (py_is(n, "for_statement") || py_is(n, "for_in_clause") || py_is(n, "assignment")) {
        if (pattern_has(s->ctx, ts_node_child_by_field_name(n, "left", 4), s->name, 0)) s->found = true;
    } else if (py_is(n, "named_expression")) {
        TSNode name = ts_node_child_by_field_name(n, "name", 4);
        if (!ts_node_is_null(name) && py_same_text(s->ctx->py, name, s->name)) s->found = true;
    }
    return !s->found;
}

/* Some binding of the name sits in the loop (its target or its body): a
 * cheap test that spares a binding search through the whole module. */
static bool bound_in_loop(const LoaderContext *ctx, const Loop *loop, TSNode name) {
    LoopBindingSearch s = {ctx, name, false};
    py_walk(loop->loop, visit_loop_binding, &s);
    return s.found;
}

/* Tensor methods that give a view of the same memory (of a contiguous
 * batch tensor): `images.reshape(n, -1).to(device)` still copies the
 * loader's memory, pinned or not. Not the ones that copy on the host first
 * (.float(), .contiguous() of a permuted view): pinning would not reach the
 * copy. */
static const char *const view_methods[] = {"view", "reshape", "flatten", "squeeze", "unsqueeze", "unflatten", NULL};

static bool view_of(const LoaderContext *ctx, TSNode expr, TSNode *receiver) {
    if (!py_is(expr, "call")) return false;
    for (size_t i = 0; view_methods[i]; i++)
        if (py_method_call(ctx->py, expr, view_methods[i], receiver)) return true;
    return false;
}

/* expr is the loop's batch or a part of it. *whole says it is the batch object itself. */
static bool is_batch_expr(const LoaderContext *ctx, const Loop *loop, TSNode expr, bool *whole, int depth) {
    if (depth > MAX_DEPTH || ts_node_is_null(expr)) return false;
    expr = py_unparen(expr);
    TSNode viewed;
    if (view_of(ctx, expr, &viewed)) {
        bool ignored;
        if (!is_batch_expr(ctx, loop, viewed, &ignored, depth + 1)) return false;
        *whole = false;
        return true;
    }
    if (py_is(expr, "subscript")) {
        bool ignored;
        if (!is_batch_expr(ctx, loop, ts_node_child_by_field_name(expr, "value", 5), &ignored, depth + 1)) return false;
        *whole = false;
        return true;
    }
    if (!py_is(expr, "identifier") || !bound_in_loop(ctx, loop, expr)) return false;
    TSNode value = {0};
    BindingKind kind = py_binding_before(ctx->py, expr, py_text_ptr(ctx->py, expr), py_text_len(expr),
                                         ts_node_start_byte(expr), &value);
    if (ts_node_is_null(value)) return false;
    TSNode parent = ts_node_parent(value);
    if (kind == BINDING_LOOP_TARGET) {
        if (ts_node_eq(parent, loop->loop)) {
            if (!pattern_has(ctx, loop->batch, expr, 0)) return false;
            *whole = py_is(loop->batch, "identifier");
            return true;
        }
        /* {k: v.to(device) for k, v in batch.items()} */
        if (py_is(parent, "for_in_clause") && py_is_within(parent, loop->body)) {
            TSNode src = py_unparen(value);
            TSNode recv;
            if (py_is(src, "call") && py_call_positional_count(src) == 0 &&
                (py_method_call(ctx->py, src, "items", &recv) || py_method_call(ctx->py, src, "values", &recv)))
                src = recv;
            bool ignored;
            if (!is_batch_expr(ctx, loop, src, &ignored, depth + 1)) return false;
            *whole = false;
            return true;
        }
        return false;
    }
    /* x = batch[0] / x, y = batch, inside the loop */
    if ((kind == BINDING_ASSIGNMENT || kind == BINDING_OTHER) && py_is(parent, "assignment") &&
        py_is_within(value, loop->body)) {
        bool inner_whole = false;
        if (!is_batch_expr(ctx, loop, value, &inner_whole, depth + 1)) return false;
        *whole = kind == BINDING_ASSIGNMENT && inner_whole;
        return true;
    }
    return false;
}

/* ---- the scan ----------------------------------------------------------- */

static void add_move(State *st, TSNode loader, TSNode call, TSNode non_blocking, bool whole) {
    PyGpuLoaders *out = st->out;
    if (!array_reserve(&out->moves, out->move_count, &out->move_cap, sizeof *out->moves, 16)) {
        st->ctx->out_of_memory = true;
        return;
    }
    out->moves[out->move_count++] = (PyBatchMove){loader, call, non_blocking, whole};
}

typedef struct {
    State *st;
    LoaderContext *ctx;
    const Loop *loop;
    TSNode loader; /* the loader the loop iterates (for the moves it records) */
    bool report;   /* record the batch moves */
    bool moved;    /* some part of the batch goes to the GPU */
} BodyScan;

static bool visit_body(TSNode n, void *data) {
    BodyScan *s = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    Move m;
    if (!read_move_syntax(s->ctx, n, &m)) return true;
    bool whole = false;
    if (!is_batch_expr(s->ctx, s->loop, m.receiver, &whole, 0) || !move_targets_cuda(s->st, &m)) return true;
    s->moved = true;
    if (s->report) add_move(s->st, s->loader, n, m.non_blocking, whole);
    return true;
}

static bool body_moves_batch(State *st, const Loop *loop, TSNode loader, bool report) {
    BodyScan s = {st, st->ctx, loop, loader, report, false};
    py_walk(loop->body, visit_body, &s);
    return s.moved;
}

/* ---- loops over a parameter: the loaders this file passes in ------------ */

typedef struct {
    State *st;
    LoaderContext *ctx;
    TSNode function_name;
    TSNode param_name;
    int position; /* -1: keyword only */
} CallSearch;

static void check_call_site(CallSearch *s, TSNode n) {
    TSNode fn = ts_node_child_by_field_name(n, "function", 8);
    if (!py_is(fn, "identifier") || !py_same_text(s->ctx->py, fn, s->function_name)) return;
    TSNode arg = {0};
    TSNode args = py_call_arguments(n);
    uint32_t count = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < count; i++) {
        TSNode a = ts_node_named_child(args, i);
        TSNode key = ts_node_child_by_field_name(a, "name", 4);
        if (py_is(a, "keyword_argument") && !ts_node_is_null(key) && py_same_text(s->ctx->py, key, s->param_name))
            arg = ts_node_child_by_field_name(a, "value", 5);
    }
    if (ts_node_is_null(arg) && s->position >= 0) {
        /* a *splat before the position shifts the arguments: give up */
        int k = 0;
        for (uint32_t i = 0; i < count && k <= s->position; i++) {
            TSNode a = ts_node_named_child(args, i);
            if (py_is(a, "list_splat") || py_is(a, "dictionary_splat")) break;
            if (py_is(a, "keyword_argument") || py_is(a, "comment")) continue;
            if (k++ == s->position) arg = a;
        }
    }
    TSNode loader = resolve_loader(s->ctx, arg, 0);
    if (!ts_node_is_null(loader) && !dataset_on_gpu(s->st, loader)) mark(s->ctx, &s->st->marks, loader);
}

static TSNode parameter_name(TSNode p) {
    if (py_is(p, "identifier")) return p;
    if (py_is(p, "typed_parameter")) return ts_node_named_child(p, 0);
    if (py_is(p, "default_parameter") || py_is(p, "typed_default_parameter"))
        return ts_node_child_by_field_name(p, "name", 4);
    return (TSNode){0};
}

/* for x in param: the loaders that this file's calls of the (module-level) function pass in */
static void mark_loaders_passed_in(State *st, TSNode param) {
    LoaderContext *ctx = st->ctx;
    CallSites *sites = &st->sites;
    TSNode params = ts_node_parent(param);
    TSNode fn = ts_node_parent(params);
    if (!py_is(params, "parameters") || !py_is(fn, "function_definition")) return;
    TSNode holder = ts_node_parent(fn);
    if (py_is(holder, "decorated_definition")) holder = ts_node_parent(holder);
    if (!py_is(holder, "module")) return;
    TSNode name = parameter_name(param);
    TSNode fname = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name) || ts_node_is_null(fname)) return;
    int position = -1, k = 0;
    uint32_t count = ts_node_named_child_count(params);
    for (uint32_t i = 0; i < count; i++) {
        TSNode p = ts_node_named_child(params, i);
        if (ts_node_is_null(parameter_name(p))) break; /* *args, *, **kwargs, / ... */
        if (ts_node_eq(p, param)) {
            position = k;
            break;
        }
        k++;
    }
    if (!sites->collected) {
        sites->collected = true;
        py_walk(holder, visit_collect_call, sites);
        if (sites->failed) ctx->out_of_memory = true;
    }
    CallSearch s = {st, ctx, fname, name, position};
    for (size_t i = 0; i < sites->count; i++) check_call_site(&s, sites->calls[i]);
}

/* ---- the rule ----------------------------------------------------------- */

typedef struct {
    const LoaderContext *ctx;
    bool found;
} MoveSyntaxSearch;

static bool visit_move_syntax(TSNode n, void *data) {
    MoveSyntaxSearch *s = data;
    if (s->found || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda"))
        return false;
    if (py_is(n, "call") &&
        (py_method_call(s->ctx->py, n, "to", NULL) || py_method_call(s->ctx->py, n, "cuda", NULL)))
        s->found = true;
    return !s->found;
}

/* the body calls some `.to(...)` or `.cuda(...)` at all */
static bool body_has_move_syntax(const LoaderContext *ctx, TSNode body) {
    MoveSyntaxSearch s = {ctx, false};
    py_walk(body, visit_move_syntax, &s);
    return s.found;
}

static bool visit_loop(TSNode n, void *data) {
    State *st = data;
    if (!py_is(n, "for_statement")) return true;
    LoaderContext *ctx = st->ctx;
    TSNode base;
    Loop loop;
    if (!read_loop(ctx, n, &base, &loop) || !body_has_move_syntax(ctx, loop.body)) return true;
    TSNode loader = resolve_loader(ctx, base, 0);
    if (!ts_node_is_null(loader)) {
        /* first without reporting: the dataset test is only worth it for loaders whose batches move */
        if (body_moves_batch(st, &loop, loader, false) && !dataset_on_gpu(st, loader)) {
            mark(ctx, &st->marks, loader);
            body_moves_batch(st, &loop, loader, true);
        }
        return true;
    }
    if (py_is(base, "identifier")) {
        TSNode param = {0};
        if (py_binding_before(ctx->py, base, py_text_ptr(ctx->py, base), py_text_len(base), ts_node_start_byte(base),
                              &param) == BINDING_PARAMETER &&
            body_moves_batch(st, &loop, (TSNode){0}, false))
            mark_loaders_passed_in(st, param);
    }
    return true;
}


static void add_loader(PyGpuLoaders *out, TSNode call, const char *path, unsigned line, bool *oom) {
    if (!array_reserve(&out->loaders, out->loader_count, &out->loader_cap, sizeof *out->loaders, 8)) {
        *oom = true;
        return;
    }
    out->loaders[out->loader_count++] = (PyGpuLoader){call, path, line};
}

/* ---- loaders another module feeds to the GPU (the workspace index) ---------- */

typedef struct {
    const PySource *src;
    PyGpuLoaders *out;
} ElsewhereSearch;

/* The module-level function that returns this loader (`return DataLoader(...)`,
 * or `loader = DataLoader(...)` ... `return loader`), or a null node. */
static TSNode returning_function(const PySource *src, TSNode loader) {
    TSNode null = {0};
    TSNode fn = py_enclosing_function(src, loader);
    TSNode holder = ts_node_parent(fn);
    if (py_is(holder, "decorated_definition")) holder = ts_node_parent(holder);
    if (ts_node_is_null(fn) || !py_is(holder, "module")) return null;
    TSNode parent = ts_node_parent(loader);
    if (py_is(parent, "return_statement")) return fn;
    if (!py_is(parent, "assignment") || !py_is(ts_node_child_by_field_name(parent, "left", 4), "identifier"))
        return null;
    /* the name it is bound to is what the function returns */
    TSNode name = ts_node_child_by_field_name(parent, "left", 4);
    TSNode body = ts_node_child_by_field_name(fn, "body", 4);
    uint32_t n = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < n; i++) {
        TSNode stmt = ts_node_named_child(body, i);
        TSNode value = ts_node_named_child(stmt, 0);
        if (py_is(stmt, "return_statement") && py_is(value, "identifier") && py_same_text(src, value, name)) return fn;
    }
    return null;
}

static bool already_listed(const PyGpuLoaders *out, TSNode loader) {
    for (size_t i = 0; i < out->loader_count; i++)
        if (ts_node_eq(out->loaders[i].call, loader)) return true;
    return false;
}

static bool visit_elsewhere(TSNode n, void *data) {
    ElsewhereSearch *s = data;
    if (!py_is_dataloader_call(s->src, n) || already_listed(s->out, n)) return true;
    TSNode fn = returning_function(s->src, n);
    TSNode name = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name)) return true;
    char *function = py_text_dup(s->src, name);
    const PyModuleFacts *where = NULL;
    unsigned line = 0;
    unsigned uses = function ? py_workspace_uses_of(s->src->workspace, s->src->module, function, &where, &line) : 0;
    free(function);
    if ((uses & PY_USE_GPU_BATCHES) && where)
        add_loader(s->out, n, py_module_path(where), line, &s->out->out_of_memory);
    return true;
}

/* DataLoaders of this file that a function returns and other modules of the
 * project iterate, moving the batches to the GPU (`make_loader()` in data.py,
 * its loop in train.py). */
static void find_loaders_fed_elsewhere(const PySource *src, PyGpuLoaders *out) {
    if (!src->workspace || !src->module) return;
    ElsewhereSearch s = {src, out};
    py_walk(ts_tree_root_node(src->tree), visit_elsewhere, &s);
}

/* the marked loaders, in source order */
static bool visit_marked(TSNode n, void *data) {
    State *st = data;
    if (!is_dataloader_call(st->ctx, n) || !is_marked(&st->marks, n)) return true;
    add_loader(st->out, n, NULL, 0, &st->ctx->out_of_memory);
    return true;
}

bool py_gpu_loaders(const PySource *src, PyGpuLoaders *out) {
    if (!py_gpu_loaders_of(src, dataloader_predicate, NULL, out)) return false;
    find_loaders_fed_elsewhere(src, out);
    return !out->out_of_memory;
}

bool py_gpu_loaders_of(const PySource *src, PyLoaderPredicate is_loader, void *data, PyGpuLoaders *out) {
    memset(out, 0, sizeof *out);
    LoaderContext ctx = {src, is_loader, data, false};
    State st = {.ctx = &ctx, .out = out};
    TSNode root = ts_tree_root_node(src->tree);
    py_walk(root, visit_loop, &st);
    if (st.marks.count) py_walk(root, visit_marked, &st);
    if (st.sites.failed) ctx.out_of_memory = true;
    free(st.marks.starts);
    free(st.gpu_datasets.starts);
    free(st.host_datasets.starts);
    free(st.sites.calls);
    out->out_of_memory = ctx.out_of_memory;
    return !ctx.out_of_memory;
}

void py_gpu_loaders_free(PyGpuLoaders *loaders) {
    free(loaders->loaders);
    free(loaders->moves);
    memset(loaders, 0, sizeof *loaders);
}

char *py_gpu_loader_where_fed(const PyGpuLoader *loader) {
    if (!loader->fed_in) return strdup("");
    const char *base = strrchr(loader->fed_in, '/');
    return format_string(" (by %s, which gets this loader at line %u)", base ? base + 1 : loader->fed_in,
                         loader->fed_line);
}
