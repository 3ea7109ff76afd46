"""resnet50_step.py after following advise's top findings on its H200 profile
(2026-11-30): PY001 -- loss.item() waited 8 ms on every step: read it every
10th step; PY008 -- SGD(fused=True). Nothing else changed.

    python bench/workloads/resnet50_step_advised.py [--steps 30] [--batch 64]
"""
import argparse
import time

import torch
import torchvision


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)
    images = torch.randn(args.batch, 3, 224, 224)
    labels = torch.randint(0, 1000, (args.batch,))
    start = time.perf_counter()
    for step in range(args.steps):
        x = images.cuda()
        y = labels.cuda()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")
    torch.cuda.synchronize()
    print(f"{args.steps} steps in {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
