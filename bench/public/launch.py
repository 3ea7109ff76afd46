"""Runs one prepared public workload in this process, on random data, and
times its steady training iterations.

    python3 launch.py --script main.py --data mnist|cifar10|text \
        --iterations N --steps-per-iteration K --batch B --timing OUT.json [--seed S]

The script runs as `python3 main.py` would run it (as __main__, from its own
folder). Before it starts, torchvision's MNIST and CIFAR-10 classes are
replaced by stand-ins of random images that load exactly as the real ones do
(a uint8 array, a PIL image per item, the script's own transforms), sized so
that one epoch is N iterations; "text" writes a random word corpus instead.

Timing: a hook after every optimizer step. After the warm-up iterations and
after the last training iteration it synchronizes the GPU once and reads the
clock; the time per iteration is the difference over the iterations between.
Those two synchronizations are the only work the timing adds. The host clock
is also read (without synchronizing) at the end of every timed iteration:
timing.json's host_iteration_ms, whose median and slow iterations show what
the average hides.

--alternate K (with ADVISE_PROFILE_ALTERNATE=K under `advise profile`, which
then sleeps through steps K+1..2K, 3K+1..4K, ...): the hook also synchronizes
at every K-th step from the warm-up's end on and writes each block of K
steps with the profiler's state during it, so that one process gives the
profiler's cost per step, free of the spread between processes.

--torch-profiler: the script runs inside torch.profiler.profile (CPU and
CUDA activity, with_stack=True), the peer tool's cost on the same workload;
nothing is exported.

torch's generator is seeded (--seed, 0 unless told) before the script runs,
so two copies of one workload start from the same weights and draw the same
batches: their printed losses can be compared step by step.
"""
import argparse
import atexit
import json
import os
import runpy
import sys
import time

import numpy as np
import torch
import torchvision
from torch.optim.optimizer import register_optimizer_step_post_hook
from PIL import Image

TEST_ITEMS = 1000


def random_images(count, shape, seed):
    return np.random.default_rng(seed).integers(0, 256, size=(count,) + shape, dtype=np.uint8)


class RandomMNIST(torch.utils.data.Dataset):
    """MNIST's __getitem__: a uint8 image made a PIL image in mode L."""
    items = 0

    def __init__(self, root=None, train=True, transform=None, target_transform=None, download=False):
        count = RandomMNIST.items if train else TEST_ITEMS
        self.data = torch.from_numpy(random_images(count, (28, 28), 1 if train else 2))
        self.targets = torch.randint(0, 10, (count,), generator=torch.Generator().manual_seed(3))
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        img, target = Image.fromarray(self.data[index].numpy(), mode="L"), int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


class RandomCIFAR10(torch.utils.data.Dataset):
    """CIFAR-10's __getitem__: an HWC uint8 array made a PIL image."""
    items = 0

    def __init__(self, root=None, train=True, transform=None, target_transform=None, download=False):
        count = RandomCIFAR10.items if train else TEST_ITEMS
        self.data = random_images(count, (32, 32, 3), 1 if train else 2)
        self.targets = list(np.random.default_rng(3).integers(0, 10, size=count))
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        img, target = Image.fromarray(self.data[index]), int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


def write_random_text(path, tokens, vocabulary=10000, per_line=20):
    """A corpus of `tokens` words (line ends count as <eos>) over `vocabulary`
    words drawn with Zipf-like frequencies, as natural text has."""
    rng = np.random.default_rng(4)
    weights = 1.0 / np.arange(1, vocabulary + 1)
    words = rng.choice(vocabulary, size=tokens, p=weights / weights.sum())
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        for start in range(0, tokens, per_line):
            f.write(" ".join(f"w{w}" for w in words[start:start + per_line - 1]) + "\n")


