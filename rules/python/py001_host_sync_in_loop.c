/* PY001 host-sync-in-loop: `.item()`, `.cpu()`, `.tolist()`, `float(t)`,
 * `print(t)` on a tensor on every iteration of a loop that does GPU work. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "rules/rule.h"
#include "analysis/python/python_index.h"
#include "analysis/python/python_loaders.h"
#include "rules/python/support/loop_kinds.h"
#include "rules/python/support/test_code.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a host synchronization on a tensor that runs on every iteration of a loop doing GPU work:\n"
    "`t.item()`, `t.cpu()`, `t.tolist()`, `t.to(\"cpu\")`, `float(t)`, `int(t)`, `bool(t)`, and\n"
    "`print(t)` (also an f-string such as `print(f\"{loss:.3f}\")`), where `t` is a tensor.\n"
    "\n"
    "A value is a tensor when the file shows it: a torch operation or a tensor method on a tensor,\n"
    "a call of a model or loss (a torch.nn class, a class of this file, or a name whose result the\n"
    "code turns into the loss it hands to `backward()`, such as a model or criterion passed in as a\n"
    "parameter or imported from another file), an element of a tuple of tensors\n"
    "(`_, pred = out.max(1)`, `loss, _ = model(x)`), a value returned by a function of this file that\n"
    "returns tensors, a name the code calls `.backward()` on, and a call of a variable named like a loss\n"
    "(`criterion`, `loss_fn`) on a tensor.\n"
    "\n"
    "A read outside any loop is flagged too when its function is one step of GPU work (its work is not\n"
    "in loops of its own, the read is under no condition) and a loop of this file calls the function\n"
    "on every iteration: `def train_step(batch): ... return loss.item()`.\n"
    "\n"
    "When the read takes one element of a tensor by the loop's variable (`int(cu_seqlens[i].item())`,\n"
    "`cu_seqlens[i + 1]` in `for i in range(...)`) and the loop does not write that tensor, a note says\n"
    "to read it whole once before the loop (`cu_seqlens.tolist()`) and index the list.\n"
    "\n"
    "The same read twice in one statement (`f\"{loss.item():.2f}\" if a else f\"{loss.item():.4f}\"`) is\n"
    "reported once. A read of a value that a statement before it in the same iteration already read\n"
    "(`total += loss.item()`, then `shown = f\"{loss.item():.2f}\"`), with no GPU work and no new value\n"
    "between, is not reported: the first read waited, and this one waits for nothing new. The earlier\n"
    "read must run whenever the later one does (not in a branch of its own); it may be the test of the\n"
    "`if` around the later one (`if ids[k][pos].item() in media:` then `media[ids[k][pos].item()]`).\n"
    "Nor is a read at the end of an iteration of a value that the next iteration's stop test reads\n"
    "(`generated.append(token.item())` last in the body, `if token.item() in stop_tokens: break` first),\n"
    "with no GPU work and no new value between: that test waits for the same value anyway.\n"
    "Elements taken by plain indices (`ids[k][pos]`) count as values already computed.\n"
    "\n"
    "## Why is this slow?\n"
    "CUDA kernels run asynchronously: the host queues work and moves on. Reading a tensor's value on\n"
    "the host (`.item()`, a copy to the CPU, converting or printing it) must wait until every kernel\n"
    "queued before it has finished. Done once per iteration, the host can no longer run ahead: the\n"
    "GPU idles while Python prepares and launches the next step, and the launch latency that was\n"
    "hidden behind running kernels is paid in full. `.cpu()` followed by more GPU work is the classic\n"
    "stall.\n"
    "\n"
    "Not flagged:\n"
    "- a read guarded by a periodic or one-off condition (`if step % 100 == 0:`, `if i == 0:`), or in\n"
    "  a block that ends in `break`/`return`, which is how logging is done right; a loop inside such a\n"
    "  block inherits it (`if i % 500 == 0: for n in SEQ_LENS: ...`) unless it walks a stream of\n"
    "  batches (`for x, y in val_loader:`, a DataLoader), whose reads wait once per batch again;\n"
    "- a read under `if DEBUG:` where `DEBUG` is assigned once, at module level, to `False`, `None` or\n"
    "  `0` and never rebound (no `global DEBUG`, no other assignment): the block never runs;\n"
    "- a loop over a literal list of a few configurations (`for stride, ch in [(1, 32), (2, 64)]:`): a\n"
    "  sweep whose waits are a handful, not one per step;\n"
    "- test code: files named `test_*.py`, `*_test.py` or `conftest.py`, and `def test_*` functions\n"
    "  anywhere. The rule stands down there as a whole, not only for reads that feed an `assert` or a\n"
    "  print: every value a test reads feeds a check, often through a helper\n"
    "  (`assert max_diff(a, b) == 0`), and a test's run time is not what users wait for. Folders\n"
    "  (`tests/`) are not looked at: a path may be absolute, and a project checked out under a folder\n"
    "  of that name would lose every finding;\n"
    "- a value produced in the same iteration by an operation whose result size depends on the data\n"
    "  (boolean-mask indexing `acc[targets == i]`, `nonzero()`, one-argument `torch.where`,\n"
    "  `masked_select`, `unique`): that operation already waits for the GPU, so dropping the read\n"
    "  removes no wait; so is a `torch.cat`/`torch.stack` of such values or of elements they index\n"
    "  (`torch.cat((torch.stack(x, 1), iou[x[0], x[1]][:, None]), 1).cpu()` with\n"
    "  `x = torch.where(mask)`);\n"
    "- a read of a value already computed (`loss.item()`, not `(a == b).sum().item()`) whose\n"
    "  statement follows an explicit `torch.cuda.synchronize()` (or `stream.synchronize()`) in the\n"
    "  same block, or an `if` that runs it whenever the code is on CUDA and queues no work after it\n"
    "  (`if device.type == \"cuda\":`, `if torch.cuda.is_available():`, `if use_cuda:`, `if args.cuda:`;\n"
    "  not a flag such as `if args.sync:` or `if args.sync_cuda:`, nor `device == \"cuda:0\"`), with\n"
    "  nothing between but other such reads (`meter.update(loss.item(), n)` right\n"
    "  after the synchronize of code that times each step): the synchronize is the wait, and dropping\n"
    "  the read saves nothing while it stays. Two reads in a row with no synchronize are both\n"
    "  reported: removing one moves the wait to the other;\n"
    "- a read in a branch that ends the loop (`if num_nan: print(num_nan.item()); os._exit(1)`, an\n"
    "  error path that raises, breaks or returns): it runs once, not on every iteration;\n"
    "- a value the host needs to take the next step: a generation loop's sampled token, fed back as\n"
    "  the next input (`token = int(torch.argmax(logits))` ... `torch.as_tensor([[token]])`), or a\n"
    "  value that a stop test compares, whose branch ends the loop or sets the flag it breaks on\n"
    "  (`if token in stop_token_ids: stopped = True`, `if not math.isfinite(loss_value):\n"
    "  sys.exit(1)`), also through names computed from it in the loop and bound from nothing else\n"
    "  (`tokens = [int(i) for i in indices.tolist()]`, then `token = tokens[0]`; not through a dict\n"
    "  or list display that holds it beside other values), and a read that is itself the test of a\n"
    "  branch whose own statements end the loop (`if signal.item() == 0: break` after a broadcast of\n"
    "  whether to go on), reached through comparisons, `not`, `and`/`or` and value tests such as\n"
    "  `bool()` or `math.isfinite()` only; a value only compared to keep the best one is still\n"
    "  reported;\n"
    "- a comprehension in no loop whose only GPU work gathers, reshapes or casts what was computed\n"
    "  earlier (`[torch.cat(x, 0).cpu().numpy() for x in zip(*stats)]` after the loop that collected\n"
    "  them): a one-off conversion, not a wait per step;\n"
    "- reads after the loop, and reads in an outer loop (per epoch) whose GPU work happens in an\n"
    "  inner loop or in a loop inside a function of this file that it calls;\n"
    "- values that are not known to be tensors: Python numbers, numpy arrays (`arr.item()`),\n"
    "  `float(lr)`, `int(args.steps)`, `len(x)`, `x.size(0)`, `x.shape`, and batches coming straight\n"
    "  from a DataLoader, which are host tensors;\n"
    "- tensors in host memory: built by a torch factory without a CUDA `device=` (`torch.tensor(ids)`,\n"
    "  `torch.as_tensor(x)`, `torch.from_numpy(a)`, `torch.zeros(3, device=\"cpu\")`) and never moved,\n"
    "  and what is computed from such tensors alone (`torch.tensor(box).view(1, 4) / gn`,\n"
    "  `torch.where(mask)[0]` of a host mask, `torch.cumsum(torch.tensor(lengths), 0)`), followed\n"
    "  through names whose every reaching assignment is one; `torch.tensor(x, device=\"cuda\")`,\n"
    "  `torch.tensor(x).cuda()`, `.to(device)` and a host tensor combined with a GPU one are on the GPU;\n"
    "- `.numpy()` on its own: it only works on CPU tensors (`t.cpu().numpy()` is reported at `.cpu()`);\n"
    "- loops without GPU work, and functions that never touch a CUDA device;\n"
    "- files that do not use CUDA at all.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "for x, y in loader:\n"
    "    x, y = x.to(device), y.to(device)\n"
    "    loss = criterion(model(x), y)\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    optimizer.zero_grad()\n"
    "    running_loss += loss.item()\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "Accumulate on the GPU and read the value once after the loop, or only every N steps:\n"
    "```python\n"
    "running_loss = torch.zeros((), device=device)\n"
    "for step, (x, y) in enumerate(loader):\n"
    "    x, y = x.to(device), y.to(device)\n"
    "    loss = criterion(model(x), y)\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    optimizer.zero_grad()\n"
    "    running_loss += loss.detach()\n"
    "    if step % 100 == 0:\n"
    "        print(f\"step {step}: {loss.item():.4f}\")\n"
    "print(running_loss.item() / len(loader))\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: the value is usually needed (a running total, a log line, a stopping test),\n"
    "and where to read it instead (after the loop, every N steps, accumulated in a GPU tensor)\n"
    "changes what the program prints or decides, so it is a choice for the author.\n";

#define MAX_CHAIN 32

/* a method call that copies a tensor's data to the host */
static bool is_sync_method(const PySource *src, TSNode call, bool include_numpy) {
    static const char *const methods[] = {"item", "cpu", "tolist", NULL};
    TSNode name = py_method_name_node(call);
    if (ts_node_is_null(name)) return false;
    for (size_t i = 0; methods[i]; i++)
        if (py_text_eq(src, name, methods[i])) return true;
    if (include_numpy && py_text_eq(src, name, "numpy")) return true;
    return py_is_blocking_to_cpu(src, call);
}

