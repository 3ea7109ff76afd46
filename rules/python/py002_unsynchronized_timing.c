/* PY002 unsynchronized-timing: GPU work timed with host clocks
 * (`time.perf_counter() - t0`) without torch.cuda.synchronize() before the
 * second clock read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rules/rule.h"
#include "rules/python/support/backward_calls.h"
#include "rules/python/support/test_code.h"
#include "analysis/python/python_expr.h"
#include "analysis/python/python_index.h"
#include "analysis/base/text_format.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a host clock read (`time.time()`, `time.perf_counter()`, `time.monotonic()`, their `_ns`\n"
    "variants, `timeit.default_timer()`, however they are imported) that ends a measurement of GPU\n"
    "work without a host synchronization after the last GPU operation: the first read is stored in a\n"
    "name (`t0 = time.perf_counter()`), the second read is subtracted from it\n"
    "(`time.perf_counter() - t0`, or `t1 = time.perf_counter()` and later `t1 - t0`), and between the\n"
    "two reads the code queues GPU work (a model call, a torch operation, `backward()`, an optimizer\n"
    "step, a call to a function of this file that does such work) and no host wait follows that work\n"
    "on the way to the second read. A wait follows the work when it comes after it, or when it sits\n"
    "in a loop of the interval that holds the work too: the next iteration's wait covers this\n"
    "iteration's work, and only the last iteration's is left out, which is close enough. A second read\n"
    "inside a loop that the first read is outside of (a `while` condition, a throughput since the\n"
    "start) covers every earlier iteration, so the whole loop body counts, unless the loop binds the\n"
    "start again. When it does (`batch_time.update(time.time() - end)`, then `end = time.time()`), a\n"
    "wait that runs on every iteration of that loop, in no branch (`losses.update(loss.item(), n)`\n"
    "before the backward), covers the work: each iteration's time then holds the wait for the previous\n"
    "iteration's work, and the times add up to the loop's.\n"
    "\n"
    "## Why is this slow?\n"
    "CUDA kernels run asynchronously: a call such as `model(x)` returns as soon as its kernels are\n"
    "queued. A host clock read right after it measures how long Python took to launch the work, not\n"
    "how long the GPU took to run it; the real cost then shows up somewhere else (at the next\n"
    "`.item()` or copy), and optimizations are chosen on wrong numbers.\n"
    "\n"
    "Not flagged:\n"
    "- timing with CUDA events (`torch.cuda.Event(enable_timing=True)` and `elapsed_time`);\n"
    "- work that a host wait follows (see above). Host waits: `torch.cuda.synchronize()`,\n"
    "  `stream.synchronize()`, `event.synchronize()`, a read such as `loss.item()`, `out.cpu()`,\n"
    "  `float(loss)` or `print(loss)`, a write into a tensor in host memory (`losses[k] = loss`),\n"
    "  `tokenizer.decode(ids)`, a barrier, a helper named like `sync`, an imported evaluation\n"
    "  (`evaluate_model(model, loader)`, `validate(...)`, `eval_epoch(...)`: it reports metrics, read on\n"
    "  the host), an imported helper named like a\n"
    "  tensor-to-number conversion (`to_python_float(loss)`, `to_python_int`, `to_scalar`), a copy of a\n"
    "  batch to the device\n"
    "  without `non_blocking=True` (a copy from pageable memory waits for the work queued before it),\n"
    "  or a call of a function of this file that does one of these (up to three calls deep), or of\n"
    "  a method of the same class on `self` (`self._run_step(batch)`) that does one on every call\n"
    "  (not in a branch or a loop's body, not after a `return`);\n"
    "- GPU work the code does not show (a call to an unknown function or method), except a\n"
    "  callable parameter timed right after a `torch.cuda.synchronize()` (`fn(*args)` in a\n"
    "  benchmark helper);\n"
    "- data on its way to the GPU, left unwaited and not used before the second read\n"
    "  (`x = x.to(device, non_blocking=True)`, a model's or loss module's `.cuda()`, a function\n"
    "  or method handed the device whose name says it moves data: `task.prepare_batch(batch,\n"
    "  device=device)`, `to_device(batch, device)`): the clock then times the host fetching a batch\n"
    "  (a data-time meter), and a synchronize before its second read would charge the GPU work\n"
    "  queued before it, the previous step's, to the data. Still flagged when the copied value is\n"
    "  computed on before the second read, and when the code synchronized right before the first\n"
    "  read (a benchmark of the copy itself);\n"
    "- the two reads in different functions, or a first read kept in an attribute (`self.t0`);\n"
    "- clocks around host work only (loading files, tokenizing, building tensors on the CPU);\n"
    "- clock reads that are not subtracted from an earlier one (timestamps for a log);\n"
    "- a function that neither mentions a CUDA device nor calls a model, `backward()` or a device\n"
    "  copy (a CPU benchmark in a file that also uses CUDA), and files that do not use CUDA.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "t0 = time.perf_counter()\n"
    "for _ in range(100):\n"
    "    y = model(x)\n"
    "elapsed = time.perf_counter() - t0\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "torch.cuda.synchronize()\n"
    "t0 = time.perf_counter()\n"
    "for _ in range(100):\n"
    "    y = model(x)\n"
    "torch.cuda.synchronize()\n"
    "elapsed = time.perf_counter() - t0\n"
    "```\n"
    "or CUDA events: `start.record()`, the work, `end.record()`, `end.synchronize()`,\n"
    "`start.elapsed_time(end)`.\n"
    "\n"
    "## Fix safety\n"
    "The fix inserts `torch.cuda.synchronize()` on its own line before the statement that reads the\n"
    "clock, using the name under which the file imports `torch`. It only makes the host wait for work\n"
    "that was already queued, so results are unchanged and the measurement becomes correct: outside\n"
    "loops the fix is safe. Inside a loop (a training loop that logs its step time) it is unsafe: the\n"
    "wait then happens on every iteration, which keeps results but slows the loop down, a trade the\n"
    "author should choose (or time with CUDA events instead). When the file falls back to the CPU (it calls `torch.cuda.is_available()`), the inserted\n"
    "call is guarded by `if torch.cuda.is_available():`, because `torch.cuda.synchronize()` raises on\n"
    "a machine without CUDA. No fix is offered when the clock read is part of a compound statement's header (a `while`\n"
    "or `if` condition), when the statement does not start its line, or when the file does not\n"
    "`import torch`.\n";

#define MAX_CHAIN 32

static const char *const clock_names[] = {
    "time.time",    "time.perf_counter", "time.monotonic",       "time.perf_counter_ns",
    "time.time_ns", "time.monotonic_ns", "timeit.default_timer", NULL};

static bool is_clock_read(const PySource *src, TSNode n) {
    return py_is(n, "call") && py_callee_is_any(src, n, clock_names);
}

/* `name` was last assigned a clock read, in the same scope as `at` and
 * before it: that read */
