#!/bin/bash
# Times each workload beside its *_advised.py version (advise's findings
# followed), alternating, REPS times each, on a GPU machine:
#   bash bench/workloads/compare.sh [REPS]
# Prints the GPU, then per workload the median of the scripts' own timings
# ("N steps in X s") and the speedup.
reps=${1:-3}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u +"%Y-%m-%d %H:%M UTC"
for w in resnet50_step unet_step; do
    base=() advised=()
    for ((i = 0; i < reps; i++)); do
        base+=("$(python3 "bench/workloads/$w.py" --steps 40 | tail -n 1 | awk '{print $4}')")
        advised+=("$(python3 "bench/workloads/${w}_advised.py" --steps 40 | tail -n 1 | awk '{print $4}')")
    done
    python3 - "$w" "${base[*]}" "${advised[*]}" <<'PY'
import statistics, sys
name, base, advised = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
b, a = statistics.median(base), statistics.median(advised)
print(f"{name:16} as written {b:.3f} s  advised {a:.3f} s  speedup {b / a:.2f}x  (runs: {base} vs {advised})")
PY
done
