"""A float32 MLP training loop for bench/critical: the same model from
host-paced (small batches: the GPU waits for Python's launches) to GPU-bound
(large batches), so that advise's TF32 estimate (PY009) can be checked
against the measured saving on both sides of the critical path.

    python3 mlp_train.py --batch 64 --steps 300 [--sync-every 1] [--timing OUT.json]

Written as a user would (no TF32, no autocast): run.py makes the TF32 copy
by following PY009's fix. Timing: the GPU is synchronized after step 20 and
after the last step; ms per step is the time between over the steps between.
"""
import argparse
import json
import time

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=64)
parser.add_argument("--layers", type=int, default=6)
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--sync-every", type=int, default=1, help="loss.item() every N steps")
parser.add_argument("--timing")
args = parser.parse_args()

WIDTH = 1024
device = torch.device("cuda")
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


model = nn.Sequential(*[Block(WIDTH) for _ in range(args.layers)], nn.Linear(WIDTH, 10)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
inputs = torch.randn(args.batch, WIDTH, device=device)
labels = torch.randint(0, 10, (args.batch,), device=device)

marks = {}
for step in range(1, args.steps + 1):
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), labels)
    loss.backward()
    optimizer.step()
    if step % args.sync_every == 0:
        running = loss.item()
    if step in (20, args.steps):
        torch.cuda.synchronize()
        marks[step] = time.perf_counter()

ms = (marks[args.steps] - marks[20]) * 1000 / (args.steps - 20)
print(f"{ms:.3f} ms/step")
if args.timing:
    with open(args.timing, "w") as f:
        json.dump({"ms_per_step": ms, "steps": args.steps}, f)
