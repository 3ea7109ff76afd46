"""Kernel times of float32 matrix products on FP32 CUDA cores, TF32 and bf16
tensor cores, by M, N and K, as CUPTI records them (through torch.profiler):
the data of the per-size model behind the TF32/bf16 gains (issue 17).

gemm_grid.py times single launches with CUDA events, so its small shapes
measure launch latency. A profile holds kernel durations, and the model
predicts a kernel's TF32 time from its FP32 duration: this script measures
exactly those.

    python3 bench/tf32/gemm_kernels.py [--out kernels.json] [--shapes grid|misaligned]

For each shape and mode: 3 warm-up calls, then 10 calls under the profiler;
the kernels of the 10 calls (a split-K product launches more than one) are
summed and divided by 10. Inputs are random, drawn once per shape."""
import argparse
import datetime
import json

import torch
from torch.profiler import ProfilerActivity, profile

REPS = 10


def kernel_time(fn):
    """(microseconds of kernels per call, name of the longest kernel)"""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    total = sum(e.time_range.elapsed_us() for e in kernels)
    longest = max(kernels, key=lambda e: e.time_range.elapsed_us()).name if kernels else ""
    return total / REPS, longest


def shapes():
    out = [(m, n, k) for m in (256, 1024, 4096, 16384, 65536) for n in (128, 384, 1024, 3072)
           for k in (128, 384, 1024, 3072)]
    out += [(m, m, k) for m in (128, 512, 2048, 8192) for k in (64, 256, 1024, 4096)]
    out += [(8192, 50304, 768), (4096, 50304, 384)]
    return out


def misaligned_shapes():
    """Each product with a dimension that is not a multiple of 4 floats (16
    bytes: a tensor-core kernel then loads one element at a time), beside its
    aligned neighbour: a word-level LSTM's 33,278-word vocabulary (pytorch-
    tutorial's language model: its FP32 GEMMs sped up 2.3x with TF32 on an
    H200, where aligned products of that duration reach 4x) and GPT-2's
    50,257."""
    out = []
    for m, n, k in ((700, 33278, 1500), (8192, 50257, 768), (4096, 50257, 384), (1024, 4097, 1024),
                    (2048, 1024, 1023)):
        out.append((m, n, k))
        out.append((m, (n + 3) // 4 * 4, (k + 3) // 4 * 4))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gemm_kernels.json")
    ap.add_argument("--shapes", choices=("grid", "misaligned"), default="grid",
                    help="grid: the model's 100 shapes; misaligned: odd dimensions beside aligned ones")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    for m, n, k in (shapes() if args.shapes == "grid" else misaligned_shapes()):
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        torch.backends.cuda.matmul.allow_tf32 = False
        fp32, fp32_name = kernel_time(lambda: a @ b)
        torch.backends.cuda.matmul.allow_tf32 = True
        tf32, tf32_name = kernel_time(lambda: a @ b)
        torch.backends.cuda.matmul.allow_tf32 = False
        ah, bh = a.bfloat16(), b.bfloat16()
        bf16, bf16_name = kernel_time(lambda: ah @ bh)
        rows.append({"m": m, "n": n, "k": k, "fp32_us": fp32, "tf32_us": tf32, "bf16_us": bf16,
                     "fp32_kernel": fp32_name, "tf32_kernel": tf32_name, "bf16_kernel": bf16_name,
                     "tf32_speedup": fp32 / tf32, "bf16_speedup": fp32 / bf16,
                     "fp32_tflops": 2.0 * m * n * k / fp32 / 1e6})
        del a, b, ah, bh
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "timing": "CUPTI kernel durations",
           "rows": rows}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print("%s, PyTorch %s, %s" % (out["gpu"], out["torch"], out["date"]))
    print("| M | N | K | fp32 us | tf32 x | bf16 x |")
    for r in sorted(rows, key=lambda r: r["fp32_us"])[::4 if args.shapes == "grid" else 1]:
        print("| %d | %d | %d | %.1f | %.2f | %.2f |" % (r["m"], r["n"], r["k"], r["fp32_us"], r["tf32_speedup"],
                                                      r["bf16_speedup"]))
        if args.shapes == "misaligned":
            print("|   | fp32: %.70s | tf32: %.70s |" % (r["fp32_kernel"], r["tf32_kernel"]))


if __name__ == "__main__":
    main()
