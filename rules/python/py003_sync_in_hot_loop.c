/* PY003 sync-in-hot-loop: torch.cuda.synchronize() or torch.cuda.empty_cache()
 * on every iteration of a loop that does GPU work. */
#include <string.h>

#include "rules/rule.h"
#include "rules/python/support/loop_kinds.h"
#include "rules/python/support/test_code.h"

static const char documentation[] =
    "## What it does\n"
    "Flags `torch.cuda.synchronize()` called on every iteration of a loop that does GPU work, and\n"
    "`torch.cuda.empty_cache()` called inside a loop.\n"
    "\n"
    "## Why is this slow?\n"
    "`synchronize()` blocks the host until every queued kernel has finished, so the GPU runs dry\n"
    "while Python prepares the next iteration: launch latency is paid in full instead of being\n"
    "hidden behind running kernels. `empty_cache()` hands cached blocks back to the driver; the\n"
    "next iteration must `cudaMalloc` them again, which synchronizes the device and costs\n"
    "milliseconds each time.\n"
    "\n"
    "Not flagged: a synchronize or empty_cache guarded by a periodic condition (`if step % 100 == 0:`);\n"
    "in a loop over the model's modules (`for name, m in model.named_modules():`, a one-off rewrite\n"
    "or conversion); empty_cache in a loop whose body collects garbage and hands memory back, and does\n"
    "nothing else (`for _ in range(3): gc.collect(); torch.cuda.empty_cache()`, also under `if\n"
    "torch.cuda.is_available():`, beside imports, `del` and other devices' `empty_cache()`): nothing is\n"
    "allocated between the calls, so nothing is cudaMalloc'ed again (such a loop inside a training loop\n"
    "still empties the cache on every step, and the training loop is judged instead); empty_cache in a\n"
    "loop that exports a model on each iteration (`torch.onnx.export`,\n"
    "`torch.jit.trace`, `torch.jit.script`, `torch.export.export`: a conversion pass over models); empty_cache in a loop that moves what it loaded off the GPU again (`layer =\n"
    "layer.cpu()`, `module.cpu()`, `module.unload()`, `layers[i] = layer.cpu()` after `layer =\n"
    "layers[i].to(dev)` and `layer(x)`, the name bound to nothing else: layer-by-layer calibration or\n"
    "quantization,\n"
    "which fits in memory by handing the freed blocks back), or that loads a whole model on every\n"
    "iteration and deletes it before emptying the cache (`pipe = DiffusionPipeline.from_pretrained(...)`\n"
    "... `del pipe`, also behind `.to(device)`; not a tokenizer, processor, configuration or scheduler,\n"
    "and both whenever the cache is emptied, not under an `if` of their own: the next model fits\n"
    "because the blocks went back);\n"
    "empty_cache in a loop that sweeps over sizes (its target sizes the\n"
    "tensors a torch factory builds, `for m, k in shapes: a = torch.randn(m, k, ...)`, or slices:\n"
    "data or a file it names, `F.cross_entropy(out, labels)`, `torch.as_tensor(x)`, `torch.load(path)`,\n"
    "is no size), where handing back the last\n"
    "size's blocks keeps a benchmark from running out of memory, or that reads the allocator's figures\n"
    "on each iteration (`torch.cuda.memory_reserved()`, `max_memory_allocated()`: it measures memory per\n"
    "item), or that times each iteration with CUDA events and empties the cache after the last event\n"
    "of the iteration (a benchmark that starts each timed run from an empty cache; host clock reads do\n"
    "not count, since training loops log their step time); a synchronize in a loop over a few literal configurations (`for stride, ch in [(1, 32),\n"
    "(2, 64)]:`, at most 16); a synchronize in an outer loop whose\n"
    "GPU work runs in an inner loop or in a loop inside a function of this file that it calls (per\n"
    "epoch, per benchmark configuration); and a synchronize that makes a host\n"
    "clock read right, which is how per-iteration timing is done correctly: a clock read (or a CUDA\n"
    "event recorded for timing, `start.record()` on a `torch.cuda.Event`) right before\n"
    "it, or later in the same block with no GPU work in between, also when the synchronize sits in an\n"
    "`if` that picks the device or a flag (`if device.type == \"cuda\": torch.cuda.synchronize()`), and\n"
    "a synchronize in a loop over a wrapper that times or logs each iteration\n"
    "(`for x in metric_logger.log_every(loader, 10):`). Test files (`test_*.py`, `*_test.py`,\n"
    "`conftest.py`) and test functions (`def test_*`, also in a test suite's helper script) are left\n"
    "alone: a test synchronizes to compare results, and its run time is not\n"
    "what the program's users wait for.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "for x, y in loader:\n"
    "    loss = criterion(model(x.to(device)), y.to(device))\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    torch.cuda.synchronize()\n"
    "    torch.cuda.empty_cache()\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "for x, y in loader:\n"
    "    loss = criterion(model(x.to(device)), y.to(device))\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "torch.cuda.synchronize()  # once, where the host really needs the results\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: whether a synchronization is needed (for example before reading results\n"
    "on the host or for an external library) depends on the program.\n";

