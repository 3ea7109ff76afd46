#!/bin/sh
# 2026-12-05 session 4, call 3: after advise profile --steps 150 detached, does the run go at plain speed?
# vae and gan (their loader runs in the training process) and the LSTM: plain against steps:150, alternated,
# with each run's host median per iteration after iteration 160 (overhead.py's late window)
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv; date -u; } > $OUT/gpu.txt 2>&1
python3 bench/public/run.py --prepare-only --workloads vae,gan,lstm --variants as-written > /dev/null
for w in vae:600 gan:600 lstm:1500; do
  name=${w%%:*}; its=${w##*:}
  python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload $name --reps 3 --iterations $its \
     --variants plain,steps:150 --deadline 125 --json $OUT/late-$name.json > $OUT/late-$name.txt 2>&1
  echo "$name rc $?"; date -u >> $OUT/gpu.txt
done
for name in vae gan lstm; do echo "== $name"; tail -12 $OUT/late-$name.txt | cut -c1-150; done