static bool clock_binding(const PySource *src, TSNode name, TSNode at, TSNode *read) {
    if (!py_is(name, "identifier")) return false;
    TSNode value = {0};
    if (py_binding_before(src, name, py_text_ptr(src, name), py_text_len(name), ts_node_start_byte(name), &value) !=
        BINDING_ASSIGNMENT)
        return false;
    value = py_unparen(value);
    if (!is_clock_read(src, value) || ts_node_start_byte(value) >= ts_node_start_byte(at)) return false;
    if (!ts_node_eq(py_scope_of(src, value), py_scope_of(src, at))) return false;
    *read = value;
    return true;
}

typedef struct {
    const PySource *src;
    TSNode read;     /* the second read: `t1 = <read>` */
    TSNode assigned; /* t1 */
    TSNode first;    /* out: the first read */
    TSNode start_name;
    bool found;
} LaterUse;

/* `t1 - t0` after `t1 = time.time()`, with t0 a clock read */
static bool visit_later_use(TSNode n, void *data) {
    LaterUse *u = data;
    if (u->found) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (!py_is_binary(n, "-") || ts_node_start_byte(n) < ts_node_end_byte(u->read)) return true;
    TSNode left = py_unparen(ts_node_child_by_field_name(n, "left", 4));
    TSNode right = py_unparen(ts_node_child_by_field_name(n, "right", 5));
    if (!py_is(left, "identifier") || !py_same_text(u->src, left, u->assigned)) return true;
    TSNode value = {0};
    if (py_binding_before(u->src, left, py_text_ptr(u->src, left), py_text_len(left), ts_node_start_byte(left),
                          &value) != BINDING_ASSIGNMENT ||
        !ts_node_eq(py_unparen(value), u->read))
        return true;
    TSNode first;
    if (clock_binding(u->src, right, u->read, &first)) {
        u->first = first;
        u->start_name = right;
        u->found = true;
    }
    return !u->found;
}

/* The data link between two clock reads: returns the first read and the
 * name that holds it. */
