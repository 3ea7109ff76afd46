#!/bin/sh
# Renders `advise report --format html` for samples with the profiles recorded
# on the H200 (tests/fixtures/profiles/h200/) in headless Chromium, and checks
# what the browser made of each page: the DOM it parsed holds the header, one
# picture per GPU timeline, the kernels and the findings, and the screenshot
# is a real PNG of some size. Skips (exit 77) when Chromium is absent: install
# it with `apt-get install chromium` (Debian).
#
# usage: tests/report/screenshot.sh [ADVISE_BINARY] [OUT_DIR]
#   ADVISE_BINARY  default $ADVISE_BINARY, else build/advise
#   OUT_DIR        where the pages and screenshots go (default: a temporary folder, removed)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
binary=${1:-${ADVISE_BINARY:-$repo/build/advise}}
case $binary in /*) ;; *) binary=$(pwd)/$binary ;; esac
if [ ! -x "$binary" ]; then
    echo "screenshot: $binary is not an executable (build it with scripts/setup.sh)" >&2
    exit 2
fi

browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
    echo "screenshot: SKIPPED: no headless Chromium found (Debian: apt-get install chromium)" >&2
    exit 77
fi

if [ $# -ge 2 ]; then
    out=$2
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    keep=1
else
    out=$(mktemp -d /tmp/advise-report-shot-XXXXXX)
    keep=0
fi
cleanup() { [ "$keep" = 1 ] || rm -rf "$out"; }
trap cleanup EXIT

# Chromium wants a writable home for its profile; never the user's own.
export HOME="$out/home"
mkdir -p "$HOME"

status=0
# name  profile (under tests/fixtures/profiles/h200)  paths checked
while read -r name profile paths; do
    [ -n "$name" ] || continue
    page="$out/$name.html"
    shot="$out/$name.png"
    # shellcheck disable=SC2086 # paths: several words
    if ! (cd "$repo" && "$binary" report --no-config --profile "tests/fixtures/profiles/h200/$profile" \
            --format html -o "$page" $paths) 2>"$out/$name.advise.log"; then
        echo "screenshot: $name: advise report failed:" >&2
        cat "$out/$name.advise.log" >&2
        status=1
        continue
    fi
    timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --user-data-dir="$out/chromium" --screenshot="$shot" --window-size=1280,1600 \
        "file://$page" >"$out/$name.chromium.log" 2>&1 || true
    timeout 90 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$out/chromium" \
        --dump-dom "file://$page" >"$out/$name.dom.html" 2>>"$out/$name.chromium.log" || true

    problems=""
    magic=$(head -c 8 "$shot" 2>/dev/null | od -An -tx1 | tr -d ' \n')
    [ "$magic" = "89504e470d0a1a0a" ] || problems="$problems no PNG written;"
    size=$(wc -c <"$shot" 2>/dev/null || echo 0)
    [ "$size" -gt 20000 ] || problems="$problems the screenshot is only $size bytes (a blank page?);"
    dom="$out/$name.dom.html"
    for want in '<h1>advise report</h1>' 'id="gpu-time"' 'id="kernels"' 'id="findings"' '<svg '; do
        grep -q "$want" "$dom" 2>/dev/null || problems="$problems the parsed page lacks $want;"
    done
    # the writer puts each entry on a line of its own
    timelines=$(sed -n '/^"timelines":\[/,/^\]/p' "$repo/tests/fixtures/profiles/h200/$profile" | grep -c '"span_ns"' || true)
    pictures=$(grep -o '<svg ' "$dom" 2>/dev/null | wc -l)
    [ "$pictures" -eq "$timelines" ] || problems="$problems $pictures pictures for $timelines GPU timelines;"
    if grep -q '<script' "$dom" 2>/dev/null; then problems="$problems a script in the page;"; fi
    if [ -n "$problems" ]; then
        echo "screenshot: $name: FAILED:$problems (see $out)" >&2
        keep=1
        status=1
    else
        findings=$(grep -o 'class="sev sev-' "$dom" | wc -l)
        where=""
        [ "$keep" = 1 ] && where=": $shot"
        echo "screenshot: $name: $size bytes, $pictures GPU picture(s), $findings finding(s)$where"
    fi
done <<EOF
train_classifier train_classifier.json samples/python/train_classifier.py
transpose transpose.json samples/cuda/transpose.cu
pipeline pipeline.json samples/cuda/pipeline.cu
EOF
exit $status
