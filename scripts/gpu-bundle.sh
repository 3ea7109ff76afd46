#!/bin/sh
# Gathers what `advise profile` needs on a GPU machine that has only the CUDA
# driver and toolkit: advise-profile (the profiler face without the analysis
# engine), the injection library, and the shared libraries they load that a
# bare machine may lack (jansson, libdw, libelf). Both binaries find them
# beside themselves through their $ORIGIN run path.
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [DEST]      (defaults: build .carry/bin)
set -eu
build=${1:-build}
dest=${2:-.carry/bin}
mkdir -p "$dest"
for f in advise-profile libadvise_inject.so; do
    test -f "$build/$f" || { echo "gpu-bundle: $build/$f is missing (build first)" >&2; exit 1; }
    cp "$build/$f" "$dest/"
done
mkdir -p "$dest/advise-python"
cp "$build/advise-python/advise_memory.py" "$dest/advise-python/"
for lib in libjansson.so.4 libdw.so.1 libelf.so.1; do
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
    test -n "$path" || { echo "gpu-bundle: $lib not found" >&2; exit 1; }
    cp -L "$path" "$dest/$lib"
done
echo "gpu-bundle: $(ls "$dest" | tr '\n' ' ')in $dest"