static const char *const synchronize_names[] = {"torch.cuda.synchronize", "torch.cuda.current_stream.synchronize",
                                                 NULL};
static const char *const empty_cache_names[] = {"torch.cuda.empty_cache", NULL};
static const char *const clock_names[] = {"time.time", "time.perf_counter", "time.monotonic", "time.perf_counter_ns",
                                          "time.time_ns", "timeit.default_timer", NULL};

typedef struct {
    const RuleContext *ctx;
    TSNode loop;
    bool clock; /* a clock read that runs on every iteration */
    bool sync;  /* a host read that waits for the GPU (`.item()`, `.cpu()`) */
} StatementSearch;

typedef struct {
    const PySource *src;
    const char *const *names;
    bool found;
} NamedCallSearch;

static bool visit_named_call(TSNode n, void *data) {
    NamedCallSearch *s = data;
    if (py_is(n, "call") && py_callee_is_any(s->src, n, s->names)) s->found = true;
    return !s->found;
}

/* somewhere in `root`, a call of one of `names` */
static bool calls_any_of(const PySource *src, TSNode root, const char *const *names) {
    NamedCallSearch s = {src, names, false};
    py_walk(root, visit_named_call, &s);
    return s.found;
}

static const char *const event_names[] = {"torch.cuda.Event", "torch.Event", NULL};

/* `start.record()`, `end_events[i].record()`: a CUDA event marks a point
 * of the stream for timing, where the name it is recorded on was bound to
 * torch.cuda.Event(...) (or a list of them) before the call. */
static bool is_event_record(const PySource *src, TSNode call) {
    TSNode receiver;
    if (!py_method_call(src, call, "record", &receiver) || py_call_positional_count(call) > 1) return false;
    while (py_is(receiver, "subscript")) receiver = ts_node_child_by_field_name(receiver, "value", 5);
    if (!py_is(receiver, "identifier")) return false;
    TSNode value;
    if (py_binding_before(src, call, py_text_ptr(src, receiver), py_text_len(receiver), ts_node_start_byte(call),
                          &value) != BINDING_ASSIGNMENT)
        return false;
    return calls_any_of(src, value, event_names);
}

static bool visit_statement(TSNode n, void *data) {
    StatementSearch *s = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (!py_is(n, "call")) return true;
    /* a clock read, CUDA events' `start.elapsed_time(end)`, which needs the end event reached, or
     * an event recorded for timing */
    if ((py_callee_is_any(s->ctx->py, n, clock_names) || py_method_call(s->ctx->py, n, "elapsed_time", NULL) ||
         is_event_record(s->ctx->py, n)) &&
        !py_is_periodic(s->ctx->py, n, s->loop))
        s->clock = true;
    if (py_is_sync_call(s->ctx->py, n)) s->sync = true;
    return true;
}

static StatementSearch search_statement(const RuleContext *ctx, TSNode stmt, TSNode loop) {
    StatementSearch s = {ctx, loop, false, false};
    py_walk(stmt, visit_statement, &s);
    return s;
}

