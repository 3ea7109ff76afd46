"""A training run with phases, for advise's step detection (issue 17;
profiler/step_phases.c): an MLP trained on random data, with an evaluation
of 20 batches (each read back with .item()) every --eval-every steps and a
checkpoint (torch.save) every --ckpt-every steps. `advise profile` should
find its optimizer steps, their median, the warm-up, the slow steps that
hold the evaluations and checkpoints, and keep their idle time out of
PR003's gains.

Prints one RESULT line with what the host measured: the steps, the median
step, and the time each evaluation and checkpoint took."""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def evaluate(model, x, y, batches):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for _ in range(batches):
            total += F.cross_entropy(model(x), y).item()
    model.train()
    return total / batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--ckpt-every", type=int, default=150)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=1024)
    a = ap.parse_args()
    torch.manual_seed(0)
    w = a.width
    model = nn.Sequential(nn.Linear(w, 4 * w), nn.GELU(), nn.Linear(4 * w, w), nn.GELU(), nn.Linear(w, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(a.batch, w, device="cuda")
    y = torch.randint(0, 10, (a.batch,), device="cuda")
    path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
    step_ms, eval_ms, ckpt_ms = [], [], []
    for step in range(1, a.steps + 1):
        t0 = time.perf_counter()
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step_ms.append((time.perf_counter() - t0) * 1e3)
        if step % a.eval_every == 0:
            t1 = time.perf_counter()
            evaluate(model, x, y, 20)
            eval_ms.append((time.perf_counter() - t1) * 1e3)
        if step % a.ckpt_every == 0:
            t1 = time.perf_counter()
            torch.save(model.state_dict(), path)
            ckpt_ms.append((time.perf_counter() - t1) * 1e3)
    torch.cuda.synchronize()
    os.remove(path)
    print("RESULT " + json.dumps({"steps": a.steps, "median_step_ms": statistics.median(step_ms),
                                  "first_steps_ms": step_ms[:5], "eval_ms": eval_ms, "ckpt_ms": ckpt_ms}))


if __name__ == "__main__":
    main()