static bool find_first_read(const PySource *src, TSNode read, TSNode *first, TSNode *name) {
    TSNode parent = ts_node_parent(read);
    while (py_is(parent, "parenthesized_expression")) parent = ts_node_parent(parent);
    /* time.time() - t0 */
    if (py_is_binary(parent, "-") && ts_node_eq(py_unparen(ts_node_child_by_field_name(parent, "left", 4)), read)) {
        TSNode right = py_unparen(ts_node_child_by_field_name(parent, "right", 5));
        if (clock_binding(src, right, read, first)) {
            *name = right;
            return true;
        }
        return false;
    }
    /* t1 = time.time(); ... t1 - t0 */
    if (py_is(parent, "assignment") &&
        ts_node_eq(py_unparen(ts_node_child_by_field_name(parent, "right", 5)), read)) {
        TSNode left = ts_node_child_by_field_name(parent, "left", 4);
        if (!py_is(left, "identifier")) return false;
        LaterUse u = {.src = src, .read = read, .assigned = left};
        TSNode scope = py_scope_of(src, read);
        if (ts_node_is_null(scope)) return false;
        py_walk(scope, visit_later_use, &u);
        if (!u.found) return false;
        *first = u.first;
        *name = u.start_name;
        return true;
    }
    return false;
}

/* ---- what runs between the two reads ----------------------------------- */




/* float(t), int(t), bool(t), print(t) on a tensor read its value */
static bool reads_tensor_value(const PySource *src, TSNode call) {
    if (!py_is_builtin_call(src, call, "float") && !py_is_builtin_call(src, call, "int") &&
        !py_is_builtin_call(src, call, "bool") && !py_is_builtin_call(src, call, "print"))
        return false;
    uint32_t n = py_call_positional_count(call);
    for (uint32_t i = 0; i < n; i++)
        if (py_is_tensor(src, py_call_positional(call, i))) return true;
    return false;
}

/* the callee's name says it waits: `sync()`, `cuda_sync()`, `synchronize()`,
 * `fabric.barrier()` (an NCCL barrier waits for the device too) */
static bool callee_says_sync(const PySource *src, TSNode call) {
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode name = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "attribute", 9) : fn;
    if (!py_is(name, "identifier")) return false;
    const char *t = py_text_ptr(src, name);
    size_t len = py_text_len(name);
    for (size_t i = 0; i + 4 <= len; i++)
        if ((t[i] == 's' || t[i] == 'S') && strncmp(t + i + 1, "ync", 3) == 0) return true;
    for (size_t i = 0; i + 7 <= len; i++)
        if (strncmp(t + i, "barrier", 7) == 0) return true;
    return false;
}

/* A helper out of sight whose name says it turns a tensor into a Python
 * number: `to_python_float(loss)` (apex, Megatron: `t.item()`),
 * `to_python_int(n)`, `to_scalar(x)`. Reading the value waits for the GPU. */
static bool callee_says_host_value(const PySource *src, TSNode call) {
    if (py_call_positional_count(call) == 0 || !ts_node_is_null(py_local_function_of_call(src, call))) return false;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode name = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "attribute", 9) : fn;
    if (!py_is(name, "identifier")) return false;
    return strncmp(py_text_ptr(src, name), "to_python_", 10) == 0 || py_text_eq(src, name, "to_scalar");
}

/* A function out of sight whose name says it evaluates (`evaluate_model(model,
 * loader)`, `validate(...)`, `eval_epoch(...)`): an evaluation reports
 * metrics, and reading them waits for the GPU (dinov2 times a whole
 * evaluation through `evaluate_model` from another module). */