/* The statement that stands for the sync among its neighbours: the sync's
 * own statement, or the `if` around it that dispatches on the device or on a
 * flag (`if device.type == "cuda": torch.cuda.synchronize()`,
 * `if args.synchronize_step: ...`), up to three levels, within the loop. */
static TSNode dispatch_statement(TSNode stmt, TSNode loop) {
    for (int level = 0; level < 3; level++) {
        TSNode block = ts_node_parent(stmt);
        TSNode owner = ts_node_parent(block);
        if (py_is(owner, "elif_clause") || py_is(owner, "else_clause")) owner = ts_node_parent(owner);
        if (!py_is(block, "block") || !py_is(owner, "if_statement") || !py_is_within(owner, loop) ||
            ts_node_eq(owner, loop))
            break;
        stmt = owner;
    }
    return stmt;
}

static TSNode sibling(TSNode n, bool next) {
    do n = next ? ts_node_next_named_sibling(n) : ts_node_prev_named_sibling(n);
    while (!ts_node_is_null(n) && py_is(n, "comment"));
    return n;
}

/* A sync that makes a clock read right: a clock read (on every iteration)
 * right before it, or later in the same block with no GPU work queued in
 * between that no host read waits for. */
static bool is_timing_sync(const RuleContext *ctx, TSNode stmt, TSNode loop) {
    TSNode prev = sibling(stmt, false);
    if (!ts_node_is_null(prev) && search_statement(ctx, prev, loop).clock) return true;
    for (TSNode next = sibling(stmt, true); !ts_node_is_null(next); next = sibling(next, true)) {
        StatementSearch s = search_statement(ctx, next, loop);
        if (s.clock) return true;
        /* work that the statement itself waits for (`total += out.sum().item()`) keeps the clock right */
        if (!s.sync && py_does_gpu_work(ctx->py, next)) return false;
    }
    return false;
}

/* The loop runs over a wrapper that times or logs each iteration
 * (`metric_logger.log_every(loader, 10)`): it reads the clock when the body
 * ends, so a sync at the end of the body serves that measurement. */
static bool iterates_timed_wrapper(const RuleContext *ctx, TSNode loop) {
    if (!py_is(loop, "for_statement")) return false;
    TSNode iter = ts_node_child_by_field_name(loop, "right", 5);
    if (!py_is(iter, "call")) return false;
    TSNode fn = ts_node_child_by_field_name(iter, "function", 8);
    if (py_is(fn, "identifier") && py_text_eq(ctx->py, fn, "enumerate")) { /* enumerate(logger.log_every(...)) */
        iter = py_call_positional(iter, 0);
        if (!py_is(iter, "call")) return false;
        fn = ts_node_child_by_field_name(iter, "function", 8);
    }
    TSNode name = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "attribute", 9) : fn;
    if (!py_is(name, "identifier")) return false;
    const char *t = py_text_ptr(ctx->py, name);
    size_t len = py_text_len(name);
    for (size_t i = 0; i + 3 <= len; i++)
        if (strncmp(t + i, "log", 3) == 0 || (i + 4 <= len && strncmp(t + i, "time", 4) == 0) ||
            (i + 5 <= len && strncmp(t + i, "meter", 5) == 0))
            return true;
    return false;
}

typedef struct {
    const RuleContext *ctx;
    TSNode target; /* the loop's target pattern */
    bool found;
} SizeSearch;

static bool pattern_binds(const RuleContext *ctx, TSNode pattern, TSNode id, int depth) {
    if (depth > 4 || ts_node_is_null(pattern)) return false;
    if (py_is(pattern, "identifier")) return py_same_text(ctx->py, pattern, id);
    uint32_t n = ts_node_named_child_count(pattern);
    for (uint32_t i = 0; i < n; i++)
        if (pattern_binds(ctx, ts_node_named_child(pattern, i), id, depth + 1)) return true;
    return false;
}

