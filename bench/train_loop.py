"""One PyTorch training loop for the profiler-overhead benchmark: a small
transformer encoder on random tokens, AdamW, bf16 autocast.

    python bench/train_loop.py [--steps N] [--torch-profiler]

Prints one JSON line: the loop's wall time (after warm-up, synchronized) and
the whole run's. With --torch-profiler the loop runs under torch.profiler
with CPU+CUDA activities and with_stack=True, and the trace is exported (the
export is timed apart).
"""
import argparse
import json
import os
import tempfile
import time

T0 = time.perf_counter()

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab=8192, d=512, heads=8, layers=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        block = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(block, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def train(model, optimizer, batches, steps):
    for i in range(steps):
        tokens, target = batches[i % len(batches)]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--torch-profiler", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Model().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    shape = (args.batch, 256)
    batches = [(torch.randint(0, 8192, shape, device="cuda"), torch.randint(0, 8192, shape, device="cuda"))
               for _ in range(4)]
    train(model, optimizer, batches, args.warmup)
    torch.cuda.synchronize()

    export_s = 0.0
    if args.torch_profiler:
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        start = time.perf_counter()
        with torch.profiler.profile(activities=activities, with_stack=True) as prof:
            loss = train(model, optimizer, batches, args.steps)
            torch.cuda.synchronize()
        loop_s = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            e0 = time.perf_counter()
            prof.export_chrome_trace(os.path.join(tmp, "trace.json"))
            export_s = time.perf_counter() - e0
    else:
        start = time.perf_counter()
        loss = train(model, optimizer, batches, args.steps)
        torch.cuda.synchronize()
        loop_s = time.perf_counter() - start
    print(json.dumps({"loop_s": loop_s, "export_s": export_s, "steps": args.steps, "loss": float(loss),
                      "process_s": time.perf_counter() - T0}))


if __name__ == "__main__":
    main()
