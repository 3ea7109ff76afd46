#!/bin/sh
# 2026-12-05 session 3, call 1: --steps on the H200. A smoke run (phases.py under --steps 20),
# then the LSTM language model (3000 iterations) plain / advise / steps:300, 4 alternated reps,
# profiles kept for the report comparison.
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nproc; date -u; python3 -c 'import torch,sys;print(torch.__version__, sys.version.split()[0])'; } > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
mkdir -p $OUT/profiles
timeout 120 .carry/bin/advise-profile -o $OUT/profiles/smoke-steps20.json --steps 20 -- python3 bench/steps/phases.py --steps 120 --eval-every 50 --ckpt-every 60 > $OUT/smoke.txt 2>&1
echo "smoke rc $?"; tail -5 $OUT/smoke.txt
python3 bench/public/run.py --prepare-only --workloads lstm,cifar --variants as-written > /dev/null
timeout 420 python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload lstm --reps 4 --iterations 3000 \
   --variants plain,advise,steps:300 --profiles-out $OUT/profiles --json $OUT/ov-lstm-steps.json > $OUT/ov-lstm-steps.txt 2>&1
echo "lstm rc $?"
date -u >> $OUT/gpu.txt; tail -5 $OUT/ov-lstm-steps.txt
