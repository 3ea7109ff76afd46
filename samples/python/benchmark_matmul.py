"""Benchmark square fp32 matmuls and a transformer-style MLP block.

For each size n it times `a @ b` (n x n) and the forward pass of an MLP block
(Linear n -> 4n, bias + GELU, Linear 4n -> n) over a batch of tokens, and
prints milliseconds and TFLOP/s. The kind of quick script people write to
"see how fast the GPU is", with the classic mistakes in it.

    python benchmark_matmul.py --steps 20 --sizes 1024 2048

What `advise check` should report in this file:

  PY007 unfused-elementwise           line 41   bias_gelu(): a function of >= 3 elementwise ops -> torch.compile hint
  PY002 unsynchronized-timing         line 62   elapsed = time.perf_counter() - t0 in time_matmul() with no
                                                torch.cuda.synchronize() before it: measures launches, not the matmuls
  PY004 host-tensor-moved-to-device   line 93   a = torch.randn(n, n).to(device) -> torch.randn(n, n, device=device)
  PY004 host-tensor-moved-to-device   line 94   b = torch.randn(n, n).to(device)
  PY003 sync-in-hot-loop              line 103  torch.cuda.synchronize() on every iteration of the warm-up loop
  PY009 fp32-matmul-without-tf32      line 49   once for the program, at its first matmul site (the block's
                                                nn.Linear; also a @ b at line 61): nothing enables TF32 or autocast

Look-alikes that are deliberately correct and must NOT be reported:

  - time_block() calls torch.cuda.synchronize() (under `if use_cuda:`) before
    each time.perf_counter() read                                            PY002
  - x = torch.randn(tokens, n, device=device): created on the device        PY004
  - nn.Parameter(torch.zeros(hidden)) in MLPBlock.__init__: moved once
    with the module by .to(device)                                           PY004
  - the per-size print() formats Python floats, not tensors                 PY001
  - c.sum().item() runs once, after the size loop                           PY001
  - the synchronize() calls in time_block() bracket the timed loop, they
    are not inside it                                                        PY003
"""
import argparse
import math
import time

import torch
import torch.nn as nn


def bias_gelu(x, bias):
    y = x + bias
    return 0.5 * y * (1.0 + torch.erf(y / math.sqrt(2.0)))


class MLPBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden, bias=False)
        self.up_bias = nn.Parameter(torch.zeros(hidden))
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(bias_gelu(self.up(x), self.up_bias))


def time_matmul(a, b, iters):
    """Seconds per a @ b."""
    t0 = time.perf_counter()
    for _ in range(iters):
        c = a @ b
    elapsed = time.perf_counter() - t0
    return elapsed / iters, c


def time_block(block, x, iters, use_cuda):
    """Seconds per forward pass of the block."""
    if use_cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        y = block(x)
    if use_cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters, y


def main():
    parser = argparse.ArgumentParser(description="Time fp32 matmuls and an MLP block.")
    parser.add_argument("--steps", type=int, default=50, help="timed iterations per measurement")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--tokens", type=int, default=2048)
    args = parser.parse_args()

    torch.manual_seed(0)
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    sizes = args.sizes or ([1024, 2048, 4096] if use_cuda else [128, 256])

    best = 0.0
    for n in sizes:
        a = torch.randn(n, n).to(device)
        b = torch.randn(n, n).to(device)
        x = torch.randn(args.tokens, n, device=device)
        block = MLPBlock(n, 4 * n).to(device)

        # Warm-up: lets cuBLAS pick its kernels and the caching allocator settle.
        for _ in range(args.warmup):
            a @ b
            block(x)
            if use_cuda:
                torch.cuda.synchronize()

        sec_mm, c = time_matmul(a, b, args.steps)
        sec_blk, _ = time_block(block, x, args.steps, use_cuda)
        tflops_mm = 2 * n**3 / sec_mm / 1e12
        tflops_blk = 2 * 2 * args.tokens * n * 4 * n / sec_blk / 1e12
        best = max(best, tflops_blk)
        print(f"n={n:5d}  matmul {sec_mm * 1e3:8.3f} ms {tflops_mm:8.1f} TFLOP/s   "
              f"mlp block {sec_blk * 1e3:8.3f} ms {tflops_blk:8.1f} TFLOP/s")

    print(f"checksum {c.sum().item():.4e}")
    print(f"final: best mlp block throughput {best:.1f} TFLOP/s on {device.type} (fp32)")


if __name__ == "__main__":
    main()