/* `x.cuda()`, `x.to(device)` (not `x.to(torch.float16)`) */
static bool is_device_move(const PySource *src, TSNode call) {
    if (py_method_call(src, call, "cuda", NULL)) return true;
    if (!py_method_call(src, call, "to", NULL)) return false;
    TSNode dev = py_call_positional(call, 0);
    if (ts_node_is_null(dev) || !py_is_device_expr(src, dev)) dev = py_call_keyword(src, call, "device");
    return !ts_node_is_null(dev) && py_is_device_expr(src, dev);
}

/* `x.to(torch.float16)`, `x.to(dtype=...)`, `x.to("cpu")`: a method call
 * that keeps a host tensor on the host (`x.to(y)` with y a tensor or a
 * device variable may move it) */
static bool to_stays_on_host(const PySource *src, TSNode call) {
    TSNode dev = py_call_keyword(src, call, "device");
    if (!ts_node_is_null(dev) && !py_is_cpu_device(src, dev)) return false;
    uint32_t n = py_call_positional_count(call);
    for (uint32_t i = 0; i < n; i++) {
        TSNode a = py_call_positional(call, i);
        char name[64];
        if (py_is_cpu_device(src, a)) continue;
        if (py_qualified_name(src, a, name, sizeof name) && strncmp(name, "torch.", 6) == 0 &&
            strchr(name + 6, '.') == NULL && strcmp(name, "torch.device") != 0)
            continue; /* torch.float16, torch.long */
        return false;
    }
    return true;
}

static bool on_host(const PySource *src, TSNode expr, int depth);

/* an operand of an operation on a host tensor: a host tensor, or a value
 * not known to be a tensor (a number) */
static bool host_operand(const PySource *src, TSNode expr, int depth, bool *tensor) {
    if (py_is(expr, "list") || py_is(expr, "tuple")) {
        uint32_t n = ts_node_named_child_count(expr);
        for (uint32_t i = 0; i < n; i++)
            if (!host_operand(src, ts_node_named_child(expr, i), depth, tensor)) return false;
        return true;
    }
    if (on_host(src, expr, depth)) {
        *tensor = true;
        return true;
    }
    return !py_is_tensor(src, expr) && !py_is(expr, "list_splat") && !py_is(expr, "keyword_argument");
}

/* The value is a tensor in host memory, as far as the code shows: it was
 * built there by a torch factory without a CUDA device= (`torch.tensor(ids)`,
 * `torch.from_numpy(a)`) and never moved, or went through a host copy
 * (`x.cpu()...`, where that copy's wait is reported), or was computed from
 * such tensors only (`torch.tensor(b).view(1, 4) / gn`, `torch.where(m)[0]`
 * of a host mask), followed through names whose every reaching binding
 * assigns one. */
static bool on_host(const PySource *src, TSNode expr, int depth) {
    if (depth > MAX_CHAIN || ts_node_is_null(expr)) return false;
    if (py_is(expr, "call")) {
        if (is_sync_method(src, expr, true) || py_is_host_factory(src, expr)) return true;
        if (is_device_move(src, expr)) return false;
        TSNode fn = ts_node_child_by_field_name(expr, "function", 8);
        if (!py_is(fn, "attribute")) return false;
        char name[128];
        if (py_callee_name(src, expr, name, sizeof name) && strncmp(name, "torch.", 6) == 0 &&
            strncmp(name, "torch.cuda.", 11) != 0) {
            /* torch.where(mask), torch.cumsum(t, dim=0): on the host when its
             * tensors are */
            if (!ts_node_is_null(py_call_keyword(src, expr, "device")) || py_call_has_splat(expr)) return false;
            bool tensor = false;
            uint32_t n = py_call_positional_count(expr);
            for (uint32_t i = 0; i < n; i++)
                if (!host_operand(src, py_call_positional(expr, i), depth + 1, &tensor)) return false;
            return tensor;
        }
        TSNode method = py_method_name_node(expr);
        if (py_text_eq(src, method, "to") || py_text_eq(src, method, "type")) {
            if (!to_stays_on_host(src, expr)) return false;
        } else {
            /* `host.add(gpu)` would fail; tensor arguments must be on the host too */
            bool tensor = false;
            uint32_t n = py_call_positional_count(expr);
            for (uint32_t i = 0; i < n; i++)
                if (!host_operand(src, py_call_positional(expr, i), depth + 1, &tensor)) return false;
        }
        return on_host(src, ts_node_child_by_field_name(fn, "object", 6), depth + 1);
    }
    if (py_is(expr, "attribute")) return on_host(src, ts_node_child_by_field_name(expr, "object", 6), depth + 1);
    if (py_is(expr, "subscript")) return on_host(src, ts_node_child_by_field_name(expr, "value", 5), depth + 1);
    if (py_is(expr, "parenthesized_expression") || py_is(expr, "unary_operator"))
        return on_host(src, ts_node_named_child(expr, 0), depth + 1);
    if (py_is(expr, "binary_operator") || py_is(expr, "comparison_operator")) {
        bool tensor = false;
        uint32_t n = ts_node_named_child_count(expr);
        for (uint32_t i = 0; i < n; i++)
            if (!host_operand(src, ts_node_named_child(expr, i), depth + 1, &tensor)) return false;
        return tensor;
    }
    if (py_is(expr, "identifier")) {
        PyReachingBinding reach[8];
        size_t n = py_reaching_bindings(src, expr, reach, 8);
        if (n == 0 || n == 8) return false;
        for (size_t i = 0; i < n; i++)
            if (reach[i].kind != BINDING_ASSIGNMENT || !on_host(src, reach[i].value, depth + 1)) return false;
        return true;
    }
    return false;
}

static bool is_host_read_tensor(const PySource *src, TSNode expr) {
    return !ts_node_is_null(expr) && py_is_tensor(src, expr) && !on_host(src, expr, 0);
}

/* a string (or implicit concatenation) with an interpolated tensor: `f"{loss}"` */
static bool string_formats_tensor(const PySource *src, TSNode s, int depth) {
    if (depth > 4 || ts_node_is_null(s)) return false;
    if (py_is(s, "concatenated_string")) {
        uint32_t n = ts_node_named_child_count(s);
        for (uint32_t i = 0; i < n; i++)
            if (string_formats_tensor(src, ts_node_named_child(s, i), depth + 1)) return true;
        return false;
    }
    if (!py_is(s, "string")) return false;
    uint32_t n = ts_node_named_child_count(s);
    for (uint32_t i = 0; i < n; i++) {
        TSNode c = ts_node_named_child(s, i);
        if (!py_is(c, "interpolation")) continue;
        TSNode e = ts_node_child_by_field_name(c, "expression", 10);
        if (ts_node_is_null(e)) e = ts_node_named_child(c, 0);
        if (is_host_read_tensor(src, e)) return true;
    }
    return false;
}

/* Which host read is this call, if any? */
static bool is_host_read(const PySource *src, TSNode call) {
    TSNode recv;
    TSNode name = py_method_name_node(call);
    if (!ts_node_is_null(name) && is_sync_method(src, call, false)) {
        recv = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
        return is_host_read_tensor(src, recv);
    }
    if (py_is_builtin_call(src, call, "float") || py_is_builtin_call(src, call, "int") ||
        py_is_builtin_call(src, call, "bool")) {
        if (py_call_positional_count(call) != 1 || py_call_has_splat(call)) return false;
        return is_host_read_tensor(src, py_call_positional(call, 0));
    }
    if (py_is_builtin_call(src, call, "print")) {
        uint32_t n = py_call_positional_count(call);
        for (uint32_t i = 0; i < n; i++) {
            TSNode a = py_call_positional(call, i);
            if (is_host_read_tensor(src, a) || string_formats_tensor(src, a, 0)) return true;
        }
    }
    return false;
}

