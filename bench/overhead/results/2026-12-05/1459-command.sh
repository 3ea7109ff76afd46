#!/bin/sh
# 2026-12-05 session 3, call 2: --steps on gpt-small (300 steps, steps:20) and pytorch-cifar (600 iterations, steps:150)
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nproc; date -u; } > $OUT/gpu.txt 2>&1
mkdir -p $OUT/profiles
python3 bench/public/run.py --prepare-only --workloads cifar --variants as-written > /dev/null
timeout 300 python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload cifar --reps 3 --iterations 600 \
   --variants plain,advise,steps:150 --profiles-out $OUT/profiles --json $OUT/ov-cifar-steps.json > $OUT/ov-cifar-steps.txt 2>&1
echo "cifar rc $?"; tail -5 $OUT/ov-cifar-steps.txt
timeout 240 python3 bench/overhead/run.py --profile .carry/bin/advise-profile --models gpt-small --steps 300 --reps 3 \
   --variants plain,advise,steps:20 --keep $OUT/profiles --json $OUT/ov-gpt-steps.json > $OUT/ov-gpt-steps.txt 2>&1
echo "gpt rc $?"; tail -5 $OUT/ov-gpt-steps.txt
date -u >> $OUT/gpu.txt
tar czf $OUT/profiles.tgz -C $OUT profiles && rm -rf $OUT/profiles
grep -h "^rep\|ms/step" $OUT/ov-cifar-steps.txt $OUT/ov-gpt-steps.txt | cut -c1-110
