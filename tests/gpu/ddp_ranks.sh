#!/bin/bash
# Runs on a machine with 2 GPUs (nvidia-h200-x2): times bench/ddp/ddp_train.py
# beside ddp_train_advised.py (advise's findings followed) without any
# profiler, alternating, REPS times each; then profiles both under torchrun
# with advise-profile (one process per rank, merged into one profile).
#
#   bash tests/gpu/ddp_ranks.sh BUNDLE_DIR OUT [REPS]
# NVLink multicast stays off: it can take a shared host's GPUs out of service.
set -u
bundle=$(cd "$1" && pwd)
out=$2
reps=${3:-3}
mkdir -p "$out/profiles" "$out/logs"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -4
date -u +"%Y-%m-%d %H:%M UTC"
run() { # label script args...
    local label=$1 script=$2
    shift 2
    torchrun --standalone --nproc_per_node=2 "bench/ddp/$script" "$@" >"$out/logs/$label.log" 2>&1
    echo "$label: exit $? -- $(grep -h 'steps in' "$out/logs/$label.log" | tail -n 1) -- $(grep -h 'final loss' "$out/logs/$label.log")"
}
for ((i = 1; i <= reps; i++)); do
    run "plain-$i" ddp_train.py --skew 0.25
    run "advised-$i" ddp_train_advised.py --skew 0.25
    run "advised-find-unused-$i" ddp_train_advised.py --skew 0.25 --find-unused
done
"$bundle/advise-profile" -o "$out/profiles/ddp_train.json" -- \
    torchrun --standalone --nproc_per_node=2 bench/ddp/ddp_train.py --skew 0.25 >"$out/logs/profile-plain.log" 2>&1
echo "profiled ddp_train: exit $? -- $(grep -h 'advise:' "$out/logs/profile-plain.log" | tail -n 2 | tr '\n' ' ')"
"$bundle/advise-profile" -o "$out/profiles/ddp_train_advised.json" -- \
    torchrun --standalone --nproc_per_node=2 bench/ddp/ddp_train_advised.py --skew 0.25 >"$out/logs/profile-advised.log" 2>&1
echo "profiled ddp_train_advised: exit $? -- $(grep -h 'advise:' "$out/logs/profile-advised.log" | tail -n 2 | tr '\n' ' ')"