/* An expression shortened to its chain of names, calls and subscripts, the
 * arguments and indices elided where the whole is long or spans lines:
 * `torch.max(...).item()`, `nn.functional.interpolate(...)[0].cpu()`. */
static void shorten(const PySource *src, TSNode e, char *buf, size_t size, int depth) {
    if (size == 0) return;
    buf[0] = '\0';
    while (py_is(e, "parenthesized_expression") && ts_node_named_child_count(e) == 1) e = ts_node_named_child(e, 0);
    if (depth > 8 || py_short_text(src, e, 24, buf, size)) return;
    if (py_is(e, "identifier")) { /* a long name, cut past 60 characters */
        size_t len = py_text_len(e);
        snprintf(buf, size, "%.*s%s", (int)(len > 60 ? 60 : len), py_text_ptr(src, e), len > 60 ? "..." : "");
        return;
    }
    char inner[96];
    if (py_is(e, "call")) {
        shorten(src, ts_node_child_by_field_name(e, "function", 8), inner, sizeof inner, depth + 1);
        bool no_arguments = ts_node_named_child_count(py_call_arguments(e)) == 0;
        snprintf(buf, size, "%.80s(%s)", inner, no_arguments ? "" : "...");
    } else if (py_is(e, "attribute")) {
        TSNode attr = ts_node_child_by_field_name(e, "attribute", 9);
        shorten(src, ts_node_child_by_field_name(e, "object", 6), inner, sizeof inner, depth + 1);
        int attr_len = (int)(py_text_len(attr) < 32 ? py_text_len(attr) : 32);
        snprintf(buf, size, "%.60s.%.*s", inner, attr_len, py_text_ptr(src, attr));
    } else if (py_is(e, "subscript")) {
        TSNode index = ts_node_child_by_field_name(e, "subscript", 9);
        char shown[24];
        bool one_index = ts_node_named_child_count(e) == 2; /* `a[i, j]`: several */
        shorten(src, ts_node_child_by_field_name(e, "value", 5), inner, sizeof inner, depth + 1);
        snprintf(buf, size, "%.80s[%.8s]", inner,
                 one_index && py_short_text(src, index, 8, shown, sizeof shown) ? shown : "...");
    } else {
        snprintf(buf, size, "(...)"); /* an operator, a literal: `(...).sum().item()` */
    }
}

static void describe(const PySource *src, TSNode call, char *buf, size_t size) {
    if (py_short_text(src, call, 48, buf, size)) return;
    TSNode name = py_method_name_node(call);
    if (!ts_node_is_null(name)) {
        char receiver[96];
        shorten(src, ts_node_child_by_field_name(ts_node_parent(name), "object", 6), receiver, sizeof receiver, 0);
        snprintf(buf, size, "%s.%.*s()", receiver, (int)py_text_len(name), py_text_ptr(src, name));
        return;
    }
    TSNode fn = ts_node_child_by_field_name(call, "function", 8);
    snprintf(buf, size, "%.*s(...)", (int)(py_text_len(fn) < 32 ? py_text_len(fn) : 32), py_text_ptr(src, fn));
}

/* A read outside any loop of its function, in a function that is one step of
 * GPU work (`def train_step(batch): ... return loss.item()`), which a loop of
 * this file calls on every iteration: that call. */
static bool called_every_iteration(const PySource *src, TSNode read, TSNode *call_out) {
    TSNode fn = py_enclosing_function(src, read);
    if (ts_node_is_null(fn)) return false;
    /* only reads that run on every call: none under a condition */
    for (TSNode n = ts_node_parent(read); !ts_node_is_null(n) && !ts_node_eq(n, fn); n = ts_node_parent(n))
        if (py_is(n, "if_statement") || py_is(n, "conditional_expression") || py_is(n, "try_statement") ||
            py_is(n, "boolean_operator"))
            return false;
    if (!py_function_is_step(src, fn)) return false;
    TSNode parent = ts_node_parent(fn);
    if (py_is(parent, "decorated_definition")) parent = ts_node_parent(parent);
    if (py_is(ts_node_parent(parent), "class_definition")) return false; /* methods: self.name(...) */
    TSNode name = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name)) return false;
    size_t count;
    const TSNode *calls = py_index_calls(src, py_text_ptr(src, name), py_text_len(name), &count);
    for (size_t i = 0; i < count && i < 64; i++) {
        if (py_is_within(calls[i], fn)) continue; /* recursion */
        TSNode loop = py_enclosing_loop(calls[i]);
        if (ts_node_is_null(loop) || py_is_periodic(src, calls[i], loop)) continue;
        *call_out = calls[i];
        return true;
    }
    return false;
}

/* ---- code whose waits are intended or do not repeat ---------------------- */

typedef struct {
    const PySource *src;
    const char *name;
    size_t length;
    int assignments, falsy;
    bool other; /* global, augmented assignment, del, ... */
} FlagSearch;

static bool is_falsy_literal(const PySource *src, TSNode v) {
    return py_is(v, "false") || py_is(v, "none") || (py_is(v, "integer") && py_text_eq(src, v, "0"));
}

static bool names_flag(const FlagSearch *s, TSNode id) {
    return py_is(id, "identifier") && py_text_len(id) == s->length &&
           memcmp(py_text_ptr(s->src, id), s->name, s->length) == 0;
}

static bool visit_flag(TSNode n, void *data) {
    FlagSearch *s = data;
    if (py_is(n, "global_statement") || py_is(n, "nonlocal_statement")) {
        uint32_t c = ts_node_named_child_count(n);
        for (uint32_t i = 0; i < c; i++)
            if (names_flag(s, ts_node_named_child(n, i))) s->other = true;
        return false;
    }
    if (py_is(n, "assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        if (names_flag(s, left)) {
            s->assignments++;
            if (is_falsy_literal(s->src, ts_node_child_by_field_name(n, "right", 5))) s->falsy++;
        } else if (!py_is(left, "identifier") && !py_is(left, "attribute") && !py_is(left, "subscript")) {
            /* `DEBUG, x = ...`: rebinds it */
            for (uint32_t i = 0; i < ts_node_named_child_count(left); i++)
                if (names_flag(s, ts_node_named_child(left, i))) s->other = true;
        }
    } else if (py_is(n, "augmented_assignment") || py_is(n, "for_statement")) {
        if (names_flag(s, ts_node_child_by_field_name(n, "left", 4))) s->other = true;
    } else if (py_is(n, "named_expression")) {
        if (names_flag(s, ts_node_child_by_field_name(n, "name", 4))) s->other = true;
    }
    return true;
}

/* `if DEBUG:` (or `if DEBUG and ...:`) where DEBUG is assigned once in the
 * file, at module level, to False, None or 0, and never rebound (no global
 * declaration, no other assignment): the block never runs. */
static bool condition_is_dead(const PySource *src, TSNode cond, int depth) {
    if (depth > 4 || ts_node_is_null(cond)) return false;
    if (py_is(cond, "false") || py_is(cond, "none")) return true;
    if (py_is(cond, "parenthesized_expression")) return condition_is_dead(src, ts_node_named_child(cond, 0), depth + 1);
    if (py_is(cond, "boolean_operator")) {
        TSNode op = ts_node_child_by_field_name(cond, "operator", 8);
        if (ts_node_is_null(op) || strcmp(ts_node_type(op), "and") != 0) return false;
        return condition_is_dead(src, ts_node_child_by_field_name(cond, "left", 4), depth + 1) ||
               condition_is_dead(src, ts_node_child_by_field_name(cond, "right", 5), depth + 1);
    }
    if (!py_is(cond, "identifier")) return false;
    TSNode value;
    if (py_binding_before(src, cond, py_text_ptr(src, cond), py_text_len(cond), ts_node_start_byte(cond), &value) !=
            BINDING_ASSIGNMENT ||
        !ts_node_is_null(py_enclosing_function(src, value)))
        return false;
    FlagSearch s = {src, py_text_ptr(src, cond), py_text_len(cond), 0, 0, false};
    py_walk(ts_tree_root_node(src->tree), visit_flag, &s);
    return s.assignments == 1 && s.falsy == 1 && !s.other;
}

static bool under_dead_condition(const PySource *src, TSNode n) {
    TSNode child = n;
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); child = p, p = ts_node_parent(p)) {
        if (!py_is(p, "if_statement")) continue;
        TSNode cons = ts_node_child_by_field_name(p, "consequence", 11);
        if (ts_node_eq(child, cons) && condition_is_dead(src, ts_node_child_by_field_name(p, "condition", 9), 0))
            return true;
    }
    return false;
}

/* The loop walks a stream of batches: `for x, y in val_loader:`, a
 * DataLoader, `enumerate(tqdm(loader))`. */