class IterationClock:
    def __init__(self, iterations, steps_per_iteration, warmup, out, alternate=0):
        self.iterations, self.per, self.warmup, self.out = iterations, steps_per_iteration, warmup, out
        self.alternate = alternate
        self.steps = 0
        self.start = self.end = None
        self.blocks = []  # (first step, ms, profiler state) per block of `alternate` steps
        self.block_start = None
        self.iteration_ends = []  # host clock at each timed iteration's end (no synchronization)

    def block_boundary(self):
        """At the end of step m*K: the block of steps m*K+1..(m+1)*K runs with
        the profiler dormant when m is odd (profiler/inject/step_marks.c)."""
        torch.cuda.synchronize()
        now = time.perf_counter()
        if self.block_start is not None:
            first, began = self.block_start
            dormant = ((first - 1) // self.alternate) % 2 == 1
            self.blocks.append({"first_step": first, "ms": (now - began) * 1e3,
                                "profiler": "dormant" if dormant else "awake"})
        self.block_start = (self.steps + 1, now)

    def after_step(self, optimizer, args, kwargs):
        self.steps += 1
        if self.alternate and self.steps % self.alternate == 0 and \
                self.warmup * self.per <= self.steps <= self.iterations * self.per:
            self.block_boundary()
        if self.steps % self.per:
            return
        done = self.steps // self.per
        if self.warmup <= done <= self.iterations:
            self.iteration_ends.append(time.perf_counter())
        if done == self.warmup or done == self.iterations:
            torch.cuda.synchronize()
            now = time.perf_counter()
            if done == self.warmup:
                self.start = now
            else:
                self.end = now

    def write(self):
        timed = self.iterations - self.warmup
        result = {"iterations": self.steps // self.per, "timed_iterations": timed,
                  "ms_per_iteration": None}
        if self.alternate:
            result["alternate"] = self.alternate
            result["blocks"] = self.blocks
        if self.start is not None and self.end is not None:
            result["ms_per_iteration"] = (self.end - self.start) * 1e3 / timed
        ends = self.iteration_ends
        if len(ends) > 1:
            # the host's pace per iteration: a queue that stays full makes it the
            # GPU's; its median is free of the rare stalls the average holds
            result["host_iteration_ms"] = [round((b - a) * 1e3, 3) for a, b in zip(ends, ends[1:])]
        with open(self.out, "w") as f:
            json.dump(result, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--data", choices=["mnist", "cifar10", "text"], required=True)
    parser.add_argument("--iterations", type=int, required=True)
    parser.add_argument("--steps-per-iteration", type=int, default=1)
    parser.add_argument("--batch", type=int, required=True, help="items per iteration")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--timing", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alternate", type=int, default=0,
                        help="time blocks of K optimizer steps (with ADVISE_PROFILE_ALTERNATE=K)")
    parser.add_argument("--torch-profiler", action="store_true",
                        help="run inside torch.profiler.profile(with_stack=True)")
    args = parser.parse_args()
    if args.alternate < 0:
        parser.error("--alternate must be 0 or more")

    if args.data == "mnist":
        RandomMNIST.items = args.iterations * args.batch
        torchvision.datasets.MNIST = RandomMNIST
    elif args.data == "cifar10":
        RandomCIFAR10.items = args.iterations * args.batch
        torchvision.datasets.CIFAR10 = RandomCIFAR10
    else:
        # language_model cuts the ids into 20 rows and walks them in windows
        # of 30 while a whole window and its shifted targets fit: one window
        # more than the iterations (batch = 20 x 30 tokens).
        write_random_text("data/train.txt", (args.iterations + 1) * args.batch)

    clock = IterationClock(args.iterations, args.steps_per_iteration, args.warmup,
                           os.path.abspath(args.timing), args.alternate)
    register_optimizer_step_post_hook(clock.after_step)
    atexit.register(clock.write)
    torch.manual_seed(args.seed)
    sys.argv = [args.script]
    sys.path.insert(0, os.getcwd())
    if args.torch_profiler:
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities, with_stack=True):
            runpy.run_path(args.script, run_name="__main__")
    else:
        runpy.run_path(args.script, run_name="__main__")


if __name__ == "__main__":
    main()