static bool callee_says_evaluation(const PySource *src, TSNode call) {
    if (ts_node_named_child_count(py_call_arguments(call)) == 0 ||
        !ts_node_is_null(py_local_function_of_call(src, call)))
        return false;
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    TSNode name = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "attribute", 9) : fn;
    if (!py_is(name, "identifier")) return false;
    static const char *const prefixes[] = {"evaluate", "validate", "eval_", "run_eval", NULL};
    const char *t = py_text_ptr(src, name);
    size_t len = py_text_len(name);
    for (size_t i = 0; prefixes[i]; i++)
        if (len >= strlen(prefixes[i]) && strncmp(t, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

/* `tokenizer.decode(ids)`: the ids are read on the host */
static bool is_token_decode(const PySource *src, TSNode call) {
    TSNode recv;
    if (!py_method_call(src, call, "decode", &recv) || py_call_positional_count(call) == 0) return false;
    if (py_is(recv, "attribute")) recv = ts_node_child_by_field_name(recv, "attribute", 9);
    if (!py_is(recv, "identifier")) return false;
    const char *t = py_text_ptr(src, recv);
    size_t len = py_text_len(recv);
    for (size_t i = 0; i + 9 <= len; i++)
        if (strncasecmp(t + i, "tokenizer", 9) == 0) return true;
    return false;
}

/* `losses[k] = value` into a tensor built in host memory: a copy to the host
 * that waits for the value (`losses = torch.zeros(n)` then, in a loop,
 * `losses[k] = criterion(...)`) */
static bool is_host_slot_write(const PySource *src, TSNode assignment) {
    if (!py_is(assignment, "assignment")) return false;
    TSNode left = ts_node_child_by_field_name(assignment, "left", 4);
    TSNode right = ts_node_child_by_field_name(assignment, "right", 5);
    if (!py_is(left, "subscript") || ts_node_is_null(right)) return false;
    if (py_is(right, "integer") || py_is(right, "float") || py_is(right, "string") || py_is(right, "none"))
        return false;
    TSNode base = ts_node_child_by_field_name(left, "value", 5);
    if (!py_is(base, "identifier")) return false;
    TSNode value = {0};
    if (py_binding_before(src, base, py_text_ptr(src, base), py_text_len(base), ts_node_start_byte(base), &value) !=
        BINDING_ASSIGNMENT)
        return false;
    return py_is(value, "call") && py_is_host_factory(src, value);
}

#define MAX_HELPER_DEPTH 3

static bool is_sync_at(const PySource *src, TSNode call, int depth);

typedef struct {
    const PySource *src;
    int depth;
    bool found;
} SyncSearch;

static bool visit_helper_sync(TSNode n, void *data) {
    SyncSearch *s = data;
    if (s->found) return false;
    if (py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if ((py_is(n, "call") && is_sync_at(s->src, n, s->depth)) || is_host_slot_write(s->src, n)) s->found = true;
    return !s->found;
}

static bool walk_waits(const PySource *src, TSNode node, int depth) {
    SyncSearch s = {src, depth, false};
    py_walk(node, visit_helper_sync, &s);
    return s.found;
}

static bool visit_return(TSNode n, void *data) {
    bool *found = data;
    if (*found || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda"))
        return false;
    if (py_is(n, "return_statement")) *found = true;
    return !*found;
}

static bool waits_on_every_call(const PySource *src, TSNode block, int depth);

/* the part of a statement that runs whenever it is reached waits: an if's
 * or while's test, a for's iterable, a with's items and body, a try's body,
 * any other statement whole */
static bool statement_always_waits(const PySource *src, TSNode stmt, int depth) {
    if (py_is(stmt, "if_statement") || py_is(stmt, "while_statement"))
        return walk_waits(src, ts_node_child_by_field_name(stmt, "condition", 9), depth);
    if (py_is(stmt, "for_statement")) return walk_waits(src, ts_node_child_by_field_name(stmt, "right", 5), depth);
    if (py_is(stmt, "with_statement")) {
        uint32_t n = ts_node_named_child_count(stmt);
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_named_child(stmt, i);
            if (py_is(c, "with_clause") ? walk_waits(src, c, depth)
                                         : py_is(c, "block") && waits_on_every_call(src, c, depth))
                return true;
        }
        return false;
    }
    if (py_is(stmt, "try_statement")) return waits_on_every_call(src, ts_node_child_by_field_name(stmt, "body", 4), depth);
    if (py_is(stmt, "function_definition") || py_is(stmt, "class_definition") ||
        py_is(stmt, "decorated_definition") || py_is(stmt, "comment"))
        return false;
    return walk_waits(src, stmt, depth);
}

/* A wait in a statement of the block that runs whenever the block does: not
 * in a branch or a loop's body, and before any `return` (an early return
 * skips what follows it). */
static bool waits_on_every_call(const PySource *src, TSNode block, int depth) {
    uint32_t n = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < n; i++) {
        TSNode stmt = ts_node_named_child(block, i);
        if (statement_always_waits(src, stmt, depth)) return true;
        bool returns = false;
        py_walk(stmt, visit_return, &returns);
        if (returns) return false;
    }
    return false;
}

/* The call makes the host wait for the GPU (or, for a helper of unknown
 * content, may well do so: `synchronize()`, `cuda_sync()`): a sync call, a
 * copy to the host, reading a tensor's value, decoding token ids, a barrier,
 * or a function of this file (or a method of the class, called on `self`)
 * that does one of these (up to three calls deep;
 * anywhere in its body: a per-iteration `.item()` in an evaluation loop
 * waits for all but the last iteration's work). */
static bool is_sync_at(const PySource *src, TSNode call, int depth) {
    if (py_is_sync_call(src, call) || py_is_blocking_to_cpu(src, call) || reads_tensor_value(src, call) ||
        callee_says_sync(src, call) || callee_says_host_value(src, call) || callee_says_evaluation(src, call) ||
        is_token_decode(src, call))
        return true;
    if (depth >= MAX_HELPER_DEPTH) return false;
    TSNode def = py_local_function_of_call(src, call);
    if (!ts_node_is_null(def)) {
        if (py_is_within(call, def)) return false; /* recursion */
        TSNode body = ts_node_child_by_field_name(def, "body", 4);
        return !ts_node_is_null(body) && walk_waits(src, body, depth + 1);
    }
    /* `self._run_step(batch)`: a trainer's method holds logging, checkpoints
     * and early returns, so its wait counts only where it runs on every call */
    def = py_self_method_of_call(src, call);
    if (ts_node_is_null(def) || py_is_within(call, def)) return false;
    TSNode body = ts_node_child_by_field_name(def, "body", 4);
    return !ts_node_is_null(body) && waits_on_every_call(src, body, depth + 1);
}

static bool is_sync(const PySource *src, TSNode call) { return is_sync_at(src, call, 0); }

#define MAX_MARKS 64
#define MAX_SPANNED 4

typedef struct {
    const PySource *src;
    size_t from, to; /* the region: after the first read, before the second */
    bool lead_sync;  /* the code synchronized right before the first read */
    TSNode work[MAX_MARKS], syncs[MAX_MARKS]; /* GPU work and host waits in the region */
    size_t work_count, sync_count;
    bool overflow;
    TSNode spanned[MAX_SPANNED]; /* loops whose earlier iterations the interval covers */
    size_t spanned_count;
    TSNode carried; /* the loop that restarts the clock on each iteration (`end = time.time()`), if any */
    TSNode scope;   /* the function (or module) of the two reads */
    bool device_work;
} Region;

static void mark(Region *r, TSNode *marks, size_t *count, TSNode n) {
    if (*count == MAX_MARKS) r->overflow = true;
    else marks[(*count)++] = n;
}

/* n runs on every iteration of loop: no branch, inner loop, handler or
 * short-circuit between them */
static bool runs_every_iteration(TSNode n, TSNode loop) {
    static const char *const conditional[] = {
        "if_statement",       "elif_clause",         "else_clause",       "for_statement",
        "while_statement",    "except_clause",       "finally_clause",    "conditional_expression",
        "boolean_operator",   "list_comprehension",  "set_comprehension", "dictionary_comprehension",
        "generator_expression", "lambda",            "function_definition", "match_statement", NULL};
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p) && !ts_node_eq(p, loop); p = ts_node_parent(p))
        for (size_t i = 0; conditional[i]; i++)
            if (py_is(p, conditional[i])) return false;
    return true;
}

