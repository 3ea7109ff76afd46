"""The profiler's overhead on a PyTorch training loop, beside torch.profiler,
in one run on one GPU.

    python3 bench/profile_overhead.py --advise build/advise-profile [--reps 5]

Runs bench/train_loop.py plain, under `advise profile`, and with
torch.profiler (with_stack=True), interleaved, --reps times each, and prints
the median loop time of each and its overhead against the plain run, then
the whole-process times. The GPU's name and the date are printed first.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - start  # the whole command, advise's merge and write included
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--advise", required=True, help="advise or advise-profile binary")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=32, help="sequences of 256 tokens per step")
    args = parser.parse_args()
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    print(f"GPU: {gpu}; date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
          f"reps: {args.reps}; steps: {args.steps}; batch: {args.batch}x256 tokens")
    loop = [sys.executable, os.path.join(HERE, "train_loop.py"), "--steps", str(args.steps), "--batch", str(args.batch)]
    prefix = [args.advise] if args.advise.endswith("advise-profile") else [args.advise, "profile"]
    results = {"plain": [], "advise": [], "advise, no sites": [], "torch.profiler": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            results["plain"].append(run(loop))
            results["advise"].append(run(prefix + ["-o", os.path.join(tmp, f"p{rep}.json"), "--"] + loop))
            # activity only: what the call sites cost on top
            results["advise, no sites"].append(
                run(["env", "ADVISE_PROFILE_SITES=0"] + prefix + ["-o", os.path.join(tmp, f"n{rep}.json"), "--"] + loop))
            results["torch.profiler"].append(run(loop + ["--torch-profiler"]))
        size = os.path.getsize(os.path.join(tmp, "p0.json"))
        with open(os.path.join(tmp, "p0.json")) as f:
            profile = json.load(f)
    launches = sum(op["stats"]["count"] for op in profile["ops"] if op["kind"] == "launch")
    busy = sum(t["busy_ns"] for t in profile["timelines"]) / max(1, sum(t["span_ns"] for t in profile["timelines"]))
    base = statistics.median(r["loop_s"] for r in results["plain"])
    base_wall = statistics.median(r["wall_s"] for r in results["plain"])
    print(f"{'mode':16} {'loop median s':>14} {'overhead':>9} {'loop min..max s':>18} {'command s':>10} {'overhead':>9} {'export s':>9}")
    for mode, rs in results.items():
        loops = [r["loop_s"] for r in rs]
        med = statistics.median(loops)
        wall = statistics.median(r["wall_s"] for r in rs)
        exp = statistics.median(r["export_s"] for r in rs)
        print(f"{mode:16} {med:14.4f} {100 * (med / base - 1):8.2f}% {min(loops):8.4f}..{max(loops):8.4f} "
              f"{wall:10.3f} {100 * (wall / base_wall - 1):8.2f}% {exp:9.3f}")
    steps = args.steps + 10  # the warm-up steps run under the profiler too
    print(f"advise profile: {size} bytes; {launches / steps:.0f} kernel launches per step; GPU busy {100 * busy:.0f}%")


if __name__ == "__main__":
    main()
