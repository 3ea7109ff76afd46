/* PY005 unpinned-host-to-device-copy: DataLoader batches copied to the GPU from
 * pageable memory (no pin_memory=True), and batch copies without
 * non_blocking=True in a loop over a DataLoader. */
#include <stdlib.h>
#include <string.h>

#include "rules/rule.h"
#include "analysis/python/python_loaders.h"

static const char documentation[] =
    "## What it does\n"
    "Looks at `for` loops over a `torch.utils.data.DataLoader` created in this file (bound to a name,\n"
    "to `self.name` in a class, passed to a function of this file, or used directly; also through\n"
    "`enumerate(...)` and `tqdm(...)`) whose body moves the batch, or parts of it, to the GPU with\n"
    "`.to(device)` or `.cuda()`. It flags:\n"
    "\n"
    "- the `DataLoader(...)` call when it lacks `pin_memory=True` (or its `pin_memory=False`\n"
    "  keyword);\n"
    "- each move of a batch element (`x.to(device)` for `for x, y in loader`, `batch[\"ids\"].cuda()`,\n"
    "  `{k: v.to(device) for k, v in batch.items()}`) without `non_blocking=True`.\n"
    "\n"
    "Not flagged: loaders whose dataset the code shows on the GPU already (built from tensors moved\n"
    "with `.cuda()`/`.to(device)`, created with `device=`, or given a device:\n"
    "`DataLoader(TensorDataset(x.cuda(), y.cuda()))`, `DataLoader(MyData(root, device))`; pinning\n"
    "would fail on them); loaders with `pin_memory=True`, with `pin_memory=` set from a variable,\n"
    "or with `*args`/`**kwargs` (they may carry it); loops whose batches never go to the GPU; moves\n"
    "of models, of parameters or of anything that does not come from the batch (`x.float()` makes a\n"
    "new, unpinned tensor); moves outside the loop; moves to the host or to a device the code shows\n"
    "is not CUDA (`.to(\"cpu\")`, `dev = torch.device(\"mps\")`, a name that every if/else arm binds to\n"
    "the CPU; one that an arm binds to `torch.accelerator.current_accelerator()` is the GPU); `.to(dtype)`; moves with\n"
    "`non_blocking=` already. Copies without `non_blocking=True` are only flagged in loops over a\n"
    "loader bound in this file (a loop over a function parameter could iterate anything), not when\n"
    "the loader says `pin_memory=False`, and not for a move of the whole batch object\n"
    "(`batch.to(device)`), whose type may be a custom class whose `.to` takes no `non_blocking`.\n"
    "\n"
    "## Why is this slow?\n"
    "A copy from pageable host memory cannot be done by the GPU's DMA engine directly: the driver\n"
    "first copies the batch into a pinned staging buffer, and the host waits for the whole transfer,\n"
    "so the copy neither overlaps with compute nor with preparing the next step. With\n"
    "`pin_memory=True` the loader's workers hand over batches in page-locked memory (the pinning\n"
    "runs in a background thread), and `.to(device, non_blocking=True)` then queues an asynchronous\n"
    "copy that overlaps with the kernels already running.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "loader = DataLoader(dataset, batch_size=64, num_workers=4)\n"
    "for x, y in loader:\n"
    "    x, y = x.to(device), y.to(device)\n"
    "    loss = criterion(model(x), y)\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)\n"
    "for x, y in loader:\n"
    "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n"
    "    loss = criterion(model(x), y)\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "Adding `pin_memory=True` (or turning `False` into `True`) is safe: the batches hold the same\n"
    "values, only in page-locked host memory. Page-locked memory is a limited resource (each\n"
    "batch in flight is pinned; very large batches with many workers pin a lot of RAM), which is a\n"
    "capacity question, not a change in results. No fix when the call has `*args` or `**kwargs`.\n"
    "\n"
    "Adding `non_blocking=True` is unsafe: the copy then runs asynchronously, so a program that\n"
    "modifies the host tensor in place afterwards, or reads the result through another stream,\n"
    "could see different data; and it only pays off with pinned memory.\n";

static bool is_false(const RuleContext *ctx, TSNode n) { return py_text_eq(ctx->py, n, "False"); }
static bool is_true(const RuleContext *ctx, TSNode n) { return py_text_eq(ctx->py, n, "True"); }

/* what a DataLoader call says about pinning */
typedef enum { PIN_ABSENT, PIN_FALSE, PIN_TRUE, PIN_UNKNOWN } PinState;

