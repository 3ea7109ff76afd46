/* PY003 sync-in-hot-loop: torch.cuda.synchronize() or torch.cuda.empty_cache()
 * on every iteration of a loop that does GPU work. */
#include "rule.h"

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
    "Not flagged: a synchronize guarded by a periodic condition (`if step % 100 == 0:`), and a\n"
    "synchronize next to a host clock read, which is how per-iteration timing is done correctly.\n"
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

static bool statement_reads_clock(const RuleContext *ctx, TSNode stmt);

static bool visit_clock(TSNode n, void *data) {
    void **args = data;
    const RuleContext *ctx = args[0];
    bool *found = args[1];
    if (*found) return false;
    if (py_is(n, "call") && py_callee_is_any(ctx->py, n, clock_names)) *found = true;
    return !*found;
}

static bool statement_reads_clock(const RuleContext *ctx, TSNode stmt) {
    bool found = false;
    void *args[2] = {(void *)ctx, &found};
    py_walk(stmt, visit_clock, args);
    return found;
}

/* a clock read right before or after the synchronize: this is timing, done right */
static bool is_timing_sync(const RuleContext *ctx, TSNode stmt) {
    TSNode prev = ts_node_prev_named_sibling(stmt);
    while (!ts_node_is_null(prev) && py_is(prev, "comment")) prev = ts_node_prev_named_sibling(prev);
    TSNode next = ts_node_next_named_sibling(stmt);
    while (!ts_node_is_null(next) && py_is(next, "comment")) next = ts_node_next_named_sibling(next);
    return (!ts_node_is_null(prev) && statement_reads_clock(ctx, prev)) ||
           (!ts_node_is_null(next) && statement_reads_clock(ctx, next));
}

static bool visit(TSNode n, void *data) {
    RuleContext *ctx = data;
    if (!py_is(n, "call")) return true;
    bool sync = py_callee_is_any(ctx->py, n, synchronize_names);
    bool empty = !sync && py_callee_is_any(ctx->py, n, empty_cache_names);
    if (!sync && !empty) return true;
    TSNode loop = py_enclosing_loop(n);
    if (ts_node_is_null(loop) || py_is_periodic(ctx->py, n, loop)) return true;
    if (sync) {
        if (!py_does_gpu_work(ctx->py, loop) || is_timing_sync(ctx, py_statement_of(n))) return true;
        rule_report_node(ctx, n,
                         "torch.cuda.synchronize() runs on every iteration of this loop: the GPU idles while the "
                         "host waits and then queues the next step");
    } else {
        rule_report_node(ctx, n,
                         "torch.cuda.empty_cache() inside a loop: freed blocks must be cudaMalloc'ed again on the "
                         "next iteration, which synchronizes the device");
    }
    return true;
}

static void check(RuleContext *ctx) { rule_walk(ctx, visit, ctx); }

const Rule rule_py003_sync_in_hot_loop = {
    .code = "PY003",
    .name = "sync-in-hot-loop",
    .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON,
    .summary = "torch.cuda.synchronize() every iteration, or empty_cache() in a loop",
    .documentation = documentation,
    .check = check,
    .measure = MEASURE_SYNC,
};
