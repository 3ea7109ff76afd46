#include "rules/python/support/ddp_calls.h"

bool py_constructs_ddp(const PySource *src, TSNode call) {
    static const char *const names[] = {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        NULL,
    };
    return py_is(call, "call") && py_callee_is_any(src, call, names);
}
