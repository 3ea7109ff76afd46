/* PY014 dataloader-without-workers: a DataLoader that feeds GPU work loads
 * its batches in the training process (num_workers unset or 0). */
#include <stdlib.h>
#include <string.h>

#include "rules/rule.h"
#include "analysis/python/python_loaders.h"

static const char documentation[] =
    "## What it does\n"
    "Flags a `torch.utils.data.DataLoader` whose batches go to the GPU (a loop over it moves them\n"
    "with `.to(device)` or `.cuda()`, in this file or, through the project's index, in the module that\n"
    "iterates what a function of this file returns) and that loads them in the main process:\n"
    "`num_workers` is not given, or is the literal `0`.\n"
    "\n"
    "Not flagged: `num_workers` set to anything else (a number, a setting such as `args.workers`);\n"
    "calls with `*args` or `**kwargs` (they may carry it); datasets already in memory as tensors\n"
    "(`TensorDataset(...)`, a tensor, `Subset`/`ConcatDataset` of those): indexing them is cheap, and\n"
    "worker processes would only add the cost of sending each batch between processes; datasets the\n"
    "code shows on the GPU already; loaders whose batches stay on the host.\n"
    "\n"
    "## Why is this slow?\n"
    "With `num_workers=0` the training loop itself reads, decodes, augments and collates every\n"
    "batch, between two steps, while the GPU has nothing queued: the data pipeline and the model take\n"
    "turns instead of overlapping. With worker processes the next batches are prepared while the GPU\n"
    "runs the current step; `persistent_workers=True` keeps the workers alive across epochs instead of\n"
    "starting them again at each one.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "loader = DataLoader(ImageFolder(root, transform=augment), batch_size=128, shuffle=True)\n"
    "for images, labels in loader:\n"
    "    loss = criterion(model(images.cuda()), labels.cuda())\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "loader = DataLoader(ImageFolder(root, transform=augment), batch_size=128, shuffle=True,\n"
    "                    num_workers=4, persistent_workers=True, pin_memory=True)\n"
    "```\n"
    "\n"
    "## With a profile\n"
    "The GPU's idle gaps of 1 ms or more that end with a copy of this loader's batches, in the\n"
    "steady training steps, are the time the GPU waited for the next batch: the finding shows them\n"
    "and takes their total as its gain (an upper bound, reached when the workers keep ahead),\n"
    "and PR003's finding at the copy's line steps back.\n"
    "\n"
    "## Fix safety\n"
    "The fix sets `num_workers=4` (or replaces the `0`) and adds `persistent_workers=True`. It is\n"
    "unsafe: worker processes change semantics. The dataset is copied into each worker (it must be\n"
    "picklable, and changes a worker makes to it are not seen by the others or the main process),\n"
    "random state is per worker (seed augmentations in `worker_init_fn` if reproducibility\n"
    "matters), a script run with the `spawn` start method (macOS, Windows) needs an\n"
    "`if __name__ == \"__main__\":` guard, and each worker holds memory of its own. Four workers is a\n"
    "starting point: tune it to the machine's cores and the pipeline's cost.\n";

#define WORKERS "4"

static const char *const in_memory_datasets[] = {"torch.utils.data.TensorDataset",
                                                  "torch.utils.data.dataset.TensorDataset", NULL};
static const char *const dataset_wrappers[] = {"torch.utils.data.Subset", "torch.utils.data.ConcatDataset",
                                               "torch.utils.data.dataset.Subset",
                                               "torch.utils.data.dataset.ConcatDataset", NULL};

/* The dataset is tensors already in memory: TensorDataset(...), a tensor, or a
 * Subset/ConcatDataset of those. */
static bool in_memory(const PySource *src, TSNode ds, int depth) {
    if (ts_node_is_null(ds) || depth > 6) return false;
    if (py_is(ds, "parenthesized_expression")) return in_memory(src, ts_node_named_child(ds, 0), depth + 1);
    if (py_is(ds, "identifier")) {
        TSNode value;
        if (py_binding_before(src, ds, py_text_ptr(src, ds), py_text_len(ds), ts_node_start_byte(ds), &value) ==
            BINDING_ASSIGNMENT)
            return in_memory(src, value, depth + 1);
        return py_is_tensor(src, ds);
    }
    if (py_is_tensor(src, ds)) return true;
    if (!py_is(ds, "call")) return false;
    if (py_callee_is_any(src, ds, in_memory_datasets)) return true;
    if (py_callee_is_any(src, ds, dataset_wrappers)) {
        TSNode inner = py_call_positional(ds, 0);
        if (py_is(inner, "list") || py_is(inner, "tuple")) { /* ConcatDataset([a, b]) */
            uint32_t n = ts_node_named_child_count(inner);
            for (uint32_t i = 0; i < n; i++)
                if (!in_memory(src, ts_node_named_child(inner, i), depth + 1)) return false;
            return n > 0;
        }
        return in_memory(src, inner, depth + 1);
    }
    return false;
}

/* The copies of this loader's batches to the GPU, as related places: with a
 * profile, the GPU's waits before them are what workers would recover
 * (MEASURE_LOADER_WAIT). */
static bool relate_copies(Finding *f, const PyGpuLoaders *loaders, const PyGpuLoader *loader) {
    size_t related = 0;
    for (size_t i = 0; i < loaders->move_count && related < 4; i++) {
        const PyBatchMove *move = &loaders->moves[i];
        if (!ts_node_eq(move->loader, loader->call)) continue;
        if (!finding_add_related(f, (ByteRange){ts_node_start_byte(move->call), ts_node_end_byte(move->call)},
                                 "its batches are copied to the GPU here"))
            return false;
        related++;
    }
    return true;
}

static void report(RuleContext *ctx, const PyGpuLoaders *loaders, const PyGpuLoader *loader) {
    const PySource *src = ctx->py;
    TSNode call = loader->call;
    if (py_call_has_splat(call)) return;
    TSNode ds = py_call_keyword(src, call, "dataset");
    if (ts_node_is_null(ds)) ds = py_call_positional(call, 0);
    if (in_memory(src, ds, 0)) return;
    TSNode workers = py_call_keyword(src, call, "num_workers");
    /* DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, ...) */
    if (ts_node_is_null(workers) && py_call_positional_count(call) > 5) workers = py_call_positional(call, 5);
    if (!ts_node_is_null(workers) && !py_text_eq(src, workers, "0")) return;
    char *where = py_gpu_loader_where_fed(loader);
    TSNode at = call;
    if (!ts_node_is_null(workers)) at = py_is(ts_node_parent(workers), "keyword_argument") ? ts_node_parent(workers) : workers;
    Finding *f = rule_report_node(ctx, at,
                                  "This DataLoader loads its batches in the training process%s: reading, decoding "
                                  "and augmenting each batch runs between GPU steps, and the GPU waits for it%s",
                                  ts_node_is_null(workers) ? " (num_workers is not set)" : " (num_workers=0)",
                                  where ? where : "");
    free(where);
    if (f && !relate_copies(f, loaders, loader)) ctx->out_of_memory = true;
    Fix *fix = f ? finding_add_fix(f, "Load batches in " WORKERS " persistent worker processes", false) : NULL;
    if (!fix) return;
    bool persistent = !ts_node_is_null(py_call_keyword(src, call, "persistent_workers"));
    if (ts_node_is_null(workers)) {
        size_t offset = 0;
        char *text = py_keyword_insertion(src, call, "num_workers",
                                          persistent ? WORKERS : WORKERS ", persistent_workers=True", &offset);
        if (text) fix_add_edit(fix, offset, offset, text);
        free(text);
        return;
    }
    fix_add_edit(fix, ts_node_start_byte(workers), ts_node_end_byte(workers), WORKERS);
    if (!persistent && py_is(ts_node_parent(workers), "keyword_argument")) {
        size_t offset = 0;
        char *text = py_keyword_insertion(src, call, "persistent_workers", "True", &offset);
        if (text) fix_add_edit(fix, offset, offset, text);
        free(text);
    }
}

static void check(RuleContext *ctx) {
    PyGpuLoaders loaders;
    if (!py_gpu_loaders(ctx->py, &loaders)) ctx->out_of_memory = true;
    for (size_t i = 0; i < loaders.loader_count; i++) report(ctx, &loaders, &loaders.loaders[i]);
    py_gpu_loaders_free(&loaders);
}

const Rule rule_py014_dataloader_without_workers = {
    .code = "PY014", .name = "dataloader-without-workers", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_LOADER_WAIT,
    .gain_from_idle = true, /* its gain is the GPU's idle time waiting for batches */
    .whole_file = true, /* loaders and the loops over them sit in different functions */
    .summary = "a DataLoader feeding the GPU loads its batches in the training process (num_workers=0)",
    .documentation = documentation};
