#!/bin/bash
# Runs on a GPU machine: builds the CUDA samples with -g -lineinfo and runs
# advise-profile --source-metrics on some of them, printing what CUPTI's SASS
# counters measured per source line (ADVISE_SOURCE_METRICS_DEBUG=1).
#
#   bash tests/gpu/source_metrics_smoke.sh BUNDLE_DIR OUT
set -u
bundle=$(cd "$1" && pwd)
out=$2
mkdir -p "$out/bin" "$out/profiles" "$out/logs"
make -s -C samples/cuda OUT="$out/bin" || exit 1
for s in transpose reduction elementwise_chain transpose_fixed; do
    ADVISE_SOURCE_METRICS_DEBUG=1 "$bundle/advise-profile" --source-metrics=3 -o "$out/profiles/${s}_sm.json" \
        -- "$out/bin/$s" >"$out/logs/${s}_sm.log" 2>&1
    echo "== $s: exit $?"
    grep -h "advise" "$out/logs/${s}_sm.log" | grep -v "^advise: profile written" | head -n 30
done
# The same counters from Nsight Compute, per kernel, for the first launch of
# each kernel: the sums of advise's per-line figures should equal these.
if command -v ncu >/dev/null; then
    ncu --launch-count 6 --metrics smsp__sass_sectors_mem_global.sum,smsp__sass_sectors_mem_global_ideal.sum,smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum,smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared_ideal.sum \
        "$out/bin/transpose" 2>&1 | grep -E "^\s+[a-z_]+\(|smsp__" | head -n 40
fi
