#!/bin/sh
# 2026-12-05 session 3, call 3: the LSTM side by side: plain, advise --steps 150, torch.profiler(with_stack=True), 1500 iterations, 3 alternated reps
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv; date -u; } > $OUT/gpu.txt 2>&1
python3 bench/public/run.py --prepare-only --workloads lstm --variants as-written > /dev/null
timeout 420 python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload lstm --reps 3 --iterations 1500 \
   --variants plain,steps:150,torch.profiler --json $OUT/ov-lstm-side.json > $OUT/ov-lstm-side.txt 2>&1
echo "lstm rc $?"; date -u >> $OUT/gpu.txt
grep "^rep" $OUT/ov-lstm-side.txt | cut -c1-120; tail -5 $OUT/ov-lstm-side.txt
