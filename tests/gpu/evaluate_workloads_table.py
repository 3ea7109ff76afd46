#!/usr/bin/env python3
"""Advise's estimates against measured savings on the real workloads
(bench/workloads/), an out-of-sample check of the gain models: the models
were written from the samples' evaluation, and the workloads' profiles were
recorded before them.

    python3 tests/gpu/evaluate_workloads_table.py RUN_DIR [ADVISE]

RUN_DIR holds tests/gpu/evaluate_workloads.sh's profiles. The estimate comes
from `advise check` on the workload with its recorded profile
(tests/fixtures/profiles/h200/), for the findings its *_advised.py version
followed (named in that file's docstring); the measured saving is the GPU
time (kernels + copies + memsets) of the workload minus that of its advised
version, both profiled in RUN_DIR's run. Printed: the largest single
program-scope gain (advise never adds gains, which may count the same time)
and, for reference, their sum.
"""
import json
import os
import re
import subprocess
import sys

WORKLOADS = ["unet_step", "resnet50_step"]


def gpu_seconds(profile):
    return sum(op["stats"]["total_ns"] for op in profile["ops"] if op["kind"] in ("launch", "memcpy", "memset")) / 1e9


def followed(workload):
    doc = open(f"bench/workloads/{workload}_advised.py").read().split('"""')[1]
    return sorted(set(re.findall(r"\b(P[YR]\d{3})\b", doc)))


def main(run_dir, advise):
    print("| workload | findings followed | est. gain (largest) | est. (sum) | GPU time as written -> advised | saved | error (largest) |")
    print("|---|---|---|---|---|---|---|")
    for w in WORKLOADS:
        rules = followed(w)
        out = subprocess.run([advise, "check", "--format", "json", "--profile", f"tests/fixtures/profiles/h200/{w}.json",
                              f"bench/workloads/{w}.py"], capture_output=True, text=True).stdout
        findings = json.loads(out)["findings"]
        gains = [f["gain"]["seconds"] for f in findings
                 if f["code"] in rules and f.get("gain") and f["gain"].get("scope") == "program"]
        g0 = gpu_seconds(json.load(open(os.path.join(run_dir, f"{w}.json"))))
        g1 = gpu_seconds(json.load(open(os.path.join(run_dir, f"{w}_advised.json"))))
        saved = g0 - g1
        largest = max(gains) if gains else 0.0
        err = f"{abs(largest - saved) / saved * 100:.0f}%" if saved > 0 and largest > 0 else "-"
        print(f"| {w} | {', '.join(rules)} | {largest * 1e3:.2f} ms | {sum(gains) * 1e3:.2f} ms "
              f"| {g0 * 1e3:.1f} -> {g1 * 1e3:.1f} ms | {saved * 1e3:.2f} ms | {err} |")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "build/advise")
