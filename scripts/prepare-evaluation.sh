#!/bin/sh
# Prepares the GPU evaluation of advise's own advice on the samples (run it
# here, where the full advise binary is): for each sample, a copy with
# `advise check --fix --unsafe-fixes` applied, the rules whose fixes were
# applied, and the estimated gains advise gives from the sample's recorded
# H200 profile. The fixes are applied with that profile merged, as
# `advise check --fix` does in this repository (its advise.toml names
# samples/profiles): a fix the profile shows would slow the code down is
# withheld. tests/gpu/evaluate_samples.sh then runs both versions on a GPU.
#
#   scripts/prepare-evaluation.sh [DEST]     (default .carry/eval)
set -eu
dest=${1:-.carry/eval}
advise=$(realpath "${ADVISE:-build/advise}")
rm -rf "$dest"
mkdir -p "$dest/original" "$dest/advised"
# a scratch copy of the project (same relative paths, same advise.toml and
# profiles), where the fixes are applied
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r advise.toml samples "$scratch/"
samples="samples/cuda/transpose.cu samples/cuda/reduction.cu samples/cuda/elementwise_chain.cu samples/cuda/pipeline.cu
         samples/python/train_classifier.py samples/python/generate_text.py samples/python/benchmark_matmul.py"
for s in $samples; do
    name=$(basename "$s")
    cp "$s" "$dest/original/$name"
    # the findings and gains advise gives with the recorded profile, before fixing
    "$advise" check --format json --profile samples/profiles "$s" >"$dest/advised/$name.findings.json" 2>/dev/null || true
    (cd "$scratch" && "$advise" check --fix --unsafe-fixes --format json "$s") \
        >"$dest/advised/$name.fix.json" 2>/dev/null || true
    cp "$scratch/$s" "$dest/advised/$name"
done
echo "prepare-evaluation: $(ls "$dest/advised" | grep -c -v json) samples in $dest"
