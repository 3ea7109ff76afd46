/* PY011 data-parallel-instead-of-ddp: a model wrapped in torch.nn.DataParallel
 * (single-process, multi-thread replication) where DistributedDataParallel
 * (one process per GPU) is what PyTorch recommends. */
#include <string.h>

#include "rules/rule.h"
#include "rules/python/support/ddp_calls.h"
#include "rules/python/support/test_code.h"
#include "analysis/python/python_index.h"

static const char documentation[] =
    "## What it does\n"
    "Flags the construction of `torch.nn.DataParallel`: `torch.nn.DataParallel(model)`,\n"
    "`nn.DataParallel(model)` with `import torch.nn as nn`, and `DataParallel(model)` after\n"
    "`from torch.nn import DataParallel` or `from torch.nn.parallel import DataParallel` (any\n"
    "alias). Names are resolved through the imports.\n"
    "\n"
    "Not flagged: `DistributedDataParallel`; a `DataParallel` of another package or one the\n"
    "file defines or assigns itself (at module level or in an enclosing function); mentions\n"
    "that construct nothing (`isinstance(model, nn.DataParallel)`, `model.module`, strings\n"
    "and comments); `DataParallel(model, device_ids=[0])` with a one-element literal\n"
    "device list, which replicates nothing; and a `DataParallel` in a file that also builds\n"
    "`DistributedDataParallel` (or calls a helper named for it, `smart_DDP(model)`): there it is\n"
    "the fallback for a run started without `torchrun`, and the program already offers DDP. Nor in\n"
    "test code (`test_*.py`, `*_test.py`, `conftest.py`, `def test_*`), which builds `DataParallel` to\n"
    "check how the code handles it.\n"
    "\n"
    "## Why is this slow?\n"
    "`DataParallel` runs one Python process that drives every GPU from threads. On each\n"
    "forward pass it copies the module's parameters and buffers from GPU 0 to every other\n"
    "GPU, scatters the batch from GPU 0, runs the replicas in threads that contend for the\n"
    "GIL, and gathers all outputs back onto GPU 0, where the loss and the gradient reduction\n"
    "happen too. GPU 0 does more work and holds more memory than the others, the other GPUs\n"
    "wait for it, and the replication is repeated every step. PyTorch's documentation\n"
    "recommends `DistributedDataParallel` instead, even on a single machine: one process per\n"
    "GPU, parameters broadcast once, and gradients all-reduced in buckets with NCCL while\n"
    "the backward pass is still running. It is usually markedly faster, and scales to\n"
    "several machines as well.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "model = Net().cuda()\n"
    "if torch.cuda.device_count() > 1:\n"
    "    model = torch.nn.DataParallel(model)\n"
    "for x, y in loader:\n"
    "    loss = criterion(model(x.cuda()), y.cuda())\n"
    "    ...\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "One process per GPU, started by `torchrun --nproc_per_node=NUM_GPUS train.py`:\n"
    "```python\n"
    "import os\n"
    "import torch.distributed as dist\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.utils.data.distributed import DistributedSampler\n"
    "\n"
    "dist.init_process_group(\"nccl\")\n"
    "local_rank = int(os.environ[\"LOCAL_RANK\"])\n"
    "torch.cuda.set_device(local_rank)\n"
    "model = DDP(Net().cuda(local_rank), device_ids=[local_rank])\n"
    "sampler = DistributedSampler(dataset)  # each process reads its own shard\n"
    "loader = DataLoader(dataset, batch_size=per_gpu_batch, sampler=sampler)\n"
    "for epoch in range(epochs):\n"
    "    sampler.set_epoch(epoch)\n"
    "    for x, y in loader:\n"
    "        loss = criterion(model(x.cuda()), y.cuda())\n"
    "        ...\n"
    "dist.destroy_process_group()\n"
    "```\n"
    "The batch size given to the loader is now per GPU, logging and checkpointing should\n"
    "happen on rank 0 only, and the checkpoint is `model.module.state_dict()` as before.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix: moving to DistributedDataParallel needs a launcher (`torchrun`), a\n"
    "process group, a distributed sampler and per-rank logging, which a source edit at this\n"
    "line cannot provide.\n";