static bool mentions_target(const RuleContext *ctx, TSNode n, TSNode target, int depth) {
    if (depth > 12 || ts_node_is_null(n)) return false;
    if (py_is(n, "identifier")) return pattern_binds(ctx, target, n, 0);
    uint32_t c = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < c; i++)
        if (mentions_target(ctx, ts_node_named_child(n, i), target, depth + 1)) return true;
    return false;
}

/* a slice (`A[:m, :k]`) or a torch factory's argument (`torch.randn(m, k)`) sized by the loop's
 * target; an operation on the target's data (`F.cross_entropy(logits, labels)`, `torch.load(path)`,
 * `torch.as_tensor(x)`) is no size */
static bool visit_sized(TSNode n, void *data) {
    SizeSearch *s = data;
    if (s->found) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (py_is(n, "slice") && mentions_target(s->ctx, n, s->target, 0)) s->found = true;
    if (py_is(n, "call")) {
        static const char *const factories[] = {
            "torch.randn", "torch.rand",     "torch.randint", "torch.randperm",     "torch.zeros",
            "torch.ones",  "torch.empty",    "torch.full",    "torch.arange",       "torch.linspace",
            "torch.eye",   "torch.logspace", "torch.normal",  "torch.empty_strided", NULL};
        if (py_callee_is_any(s->ctx->py, n, factories) &&
            mentions_target(s->ctx, py_call_arguments(n), s->target, 0))
            s->found = true;
    }
    return !s->found;
}

/* The loop sweeps over sizes (`for m, n, k in shapes:` building tensors of
 * those sizes): empty_cache() between sizes hands back blocks the next size
 * could not reuse, which keeps a benchmark sweep from running out of memory. */
static bool iterates_over_sizes(const RuleContext *ctx, TSNode loop) {
    if (!py_is(loop, "for_statement")) return false;
    SizeSearch s = {ctx, ts_node_child_by_field_name(loop, "left", 4), false};
    py_walk(ts_node_child_by_field_name(loop, "body", 4), visit_sized, &s);
    return s.found;
}

/* The loop reads the allocator's figures (`torch.cuda.memory_reserved()`,
 * `max_memory_allocated()`, ...) on each iteration: it measures memory per
 * item (yolov5's `profile()`), and empty_cache() between items is what makes
 * each figure its own. */
static const char *const memory_readers[] = {
    "torch.cuda.memory_reserved", "torch.cuda.memory_allocated", "torch.cuda.max_memory_allocated",
    "torch.cuda.max_memory_reserved", "torch.cuda.memory_stats", "torch.cuda.reset_peak_memory_stats",
    "torch.cuda.mem_get_info", NULL};

static bool measures_memory(const RuleContext *ctx, TSNode loop) {
    return calls_any_of(ctx->py, ts_node_child_by_field_name(loop, "body", 4), memory_readers);
}

typedef struct {
    const PySource *src;
    TSNode name, slot; /* `name = slot.to(dev)` or `name = slot.cuda()` wanted */
    int loads, other_bindings, calls;
} SlotLoadSearch;

static bool visit_slot_load(TSNode n, void *data) {
    SlotLoadSearch *s = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (py_is(n, "call") && py_same_text(s->src, ts_node_child_by_field_name(n, "function", 8), s->name)) s->calls++;
    if (!py_is(n, "assignment") && !py_is(n, "augmented_assignment")) return true;
    TSNode left = ts_node_child_by_field_name(n, "left", 4), right = ts_node_child_by_field_name(n, "right", 5);
    if (!py_same_text(s->src, left, s->name)) return true;
    TSNode recv;
    if (py_is(n, "assignment") && py_is(right, "call") &&
        (py_method_call(s->src, right, "to", &recv) || py_method_call(s->src, right, "cuda", &recv)) &&
        py_same_text(s->src, recv, s->slot))
        s->loads++;
    else
        s->other_bindings++;
    return true;
}

