#!/bin/sh
# 2026-12-05 session 2, call 1: the probe's interleaved cycles and the in-callback detach
set -u
cd "$(dirname "$0")/.."
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; date -u; } > $OUT/gpu.txt 2>&1
for i in 1 2 3; do echo "== cycles $i"; timeout 120 .carry/probe/launch_probe cycles 1000; done > $OUT/cycles.txt 2>&1
for i in 1 2; do echo "== in-callback $i"; timeout 90 .carry/probe/launch_probe in-callback 1000; echo "rc $?"; done > $OUT/in-callback.txt 2>&1
date -u >> $OUT/gpu.txt
cat $OUT/cycles.txt; tail -8 $OUT/in-callback.txt
