"""Workloads for `advise profile --memory` (bench/memory/run.py runs them).

  leak  an MLP whose training loop also sums a held-out loss for logging,
        without no_grad: `val_total += val_loss` keeps every step's
        evaluation graph and its activations alive (the advice: .item())
  act   a deep residual MLP whose activations dominate the peak (the advice:
        activation checkpointing on its blocks)

--variant before|after applies the advice. Prints one JSON line: the peak
(torch.cuda.max_memory_allocated), the median step time, and with
--selfcheck the live bytes by allocating line taken from PyTorch's own
snapshot at the run's peak: the last step stops after its forward, where
this step's activations sit on top of everything kept so far (it runs a
double batch to make sure)."""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

HERE = os.path.dirname(os.path.abspath(__file__))


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.up(x)
        h = torch.nn.functional.gelu(h)
        return x + self.down(h)


class Net(nn.Module):
    def __init__(self, width, depth, checkpointed):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 10)
        self.checkpointed = checkpointed

    def forward(self, x):
        for block in self.blocks:
            if self.checkpointed:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(x)


def live_by_line():
    """Live bytes by the innermost frame in this folder, from PyTorch's snapshot."""
    out = {}
    for seg in torch.cuda.memory._snapshot()["segments"]:
        for b in seg["blocks"]:
            if b["state"] != "active_allocated":
                continue
            key = "?"
            for f in b.get("frames", ()):
                if os.path.realpath(f["filename"]).startswith(HERE + os.sep):
                    key = "%s:%d" % (os.path.basename(f["filename"]), f["line"])
                    break
            out[key] = out.get(key, 0) + b["size"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["leak", "act"], required=True)
    ap.add_argument("--variant", choices=["before", "after"], default="before")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--selfcheck", action="store_true")
    ap.add_argument("--cap-gib", type=float, default=0, help="limit this process to so much device memory")
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.cap_gib:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, a.cap_gib * (1 << 30) / total))
    width, depth = (1024, 4) if a.model == "leak" else (1024, 24)
    model = Net(width, depth, checkpointed=a.model == "act" and a.variant == "after").cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(a.batch, width, device="cuda")
    y = torch.randint(0, 10, (a.batch,), device="cuda")
    xv = torch.randn(a.batch // 4, width, device="cuda")
    yv = torch.randint(0, 10, (a.batch // 4,), device="cuda")
    val_total = 0.0
    losses = []
    times = []
    check = None
    for step in range(a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        last = a.selfcheck and step == a.steps - 1
        # the last step of --selfcheck runs a double batch and stops after its forward: the
        # run's peak by construction (its activations on top of everything kept so far)
        out = model(torch.cat([x, x]) if last else x)
        loss = torch.nn.functional.cross_entropy(out, torch.cat([y, y]) if last else y)
        if last:
            check = {"allocated": torch.cuda.memory_allocated(), "lines": live_by_line()}
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if a.model == "leak":
            val_loss = torch.nn.functional.cross_entropy(model(xv), yv)
            if a.variant == "before":
                val_total += val_loss  # keeps the graph of every step's evaluation
            else:
                val_total += val_loss.item()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    result = {"model": a.model, "variant": a.variant, "batch": a.batch, "steps": a.steps,
              "peak": torch.cuda.max_memory_allocated(), "reserved": torch.cuda.max_memory_reserved(),
              "step_ms": statistics.median(times[3:]) * 1e3 if len(times) > 3 else None}
    if check:
        result["selfcheck"] = check
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
