#!/bin/sh
# Installs what advise needs on Debian 12 (only what is missing) and builds
# it into build/. Installs with apt-get: build-essential cmake pkg-config
# python3 python3-dev libjansson-dev libtree-sitter-dev libcriterion-dev libclang-19-dev libdw-dev openssl
# ca-certificates neovim (the end-to-end LSP tests drive it headless),
# python3-yaml (tests/check_ci_recipes.sh parses docs/ci.md's workflows), git
# and patch (tests compare .gitignore handling with git, run check
# --diff-base in scratch repositories, and apply --diff output with patch), and
# nodejs + npm when npm is absent (npm fetches the pinned tree-sitter-python
# grammar at build time, and the end-to-end tests' client libraries).
#
# usage: scripts/setup.sh [extra cmake arguments]
set -eu
cd "$(dirname "$0")/.."

packages="build-essential cmake pkg-config python3 python3-dev python3-yaml libjansson-dev libtree-sitter-dev libcriterion-dev libclang-19-dev libdw-dev openssl ca-certificates neovim git patch"
command -v npm >/dev/null 2>&1 || packages="$packages nodejs npm"

missing=""
for p in $packages; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
# shellcheck disable=SC2086 # one word per package
scripts/apt-install.sh setup $missing

build=${ADVISE_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)" 2>&1 | grep -E "error|warning|Error" || true
test -x "$build/advise" || { echo "setup: the build failed" >&2; exit 1; }
echo "setup: built $build/advise" >&2
