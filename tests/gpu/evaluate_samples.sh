#!/bin/bash
# Runs on a GPU machine: each sample as written and as advise fixed it
# (scripts/prepare-evaluation.sh made both), builds the CUDA ones, checks the
# fixed version prints the same result (tests/gpu/evaluate_table.py says the
# tolerance), profiles both with advise-profile and prints the table of
# samples/RESULTS.md.
#
#   bash tests/gpu/evaluate_samples.sh BUNDLE_DIR EVAL_DIR OUT [REPS]
#
# Each version runs REPS times (default 1), each sample's original right
# before its fixed version, as STEM.rN.json; the table takes the medians. One run of a small CUDA sample
# varies by up to 25% in GPU time (pageable copies), so one run is not enough.
set -u
bundle=$(cd "$1" && pwd)
eval_dir=$(cd "$2" && pwd)
out=$3
reps=${4:-1}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
mkdir -p "$out/original" "$out/advised"
# Each sample's two versions run back to back, so that whatever the machine
# is doing (page cache, memory left by the previous program) touches both
# alike; a run of every original followed by every fixed version showed the
# unchanged samples' pageable copies 20% slower in the second half.
for ((rep = 1; rep <= reps; rep++)); do
    for src in "$eval_dir/original"/*.cu "$eval_dir/original"/*.py; do
        name=$(basename "$src")
        stem=${name%.*}
        for version in original advised; do
            src="$eval_dir/$version/$name"
            cmd=(python3 "$src")
            if [[ $name == *.cu && ! -x "$out/$version/$stem" ]]; then
                nvcc -arch=sm_90 -g -lineinfo -o "$out/$version/$stem" "$src" 2>"$out/$version/$stem.build.log" ||
                    { echo "$version/$name: build failed"; continue; }
            fi
            [[ $name == *.cu ]] && cmd=("$out/$version/$stem")
            [[ $stem == train_classifier ]] && cmd+=(--steps 50 --epochs 2)
            start=$(date +%s%N)
            timeout 120 "$bundle/advise-profile" -o "$out/$version/$stem.r$rep.json" -- "${cmd[@]}" \
                >"$out/$version/$stem.r$rep.out" 2>"$out/$version/$stem.r$rep.err"
            status=$?
            end=$(date +%s%N)
            echo "$status $(( (end - start) / 1000000 ))" >"$out/$version/$stem.r$rep.status"  # exit status, wall ms
        done
    done
done
python3 tests/gpu/evaluate_table.py "$eval_dir" "$out"