/* A sync that follows the work on the way to the second read: after it, or in
 * a loop that holds both and runs inside the interval (or that the interval
 * spans), so that the next iteration's wait covers this iteration's work. */
static bool sync_follows(const Region *r, TSNode work, TSNode sync) {
    /* after it, or around it (`out.float().cpu()`: the receiver runs first) */
    if (ts_node_end_byte(sync) >= ts_node_end_byte(work)) return true;
    /* A meter restarted on each iteration (`batch_time.update(time.time() - end)`, then
     * `end = time.time()`), with a wait on every iteration (`losses.update(loss.item())`
     * before the backward): each iteration's time holds the wait for the previous
     * iteration's work, so the times add up to the loop's, all but the last step's. */
    if (!ts_node_is_null(r->carried) && py_is_within(work, r->carried) && py_is_within(sync, r->carried) &&
        runs_every_iteration(sync, r->carried))
        return true;
    for (TSNode loop = py_enclosing_loop(work); !ts_node_is_null(loop); loop = py_enclosing_loop(loop)) {
        bool inside = ts_node_start_byte(loop) >= r->from && ts_node_end_byte(loop) <= r->to;
        for (size_t i = 0; i < r->spanned_count && !inside; i++) inside = ts_node_eq(loop, r->spanned[i]);
        if (inside && py_is_within(sync, loop)) return true;
    }
    return false;
}

/* A call that moves data to the device: `x.to(device)` or `x.cuda()` of what
 * is not a tensor this code computed on the GPU (a batch, or a model's
 * weights: `criterion = nn.CrossEntropyLoss().cuda()`), or a function or
 * method handed a CUDA device whose name says it moves data
 * (`task.prepare_batch(batch, device=device)`, `to_device(batch, device)`),
 * not a torch function and not a helper of this file (its body counts). */
static bool moves_data(const PySource *src, TSNode call) {
    if (!py_is(call, "call")) return false;
    TSNode recv;
    if (py_method_call(src, call, "cuda", &recv) || py_method_call(src, call, "to", &recv))
        return !(py_is_tensor(src, recv) && !py_is_host_factory(src, recv));
    if (!ts_node_is_null(py_local_function_of_call(src, call)) || !py_call_is_device_work(src, call)) return false;
    char callee[PY_NAME_MAX];
    if (!py_callee_name(src, call, callee, sizeof callee) || strncmp(callee, "torch.", 6) == 0) return false;
    const char *last = strrchr(callee, '.');
    last = last ? last + 1 : callee;
    static const char *const words[] = {"prepare", "device", "move", "transfer", "upload", "batch",
                                        "collate", "place", "gpu", "cuda", NULL};
    for (size_t i = 0; words[i]; i++)
        if (py_name_has_word(last, strlen(last), words[i])) return true;
    return false;
}

