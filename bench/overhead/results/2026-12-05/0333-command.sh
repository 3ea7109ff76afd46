#!/bin/sh
# 2026-12-05 call 3: the LSTM, plain against advise, 8 alternated runs each
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; date -u; } > $OUT/gpu.txt 2>&1
python3 bench/public/run.py --prepare-only --workloads lstm --variants as-written > /dev/null
python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload lstm --reps 8 \
   --variants plain,advise --json $OUT/ov-lstm-8.json > $OUT/ov-lstm-8.txt 2>&1
date -u >> $OUT/gpu.txt
tail -5 $OUT/ov-lstm-8.txt
