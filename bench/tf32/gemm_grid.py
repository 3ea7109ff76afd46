"""The speed-up of float32 matrix products on an H200 when TF32 tensor cores
(or bf16) replace FP32 CUDA cores, by M, N and K: the data for the model of
a TF32/bf16 finding (issue 17). One process, one GPU:

    python3 bench/tf32/gemm_grid.py [--out results.json]

For each shape, CUDA-event timing of `a @ b` (median of 20 after 5 warm-up
runs) with allow_tf32 off, on, and in bf16; prints a table and writes JSON."""
import argparse
import datetime
import json
import statistics

import torch


def timed(fn, reps=20, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)  # microseconds
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gemm_grid.json")
    args = ap.parse_args()
    sizes = [128, 256, 512, 1024, 2048, 4096, 8192]
    ks = [64, 256, 1024, 4096]
    shapes = [(m, m, k) for m in sizes for k in ks]
    shapes += [(8192, 256, 1024), (256, 8192, 1024), (16384, 1024, 1024), (2048, 1024, 4096), (65536, 1024, 1024),
               (32768, 4096, 1024), (4096, 50304, 768)]
    rows = []
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        torch.backends.cuda.matmul.allow_tf32 = False
        fp32 = timed(lambda: a @ b)
        torch.backends.cuda.matmul.allow_tf32 = True
        tf32 = timed(lambda: a @ b)
        torch.backends.cuda.matmul.allow_tf32 = False
        ah, bh = a.bfloat16(), b.bfloat16()
        bf16 = timed(lambda: ah @ bh)
        rows.append({"m": m, "n": n, "k": k, "fp32_us": fp32, "tf32_us": tf32, "bf16_us": bf16,
                     "tf32_speedup": fp32 / tf32, "bf16_speedup": fp32 / bf16,
                     "fp32_tflops": 2.0 * m * n * k / fp32 / 1e6})
        del a, b, ah, bh
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "rows": rows}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print("%s, PyTorch %s, %s" % (out["gpu"], out["torch"], out["date"]))
    print("| M | N | K | fp32 us | tf32 us | bf16 us | tf32 x | bf16 x | fp32 TFLOP/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %d | %d | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f |" % (
            r["m"], r["n"], r["k"], r["fp32_us"], r["tf32_us"], r["bf16_us"], r["tf32_speedup"], r["bf16_speedup"],
            r["fp32_tflops"]))


if __name__ == "__main__":
    main()
