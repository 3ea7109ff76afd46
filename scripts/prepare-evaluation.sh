#!/bin/sh
# Prepares the GPU evaluation of advise's own advice on the samples (run it
# here, where the full advise binary is). For each sample:
#   DEST/original/NAME       the sample as written;
#   DEST/advised/NAME        with every fix applied (`advise check --fix
#                            --unsafe-fixes`), beside NAME.findings.json (the
#                            findings and estimated gains advise gives from the
#                            sample's recorded H200 profile) and NAME.fix.json
#                            (what the fixing run printed);
#   DEST/only-RULE/NAME      with one rule's fixes alone (`--select RULE`), for
#                            each rule whose fix the all-fixes run applied and
#                            that has a program-scope gain on some finding of
#                            the sample, so that its estimate can be set
#                            against what that fix alone saves; NAME.fix.json
#                            beside it. A variant that comes out identical to
#                            the original (nothing applied alone) is not kept;
#                            one identical to advised (the only rule applied)
#                            is not run twice: NAME.same-as-advised marks it.
# The fixes are applied with the recorded profiles merged, as
# `advise check --fix` does in this repository (its advise.toml names
# samples/profiles): a fix the profile shows would slow the code down is
# withheld. tests/gpu/evaluate_samples.sh then runs every version on a GPU.
#
#   scripts/prepare-evaluation.sh [DEST [SAMPLE...]]
#       DEST defaults to .carry/eval; SAMPLEs (paths under samples/) to all
#       seven samples. Run it from the repository root; ADVISE names the
#       advise binary (default build/advise).
set -eu

dest=${1:-.carry/eval}
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then
    samples=$*
else
    samples="samples/cuda/transpose.cu samples/cuda/reduction.cu samples/cuda/elementwise_chain.cu samples/cuda/pipeline.cu
             samples/python/train_classifier.py samples/python/generate_text.py samples/python/benchmark_matmul.py"
fi
if [ ! -f advise.toml ] || [ ! -d samples/profiles ]; then
    echo "prepare-evaluation: run it from the repository root (no advise.toml or samples/profiles here)" >&2
    exit 1
fi
advise=${ADVISE:-build/advise}
[ -x "$advise" ] || { echo "prepare-evaluation: no advise binary at $advise (build it, or set ADVISE)" >&2; exit 1; }
advise=$(realpath "$advise")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# advise check, with exit status 1 (findings remain) taken as success
check() {
    status=0
    "$advise" check "$@" 2>"$work/stderr" || status=$?
    [ "$status" -le 1 ] || { echo "prepare-evaluation: advise check $*: $(cat "$work/stderr")" >&2; exit 1; }
}

# a JSON file advise check should have written
written() {
    [ -s "$1" ] || { echo "prepare-evaluation: advise check wrote nothing to $1: $(cat "$work/stderr")" >&2; exit 1; }
}

# apply_fixes SAMPLE OUT_FILE OUT_JSON [OPTION...]: applies the fixes to a
# fresh scratch copy of the project (same relative paths, same advise.toml
# and profiles, so profile-dependent withholding happens as it does for a
# user here), then copies the fixed sample to OUT_FILE
apply_fixes() {
    sample=$1 out_file=$2 out_json=$3
    shift 3
    copy=$(mktemp -d "$work/copy.XXXXXX")
    cp -r advise.toml samples "$copy/"
    (cd "$copy" && check --fix --unsafe-fixes --format json "$@" "$sample") >"$out_json"
    written "$out_json"
    cp "$copy/$sample" "$out_file"
}

rm -rf "$dest"
mkdir -p "$dest/original" "$dest/advised"
count=0 variants=""
for s in $samples; do
    count=$((count + 1))
    [ -f "$s" ] || { echo "prepare-evaluation: no sample $s" >&2; exit 1; }
    name=$(basename "$s")
    cp "$s" "$dest/original/$name"
    # the findings and gains advise gives with the recorded profile, before fixing
    check --format json --profile samples/profiles "$s" >"$dest/advised/$name.findings.json"
    written "$dest/advised/$name.findings.json"
    apply_fixes "$s" "$dest/advised/$name" "$dest/advised/$name.fix.json"
    # which rules get a variant of their own: the table script decides, so
    # that "applied" means the same in the variants as in its table
    rules=$(python3 tests/gpu/evaluate_table.py --rules-to-isolate \
        "$dest/advised/$name.findings.json" "$dest/advised/$name.fix.json")
    for rule in $rules; do
        dir="$dest/only-$rule"
        mkdir -p "$dir"
        apply_fixes "$s" "$dir/$name" "$dir/$name.fix.json" --select "$rule"
        if cmp -s "$dir/$name" "$dest/original/$name"; then
            echo "prepare-evaluation: $name: no only-$rule (no fix of $rule applies on its own)"
        elif cmp -s "$dir/$name" "$dest/advised/$name"; then
            echo "prepare-evaluation: $name: only-$rule is advised itself ($rule is the only rule applied)"
            rm -f "$dir/$name" "$dir/$name.fix.json"
            : >"$dir/$name.same-as-advised"
            variants="$variants only-$rule/$name(=advised)"
            continue
        else
            variants="$variants only-$rule/$name"
            continue
        fi
        rm -f "$dir/$name" "$dir/$name.fix.json"
        rmdir "$dir" 2>/dev/null || true
    done
done
echo "prepare-evaluation: $count samples in $dest; one-rule variants:${variants:- none}"
