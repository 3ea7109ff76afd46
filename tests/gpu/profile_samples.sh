#!/bin/bash
# Runs on a GPU machine (an H200 for the recorded fixtures): builds the CUDA
# samples with host and device line info (-g -lineinfo), profiles each of
# them, tests/gpu/torch_sites.py and the Python samples with advise-profile,
# checks that every launch, copy, sync and allocation lands on its line
# (tests/gpu/check_profile.py), records a torch.profiler trace for
# `advise import`, and leaves everything in OUT.
#
#   bash tests/gpu/profile_samples.sh BUNDLE_DIR OUT
# BUNDLE_DIR holds advise-profile and libadvise_inject.so (scripts/gpu-bundle.sh).
set -u
bundle=$(cd "$1" && pwd)
out=$2
mkdir -p "$out/bin" "$out/profiles" "$out/logs"
profile="$bundle/advise-profile"
export PYTHONUNBUFFERED=1
failures=0

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u +"%Y-%m-%d %H:%M UTC"
make -s -C samples/cuda OUT="$out/bin" || exit 1

check() { # name sources...
    local name=$1
    shift
    if ! python3 tests/gpu/check_profile.py "$out/profiles/$name.json" "$@" >"$out/logs/$name.check" 2>&1; then
        failures=$((failures + 1))
    fi
    tail -n 1 "$out/logs/$name.check"
}

for s in transpose transpose_fixed reduction reduction_fixed elementwise_chain elementwise_chain_fixed \
         pipeline pipeline_fixed; do
    "$profile" -o "$out/profiles/$s.json" -- "$out/bin/$s" >"$out/logs/$s.log" 2>&1
    echo "$s: exit $? -- $(grep -h 'advise:' "$out/logs/$s.log" | tail -n 1)"
    check "$s" "samples/cuda/$s.cu"
done

"$profile" -o "$out/profiles/torch_sites.json" -- python3 tests/gpu/torch_sites.py >"$out/logs/torch_sites.log" 2>&1
echo "torch_sites: exit $? -- $(grep -h 'advise:' "$out/logs/torch_sites.log" | tail -n 1)"
check torch_sites tests/gpu/torch_sites.py

python3 tests/gpu/torch_sites.py --steps 5 --torch-trace "$out/profiles/torch_sites.trace.json" \
    >"$out/logs/torch_trace.log" 2>&1
echo "torch.profiler trace: exit $? ($(stat -c %s "$out/profiles/torch_sites.trace.json" 2>/dev/null) bytes)"

for py in "train_classifier --steps 50 --epochs 2" "generate_text" "benchmark_matmul"; do
    set -- $py
    name=$1
    shift
    "$profile" -o "$out/profiles/$name.json" -- python3 "samples/python/$name.py" "$@" >"$out/logs/$name.log" 2>&1
    echo "$name: exit $? -- $(grep -h 'advise:' "$out/logs/$name.log" | tail -n 1)"
done

echo "attribution checks failed: $failures"
exit $((failures > 0))