static const char *const data_parallel_names[] = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
    NULL,
};

/* device_ids=[0] / (0,): one device, nothing is replicated */
static bool single_device(const PySource *src, TSNode call) {
    TSNode ids = py_call_keyword(src, call, "device_ids");
    if (ts_node_is_null(ids)) ids = py_call_positional(call, 1);
    if (ts_node_is_null(ids) || !(py_is(ids, "list") || py_is(ids, "tuple"))) return false;
    if (ts_node_named_child_count(ids) != 1) return false;
    TSNode only = ts_node_named_child(ids, 0);
    return !py_is(only, "list_splat") && !py_is(only, "comment");
}

typedef struct {
    RuleContext *ctx;
    enum { DDP_UNSEARCHED, DDP_ABSENT, DDP_BUILT } ddp; /* searched once, when a DataParallel is found */
} Walk;

/* DistributedDataParallel(...), or a call of a helper named for it
 * (`smart_DDP(model)`, `wrap_ddp(model)`) */
static bool visit_ddp(TSNode n, void *data) {
    Walk *w = data;
    if (w->ddp == DDP_BUILT) return false;
    if (!py_is(n, "call")) return true;
    const PySource *src = w->ctx->py;
    TSNode name = ts_node_child_by_field_name(n, "function", 8);
    if (py_is(name, "attribute")) name = ts_node_child_by_field_name(name, "attribute", 9);
    if (py_constructs_ddp(src, n) ||
        (py_is(name, "identifier") && py_name_has_word(py_text_ptr(src, name), py_text_len(name), "ddp")))
        w->ddp = DDP_BUILT;
    return w->ddp != DDP_BUILT;
}

/* The file builds DistributedDataParallel too: DataParallel is its fallback
 * for a run started without torchrun (yolov5's train.py, which warns that
 * DP is not recommended), and the advice is already the program's. */
static bool file_builds_ddp(Walk *w) {
    if (w->ddp == DDP_UNSEARCHED) {
        w->ddp = DDP_ABSENT;
        py_walk(ts_tree_root_node(w->ctx->py->tree), visit_ddp, w);
    }
    return w->ddp == DDP_BUILT;
}

static bool visit(TSNode n, void *data) {
    Walk *w = data;
    RuleContext *ctx = w->ctx;
    if (!py_is(n, "call") || !py_callee_is_any(ctx->py, n, data_parallel_names)) return true;
    TSNode callee = ts_node_child_by_field_name(n, "function", 8);
    if (py_callee_shadowed(ctx->py, n, callee)) return true;
    if (single_device(ctx->py, n) || py_in_test_function(ctx->py, n) || file_builds_ddp(w)) return true;
    rule_report_node(ctx, callee,
                     "DataParallel replicates the model from GPU 0 and scatters and gathers every batch through "
                     "it on each step, from threads of one process; DistributedDataParallel (one process per GPU, "
                     "started by torchrun) avoids both");
    return true;
}

static void check(RuleContext *ctx) {
    /* a test builds DataParallel to check how the code handles it (unwrapping, saving) */
    if (py_is_test_path(ctx->doc->path)) return;
    Walk w = {ctx, DDP_UNSEARCHED};
    rule_walk(ctx, visit, &w);
}

const Rule rule_py011_data_parallel_instead_of_ddp = {
    .code = "PY011", .name = "data-parallel-instead-of-ddp", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_GPU_TIME,
    .whole_file = true, /* a DistributedDataParallel built elsewhere in the file decides */
    .summary = "torch.nn.DataParallel where DistributedDataParallel is faster",
    .advice = "use DistributedDataParallel with one process per GPU (`torchrun`)",
    .documentation = documentation};
