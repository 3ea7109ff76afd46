#!/bin/sh
# 2026-12-05 session 4, call 1: the four public workloads recorded with advise profile --steps 150
# (first 150 optimizer steps of 300 iterations), then timed as written and with the #1 advice followed
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv; date -u; } > $OUT/gpu.txt 2>&1
mkdir -p $OUT/profiles
timeout 200 python3 bench/public/run.py --workloads lstm,cifar,gan,vae --reps 0 --profile .carry/bin/advise-profile \
   --profile-steps 150 --profiles-out $OUT/profiles --json $OUT/profiled.json > $OUT/record.txt 2>&1
echo "record rc $?"; date -u >> $OUT/gpu.txt
timeout 190 python3 bench/public/run.py --workloads lstm,cifar --variants as-written,graphed --reps 3 \
   --json $OUT/times-lstm-cifar.json > $OUT/times-lstm-cifar.txt 2>&1
echo "lstm,cifar rc $?"; date -u >> $OUT/gpu.txt
timeout 150 python3 bench/public/run.py --workloads gan,vae --variants as-written,advised --reps 3 \
   --json $OUT/times-gan-vae.json > $OUT/times-gan-vae.txt 2>&1
echo "gan,vae rc $?"; date -u >> $OUT/gpu.txt
(cd $OUT && tar czf profiles.tgz profiles && rm -rf profiles)
cat $OUT/gpu.txt; grep -v "^public: .* skipped" $OUT/record.txt | tail -8; tail -6 $OUT/times-lstm-cifar.txt; tail -6 $OUT/times-gan-vae.txt