/* `layers[i] = layer.cpu()` where the loop took `layer = layers[i].to(dev)`,
 * ran it as a module (`layer(inps)`) and bound the name to nothing else: the
 * layer goes back into the slot it came from. A tensor loaded so and
 * written back after it was computed on (`frame = model(frame)`, a feature
 * bank, optimizer state) is a result copied out, not an offload. */
static bool returns_to_its_slot(const PySource *src, TSNode loop, TSNode slot, TSNode name) {
    if (ts_node_is_null(loop)) return false;
    SlotLoadSearch s = {src, name, slot, 0, 0, 0};
    py_walk(ts_node_child_by_field_name(loop, "body", 4), visit_slot_load, &s);
    return s.loads == 1 && s.other_bindings == 0 && s.calls > 0;
}

/* `layer = layer.cpu()`, `module.cpu()`, `x = x.to("cpu")`, `module.unload()` as
 * a statement, or `layers[i] = layer.cpu()` after `layer = layers[i].to(dev)`:
 * the iteration moves what it loaded off the GPU */
static bool offload_statement(const PySource *src, TSNode stmt, TSNode loop) {
    TSNode e = py_is(stmt, "expression_statement") ? ts_node_named_child(stmt, 0) : (TSNode){0};
    TSNode call = e, left = {0};
    if (py_is(e, "assignment")) {
        left = ts_node_child_by_field_name(e, "left", 4);
        call = ts_node_child_by_field_name(e, "right", 5);
    }
    if (!py_is(call, "call")) return false;
    TSNode recv;
    bool to_host = py_method_call(src, call, "cpu", &recv) || py_method_call(src, call, "unload", &recv);
    if (!to_host && py_method_call(src, call, "to", &recv)) {
        TSNode dev = py_call_positional(call, 0);
        to_host = py_is(dev, "string") && (py_text_eq(src, dev, "\"cpu\"") || py_text_eq(src, dev, "'cpu'"));
    }
    if (!to_host) return false;
    /* in place, the same name rebound, or back where it was loaded from */
    return ts_node_is_null(left) || py_same_text(src, left, recv) || returns_to_its_slot(src, loop, left, recv);
}

typedef struct {
    const PySource *src;
    TSNode loop;
    bool found;
} OffloadSearch;

static bool visit_offload(TSNode n, void *data) {
    OffloadSearch *o = data;
    if (o->found || py_is(n, "function_definition") || py_is(n, "class_definition")) return false;
    if (py_is(n, "expression_statement") && offload_statement(o->src, n, o->loop)) o->found = true;
    return !o->found;
}

/* The loop loads one layer or module at a time onto the GPU and moves it off
 * again (layer-by-layer calibration, quantization, conversion): empty_cache()
 * hands back what the move freed before the next one comes in, which is how
 * such a pass fits in memory. */
static bool offloads_each_iteration(const RuleContext *ctx, TSNode loop) {
    OffloadSearch o = {ctx->py, loop, false};
    py_walk(ts_node_child_by_field_name(loop, "body", 4), visit_offload, &o);
    return o.found;
}

/* `X.from_pretrained(...)` or `X.from_single_file(...)` of a model or
 * pipeline (not a tokenizer, processor, configuration or scheduler), also
 * behind `.to(device)`, `.cuda()`, `.eval()`, `.half()` and the like, or a
 * module built on the spot (`Net().cuda()`) */
static bool is_model_load(const PySource *src, TSNode call) {
    TSNode module;
    for (int depth = 0; depth < 6 && py_returns_its_module(src, call, &module); depth++) call = module;
    TSNode cls;
    if (!py_method_call(src, call, "from_pretrained", &cls) && !py_method_call(src, call, "from_single_file", &cls))
        return py_is_module_instance(src, call);
    return !py_class_stays_on_host(py_text_ptr(src, cls), py_text_len(cls));
}

/* node's statement sits in the block that holds the empty_cache() call or
 * in one around it, inside the loop: it runs whenever the call does (not
 * only under an `if` of its own, nor in an inner loop). */