typedef struct {
    TSNode name;
    size_t from, to;
} UseWindow;

static bool not_read_in_window(const PySource *src, TSNode id, void *data) {
    const UseWindow *w = data;
    return ts_node_start_byte(id) < w->from || ts_node_start_byte(id) >= w->to || !py_same_text(src, id, w->name);
}

/* Data on its way to the device that nothing uses before the second read:
 * `batch = task.prepare_batch(batch, device=device)` or `x = x.cuda(...)`
 * and then the clock. A copy whose value is computed on in the interval
 * (`model(x.cuda())`, `y = x.cuda(); z = y.sum()`) is part of the timed work. */
static bool is_unused_upload(const Region *r, TSNode call) {
    if (!moves_data(r->src, call)) return false;
    TSNode stmt = py_statement_of(call);
    TSNode assign = py_is(stmt, "expression_statement") ? ts_node_named_child(stmt, 0) : stmt;
    if (!py_is(assign, "assignment") || !ts_node_eq(ts_node_child_by_field_name(assign, "right", 5), call))
        return false;
    TSNode target = ts_node_child_by_field_name(assign, "left", 4);
    while (py_is(target, "subscript") || py_is(target, "attribute"))
        target = ts_node_child_by_field_name(target, py_is(target, "subscript") ? "value" : "object",
                                             py_is(target, "subscript") ? 5 : 6);
    if (!py_is(target, "identifier")) return false;
    UseWindow w = {target, ts_node_end_byte(stmt), r->to};
    return py_each_read_name(r->src, r->scope, not_read_in_window, &w);
}

/* some GPU work in the interval that no host wait follows */
static bool unsynchronized_work(const Region *r) {
    if (r->overflow) return false; /* too much to judge: stay quiet */
    for (size_t w = 0; w < r->work_count; w++) {
        /* Data on its way to the GPU (`x.to(device, non_blocking=True)`, `prepare_batch(batch,
         * device=device)`) is not what the clock times, unless the code synchronized before its
         * first read (a benchmark of the copy): the interval is the host fetching and handing
         * over a batch (a data-time meter), and a synchronize before the second read would charge
         * the GPU work queued before it, the previous step's, to the data. */
        if (!r->lead_sync && is_unused_upload(r, r->work[w])) continue;
        bool covered = false;
        for (size_t s = 0; s < r->sync_count && !covered; s++) covered = sync_follows(r, r->work[w], r->syncs[s]);
        if (!covered) return true;
    }
    return false;
}

/* `x.to(device)` or `x.cuda()` without non_blocking=True of something not
 * made on the GPU by this code (a batch): the copy from host memory waits for
 * the stream, so the host waits for all the work queued before it */
static bool is_blocking_upload(const PySource *src, TSNode call) {
    TSNode recv;
    bool cuda = py_method_call(src, call, "cuda", &recv);
    if (!cuda && !py_method_call(src, call, "to", &recv)) return false;
    if (py_call_has_splat(call)) return false;
    TSNode nb = py_call_keyword(src, call, "non_blocking");
    if (ts_node_is_null(nb)) nb = py_call_positional(call, cuda ? 1 : 2);
    if (!ts_node_is_null(nb) && !py_text_eq(src, nb, "False")) return false;
    if (!cuda) {
        TSNode dev = py_call_positional(call, 0);
        if (ts_node_is_null(dev)) dev = py_call_keyword(src, call, "device");
        if (!py_is_cuda_device(src, dev)) return false;
    }
    /* a model's move, or a tensor this code computed on the GPU, copies nothing from the host */
    return !py_is_module_instance(src, recv) && !(py_is_tensor(src, recv) && !py_is_host_factory(src, recv));
}

static bool is_parameter_call(const PySource *src, TSNode call) {
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    if (!py_is(fn, "identifier")) return false;
    return py_binding_before(src, fn, py_text_ptr(src, fn), py_text_len(fn), ts_node_start_byte(fn), NULL) ==
           BINDING_PARAMETER;
}

/* `place(model, device, ...)`: a helper handed a model and a device puts the
 * model's parameters there; copies from host memory wait for the GPU, so
 * the time it takes is measured right (loading, sharding, materialising). */
static bool is_placement(const PySource *src, TSNode call) {
    bool module = false, device = false;
    TSNode args = py_call_arguments(call);
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n && i < 16; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (py_is(a, "keyword_argument")) a = ts_node_child_by_field_name(a, "value", 5);
        if (!module && py_is_module_instance(src, a)) module = true;
        else if (!device && py_is_device_expr(src, a)) device = true;
    }
    return module && device;
}