static bool iterates_data(const PySource *src, TSNode loop) {
    if (!py_is(loop, "for_statement")) return false;
    int enumerates;
    TSNode it = py_unwrap_iterable(src, ts_node_child_by_field_name(loop, "right", 5), &enumerates);
    if (py_is(it, "call") && py_is_dataloader_call(src, it)) return true;
    if (py_is(it, "attribute")) it = ts_node_child_by_field_name(it, "attribute", 9);
    if (!py_is(it, "identifier")) return false;
    const char *t = py_text_ptr(src, it);
    size_t len = py_text_len(it);
    for (size_t i = 0; i + 6 <= len; i++)
        if (strncasecmp(t + i, "loader", 6) == 0) return true;
    if ((len == 2 && strncmp(t, "dl", 2) == 0) || (len > 3 && strncmp(t + len - 3, "_dl", 3) == 0)) return true;
    TSNode value;
    return py_binding_before(src, it, t, len, ts_node_start_byte(it), &value) == BINDING_ASSIGNMENT &&
           py_is_dataloader_call(src, value);
}

/* The loop runs inside a periodic or one-off block of an outer loop
 * (`if i % VALIDATE_EVERY == 0: for n in SEQ_LENS: ...`), and walks a few
 * items rather than a stream of batches: it inherits the guard's exemption. */
static bool inside_periodic_block(const PySource *src, TSNode loop) {
    if (iterates_data(src, loop)) return false;
    for (TSNode inner = loop, outer = py_enclosing_loop(loop); !ts_node_is_null(outer);
         inner = outer, outer = py_enclosing_loop(outer))
        if (py_is_periodic(src, inner, outer)) return true;
    return false;
}

/* ---- waits that another operation already made --------------------------- */

/* `acc[targets == i]`, `x[mask]` with `mask = y > 0`, `x.nonzero()`,
 * `torch.where(cond)` (one argument), `masked_select`: the result's size
 * depends on the data, so the operation copies a count to the host and waits
 * for the GPU itself. */
static bool is_comparison(const PySource *src, TSNode e, TSNode loop, int depth) {
    if (depth > 4 || ts_node_is_null(e)) return false;
    if (py_is(e, "comparison_operator")) return true;
    if (py_is(e, "parenthesized_expression")) return is_comparison(src, ts_node_named_child(e, 0), loop, depth + 1);
    if (py_is(e, "unary_operator")) return is_comparison(src, ts_node_named_child(e, 0), loop, depth + 1);
    if (py_is(e, "binary_operator")) {
        TSNode op = ts_node_child_by_field_name(e, "operator", 8);
        if (ts_node_is_null(op) || (strcmp(ts_node_type(op), "&") != 0 && strcmp(ts_node_type(op), "|") != 0))
            return false;
        return is_comparison(src, ts_node_child_by_field_name(e, "left", 4), loop, depth + 1) ||
               is_comparison(src, ts_node_child_by_field_name(e, "right", 5), loop, depth + 1);
    }
    if (py_is(e, "identifier")) {
        TSNode value;
        return py_binding_before(src, e, py_text_ptr(src, e), py_text_len(e), ts_node_start_byte(e), &value) ==
                   BINDING_ASSIGNMENT &&
               py_is_within(value, loop) && is_comparison(src, value, loop, depth + 1);
    }
    return false;
}

static bool is_data_dependent_shape(const PySource *src, TSNode e, TSNode loop) {
    if (py_is(e, "subscript")) {
        TSNode index = ts_node_child_by_field_name(e, "subscript", 9);
        return ts_node_named_child_count(e) == 2 && is_comparison(src, index, loop, 0);
    }
    if (!py_is(e, "call")) return false;
    static const char *const fns[] = {"torch.nonzero", "torch.masked_select", "torch.unique", "torch.argwhere", NULL};
    if (py_callee_is_any(src, e, fns)) return true;
    static const char *const where[] = {"torch.where", NULL};
    if (py_callee_is_any(src, e, where)) return py_call_positional_count(e) == 1;
    static const char *const methods[] = {"nonzero", "masked_select", "unique", "argwhere", NULL};
    for (size_t i = 0; methods[i]; i++)
        if (py_method_call(src, e, methods[i], NULL)) return true;
    return false;
}

/* The value read was produced in this iteration by such an operation: the
 * loop already waits there, and dropping this read removes no wait (it would
 * have to go with the mask). */
static bool gathers_after_own_wait(const PySource *src, TSNode call, TSNode loop, int depth);

static bool after_own_wait(const PySource *src, TSNode expr, TSNode loop, int depth) {
    if (depth > MAX_CHAIN || ts_node_is_null(expr)) return false;
    if (is_data_dependent_shape(src, expr, loop)) return true;
    if (gathers_after_own_wait(src, expr, loop, depth)) return true;
    if (py_is(expr, "call")) {
        TSNode fn = ts_node_child_by_field_name(expr, "function", 8);
        if (!py_is(fn, "attribute") || is_device_move(src, expr)) return false;
        return after_own_wait(src, ts_node_child_by_field_name(fn, "object", 6), loop, depth + 1);
    }
    if (py_is(expr, "attribute")) return after_own_wait(src, ts_node_child_by_field_name(expr, "object", 6), loop, depth + 1);
    if (py_is(expr, "subscript")) return after_own_wait(src, ts_node_child_by_field_name(expr, "value", 5), loop, depth + 1);
    if (py_is(expr, "parenthesized_expression")) return after_own_wait(src, ts_node_named_child(expr, 0), loop, depth + 1);
    if (py_is(expr, "identifier")) {
        TSNode value;
        return py_binding_before(src, expr, py_text_ptr(src, expr), py_text_len(expr), ts_node_start_byte(expr),
                                 &value) == BINDING_ASSIGNMENT &&
               py_is_within(value, loop) && after_own_wait(src, value, loop, depth + 1);
    }
    return false;
}

/* `torch.cuda.synchronize()`, `stream.synchronize()`, `event.synchronize()` as a statement */
static bool is_explicit_sync(const PySource *src, TSNode stmt) {
    if (!py_is(stmt, "expression_statement")) return false;
    TSNode e = ts_node_named_child(stmt, 0);
    static const char *const syncs[] = {"torch.cuda.synchronize", NULL};
    return py_is(e, "call") && (py_callee_is_any(src, e, syncs) || py_method_call(src, e, "synchronize", NULL));
}

/* A name that says the code runs on CUDA (`use_cuda`, `args.cuda`,
 * `cuda_available`); not a flag about something else (`sync_cuda`,
 * `use_cuda_graph`), nor `x.is_cuda`, which speaks of x alone. */
static bool names_cuda(const PySource *src, TSNode e) {
    if (py_is(e, "attribute")) e = ts_node_child_by_field_name(e, "attribute", 9);
    if (!py_is(e, "identifier")) return false;
    static const char *const names[] = {"cuda",           "use_cuda",          "on_cuda",
                                        "has_cuda",       "with_cuda",         "cuda_available",
                                        "is_cuda_available", "cuda_is_available", NULL};
    for (size_t i = 0; names[i]; i++)
        if (py_text_eq(src, e, names[i])) return true;
    return false;
}

/* `"cuda"` or `'cuda'` exactly: `device == "cuda:0"` holds on one GPU only */
static bool is_cuda_string(const PySource *src, TSNode e) {
    return py_is(e, "string") && (py_text_eq(src, e, "\"cuda\"") || py_text_eq(src, e, "'cuda'"));
}

/* A condition that holds whenever the code runs on CUDA:
 * `torch.cuda.is_available()`, `device.type == "cuda"`, `"cuda" in str(device)`,
 * `use_cuda`, `args.cuda`. Not a negation, `!=`, or a combination with a flag
 * (`args.sync and use_cuda` may be false on CUDA). */
static bool holds_on_cuda(const PySource *src, TSNode cond) {
    while (py_is(cond, "parenthesized_expression")) cond = ts_node_named_child(cond, 0);
    static const char *const available[] = {"torch.cuda.is_available", NULL};
    if (py_is(cond, "call")) return py_callee_is_any(src, cond, available);
    if (py_is(cond, "identifier") || py_is(cond, "attribute")) return names_cuda(src, cond);
    if (!py_is(cond, "comparison_operator") || ts_node_child_count(cond) != 3) return false;
    TSNode op = ts_node_child(cond, 1);
    if (!py_is(op, "==") && !py_is(op, "in")) return false;
    return is_cuda_string(src, ts_node_child(cond, 0)) || is_cuda_string(src, ts_node_child(cond, 2));
}

typedef struct {
    const PySource *src;
    bool calls, reads, other_calls;
} CallSearch;

/* the tensor a read copies: `t` of `t.item()` or `float(t)` (null for print) */
static TSNode read_operand(const PySource *src, TSNode call) {
    TSNode name = py_method_name_node(call);
    if (!ts_node_is_null(name)) return ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
    if (py_is_builtin_call(src, call, "print")) return (TSNode){0};
    return py_call_positional(call, 0);
}

/* an index that selects without computing: `k`, `0`, `-1` (a name may
 * still be an index tensor: a chain of such reads is rare) */
static bool plain_index(const PySource *src, TSNode index) {
    if (py_is(index, "unary_operator")) {
        TSNode op = ts_node_child(index, 0);
        if (!py_text_eq(src, op, "-")) return false;
        index = ts_node_child_by_field_name(index, "argument", 8);
        return py_is(index, "integer");
    }
    return py_is(index, "identifier") || py_is(index, "integer");
}

