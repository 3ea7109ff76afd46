"""A workload for PR020 (bench/memory/run.py runs it as the model "probe").

A linear probe on a frozen backbone: `feats = backbone(x)` under no_grad
keeps the previous step's features alive through the next step's backbone
forward, where the memory peak is. The advice (PR020): `del feats` once the
head has read them. --variant before|after runs the loop without and with
it. Prints one JSON line as train.py does: the peak
(torch.cuda.max_memory_allocated) and the median step time."""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn


class Backbone(nn.Module):
    """A frozen feature extractor: under no_grad its forward keeps no activations."""

    def __init__(self, width, hidden, features):
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, features)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def probe_before(backbone, head, opt, x, y, steps, times):
    for step in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            feats = backbone(x)
        logits = head(feats)
        loss = torch.nn.functional.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)


def probe_after(backbone, head, opt, x, y, steps, times):
    for step in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            feats = backbone(x)
        logits = head(feats)
        del feats
        loss = torch.nn.functional.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["probe"], default="probe")
    ap.add_argument("--variant", choices=["before", "after"], default="before")
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--cap-gib", type=float, default=0, help="limit this process to so much device memory")
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.cap_gib:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, a.cap_gib * (1 << 30) / total))
    backbone = Backbone(1024, 16384, 8192).cuda().requires_grad_(False)
    head = nn.Linear(8192, 1000).cuda()
    opt = torch.optim.AdamW(head.parameters(), lr=1e-3)
    x = torch.randn(a.batch, 1024, device="cuda")
    y = torch.randint(0, 1000, (a.batch,), device="cuda")
    times = []
    (probe_before if a.variant == "before" else probe_after)(backbone, head, opt, x, y, a.steps, times)
    print("RESULT " + json.dumps({"model": a.model, "variant": a.variant, "batch": a.batch, "steps": a.steps,
                                  "peak": torch.cuda.max_memory_allocated(),
                                  "reserved": torch.cuda.max_memory_reserved(),
                                  "step_ms": statistics.median(times[3:]) * 1e3 if len(times) > 3 else None}))


if __name__ == "__main__":
    main()
