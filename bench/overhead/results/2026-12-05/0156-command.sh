#!/bin/sh
# 2026-12-05 call 1: launch_probe, then the profiler's cost on the public lstm and cifar and on gpt-small,
# plain / advise / torch.profiler, across processes (alternated)
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nproc; date -u; } > $OUT/gpu.txt 2>&1
.carry/probe/launch_probe > $OUT/probe.txt 2>&1
cat $OUT/probe.txt
python3 bench/public/run.py --prepare-only --workloads cifar,lstm --variants as-written > /dev/null
python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload lstm --reps 3 \
   --variants plain,advise,torch.profiler --json $OUT/ov-lstm.json > $OUT/ov-lstm.txt 2>&1
date -u >> $OUT/gpu.txt; tail -6 $OUT/ov-lstm.txt
python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload cifar --reps 3 \
   --variants plain,advise,torch.profiler --json $OUT/ov-cifar.json > $OUT/ov-cifar.txt 2>&1
date -u >> $OUT/gpu.txt; tail -6 $OUT/ov-cifar.txt
python3 bench/overhead/run.py --profile .carry/bin/advise-profile --models gpt-small --steps 300 --reps 3 \
   --variants plain,advise,torch.profiler --json $OUT/ov-gpt.json > $OUT/ov-gpt.txt 2>&1
date -u >> $OUT/gpu.txt; tail -6 $OUT/ov-gpt.txt