/* the read copies a value already computed: `loss.item()`, `self.loss.item()`,
 * `float(outs[0])`, `input_ids[k][pos].item()`; not `(a == b).sum().item()`,
 * which computes first. One subscript may take any index (`outs[key]`); in a
 * chain of them every index must be plain. */
static bool reads_computed_value(const PySource *src, TSNode call) {
    TSNode e = read_operand(src, call);
    int levels = 0;
    for (TSNode v = e; py_is(v, "subscript") && levels < 5; v = ts_node_child_by_field_name(v, "value", 5)) levels++;
    if (levels > 4) return false;
    for (; py_is(e, "subscript"); e = ts_node_child_by_field_name(e, "value", 5)) {
        uint32_t n = ts_node_named_child_count(e);
        for (uint32_t i = 1; levels > 1 && i < n; i++)
            if (!plain_index(src, ts_node_named_child(e, i))) return false;
    }
    return py_is(e, "identifier") || py_is(e, "attribute");
}

/* what a statement calls: reads of computed values, and other calls that
 * give the GPU no work as far as the code shows (`meter.update(...)`,
 * `y.size(0)`, `isinstance(...)`) */
static bool visit_call_kinds(TSNode n, void *data) {
    CallSearch *s = data;
    if (py_is(n, "lambda")) return false;
    if (!py_is(n, "call")) return true;
    s->calls = true;
    if (is_host_read(s->src, n)) {
        if (reads_computed_value(s->src, n)) s->reads = true;
        else s->other_calls = true;
    } else if (py_call_does_gpu_work(s->src, n))
        s->other_calls = true;
    return !s->other_calls;
}

/* The statement calls nothing (`end = t0`), or only reads values already
 * computed and calls what gives the GPU no work: a read after it waits for
 * nothing it did. */
static bool queues_no_work(const PySource *src, TSNode stmt) {
    CallSearch calls = {src, false, false, false};
    py_walk(stmt, visit_call_kinds, &calls);
    return !calls.other_calls && (!calls.calls || calls.reads);
}

/* `if device.type == "cuda": torch.cuda.synchronize()` (other branches for
 * other devices): on CUDA the synchronize runs, and nothing after it in the
 * branch queues new work */
static bool syncs_on_cuda(const PySource *src, TSNode stmt) {
    if (!py_is(stmt, "if_statement") || !holds_on_cuda(src, ts_node_child_by_field_name(stmt, "condition", 9)))
        return false;
    TSNode block = ts_node_child_by_field_name(stmt, "consequence", 11);
    uint32_t n = ts_node_named_child_count(block);
    bool synced = false;
    for (uint32_t i = 0; i < n; i++) {
        TSNode c = ts_node_named_child(block, i);
        if (py_is(c, "comment")) continue;
        if (is_explicit_sync(src, c)) synced = true;
        else if (synced && !queues_no_work(src, c)) synced = false; /* `extra = model(x)` after it */
    }
    return synced;
}

/* The read's statement follows an explicit synchronize in its block, with
 * nothing between but statements that call nothing (`end = t0`, comments)
 * or only read values already computed (and call what gives the GPU no work):
 * `torch.cuda.synchronize()` then `meter.update(loss.item(), n)`, as code
 * that times each step does, when the read copies a value already computed.
 * The synchronize is the wait, and dropping the read saves nothing while
 * the synchronize stays. (Two reads in a row with no synchronize are both
 * reported: removing one moves the wait to the other.) */
static bool after_explicit_sync(const PySource *src, TSNode read) {
    if (!reads_computed_value(src, read)) return false; /* `model(x).sum().item()` waits for new work */
    TSNode stmt = py_statement_of(read);
    if (ts_node_is_null(stmt) || !py_is(ts_node_parent(stmt), "block")) return false;
    for (TSNode prev = ts_node_prev_named_sibling(stmt); !ts_node_is_null(prev);
         prev = ts_node_prev_named_sibling(prev)) {
        if (py_is(prev, "comment")) continue;
        if (is_explicit_sync(src, prev) || syncs_on_cuda(src, prev)) return true;
        /* statements that call nothing, or read values already computed
         * (`loss_meter.update(loss.item(), n)` before `acc_meter.update(acc.item(), n)`) */
        if (!queues_no_work(src, prev)) return false;
    }
    return false;
}

/* `torch.cat((torch.stack(x, 1), iou[x[0], x[1]][:, None]), 1)` with x from
 * a one-argument torch.where: a gathering of values (a tuple or list of
 * them, or their elements) of which one comes from such an operation; the
 * loop waited there, and the gathering adds only small kernels */
static bool gathers_after_own_wait(const PySource *src, TSNode call, TSNode loop, int depth) {
    static const char *const gathers[] = {"torch.cat",    "torch.stack",  "torch.concatenate", "torch.concat",
                                          "torch.hstack", "torch.vstack", NULL};
    if (!py_is(call, "call") || !py_callee_is_any(src, call, gathers)) return false;
    TSNode first = py_call_positional(call, 0);
    if (py_is(first, "tuple") || py_is(first, "list")) {
        uint32_t n = ts_node_named_child_count(first);
        for (uint32_t i = 0; i < n && i < 16; i++) {
            TSNode item = ts_node_named_child(first, i);
            if (py_is(item, "subscript")) item = ts_node_child_by_field_name(item, "value", 5); /* iou[x[0]][:, None] */
            if (py_is(item, "subscript")) { /* iou[x[0], x[1]]: indexed by the data-dependent result */
                TSNode index = ts_node_child_by_field_name(item, "subscript", 9);
                if (py_is(index, "subscript")) index = ts_node_child_by_field_name(index, "value", 5);
                if (py_is(index, "identifier") && after_own_wait(src, index, loop, depth + 1)) return true;
                item = ts_node_child_by_field_name(item, "value", 5);
            }
            if (after_own_wait(src, item, loop, depth + 1)) return true;
        }
        return false;
    }
    return after_own_wait(src, first, loop, depth + 1);
}

/* ---- values the host needs to go on ------------------------------------- */

/* `raise`, `break`, `return`, `sys.exit(1)`, `os._exit(1)`, `exit()`, `quit()` */
static bool ends_the_loop(const PySource *src, TSNode stmt) {
    if (py_is(stmt, "raise_statement") || py_is(stmt, "break_statement") || py_is(stmt, "return_statement"))
        return true;
    if (!py_is(stmt, "expression_statement")) return false;
    TSNode e = ts_node_named_child(stmt, 0);
    static const char *const exits[] = {"sys.exit", "os._exit", "exit", "quit", NULL};
    return py_is(e, "call") && py_callee_is_any(src, e, exits);
}

static TSNode last_statement(TSNode block) {
    uint32_t n = ts_node_named_child_count(block);
    for (uint32_t i = n; i-- > 0;) {
        TSNode c = ts_node_named_child(block, i);
        if (!py_is(c, "comment")) return c;
    }
    return (TSNode){0};
}

/* The read sits in a branch of the loop that ends it (`if num_nan: print(...);
 * os._exit(1)`, an error path that raises): it runs once, not per iteration. */
static bool in_exiting_branch(const PySource *src, TSNode read, TSNode loop) {
    for (TSNode p = ts_node_parent(read); !ts_node_is_null(p) && !ts_node_eq(p, loop); p = ts_node_parent(p)) {
        if (!py_is(p, "block")) continue;
        TSNode owner = ts_node_parent(p);
        if (!py_is(owner, "if_statement") && !py_is(owner, "elif_clause") && !py_is(owner, "else_clause") &&
            !py_is(owner, "except_clause"))
            continue;
        TSNode last = last_statement(p);
        if (!ts_node_is_null(last) && ends_the_loop(src, last)) return true;
    }
    return false;
}

typedef struct {
    const PySource *src;
    bool found;
} ExitSearch;

/* a statement that ends the loop: break, return, raise, sys.exit(...) */
static bool visit_exit(TSNode n, void *data) {
    ExitSearch *e = data;
    if (e->found || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "for_statement") ||
        py_is(n, "while_statement"))
        return false; /* a break in an inner loop ends that loop */
    if (ends_the_loop(e->src, n)) e->found = true;
    return !e->found;
}

#define MAX_DERIVED 8

typedef struct {
    const PySource *src;
    TSNode names[MAX_DERIVED]; /* the name the read is bound to, and names computed from it in the loop */
    size_t name_count;
    bool fed_back, stops, flags, exits;
} NeedSearch;

/* `stopped = True`: a flag that a later test of the loop breaks on */
static bool visit_true_flag(TSNode n, void *data) {
    bool *found = data;
    if (*found || py_is(n, "function_definition") || py_is(n, "class_definition")) return false;
    if (py_is(n, "assignment") && py_is(ts_node_child_by_field_name(n, "right", 5), "true")) *found = true;
    return !*found;
}

static bool mentions_name(const PySource *src, TSNode n, TSNode name, int depth) {
    if (depth > 12 || ts_node_is_null(n)) return false;
    if (py_is(n, "identifier")) return py_same_text(src, n, name);
    uint32_t c = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < c; i++)
        if (mentions_name(src, ts_node_named_child(n, i), name, depth + 1)) return true;
    return false;
}