static bool runs_whenever_call_does(TSNode node, TSNode call, TSNode loop) {
    TSNode block = ts_node_parent(py_statement_of(node));
    for (TSNode p = ts_node_parent(call); !ts_node_is_null(p) && !ts_node_eq(p, loop); p = ts_node_parent(p))
        if (ts_node_eq(p, block)) return true;
    return false;
}

typedef struct {
    const PySource *src;
    TSNode call, loop; /* the empty_cache() call and its loop */
    TSNode name;       /* an identifier the loop deletes */
    bool found;
} LoadSearch;

/* `name = <a model load>`, run whenever the empty_cache() call is */
static bool visit_load(TSNode n, void *data) {
    LoadSearch *s = data;
    if (s->found || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (py_is(n, "assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4), right = ts_node_child_by_field_name(n, "right", 5);
        if (py_is(left, "identifier") && py_same_text(s->src, left, s->name) && py_is(right, "call") &&
            runs_whenever_call_does(n, s->call, s->loop) && is_model_load(s->src, right))
            s->found = true;
    }
    return !s->found;
}

typedef struct {
    const PySource *src;
    TSNode body, call, loop; /* the loop's body, the empty_cache() call, the loop */
    bool found;
} ReleaseSearch;

static bool visit_release(TSNode n, void *data) {
    ReleaseSearch *r = data;
    if (r->found || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (!py_is(n, "delete_statement")) return true;
    if (ts_node_start_byte(n) >= ts_node_start_byte(r->call) || !runs_whenever_call_does(n, r->call, r->loop))
        return false;
    TSNode target = ts_node_named_child(n, 0);
    bool list = py_is(target, "expression_list");
    uint32_t count = list ? ts_node_named_child_count(target) : 1;
    for (uint32_t i = 0; i < count && !r->found; i++) {
        LoadSearch s = {r->src, r->call, r->loop, list ? ts_node_named_child(target, i) : target, false};
        if (py_is(s.name, "identifier")) py_walk(r->body, visit_load, &s);
        r->found = s.found;
    }
    return false;
}

/* Each iteration loads a whole model or pipeline and deletes it before
 * empty_cache() (`pipeline = DiffusionPipeline.from_pretrained(...)` ... `del
 * pipeline`: one per concept, per checkpoint, per trial): handing its blocks
 * back is what lets the next one fit, and loading it costs far more than
 * allocating again. */
static bool releases_loaded_model(const RuleContext *ctx, TSNode loop, TSNode call) {
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    ReleaseSearch r = {ctx->py, body, call, loop, false};
    py_walk(body, visit_release, &r);
    return r.found;
}

/* `for name, m in model.named_modules():` (also through list(), enumerate(),
 * tqdm()): a pass over the model's modules, a one-off rewrite or conversion,
 * not a step of training or inference */
static bool iterates_modules(const PySource *src, TSNode loop) {
    if (!py_is(loop, "for_statement")) return false;
    TSNode it = ts_node_child_by_field_name(loop, "right", 5);
    for (int depth = 0; depth < 3 && py_is(it, "call"); depth++) {
        static const char *const walks[] = {"modules", "named_modules", "children", "named_children", NULL};
        for (size_t i = 0; walks[i]; i++)
            if (py_method_call(src, it, walks[i], NULL)) return true;
        it = py_call_positional(it, 0); /* list(...), enumerate(...), tqdm(...) */
    }
    return false;
}

/* The loop exports or compiles a model ahead of time on each iteration
 * (`torch.onnx.export(model, ...)`, `torch.jit.trace`, `torch.export.export`):
 * a conversion pass over models, like a loop over a model's modules, which
 * fits in memory by handing each model's blocks back before the next. */
static bool exports_models(const RuleContext *ctx, TSNode loop) {
    static const char *const exporters[] = {"torch.onnx.export", "torch.onnx.dynamo_export", "torch.export.export",
                                            "torch.jit.trace",   "torch.jit.script",         NULL};
    return calls_any_of(ctx->py, ts_node_child_by_field_name(loop, "body", 4), exporters);
}

/* Calls that hand memory back or wait, and allocate nothing. */
static const char *const release_names[] = {"gc.collect",
                                            "torch.cuda.empty_cache",
                                            "torch.cuda.ipc_collect",
                                            "torch.cuda.synchronize",
                                            "torch.cuda.reset_peak_memory_stats",
                                            "torch.xpu.empty_cache",
                                            "torch.mps.empty_cache",
                                            "time.sleep",
                                            NULL};

static bool only_releases(const PySource *src, TSNode block, int depth);

typedef struct {
    const PySource *src;
    bool other; /* a call that does more than ask what the machine has */
} QuestionSearch;

static bool visit_question(TSNode n, void *data) {
    QuestionSearch *s = data;
    if (s->other) return false;
    if (!py_is(n, "call")) return true;
    static const char *const builtins[] = {"hasattr", "getattr", "isinstance", "callable", NULL};
    for (size_t i = 0; builtins[i]; i++)
        if (py_is_builtin_call(s->src, n, builtins[i])) return true;
    static const char *const questions[] = {"is_available", "device_count", "is_initialized", NULL};
    for (size_t i = 0; questions[i]; i++)
        if (py_method_call(s->src, n, questions[i], NULL)) return true;
    s->other = true;
    return false;
}

/* an `if`'s condition that queues no GPU work: it asks which devices there
 * are (`hasattr(torch, "xpu") and torch.xpu.is_available()`) or calls
 * nothing that does GPU work */
static bool condition_is_quiet(const PySource *src, TSNode cond) {
    QuestionSearch s = {src, false};
    py_walk(cond, visit_question, &s);
    return !s.other || !py_does_gpu_work(src, cond);
}

/* one statement of a block that only releases: an import, `del`, `pass`, a
 * call of release_names, or an `if` whose branches only release (the
 * condition asks which device there is: `if torch.cuda.is_available():`) */
static bool statement_only_releases(const PySource *src, TSNode stmt, int depth) {
    if (py_is(stmt, "comment") || py_is(stmt, "pass_statement") || py_is(stmt, "delete_statement") ||
        py_is(stmt, "import_statement") || py_is(stmt, "import_from_statement"))
        return true;
    if (py_is(stmt, "expression_statement")) {
        TSNode call = ts_node_named_child(stmt, 0);
        return ts_node_named_child_count(stmt) == 1 && py_is(call, "call") &&
               py_callee_is_any(src, call, release_names);
    }
    if (!py_is(stmt, "if_statement") || depth > 4) return false;
    if (!condition_is_quiet(src, ts_node_child_by_field_name(stmt, "condition", 9))) return false;
    uint32_t n = ts_node_named_child_count(stmt);
    for (uint32_t i = 0; i < n; i++) {
        TSNode part = ts_node_named_child(stmt, i);
        if (py_is(part, "elif_clause")) {
            if (!condition_is_quiet(src, ts_node_child_by_field_name(part, "condition", 9))) return false;
            part = ts_node_child_by_field_name(part, "consequence", 11);
        } else if (py_is(part, "else_clause")) {
            part = ts_node_child_by_field_name(part, "body", 4);
        }
        if (py_is(part, "block") && !only_releases(src, part, depth + 1)) return false;
    }
    return true;
}

static bool only_releases(const PySource *src, TSNode block, int depth) {
    uint32_t n = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < n; i++)
        if (!statement_only_releases(src, ts_node_named_child(block, i), depth)) return false;
    return true;
}

/* `for _ in range(3): gc.collect(); torch.cuda.empty_cache()`: the loop
 * collects garbage and releases memory, and allocates nothing, so no block
 * is cudaMalloc'ed again between the calls; it repeats the collection so
 * that objects freed by one round (reference cycles) reach the cache in the
 * next. Only that idiom: the body calls gc.collect(). */
static bool loop_only_releases(const PySource *src, TSNode loop) {
    static const char *const collect[] = {"gc.collect", NULL};
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    if (!py_is(body, "block") || !calls_any_of(src, body, collect)) return false;
    if (py_is(loop, "while_statement") &&
        py_does_gpu_work(src, ts_node_child_by_field_name(loop, "condition", 9)))
        return false;
    return only_releases(src, body, 0);
}

typedef struct {
    const PySource *src;
    TSNode loop;
    uint32_t cache_at; /* the empty_cache call's start */
    bool before, after; /* an event recorded for timing before it, after it */
} EventSearch;

static bool visit_event_record(TSNode n, void *data) {
    EventSearch *s = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (py_is(n, "call") && is_event_record(s->src, n) && !py_is_periodic(s->src, n, s->loop)) {
        if (ts_node_start_byte(n) < s->cache_at) s->before = true;
        else s->after = true;
    }
    return true;
}

/* Each iteration is timed with CUDA events (`starts[i].record()` ...
 * `ends[i].record()`), and empty_cache() comes after the last of them in
 * the body: a benchmark that starts each timed run from an empty cache
 * (ThunderKittens' kernel benchmarks); what it costs is outside the span
 * measured. Timing by the host clock does not count: training loops log
 * their step time, and emptying the cache every step is what this rule is
 * for. */
static bool empties_between_timed_spans(const RuleContext *ctx, TSNode loop, TSNode call) {
    EventSearch s = {ctx->py, loop, ts_node_start_byte(call), false, false};
    py_walk(ts_node_child_by_field_name(loop, "body", 4), visit_event_record, &s);
    return s.before && !s.after;
}

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    if (!py_is(n, "call")) return true;
    bool sync = py_callee_is_any(ctx->py, n, synchronize_names);
    bool empty = !sync && py_callee_is_any(ctx->py, n, empty_cache_names);
    if (!sync && !empty) return true;
    TSNode loop = py_enclosing_loop(n);
    if (ts_node_is_null(loop) || py_is_periodic(ctx->py, n, loop) || iterates_modules(ctx->py, loop) ||
        py_in_test_function(ctx->py, n))
        return true;
    if (sync) {
        /* an outer loop (per epoch, per benchmark configuration) runs its statements once per inner loop */
        if (!py_loop_is_hot(ctx->py, loop) || py_loop_sweeps_literal_configurations(ctx->py, loop)) return true;
        /* its own neighbours first (`if impl == "torch": sync; start.record(); ...`), then those of the
         * `if` around it that picks the device or a flag */
        TSNode stmt = py_statement_of(n);
        if (is_timing_sync(ctx, stmt, loop) || is_timing_sync(ctx, dispatch_statement(stmt, loop), loop) ||
            iterates_timed_wrapper(ctx, loop))
            return true;
        rule_report_node(ctx, n,
                         "torch.cuda.synchronize() runs on every iteration of this loop: the GPU idles while the "
                         "host waits and then queues the next step");
    } else {
        /* a collect-and-release loop repeats within one run of the loop around it, if any: that one decides */
        while (loop_only_releases(ctx->py, loop)) {
            loop = py_enclosing_loop(loop);
            if (ts_node_is_null(loop) || py_is_periodic(ctx->py, n, loop) || iterates_modules(ctx->py, loop))
                return true;
        }
        if (iterates_over_sizes(ctx, loop) || measures_memory(ctx, loop) || offloads_each_iteration(ctx, loop) ||
            releases_loaded_model(ctx, loop, n) || empties_between_timed_spans(ctx, loop, n) ||
            exports_models(ctx, loop))
            return true;
        rule_report_node(ctx, n,
                         "torch.cuda.empty_cache() inside a loop: freed blocks must be cudaMalloc'ed again on the "
                         "next iteration, which synchronizes the device");
    }
    return true;
}

static void check(RuleContext *ctx) {
    if (py_is_test_path(ctx->doc->path)) return;
    rule_walk(ctx, visit, ctx);
}

const Rule rule_py003_sync_in_hot_loop = {
    .code = "PY003", .name = "sync-in-hot-loop", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_SYNC,
    .summary = "torch.cuda.synchronize() every iteration, or empty_cache() in a loop",
    .advice = "drop the per-iteration synchronize (or empty_cache); synchronize only where a host clock must read the GPU's time",
    .documentation = documentation};
