"""bench/critical: does advise's critical-path model hold? (issue 17)

A GPU-time gain (TF32 here, PY009) shortens a training step only by the
part of that GPU time the step waited for. For each configuration of
mlp_train.py, from host-paced to GPU-bound:

  1. the as-written script is profiled once with advise-profile;
  2. a copy gets PY009's fix (torch.set_float32_matmul_precision("high"),
     the line `advise check --fix --unsafe-fixes` inserts after the imports);
  3. both are timed, alternating, --reps times each: median ms per step.

The estimates come afterwards, where advise is built:
  advise check --no-config --profile OUT/prof-NAME.json bench/critical/mlp_train.py
gives PY009's gain for the whole run; per step it is gain / steps (compare.py).

    python3 bench/critical/run.py --profile .carry/bin/advise-profile --out OUT [--reps 3]
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mlp_train.py")
FIX_AFTER = "import torch.nn as nn\n"
FIX = 'torch.set_float32_matmul_precision("high")\n'

# name: arguments of mlp_train.py
CONFIGS = {
    "b32": ["--batch", "32"],
    "b32-nosync": ["--batch", "32", "--sync-every", "100"],
    "b256": ["--batch", "256"],
    "b1024": ["--batch", "1024"],
    "b4096": ["--batch", "4096"],
}


def tf32_copy(work):
    os.makedirs(work, exist_ok=True)
    with open(SCRIPT) as f:
        text = f.read()
    if text.count(FIX_AFTER) != 1:
        sys.exit("critical: the import line PY009's fix follows is not in mlp_train.py exactly once")
    path = os.path.join(work, "mlp_train_tf32.py")
    with open(path, "w") as f:
        f.write(text.replace(FIX_AFTER, FIX_AFTER + FIX))
    return path


def run(script, args, steps, timing, prefix=()):
    cmd = list(prefix) + [sys.executable, script, "--steps", str(steps), "--timing", timing] + args
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-2000:]}")
    with open(timing) as f:
        return json.load(f)["ms_per_step"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", required=True, help="advise-profile")
    parser.add_argument("--out", required=True)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--reps", type=int, default=3, help="0: profile only")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    fixed = tf32_copy(work)
    timing = os.path.join(work, "timing.json")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    results = {"gpu": gpu, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "steps": args.steps, "configs": {}}
    print(gpu, results["date"], flush=True)
    for name in args.configs.split(","):
        cli = CONFIGS[name]
        entry = results["configs"].setdefault(name, {"args": cli})
        prof = os.path.abspath(os.path.join(args.out, f"prof-{name}.json"))
        entry["profiled_ms"] = run(SCRIPT, cli, args.steps, timing,
                                   [os.path.abspath(args.profile), "-o", prof, "--name", name, "--"])
        entry["fp32"], entry["tf32"] = [], []
        if not args.reps:  # profiles only
            print(f"{name:11} profiled {entry['profiled_ms']:7.3f} ms/step", flush=True)
            continue
        for _ in range(args.reps):
            entry["fp32"].append(run(SCRIPT, cli, args.steps, timing))
            entry["tf32"].append(run(fixed, cli, args.steps, timing))
        fp32, tf32 = statistics.median(entry["fp32"]), statistics.median(entry["tf32"])
        entry["saved_ms"] = fp32 - tf32
        print(f"{name:11} profiled {entry['profiled_ms']:7.3f}  fp32 {fp32:7.3f}  tf32 {tf32:7.3f}  "
              f"saved {fp32 - tf32:7.3f} ms/step", flush=True)
        with open(os.path.join(args.out, "times.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
