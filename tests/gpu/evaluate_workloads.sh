#!/bin/bash
# Runs on a GPU machine: profiles each workload of bench/workloads/ as
# written and as advised (advise's findings followed by hand), with the same
# arguments as the workload's recorded profile in tests/fixtures/profiles/h200/
# (the defaults), so that tests/gpu/evaluate_workloads_table.py can set the
# gains advise estimated from the recorded profile against the GPU time the
# advised version saved in this run.
#
#   bash tests/gpu/evaluate_workloads.sh BUNDLE_DIR OUT
set -u
bundle=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export PYTHONUNBUFFERED=1
for w in unet_step resnet50_step; do
    for version in "$w" "${w}_advised"; do
        "$bundle/advise-profile" -o "$out/$version.json" -- python3 "bench/workloads/$version.py" \
            >"$out/$version.log" 2>&1
        echo "$version: exit $? -- $(grep -h 'steps in' "$out/$version.log" | tail -n 1)"
    done
done
