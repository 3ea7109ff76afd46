#!/bin/sh
# 2026-12-05 session 4, call 2: does pinning the run to fixed cores narrow the process-to-process spread
# that hides a 5% cost? The LSTM, plain against advise --steps 150, 5 alternated rounds unpinned, then the
# same pinned to 4 cores of the GPU's NUMA node (taskset; every process the run starts inherits it)
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv; date -u; lscpu; nvidia-smi topo -m; } > $OUT/machine.txt 2>&1
python3 bench/public/run.py --prepare-only --workloads lstm --variants as-written > /dev/null
node=$(nvidia-smi topo -m 2>/dev/null | awk '/^GPU0/{print $NF}')
cpus=$(lscpu -p=CPU,NODE 2>/dev/null | grep -v '^#' | awk -F, -v n="${node:-0}" '$2==n{print $1}' | head -4 | paste -sd,)
[ -n "$cpus" ] || cpus=0,1,2,3
echo "pinned to $cpus (node ${node:-?})" | tee -a $OUT/machine.txt
for block in unpinned pinned unpinned2 pinned2; do
  case $block in pinned*) pre="taskset -c $cpus";; *) pre="";; esac
  $pre python3 bench/public/overhead.py --profile .carry/bin/advise-profile --workload lstm --reps 3 --iterations 1500 \
     --variants plain,steps:150 --deadline 125 --json $OUT/ov-$block.json > $OUT/ov-$block.txt 2>&1
  echo "$block rc $?"
done
date -u >> $OUT/machine.txt
for block in unpinned pinned unpinned2 pinned2; do echo "== $block"; tail -9 $OUT/ov-$block.txt | cut -c1-120; done