static bool call_does_gpu_work(const Region *r, TSNode call) {
    const PySource *src = r->src;
    if (py_call_does_gpu_work(src, call)) return true;
    if (is_placement(src, call)) return false;
    /* a helper of this file that does GPU work */
    TSNode def = py_local_function_of_call(src, call);
    if (!ts_node_is_null(def) && !py_is_within(call, def)) {
        TSNode body = ts_node_child_by_field_name(def, "body", 4);
        return !ts_node_is_null(body) && py_does_gpu_work(src, body);
    }
    /* `fn(*args)` timed right after a synchronize: a benchmark of a GPU callable */
    return r->lead_sync && is_parameter_call(src, call);
}

static bool visit_region(TSNode n, void *data) {
    Region *r = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    size_t start = ts_node_start_byte(n), end = ts_node_end_byte(n);
    if (end <= r->from || start >= r->to) return false;
    if (start < r->from || end > r->to) return true; /* straddles the region: look inside */
    if (is_host_slot_write(r->src, n)) mark(r, r->syncs, &r->sync_count, n);
    if (py_is(n, "call")) {
        if (is_sync(r->src, n) || is_blocking_upload(r->src, n)) {
            mark(r, r->syncs, &r->sync_count, n);
        } else if (call_does_gpu_work(r, n)) {
            mark(r, r->work, &r->work_count, n);
            if (py_call_is_device_work(r->src, n)) r->device_work = true;
        }
    } else if (py_is(n, "binary_operator")) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        if (!ts_node_is_null(op) && strcmp(ts_node_type(op), "@") == 0 && r->src->uses_gpu &&
            (py_is_tensor(r->src, ts_node_child_by_field_name(n, "left", 4)) ||
             py_is_tensor(r->src, ts_node_child_by_field_name(n, "right", 5))))
            mark(r, r->work, &r->work_count, n);
    }
    return true;
}

/* the scope binds `name` again inside the loop */
static bool rebound_in(const PySource *src, TSNode scope, TSNode name, TSNode loop) {
    size_t count;
    const PyBinding *b = py_index_bindings(src, scope, py_text_ptr(src, name), py_text_len(name), &count);
    for (size_t i = 0; i < count; i++)
        if (b[i].start >= ts_node_start_byte(loop) && b[i].start < ts_node_end_byte(loop)) return true;
    return false;
}

/* the statement before the first read's statement synchronizes */
static bool synchronized_before(const PySource *src, TSNode first) {
    TSNode stmt = py_statement_of(first);
    TSNode prev = ts_node_prev_named_sibling(stmt);
    while (!ts_node_is_null(prev) && py_is(prev, "comment")) prev = ts_node_prev_named_sibling(prev);
    if (ts_node_is_null(prev) || !py_is(prev, "expression_statement")) return false;
    TSNode e = ts_node_named_child(prev, 0);
    return py_is(e, "call") && is_sync(src, e);
}

/* ---- the fix ------------------------------------------------------------ */

/* The name under which the module imports torch at its top level
 * (`import torch`, `import torch as th`, `import torch.nn` binds `torch`);
 * NULL when it does not. Writes into buf. */
static bool torch_name(const PySource *src, char *buf, size_t size) {
    TSNode root = ts_tree_root_node(src->tree);
    bool found = false;
    uint32_t n = ts_node_named_child_count(root);
    for (uint32_t i = 0; i < n; i++) {
        TSNode stmt = ts_node_named_child(root, i);
        if (!py_is(stmt, "import_statement")) continue;
        uint32_t k = ts_node_named_child_count(stmt);
        for (uint32_t j = 0; j < k; j++) {
            TSNode c = ts_node_named_child(stmt, j);
            TSNode local = {0};
            if (py_is(c, "aliased_import")) {
                if (py_text_eq(src, ts_node_child_by_field_name(c, "name", 4), "torch"))
                    local = ts_node_child_by_field_name(c, "alias", 5);
            } else if (py_is(c, "dotted_name") && ts_node_named_child_count(c) > 0 &&
                       py_text_eq(src, ts_node_named_child(c, 0), "torch")) {
                local = ts_node_named_child(c, 0);
            }
            if (!py_is(local, "identifier") || py_text_len(local) + 1 > size) continue;
            /* later imports win, as at run time */
            memcpy(buf, py_text_ptr(src, local), py_text_len(local));
            buf[py_text_len(local)] = '\0';
            found = true;
        }
    }
    return found;
}

static bool is_simple_statement(TSNode stmt) {
    static const char *const simple[] = {"expression_statement", "return_statement", "assert_statement",
                                         "raise_statement",      "delete_statement", NULL};
    for (size_t i = 0; simple[i]; i++)
        if (py_is(stmt, simple[i])) return true;
    return false;
}

