#!/bin/bash
# Runs on a GPU machine: each sample as written, as advise fixed it, and with
# one rule's fixes alone (scripts/prepare-evaluation.sh made them: original/,
# advised/, only-RULE/), builds the CUDA ones, profiles every version with
# advise-profile and prints the tables of samples/RESULTS.md
# (tests/gpu/evaluate_table.py, which also checks each fixed version prints
# the same result).
#
#   bash tests/gpu/evaluate_samples.sh BUNDLE_DIR EVAL_DIR OUT [REPS]
#
# Each version runs REPS times (default 1), as OUT/VERSION/STEM.rN.json
# (.out, .err, .status: exit status and wall ms); the tables take the medians.
# One run of a small CUDA sample varies by up to 25% in GPU time (pageable
# copies), so one run is not enough. Run it from the repository root: the
# profiles name files relative to it (.carry/eval/original/NAME), which is
# how the table's --advise step, run here afterwards, finds them.
set -u
bundle=$(cd "$1" && pwd)
eval_dir=$(cd "$2" && pwd)
out=$3
reps=${4:-1}
mkdir -p "$out"
export PYTHONUNBUFFERED=1

# the versions of one sample: the original first, then every other version
# prepare-evaluation.sh made of it
versions_of() {
    local name=$1 dir
    echo original
    for dir in "$eval_dir"/advised "$eval_dir"/only-*; do
        [[ -f $dir/$name ]] && basename "$dir"
    done
}

# run_version VERSION NAME REP: builds a CUDA version once, then profiles one run
run_version() {
    local version=$1 name=$2 rep=$3
    local stem=${name%.*} src="$eval_dir/$1/$2" dir="$out/$1"
    local cmd=(python3 "$src")
    mkdir -p "$dir"
    if [[ $name == *.cu ]]; then
        if [[ ! -x $dir/$stem ]]; then
            nvcc -arch=sm_90 -g -lineinfo -o "$dir/$stem" "$src" 2>"$dir/$stem.build.log" ||
                { echo "$version/$name: build failed"; return; }
        fi
        cmd=("$dir/$stem")
    fi
    [[ $stem == train_classifier ]] && cmd+=(--steps 50 --epochs 2)
    local start end status
    start=$(date +%s%N)
    timeout 120 "$bundle/advise-profile" -o "$dir/$stem.r$rep.json" -- "${cmd[@]}" \
        >"$dir/$stem.r$rep.out" 2>"$dir/$stem.r$rep.err"
    status=$?
    end=$(date +%s%N)
    echo "$status $(( (end - start) / 1000000 ))" >"$dir/$stem.r$rep.status"  # exit status, wall ms
}

# Each sample's versions run back to back, so that whatever the machine is
# doing (page cache, memory left by the previous program) touches them
# alike; a run of every original followed by every fixed version showed the
# unchanged samples' pageable copies 20% slower in the second half.
for ((rep = 1; rep <= reps; rep++)); do
    for src in "$eval_dir/original"/*.cu "$eval_dir/original"/*.py; do
        name=$(basename "$src")
        for version in $(versions_of "$name"); do
            run_version "$version" "$name" "$rep"
        done
    done
done
python3 tests/gpu/evaluate_table.py "$eval_dir" "$out"
