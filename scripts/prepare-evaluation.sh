#!/bin/sh
# Prepares the GPU evaluation of advise's own advice on the samples (run it
# here, where the full advise binary is): for each sample, a copy with
# `advise check --fix --unsafe-fixes` applied, the rules whose fixes were
# applied, and the estimated gains advise gives from the sample's recorded
# H200 profile. tests/gpu/evaluate_samples.sh then runs both versions on a GPU.
#
#   scripts/prepare-evaluation.sh [DEST]     (default .carry/eval)
set -eu
dest=${1:-.carry/eval}
advise=${ADVISE:-build/advise}
rm -rf "$dest"
mkdir -p "$dest/original" "$dest/advised"
samples="samples/cuda/transpose.cu samples/cuda/reduction.cu samples/cuda/elementwise_chain.cu samples/cuda/pipeline.cu
         samples/python/train_classifier.py samples/python/generate_text.py samples/python/benchmark_matmul.py"
for s in $samples; do
    name=$(basename "$s")
    cp "$s" "$dest/original/$name"
    cp "$s" "$dest/advised/$name"
    # the findings and gains advise gives with the recorded profile, before fixing
    "$advise" check --format json --profile samples/profiles "$s" >"$dest/advised/$name.findings.json" 2>/dev/null || true
    "$advise" check --no-profile --fix --unsafe-fixes --format json "$dest/advised/$name" \
        >"$dest/advised/$name.fix.json" 2>/dev/null || true
done
echo "prepare-evaluation: $(ls "$dest/advised" | grep -c -v json) samples in $dest"
