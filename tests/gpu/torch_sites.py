"""A PyTorch program whose GPU work happens on known lines, for checking that
`advise profile` attributes each kernel, copy and sync to the right line.

    python tests/gpu/torch_sites.py [--torch-trace TRACE.json]

With --torch-trace the same work runs under torch.profiler (with_stack=True)
and the Chrome trace is written there (a fixture for `advise import`).
Each line that the checker looks for carries an `# expect:` comment.
"""
import argparse
import contextlib

import torch


def make_inputs(n):
    host = torch.randn(n, n)
    x = host.cuda()  # expect: memcpy HtoD pageable
    w = torch.randn(n, n, device="cuda")
    return x, w


def layer(x, w):
    y = x @ w  # expect: launch gemm|sgemm|cutlass|xmma|nvjet
    return torch.relu(y)  # expect: launch elementwise|relu|clamp


def step(x, w):
    y = layer(x, w)
    total = y.sum()
    return total.item()  # expect: sync


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--torch-trace")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    x, w = make_inputs(1024)
    profiler = contextlib.nullcontext()
    if args.torch_trace:
        profiler = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            with_stack=True,
        )
    with profiler as prof:
        values = [step(x, w) for _ in range(args.steps)]
        torch.cuda.synchronize()  # expect: sync
    if args.torch_trace:
        prof.export_chrome_trace(args.torch_trace)
    print(f"ok {len(values)} steps, last {values[-1]:.3f}")


if __name__ == "__main__":
    main()