static bool mentions_any(const NeedSearch *s, TSNode n) {
    for (size_t i = 0; i < s->name_count; i++)
        if (mentions_name(s->src, n, s->names[i], 0)) return true;
    return false;
}

/* tests of a number that say whether a run can go on */
static const char *const finite[] = {"math.isfinite", "math.isnan", "math.isinf", NULL};

static bool visit_need(TSNode n, void *data) {
    NeedSearch *s = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (py_is(n, "break_statement") || py_is(n, "return_statement")) s->exits = true;
    /* fed back as the next step's input: torch.as_tensor([[token]], device=device) */
    static const char *const builders[] = {"torch.tensor", "torch.as_tensor", "torch.LongTensor", NULL};
    if (py_is(n, "call") && py_callee_is_any(s->src, n, builders) && py_is(py_call_positional(n, 0), "list") &&
        mentions_any(s, py_call_positional(n, 0)))
        s->fed_back = true;
    /* a stop test whose branch ends the loop, or sets the flag a later test breaks on:
     * `if token in stop_token_ids`, `if token == eos_id`, `if not math.isfinite(loss_value)` */
    if (py_is(n, "if_statement") || py_is(n, "elif_clause")) {
        TSNode cond = ts_node_child_by_field_name(n, "condition", 9);
        if (py_is(cond, "not_operator")) cond = ts_node_child_by_field_name(cond, "argument", 8);
        if ((py_is(cond, "comparison_operator") && mentions_any(s, cond)) ||
            (py_is(cond, "call") && py_callee_is_any(s->src, cond, finite) && mentions_any(s, py_call_arguments(cond)))) {
            TSNode branch = ts_node_child_by_field_name(n, "consequence", 11);
            ExitSearch e = {s->src, false};
            py_walk(branch, visit_exit, &e);
            bool flag = false;
            if (!e.found) py_walk(branch, visit_true_flag, &flag);
            s->stops |= e.found;
            s->flags |= flag;
        }
    }
    return true;
}

/* `token = tokens[0]`: a name bound in the loop from one the search follows
 * (not through a dict, list, tuple or set display, whose parts need not be
 * the value) */
static bool visit_derived(TSNode n, void *data) {
    NeedSearch *s = data;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (!py_is(n, "assignment") || s->name_count == MAX_DERIVED) return true;
    TSNode left = ts_node_child_by_field_name(n, "left", 4), right = ts_node_child_by_field_name(n, "right", 5);
    if (!py_is(left, "identifier") || ts_node_is_null(right) || !mentions_any(s, right)) return true;
    if (py_is(right, "dictionary") || py_is(right, "list") || py_is(right, "tuple") || py_is(right, "set"))
        return true;
    for (size_t i = 0; i < s->name_count; i++)
        if (py_same_text(s->src, left, s->names[i])) return true;
    s->names[s->name_count++] = left;
    return true;
}

typedef struct {
    const PySource *src;
    TSNode name;
    const NeedSearch *followed;
    bool other; /* bound in the loop from something that is not the value */
} OtherBinding;

static bool visit_other_binding(TSNode n, void *data) {
    OtherBinding *o = data;
    if (o->other || py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (py_is(n, "assignment") || py_is(n, "augmented_assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4), right = ts_node_child_by_field_name(n, "right", 5);
        if (py_is(left, "identifier") && py_same_text(o->src, left, o->name) &&
            (ts_node_is_null(right) || !mentions_any(o->followed, right)))
            o->other = true;
    }
    return !o->other;
}

/* keeps the derived names whose every binding in the loop comes from the value */
static void drop_mixed_names(NeedSearch *s, TSNode body) {
    size_t kept = 1; /* names[0] is the read's own */
    for (size_t i = 1; i < s->name_count; i++) {
        OtherBinding o = {s->src, s->names[i], s, false};
        py_walk(body, visit_other_binding, &o);
        if (!o.other) s->names[kept++] = s->names[i];
    }
    s->name_count = kept;
}

/* The value read is what the host needs to take the next step: the sampled
 * token of a generation loop, fed back as the next input in a list
 * (`torch.as_tensor([[token]])`), or the value a stop test of a loop that can
 * stop compares (`if token in stop_token_ids` ... `break`; `if not
 * math.isfinite(loss_value): sys.exit(1)`). Reading it each step is the
 * loop's design, not a wait to defer. */
static bool host_needs_value(const PySource *src, TSNode read, TSNode loop) {
    TSNode stmt = py_statement_of(read);
    TSNode assign = py_is(stmt, "expression_statement") ? ts_node_named_child(stmt, 0) : stmt;
    if (!py_is(assign, "assignment")) return false;
    TSNode name = ts_node_child_by_field_name(assign, "left", 4);
    if (!py_is(name, "identifier")) return false;
    /* `for key, value in ...`: a name the loop binds anew is not carried to the next step */
    TSNode target = ts_node_child_by_field_name(loop, "left", 4);
    if (!ts_node_is_null(target) && mentions_name(src, target, name, 0)) return false;
    NeedSearch s = {.src = src, .names = {name}, .name_count = 1};
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    /* what the host computes from it goes on with it: `tokens = [int(i) for i in
     * indices.tolist()]`, then `token = tokens[0]`, fed back or stop-tested */
    py_walk(body, visit_derived, &s);
    drop_mixed_names(&s, body);
    py_walk(body, visit_need, &s);
    return s.fed_back || s.stops || (s.flags && s.exits);
}

/* The read is the stop test itself: `if signal.item() == 0: break` after a
 * broadcast of whether to go on, `if not math.isfinite(loss.item()):
 * sys.exit(1)`. The host needs the value to know whether to take the next
 * step. Between the read and the `if`: comparisons, `not`, `and`/`or`,
 * parentheses and value tests (`bool`, `math.isfinite`), nothing that does
 * more with the value (`if log_and_check(loss.item()):`); the branch's own
 * statements end the loop, not a statement nested in it. */
static bool is_stop_test(const PySource *src, TSNode read, TSNode loop) {
    static const char *const conversions[] = {"bool", "int", "float", "abs", NULL};
    TSNode test = ts_node_parent(read);
    while (!ts_node_is_null(test) && !py_is(test, "if_statement") && !py_is(test, "elif_clause")) {
        if (py_is(test, "argument_list")) {
            TSNode call = ts_node_parent(test);
            if (!py_is(call, "call") ||
                !(py_callee_is_any(src, call, conversions) || py_callee_is_any(src, call, finite)))
                return false;
            test = ts_node_parent(call);
            continue;
        }
        if (!py_is(test, "comparison_operator") && !py_is(test, "not_operator") &&
            !py_is(test, "boolean_operator") && !py_is(test, "parenthesized_expression"))
            return false;
        test = ts_node_parent(test);
    }
    if (!py_is(test, "if_statement") && !py_is(test, "elif_clause")) return false;
    TSNode cond = ts_node_child_by_field_name(test, "condition", 9);
    if (!py_is_within(read, cond) || !py_is_within(test, loop)) return false;
    TSNode branch = ts_node_child_by_field_name(test, "consequence", 11);
    uint32_t count = ts_node_named_child_count(branch);
    for (uint32_t i = 0; i < count; i++)
        if (ends_the_loop(src, ts_node_named_child(branch, i))) return true;
    return false;
}

/* ---- one-off conversions ----------------------------------------------- */

/* calls that only gather, reshape, cast or copy what was computed earlier */
static bool is_gathering(const PySource *src, TSNode call) {
    static const char *const fns[] = {"torch.cat",    "torch.stack", "torch.concatenate", "torch.concat",
                                      "torch.hstack", "torch.vstack", NULL};
    if (py_callee_is_any(src, call, fns)) return true;
    static const char *const methods[] = {"cpu",     "numpy",   "tolist",  "item",  "view",  "reshape", "flatten",
                                          "squeeze", "unsqueeze", "contiguous", "detach", "float", "double", "half",
                                          "long",    "int",     "bool",    "permute", "transpose", "clone", NULL};
    TSNode name = py_method_name_node(call);
    if (ts_node_is_null(name)) return false;
    for (size_t i = 0; methods[i]; i++)
        if (py_text_eq(src, name, methods[i])) return true;
    return py_text_eq(src, name, "to") && !is_device_move(src, call);
}

typedef struct {
    const PySource *src;
    bool heavy;
} GatherSearch;

static bool visit_gather(TSNode n, void *data) {
    GatherSearch *s = data;
    if (s->heavy) return false;
    if (py_is(n, "lambda")) return false;
    if (py_is(n, "call") && !is_gathering(s->src, n) && py_call_does_gpu_work(s->src, n)) s->heavy = true;
    return !s->heavy;
}

/* `stats = [torch.cat(x, 0).cpu().numpy() for x in zip(*stats)]` after the
 * loop that collected them: a comprehension, in no loop, whose only GPU work
 * is gathering what was computed earlier and copying it to the host runs
 * once; its copies are the conversion the code needs, not a wait per step. */
static bool one_off_conversion(const PySource *src, TSNode comprehension) {
    if (py_is(comprehension, "for_statement") || py_is(comprehension, "while_statement")) return false;
    if (!ts_node_is_null(py_enclosing_loop(comprehension))) return false;
    GatherSearch s = {src, false};
    TSNode body = ts_node_child_by_field_name(comprehension, "body", 4);
    if (ts_node_is_null(body)) return false;
    py_walk(body, visit_gather, &s);
    return !s.heavy;
}

typedef struct {
    const PySource *src;
    TSNode name;
    bool written;
} WriteSearch;

/* `t[k] = ...`, `t[k] += ...`, `t.add_(...)`, `t.copy_(...)`: the loop changes t */
static bool visit_write(TSNode n, void *data) {
    WriteSearch *w = data;
    if (w->written) return false;
    TSNode target = {0};
    if (py_is(n, "assignment") || py_is(n, "augmented_assignment")) {
        target = ts_node_child_by_field_name(n, "left", 4);
        if (py_is(target, "subscript")) target = ts_node_child_by_field_name(target, "value", 5);
    } else if (py_is(n, "call")) {
        TSNode name = py_method_name_node(n);
        if (!ts_node_is_null(name) && py_text_len(name) > 1 && py_text_ptr(w->src, name)[py_text_len(name) - 1] == '_')
            target = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
    }
    if (!ts_node_is_null(target) && py_same_text(w->src, target, w->name)) w->written = true;
    return !w->written;
}

/* `t[i].item()` (`int(t[i])`) in `for i in range(...)`, where t is a name
 * bound outside the loop and not written in it: *whole is t, which one
 * `.tolist()` before the loop reads in a single wait */
static bool indexes_by_loop_variable(const PySource *src, TSNode read, TSNode loop, TSNode *whole) {
    if (!py_is(loop, "for_statement")) return false;
    TSNode e = read_operand(src, read);
    if (!py_is(e, "subscript") || ts_node_named_child_count(e) != 2) return false;
    TSNode value = ts_node_child_by_field_name(e, "value", 5), index = ts_node_child_by_field_name(e, "subscript", 9);
    TSNode target = ts_node_child_by_field_name(loop, "left", 4);
    if (py_is(index, "binary_operator")) { /* t[i + 1] */
        TSNode l = ts_node_child_by_field_name(index, "left", 4), r = ts_node_child_by_field_name(index, "right", 5);
        index = py_is(r, "integer") ? l : py_is(l, "integer") ? r : (TSNode){0};
    }
    if (!py_is(value, "identifier") || !py_is(index, "identifier") || !py_is(target, "identifier") ||
        !py_same_text(src, index, target))
        return false;
    TSNode bound = {0};
    BindingKind kind =
        py_binding_before(src, value, py_text_ptr(src, value), py_text_len(value), ts_node_start_byte(value), &bound);
    if ((kind != BINDING_ASSIGNMENT && kind != BINDING_PARAMETER) || py_is_within(bound, loop)) return false;
    WriteSearch w = {src, value, false};
    py_walk(loop, visit_write, &w);
    if (w.written) return false;
    *whole = value;
    return true;
}

/* target (of an assignment, a loop, `as`) is value or holds it: `loss`, `(loss, aux)`, `*rest` */
static bool target_holds(const PySource *src, TSNode target, TSNode value, int depth) {
    if (depth > 12 || ts_node_is_null(target)) return false;
    if (py_same_text(src, target, value)) return true;
    static const char *const groups[] = {"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list",
                                         "parenthesized_expression", "list_splat_pattern", "expression_list",
                                         NULL};
    bool group = false;
    for (size_t i = 0; groups[i] && !group; i++) group = py_is(target, groups[i]);
    if (!group) return false; /* `shown["loss"]` does not bind `loss` */
    uint32_t c = ts_node_named_child_count(target);
    for (uint32_t i = 0; i < c; i++)
        if (target_holds(src, ts_node_named_child(target, i), value, depth + 1)) return true;
    return false;
}

/* Does n (a statement, or a statement's header) give its value a new
 * binding: `loss = ...`, `loss += ...`, `for loss in ...`, `with ... as
 * loss`, `(loss := ...)`, or an in-place write (visit_write)? */
static bool visit_rebind(TSNode n, void *data) {
    WriteSearch *w = data;
    if (w->written) return false;
    if (py_is(n, "assignment") || py_is(n, "augmented_assignment") || py_is(n, "for_statement") ||
        py_is(n, "for_in_clause") || py_is(n, "named_expression") || py_is(n, "as_pattern") ||
        py_is(n, "delete_statement")) {
        TSNode target = py_is(n, "named_expression") ? ts_node_child_by_field_name(n, "name", 4)
                        : py_is(n, "as_pattern")      ? ts_node_child_by_field_name(n, "alias", 5)
                        : py_is(n, "delete_statement") ? n
                                                       : ts_node_child_by_field_name(n, "left", 4);
        if (target_holds(w->src, target, w->name, 0)) w->written = true;
    }
    if (!w->written) visit_write(n, data);
    return !w->written;
}

static bool rebinds(const PySource *src, TSNode n, TSNode value) {
    WriteSearch w = {src, value, false};
    py_walk(n, visit_rebind, &w);
    return w.written;
}

/* A read of the same value as `value` (`loss.item()`, `float(loss)`) that
 * runs whenever stmt runs: not in a nested block, a conditional
 * expression, a short-circuit operand, a lambda or a comprehension. */
typedef struct {
    const PySource *src;
    TSNode stmt, value;
    bool found;
} SameReadSearch;

static bool always_runs_in(TSNode n, TSNode stmt) {
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p) && !ts_node_eq(p, stmt); p = ts_node_parent(p))
        if (py_is(p, "conditional_expression") || py_is(p, "boolean_operator") || py_is(p, "lambda") ||
            py_is(p, "list_comprehension") || py_is(p, "dictionary_comprehension") ||
            py_is(p, "set_comprehension") || py_is(p, "generator_expression") || py_is(p, "block"))
            return false;
    return true;
}