static PinState pin_state(const RuleContext *ctx, TSNode loader, TSNode *value) {
    bool splat = py_call_has_splat(loader);
    TSNode v = py_call_keyword(ctx->py, loader, "pin_memory");
    /* DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory) */
    if (ts_node_is_null(v) && !splat && py_call_positional_count(loader) > 7) v = py_call_positional(loader, 7);
    if (value) *value = v;
    if (ts_node_is_null(v)) return splat ? PIN_UNKNOWN : PIN_ABSENT;
    if (is_false(ctx, v)) return PIN_FALSE;
    if (is_true(ctx, v)) return PIN_TRUE;
    return PIN_UNKNOWN;
}

static void report_blocking_copy(RuleContext *ctx, TSNode call, TSNode non_blocking) {
    Finding *f = rule_report_node(ctx, call,
                                  "This batch is copied to the GPU without non_blocking=True: the host waits for "
                                  "the copy instead of queueing it behind the running kernels");
    if (!f) return;
    Fix *fix = finding_add_fix(f, "Copy with non_blocking=True (asynchronous; pays off with pinned memory)", false);
    if (!fix) return;
    if (!ts_node_is_null(non_blocking)) {
        fix_add_edit(fix, ts_node_start_byte(non_blocking), ts_node_end_byte(non_blocking), "True");
        return;
    }
    size_t offset = 0;
    char *text = py_keyword_insertion(ctx->py, call, "non_blocking", "True", &offset);
    if (text) fix_add_edit(fix, offset, offset, text);
    free(text);
}

static void report_loader(RuleContext *ctx, const PyGpuLoader *loader) {
    TSNode n = loader->call;
    TSNode value;
    PinState pin = pin_state(ctx, n, &value);
    char *where = py_gpu_loader_where_fed(loader);
    if (pin == PIN_ABSENT) {
        Finding *f = rule_report_node(ctx, n,
                                      "This DataLoader's batches are copied to the GPU%s from pageable memory: "
                                      "without pin_memory=True each copy is staged and blocks the host",
                                      where ? where : "");
        size_t offset = 0;
        char *text = f ? py_keyword_insertion(ctx->py, n, "pin_memory", "True", &offset) : NULL;
        Fix *fix = text ? finding_add_fix(f, "Pin the loader's batches with pin_memory=True", true) : NULL;
        if (fix) fix_add_edit(fix, offset, offset, text);
        free(text);
    } else if (pin == PIN_FALSE) {
        TSNode at = ts_node_parent(value);
        if (!py_is(at, "keyword_argument")) at = value;
        Finding *f = rule_report_node(ctx, at,
                                      "pin_memory=False: this DataLoader's batches are copied to the GPU%s from "
                                      "pageable memory, so each copy is staged and blocks the host",
                                      where ? where : "");
        Fix *fix = f && !py_call_has_splat(n) ? finding_add_fix(f, "Pin the loader's batches with pin_memory=True", true)
                                              : NULL;
        if (fix) fix_add_edit(fix, ts_node_start_byte(value), ts_node_end_byte(value), "True");
    }
    free(where);
}

static void check(RuleContext *ctx) {
    PyGpuLoaders loaders;
    if (!py_gpu_loaders(ctx->py, &loaders)) ctx->out_of_memory = true;
    for (size_t i = 0; i < loaders.loader_count; i++) report_loader(ctx, &loaders.loaders[i]);
    /* copies without non_blocking=True, unless the loader says pin_memory=False (then pinning is the finding) */
    for (size_t i = 0; i < loaders.move_count; i++) {
        const PyBatchMove *m = &loaders.moves[i];
        bool blocking = ts_node_is_null(m->non_blocking) || is_false(ctx, m->non_blocking);
        if (blocking && !m->whole_batch && pin_state(ctx, m->loader, NULL) != PIN_FALSE)
            report_blocking_copy(ctx, m->call, m->non_blocking);
    }
    py_gpu_loaders_free(&loaders);
}

const Rule rule_py005_unpinned_host_to_device_copy = {
    .code = "PY005", .name = "unpinned-host-to-device-copy", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_COPY,
    .whole_file = true, /* loaders and the loops over them sit in different functions */
    .summary = "DataLoader batches copied to the GPU from unpinned memory, or without non_blocking=True",
    .documentation = documentation};
