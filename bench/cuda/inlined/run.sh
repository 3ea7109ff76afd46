#!/bin/sh
# GPU machine: builds gather.cu with float and with bf16 elements, profiles
# each with per-line SASS metrics, and prints each build's lines of the
# gather kernel (bench/README.md, "inlined"). Needs nvcc and a bundle of
# advise-profile (scripts/gpu-bundle.sh build .carry/bin).
#   bench/cuda/inlined/run.sh [BUNDLE_DIR] [OUT_DIR]
set -eu
bundle=${1:-.carry/bin}
out=${2:-${OUT:-/tmp}}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
for kind in fp32 bf16; do
    flag=""
    [ "$kind" = bf16 ] && flag=-DBF16
    nvcc -O3 -lineinfo -arch=sm_90 $flag -o "$work/gather_$kind" "$here/gather.cu"
    (cd "$here/../../.." && ADVISE_SOURCE_METRICS_DEBUG=1 "$bundle/advise-profile" -o "$out/gather_$kind.json" \
        --source-metrics-kernel gather -- "$work/gather_$kind") >"$out/gather_$kind.log" 2>&1 || {
        cat "$out/gather_$kind.log"; exit 1; }
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("| build | file:line | instructions | inlined from headers | global sectors | ideal | x ideal |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for kind in ("fp32", "bf16"):
    p = json.load(open(f"{out}/gather_{kind}.json"))
    files = [f["path"] for f in p["files"]]
    for m in sorted(p.get("line_metrics", []), key=lambda m: (files[m["file"]], m["line"])):
        if "gather" not in m["kernel"]:
            continue
        ratio = m["global_sectors"] / m["global_sectors_ideal"] if m["global_sectors_ideal"] else 0
        print(f"| {kind} | {files[m['file']]}:{m['line']} | {m['instructions']:,} | "
              f"{m.get('inlined_instructions', 0):,} | {m['global_sectors']:,} | {m['global_sectors_ideal']:,} | {ratio:.2f} |")
PY
