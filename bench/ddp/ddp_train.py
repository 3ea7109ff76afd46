"""Two-rank data-parallel training of a small MLP on random data, the way a
first DDP script often looks: gradient accumulation over micro-batches
without `no_sync()` (an all-reduce after every micro-batch),
`find_unused_parameters=True` although every parameter is used, and the loss
read with `.item()` after every micro-batch.

    torchrun --standalone --nproc_per_node=2 bench/ddp/ddp_train.py [--steps 30] [--skew 0.25]

--skew gives the last rank that much more data per micro-batch (uneven
shards), so that the others wait for it in every all-reduce. Rank 0 prints
"N steps in X s" and the final loss.
"""
import argparse
import os
import time

# NVLink multicast stays off on shared hosts (it can take their GPUs out of service).
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def make_model(width, depth):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--skew", type=float, default=0.0)
    args = ap.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    torch.manual_seed(0)
    model = make_model(args.width, args.depth).cuda()
    ddp = DDP(model, device_ids=[local_rank], find_unused_parameters=True)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4, fused=True)

    batch = int(args.batch * (1 + args.skew)) if rank == world - 1 else args.batch
    gen = torch.Generator(device="cuda").manual_seed(1234 + rank)
    data = [torch.randn(batch, args.width, device="cuda", generator=gen) for _ in range(args.accum)]
    target = [torch.randn(batch, 1, device="cuda", generator=gen) for _ in range(args.accum)]

    losses = []
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
        for micro in range(args.accum):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = nn.functional.mse_loss(ddp(data[micro]), target[micro]) / args.accum
            loss.backward()
            losses.append(loss.item())
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(f"final loss {sum(losses[-args.accum:]):.6f}")
        print(f"{args.steps} steps in {elapsed:.3f} s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