static bool visit_same_read(TSNode n, void *data) {
    SameReadSearch *s = data;
    if (s->found) return false;
    if (py_is(n, "block") || py_is(n, "lambda")) return false;
    if (py_is(n, "call") && is_host_read(s->src, n) && reads_computed_value(s->src, n) &&
        py_same_text(s->src, read_operand(s->src, n), s->value) && always_runs_in(n, s->stmt))
        s->found = true;
    return !s->found;
}

/* `shown = f"{loss.item():.2f}"` after `total += loss.item()` in the same
 * iteration, with no GPU work and no new value of `loss` between: the first
 * read waited, and this one waits for nothing new (x-transformers'
 * train_path_star.py reads `loss.item()` three times a step). Only the first
 * is reported; removing it makes the next one the wait, reported then. The
 * earlier read must run whenever this one does: in a statement before it in
 * its block or in an enclosing block of the loop's body, not in a nested
 * block or a branch of an expression. */
static bool rereads_value(const PySource *src, TSNode read, TSNode loop) {
    if (!py_is(loop, "for_statement") && !py_is(loop, "while_statement")) return false;
    if (!reads_computed_value(src, read)) return false;
    TSNode value = read_operand(src, read);
    TSNode child = py_statement_of(read);
    if (!py_is_within(child, loop)) return false; /* a read in a comprehension: its loop is inside the statement */
    for (;;) {
        TSNode parent = ts_node_parent(child);
        if (ts_node_is_null(parent) || ts_node_eq(parent, loop)) return false;
        if (py_is(parent, "block")) {
            for (TSNode prev = ts_node_prev_named_sibling(child); !ts_node_is_null(prev);
                 prev = ts_node_prev_named_sibling(prev)) {
                if (py_is(prev, "comment")) continue;
                if (py_does_gpu_work(src, prev) || rebinds(src, prev, value)) return false;
                SameReadSearch same = {src, prev, value, false};
                py_walk(prev, visit_same_read, &same);
                if (same.found) return true;
            }
        } else {
            /* an if, with, try or clause around the read: what it ran before the read's block (a condition,
             * an earlier branch's test) must give the GPU no work and no new value either */
            uint32_t start = ts_node_start_byte(child);
            for (uint32_t i = 0; i < ts_node_named_child_count(parent); i++) {
                TSNode c = ts_node_named_child(parent, i);
                if (ts_node_start_byte(c) >= start) break;
                if (py_does_gpu_work(src, c) || rebinds(src, c, value)) return false;
                /* the branch's own test read it (`if ids[k][pos].item() in media:` then `media[ids[k][pos].item()]`) */
                SameReadSearch same = {src, c, value, false};
                py_walk(c, visit_same_read, &same);
                if (same.found) return true;
            }
        }
        child = parent;
    }
}

typedef struct {
    const PySource *src;
    TSNode loop, value, test; /* test: the `if` statement */
    bool found;
} StopReadSearch;

/* `value.item()`, `int(value)`: read by its spelling (the name's binding at
 * the top of the loop is the one from before it, which may say nothing of a
 * tensor: it is the previous iteration's that the test reads) */
