#!/bin/sh
# 2026-12-05 call 2: the probe in both orders, 3 processes each; then the LSTM's profiler cost split across processes
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nproc; date -u; } > $OUT/gpu.txt 2>&1
for i in 1 2 3; do for o in activity-first callbacks-first; do echo "== $o $i"; .carry/probe/launch_probe $o 5000; done; done > $OUT/probe.txt 2>&1
python3 bench/public/run.py --prepare-only --workloads lstm --variants as-written > /dev/null
python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload lstm --reps 3 \
   --variants plain,advise,asleep,no-tracing,no-python,activity-only --json $OUT/ov-lstm-parts.json > $OUT/ov-lstm-parts.txt 2>&1
date -u >> $OUT/gpu.txt
python3 - <<'PY'
import re
rows = {}
for line in open("/tmp/out_probe.txt" if False else __import__("os").environ["OUT"] + "/probe.txt"):
    m = re.match(r"(\S+) (.*?)\s+best\s+([\d.]+) us\s+mean\s+([\d.]+)", line)
    if m: rows.setdefault(m.group(1) + " " + m.group(2).strip(), []).append(float(m.group(3)))
for k, v in rows.items(): print(f"{k:50} best per process: {' '.join(f'{x:.2f}' for x in v)}")
PY
tail -9 $OUT/ov-lstm-parts.txt
