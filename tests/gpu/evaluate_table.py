#!/usr/bin/env python3
"""The evaluation table of advise's advice on the samples (samples/RESULTS.md).

    python3 tests/gpu/evaluate_table.py EVAL_DIR RUN_DIR

EVAL_DIR is scripts/prepare-evaluation.sh's output (each sample as written,
as fixed, the findings with their estimated gains from the recorded
profile); RUN_DIR holds tests/gpu/evaluate_samples.sh's runs and profiles: one run
per version (STEM.json) or several (STEM.rN.json), whose medians are taken.

Per sample: the rules whose fixes were applied; the estimated gain (the
largest single program-scope gain advise gave to a finding whose fix was
applied; gains of different findings are never added); GPU time (kernels + copies + memsets) and the command's wall
time as written and as fixed, and the speedups; whether the fixed version
printed the same result: every number of its last output line within 1e-3
relative of the original's (1e-2 for the training sample, whose data order
is random).
"""
import json
import math
import os
import re
import sys


def gpu_seconds(profile, kinds=("launch", "memcpy", "memset")):
    return sum(op["stats"]["total_ns"] for op in profile["ops"] if op["kind"] in kinds) / 1e9


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def runs_of(run_dir, version, stem):
    """(exit statuses, wall s, GPU s, kernel s, last output lines) of every run of one version."""
    folder = os.path.join(run_dir, version)
    tags = sorted(f[len(stem) + 1:-len(".status")] for f in os.listdir(folder)
                  if f.startswith(stem + ".") and f.endswith(".status"))
    runs = []
    for tag in tags:
        base = os.path.join(folder, f"{stem}.{tag}" if tag else stem)
        try:
            status, wall = open(base + ".status").read().split()
            profile = json.load(open(base + ".json"))
        except (OSError, ValueError):
            continue
        runs.append((int(status), float(wall) / 1e3, gpu_seconds(profile), gpu_seconds(profile, ("launch",)),
                     last_line(base + ".out")))
    if not runs and os.path.exists(os.path.join(folder, stem + ".status")):
        base = os.path.join(folder, stem)
        status, wall = open(base + ".status").read().split()
        profile = json.load(open(base + ".json"))
        runs.append((int(status), float(wall) / 1e3, gpu_seconds(profile), gpu_seconds(profile, ("launch",)),
                     last_line(base + ".out")))
    return runs


def numbers(line):
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", line)]


def same_result(a, b, tol):
    na, nb = numbers(a), numbers(b)
    if len(na) != len(nb):
        return False
    return all(abs(x - y) <= tol * max(abs(x), abs(y), 1e-12) for x, y in zip(na, nb))


def last_line(path):
    try:
        with open(path) as f:
            lines = [l for l in f.read().splitlines() if l.strip()]
        return lines[-1] if lines else ""
    except OSError:
        return ""


def main(eval_dir, run_dir):
    rows, speedups, kernel_speedups, errors = [], [], [], []
    for name in sorted(os.listdir(os.path.join(eval_dir, "original"))):
        stem = os.path.splitext(name)[0]
        try:
            findings = json.load(open(os.path.join(eval_dir, "advised", name + ".findings.json")))["findings"]
            after_fix = json.load(open(os.path.join(eval_dir, "advised", name + ".fix.json")))["findings"]
        except (OSError, ValueError, KeyError):
            findings, after_fix = [], []
        remaining = {(f["code"], f["range"]["start"]["line"]) for f in after_fix}
        applied = sorted({f["code"] for f in findings if f.get("fixes") and (f["code"], f["range"]["start"]["line"]) not in remaining})
        # the estimate for what was applied: the largest program-scope gain among
        # the findings whose fixes were applied (gains of different findings
        # may count the same time, so they are never added)
        gains = [f["gain"]["seconds"] for f in findings
                 if f.get("gain") and f["gain"].get("scope") == "program" and f["code"] in applied]
        est = max(gains) if gains else 0.0
        runs = {v: runs_of(run_dir, v, stem) for v in ("original", "advised")}
        if not runs["original"] or not runs["advised"]:
            rows.append(f"| {name} | {', '.join(applied) or '-'} | - | run failed | | | | | |")
            continue
        reps = min(len(runs["original"]), len(runs["advised"]))
        g0, g1 = (median([r[2] for r in runs[v]]) for v in ("original", "advised"))
        k0, k1 = (median([r[3] for r in runs[v]]) for v in ("original", "advised"))
        w0, w1 = (median([r[1] for r in runs[v]]) for v in ("original", "advised"))
        tol = 1e-2 if stem == "train_classifier" else 1e-3
        same = all(a[0] == 0 and b[0] == 0 and same_result(a[4], b[4], tol)
                   for a, b in zip(runs["original"], runs["advised"]))
        gpu_speedup = g0 / g1 if g1 > 0 else float("nan")
        saved = g0 - g1
        speedups.append(gpu_speedup)
        if k1 > 0:
            kernel_speedups.append(k0 / k1)
        if est > 0 and saved > 0:
            errors.append(abs(est - saved) / saved)
        rows.append(f"| {name} | {', '.join(applied) or '-'} | {est * 1e3:.3f} ms | {g0 * 1e3:.3f} -> {g1 * 1e3:.3f} ms "
                    f"| {gpu_speedup:.2f}x | {k0 * 1e3:.3f} -> {k1 * 1e3:.3f} ms | {w0:.2f} -> {w1:.2f} s "
                    f"| {w0 / w1:.2f}x | {'yes' if same else 'NO'} ({reps} run{'s' if reps > 1 else ''}) |")
    print("| sample | rules applied | est. gain (largest) | GPU time (median) | GPU speedup | kernel time | wall | wall speedup | same result |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    def geomean(xs):
        xs = [x for x in xs if x > 0 and not math.isnan(x)]
        return (math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")), len(xs)
    geo, n = geomean(speedups)
    kgeo, kn = geomean(kernel_speedups)
    print(f"\ngeometric-mean GPU-time speedup: {geo:.2f}x over {n} samples (kernel time alone: {kgeo:.2f}x over {kn}); "
          f"mean |estimated - measured| / measured over {len(errors)} samples with both: "
          f"{(sum(errors) / len(errors) * 100) if errors else float('nan'):.0f}%")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