static void add_fix(RuleContext *ctx, Finding *f, TSNode read) {
    const PySource *src = ctx->py;
    TSNode stmt = py_statement_of(read);
    char torch[PY_NAME_MAX];
    if (!torch_name(src, torch, sizeof torch) || !is_simple_statement(stmt) || !py_starts_line(src, stmt)) return;
    char indent[256];
    size_t width = py_line_indent(src, ts_node_start_byte(stmt), indent, sizeof indent);
    if (width + 1 >= sizeof indent) return;
    size_t line_start = ts_node_start_byte(stmt) - width;
    /* a file that falls back to the CPU must not call synchronize() without a GPU: guard it */
    bool cpu_fallback = strstr(src->doc->text, "is_available") != NULL;
    char *text = cpu_fallback ? format_string("%sif %s.cuda.is_available():\n%s    %s.cuda.synchronize()\n", indent,
                                              torch, indent, torch)
                              : format_string("%s%s.cuda.synchronize()\n", indent, torch);
    if (!text) {
        ctx->out_of_memory = true;
        return;
    }
    /* in a loop the wait is paid on every iteration: right times, a slower loop; not for --fix alone */
    bool in_loop = !ts_node_is_null(py_enclosing_loop(stmt));
    Fix *fix = finding_add_fix(f,
                               in_loop ? "Add torch.cuda.synchronize() before the clock read (the host then waits "
                                         "for the GPU on every iteration: the time becomes right, the loop slower)"
                                       : "Add torch.cuda.synchronize() before the clock read",
                               !in_loop);
    if (!fix || !fix_add_edit(fix, line_start, line_start, text)) ctx->out_of_memory = true;
    free(text);
}

/* ---- the check ---------------------------------------------------------- */

static void describe(const PySource *src, TSNode node, char *buf, size_t size) {
    if (!py_short_text(src, node, 40, buf, size)) snprintf(buf, size, "the clock");
}

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    const PySource *src = ctx->py;
    if (ctx->out_of_memory) return false;
    if (!is_clock_read(src, n)) return true;
    TSNode first, name;
    if (!find_first_read(src, n, &first, &name)) return true;
    Region r = {.src = src, .from = ts_node_end_byte(first), .to = ts_node_start_byte(n)};
    r.lead_sync = synchronized_before(src, first);
    TSNode scope = py_scope_of(src, n);
    if (ts_node_is_null(scope)) return true;
    /* A second read inside a loop that the first read is not in spans every
     * earlier iteration: the whole loop (`while time.time() - t0 < budget:`,
     * a throughput since the start read in the loop), unless the loop binds
     * the start again (`end = time.time()` at the end of each iteration). */
    for (TSNode loop = py_enclosing_loop(n); py_is(loop, "for_statement") || py_is(loop, "while_statement");
         loop = py_enclosing_loop(loop)) {
        if (py_is_within(first, loop) || rebound_in(src, scope, name, loop)) break;
        if (ts_node_end_byte(loop) > r.to) r.to = ts_node_end_byte(loop);
        if (r.spanned_count < MAX_SPANNED) r.spanned[r.spanned_count++] = loop;
    }
    TSNode loop = py_enclosing_loop(n);
    if ((py_is(loop, "for_statement") || py_is(loop, "while_statement")) && !py_is_within(first, loop) &&
        rebound_in(src, scope, name, loop))
        r.carried = loop;
    r.scope = scope;
    py_walk(scope, visit_region, &r);
    /* a host wait after the work, or on every iteration of a loop that holds it (a
     * per-iteration `loss.item()`), leaves at most one iteration's work out: close enough */
    if (!unsynchronized_work(&r)) return true;
    /* the timed code runs on a device */
    if (!r.device_work && !py_runs_on_device(src, n)) return true;
    char what[64], start[64];
    describe(src, n, what, sizeof what);
    describe(src, name, start, sizeof start);
    Finding *f = rule_report_node(ctx, n,
                                  "`%s` is read while the GPU work queued since `%s` may still be running, so the "
                                  "time covers the kernel launches, not the work",
                                  what, start);
    if (!f) return true;
    if (!finding_add_related(f, (ByteRange){ts_node_start_byte(first), ts_node_end_byte(first)},
                             "the measurement starts here"))
        ctx->out_of_memory = true;
    add_fix(ctx, f, n);
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->py->uses_gpu) return;
    rule_walk(ctx, visit, ctx);
}

const Rule rule_py002_unsynchronized_timing = {
    .code = "PY002", .name = "unsynchronized-timing", .severity = SEVERITY_WARNING, .correctness = true,
    .languages = LANGUAGE_PYTHON, .check = check,
    .summary = "GPU work timed with a host clock without torch.cuda.synchronize() before the second read",
    .documentation = documentation};
