"""One training run of the overhead benchmark: builds a model of models.py,
trains it on random tokens with AdamW, and prints one JSON line with the
median time of a training step. Steps are timed in groups of --group
between two device synchronizations, so the CPU runs ahead of the GPU as it
does in real training.

    python3 bench/overhead/step.py --model gpt-small [--steps 60] [--torch-profiler]

With --torch-profiler the timed steps run under torch.profiler (CPU and
CUDA activities, with_stack=True), the setting that gives lines.

With --blocks K the groups are K steps long and aligned with blocks of K
optimizer steps, after a warm-up of 12 blocks. Under `advise profile` with
ADVISE_PROFILE_ALTERNATE=K in the environment, the profiler sleeps through
every other block (profiler/inject/step_marks.c); the JSON line then also
carries `awake_ms` and `dormant_ms`, the groups timed with and without the
profiler's per-launch cost in one process, and `step_ms` is the awake
groups' median. With K = 10 the warm-up's 6 awake blocks (60 steps) hold the
first 8,192 launches, traced in full, on the models here (170 to 240
launches per step).
"""
import argparse
import contextlib
import os
import json
import statistics
import time

import torch

from models import MODELS


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=sorted(MODELS) + ["launches"], required=True)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--group", type=int, default=10)
    parser.add_argument("--torch-profiler", action="store_true")
    parser.add_argument("--blocks", type=int, default=0,
                        help="groups of K steps aligned with the profiler's blocks (ADVISE_PROFILE_ALTERNATE=K)")
    args = parser.parse_args()
    alternate = int(os.environ.get("ADVISE_PROFILE_ALTERNATE", "0") or 0)
    if alternate and alternate != args.blocks:
        parser.error(f"ADVISE_PROFILE_ALTERNATE={alternate} needs --blocks {alternate}")
    if args.blocks:
        # groups of K steps on block boundaries, after 12 blocks (6 awake: the traced prefix)
        k = args.blocks
        args.group = k
        args.warmup = max(12 * k, -(-args.warmup // (2 * k)) * 2 * k)
        args.steps = -(-args.steps // (2 * k)) * 2 * k
    args.alternate = alternate
    if args.model == "launches":
        return launches(args)
    make, kwargs, batch, context, bf16 = MODELS[args.model]
    torch.manual_seed(0)
    model = make(**kwargs).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    vocab = kwargs["vocab"]
    data = [(torch.randint(0, vocab, (batch, context), device="cuda"),
             torch.randint(0, vocab, (batch, context), device="cuda")) for _ in range(4)]

    def step(i):
        x, y = data[i % len(data)]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    for i in range(args.warmup):
        step(i)
    torch.cuda.synchronize()
    with torch_profiler(args.torch_profiler):
        per_step = []
        for g in range(0, args.steps, args.group):
            start = time.perf_counter()
            for i in range(g, g + args.group):
                step(i)
            torch.cuda.synchronize()
            per_step.append((time.perf_counter() - start) / args.group)
    report(args.model, per_step, args)


def report(model, per_step, args):
    out = {"model": model, "step_ms": 1000 * statistics.median(per_step),
           "min_ms": 1000 * min(per_step), "groups_ms": [round(1000 * s, 4) for s in per_step]}
    if args is not None and args.alternate:
        # group g starts at step warmup + g*K: block (warmup/K + g), dormant when odd
        first_block = args.warmup // args.alternate
        awake = [s for g, s in enumerate(per_step) if (first_block + g) % 2 == 0]
        dormant = [s for g, s in enumerate(per_step) if (first_block + g) % 2 == 1]
        out["awake_ms"] = [round(1000 * s, 4) for s in awake]
        out["dormant_ms"] = [round(1000 * s, 4) for s in dormant]
        out["step_ms"] = 1000 * statistics.median(awake)  # the profiler's steps, not half of them dormant
    print(json.dumps(out))


def launches(args):
    """A "step" of 100 tiny kernels: the cost of one launch, in isolation."""
    x = torch.zeros(16, device="cuda")
    def step():
        for _ in range(100):
            x.add_(1)
    for _ in range(args.warmup * 10):
        step()
    torch.cuda.synchronize()
    with torch_profiler(args.torch_profiler):
        per_step = []
        for g in range(0, args.steps, args.group):
            start = time.perf_counter()
            for _ in range(args.group):
                step()
            torch.cuda.synchronize()
            per_step.append((time.perf_counter() - start) / args.group)
    report("launches", per_step, None)


def torch_profiler(wanted):
    if not wanted:
        return contextlib.nullcontext()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    return torch.profiler.profile(activities=acts, with_stack=True)


if __name__ == "__main__":
    main()