static bool reads_on_host(const PySource *src, TSNode call, TSNode value) {
    TSNode name = py_method_name_node(call);
    if (!ts_node_is_null(name) && is_sync_method(src, call, false))
        return py_same_text(src, ts_node_child_by_field_name(ts_node_parent(name), "object", 6), value);
    if (py_is_builtin_call(src, call, "float") || py_is_builtin_call(src, call, "int") ||
        py_is_builtin_call(src, call, "bool"))
        return py_call_positional_count(call) == 1 && py_same_text(src, py_call_positional(call, 0), value);
    return false;
}

/* The read runs whenever the test is evaluated: not in the right operand of
 * `and`/`or` (`if eos is not None and token.item() == eos:`) nor in a
 * branch of a conditional expression. */
static bool always_evaluated(TSNode read, TSNode test) {
    TSNode child = read;
    for (TSNode p = ts_node_parent(read); !ts_node_is_null(p) && !ts_node_eq(p, test); child = p, p = ts_node_parent(p)) {
        if (py_is(p, "conditional_expression")) return false;
        if (py_is(p, "boolean_operator") && !ts_node_eq(child, ts_node_child_by_field_name(p, "left", 4))) return false;
    }
    return true;
}

static bool visit_stop_read(TSNode n, void *data) {
    StopReadSearch *s = data;
    if (s->found) return false;
    if (py_is(n, "call") && reads_on_host(s->src, n, s->value) && is_stop_test(s->src, n, s->loop) &&
        always_evaluated(n, s->test))
        s->found = true;
    return !s->found;
}

/* a call that keeps the host's own books (`generated.append(...)`,
 * `print(...)`, `len(...)`), which queues nothing on the GPU */
static bool host_bookkeeping_call(const PySource *src, TSNode call) {
    static const char *const methods[] = {"append", "extend", "insert", "add", NULL};
    static const char *const builtins[] = {"print", "len", "int", "float", "str", "min", "max", "range", NULL};
    for (size_t i = 0; methods[i]; i++)
        if (py_method_call(src, call, methods[i], NULL)) return true;
    for (size_t i = 0; builtins[i]; i++)
        if (py_is_builtin_call(src, call, builtins[i])) return true;
    return false;
}

typedef struct {
    const PySource *src;
    TSNode read; /* the host read itself, and what it reads, are allowed */
    bool other;
} QuietSearch;

static bool visit_quiet(TSNode n, void *data) {
    QuietSearch *s = data;
    if (s->other) return false;
    if (!ts_node_is_null(s->read) && ts_node_eq(n, s->read)) return false;
    if (py_is(n, "call") && !host_bookkeeping_call(s->src, n)) s->other = true;
    return !s->other;
}

/* stmt calls nothing but host bookkeeping (besides read, when given): a
 * helper of the project (`logits, cache = forward_step(model, token,
 * cache)`) may queue GPU work that no name shows */
static bool calls_only_bookkeeping(const PySource *src, TSNode stmt, TSNode read) {
    QuietSearch s = {src, read, false};
    py_walk(stmt, visit_quiet, &s);
    return !s.other;
}

/* `generated.append(token.item())` at the end of a decoding step whose next
 * iteration begins with `if token.item() in stop_tokens: break`, with no GPU
 * work and no new `token` in between: that test waits for the same value
 * anyway (the host needs it to decide whether to go on), so this read adds
 * no wait. The read is a statement of the loop's body; what follows it in
 * the body, and what precedes the test in the next iteration, queue nothing
 * and bind nothing to the name (nor does the loop's own target). */
static bool read_again_by_next_stop_test(const PySource *src, TSNode read, TSNode loop) {
    if (!py_is(loop, "for_statement") && !py_is(loop, "while_statement")) return false;
    TSNode value = read_operand(src, read);
    TSNode body = ts_node_child_by_field_name(loop, "body", 4);
    TSNode stmt = py_statement_of(read);
    if (!py_is(value, "identifier") || !ts_node_eq(ts_node_parent(stmt), body) || rebinds(src, stmt, value) ||
        !calls_only_bookkeeping(src, stmt, read))
        return false;
    if (py_is(loop, "for_statement") && target_holds(src, ts_node_child_by_field_name(loop, "left", 4), value, 0))
        return false;
    if (py_is(loop, "while_statement") && py_does_gpu_work(src, ts_node_child_by_field_name(loop, "condition", 9)))
        return false;
    for (TSNode next = ts_node_next_named_sibling(stmt); !ts_node_is_null(next); next = ts_node_next_named_sibling(next))
        if (!py_is(next, "comment") &&
            (py_does_gpu_work(src, next) || rebinds(src, next, value) || !calls_only_bookkeeping(src, next, (TSNode){0})))
            return false;
    for (TSNode first = ts_node_named_child(body, 0); !ts_node_is_null(first) && !ts_node_eq(first, stmt);
         first = ts_node_next_named_sibling(first)) {
        if (py_is(first, "comment")) continue;
        if (py_is(first, "if_statement")) {
            StopReadSearch s = {src, loop, value, first, false};
            py_walk(ts_node_child_by_field_name(first, "condition", 9), visit_stop_read, &s);
            if (s.found) return true;
        }
        if (py_does_gpu_work(src, first) || rebinds(src, first, value) ||
            !calls_only_bookkeeping(src, first, (TSNode){0}))
            return false;
    }
    return false;
}

typedef struct {
    RuleContext *ctx;
    /* the last finding's statement and text: `f"{loss.item():.2f}" if a else
     * f"{loss.item():.4f}"` is one wait, reported once */
    uint32_t last_statement;
    char last_what[128];
} Walk;

static bool visit(TSNode n, void *data) {
    Walk *w = data;
    RuleContext *ctx = w->ctx;
    if (ctx->out_of_memory) return false;
    if (!py_is(n, "call") || !is_host_read(ctx->py, n)) return true;
    if (py_in_test_function(ctx->py, n) || under_dead_condition(ctx->py, n)) return true;
    char what[128];
    TSNode loop = py_enclosing_loop(n);
    if (ts_node_is_null(loop)) {
        TSNode call;
        if (!called_every_iteration(ctx->py, n, &call)) return true;
        describe(ctx->py, n, what, sizeof what);
        TSNode callee = ts_node_child_by_field_name(call, "function", 8);
        Finding *f = rule_report_node(ctx, n,
                                      "`%s` waits for the GPU on every call of %.*s(), which a loop calls on every "
                                      "iteration, so the host cannot queue work ahead",
                                      what, (int)py_text_len(callee), py_text_ptr(ctx->py, callee));
        if (f && !finding_add_related(f, (ByteRange){ts_node_start_byte(call), ts_node_end_byte(call)},
                                      "called on every iteration here"))
            ctx->out_of_memory = true;
        return true;
    }
    if (py_is_periodic(ctx->py, n, loop)) return true;
    if (one_off_conversion(ctx->py, loop)) return true;
    /* `[t.item() for t in tokens]` in a GPU loop: a wait per element, every iteration */
    while (!py_is(loop, "for_statement") && !py_is(loop, "while_statement") && !py_loop_is_hot(ctx->py, loop)) {
        TSNode outer = py_enclosing_loop(loop);
        if (ts_node_is_null(outer) || py_is_periodic(ctx->py, loop, outer)) return true;
        loop = outer;
    }
    if (!py_loop_is_hot(ctx->py, loop)) return true;
    if (py_loop_sweeps_literal_configurations(ctx->py, loop) || inside_periodic_block(ctx->py, loop)) return true;
    if (after_own_wait(ctx->py, read_operand(ctx->py, n), loop, 0) || after_explicit_sync(ctx->py, n)) return true;
    if (in_exiting_branch(ctx->py, n, loop) || host_needs_value(ctx->py, n, loop) || is_stop_test(ctx->py, n, loop))
        return true;
    if (rereads_value(ctx->py, n, loop) || read_again_by_next_stop_test(ctx->py, n, loop)) return true;
    describe(ctx->py, n, what, sizeof what);
    uint32_t statement = ts_node_start_byte(py_statement_of(n));
    if (statement == w->last_statement && strcmp(what, w->last_what) == 0) return true;
    w->last_statement = statement;
    snprintf(w->last_what, sizeof w->last_what, "%s", what);
    Finding *f = rule_report_node(
        ctx, n, "`%s` waits for the GPU on every iteration of this loop, so the host cannot queue work ahead", what);
    TSNode whole;
    if (f && indexes_by_loop_variable(ctx->py, n, loop, &whole) &&
        !finding_note(f, "read `%.*s.tolist()` once before the loop and index the list: one wait instead of one "
                         "per iteration",
                      (int)py_text_len(whole), py_text_ptr(ctx->py, whole)))
        ctx->out_of_memory = true;
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->py->uses_gpu || py_is_test_path(ctx->doc->path)) return;
    Walk w = {ctx, UINT32_MAX, ""};
    rule_walk(ctx, visit, &w);
}

const Rule rule_py001_host_sync_in_loop = {
    .code = "PY001", .name = "host-sync-in-loop", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_SYNC,
    .summary = "`.item()`, `.cpu()`, `float(t)` or `print(t)` on a tensor every iteration of a GPU loop",
    .advice = "keep the value on the GPU (accumulate into a tensor) and read it every N steps or once after the loop",
    .documentation = documentation};
