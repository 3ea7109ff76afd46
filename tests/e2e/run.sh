#!/bin/sh
# End-to-end tests of `advise server` with real clients:
#   - vscode_client.mjs: the npm libraries VS Code's language client is built
#     on (vscode-languageserver-protocol, vscode-jsonrpc), pinned by
#     package-lock.json and installed here with `npm ci`;
#   - neovim_client.lua: Debian's neovim, headless, with its built-in client;
#   - neovim_plugin.lua: the Neovim plugin (editors/nvim) on the same neovim,
#     set up with zero options, `advise` found on PATH;
#   - emacs_eglot.el: the Emacs package (editors/emacs/advise.el) with
#     Debian's Emacs and elpa-eglot, in batch mode.
# It also runs tests/profile_schema_check.mjs, which needs the same pinned npm
# install (ajv): the profile JSON Schema against the C writer's fixtures;
# sarif_validate.sh: `advise check --format sarif samples/` through
# sarif-multitool and the SARIF 2.1.0 schema (both from the pinned npm
# package @microsoft/sarif-multitool); and
# tests/report/screenshot.sh, which renders `advise report --format html` in
# headless Chromium when one is installed (skipped otherwise); and the VS Code
# extension's tests (editors/vscode/test/run.sh: its .vsix, unit tests of its
# models against the server, and an end-to-end test in code-server driven by
# Chromium), unless ADVISE_E2E_VSCODE=0 (scripts/test.sh sets it for the
# sanitizer run: the extension is tested once per suite).
# Installs what is missing (nodejs + npm, neovim, emacs-nox and elpa-eglot
# with apt-get, as root or with sudo; the npm packages with `npm ci`), runs
# the clients against the server binary and the schema check, and exits
# non-zero if any fails.
#
# usage: tests/e2e/run.sh [ADVISE_BINARY]     (default: $ADVISE_BINARY, else build/advise)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
binary=${1:-${ADVISE_BINARY:-$repo/build/advise}}
case $binary in /*) ;; *) binary=$(pwd)/$binary ;; esac
if [ ! -x "$binary" ]; then
    echo "e2e: $binary is not an executable (build it with scripts/setup.sh)" >&2
    exit 2
fi

# ---- what the clients need ------------------------------------------------------
missing=""
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
command -v nvim >/dev/null 2>&1 || missing="$missing neovim"
command -v emacs >/dev/null 2>&1 || missing="$missing emacs-nox"
if command -v dpkg >/dev/null 2>&1; then
    dpkg -s elpa-eglot >/dev/null 2>&1 || missing="$missing elpa-eglot"
fi
# shellcheck disable=SC2086 # one word per package
"$repo/scripts/apt-install.sh" e2e $missing
# the pinned npm packages, installed again only when the lockfile changed
stamp="$here/node_modules/.advise-e2e-lock"
if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
    echo "e2e: npm ci (tests/e2e)" >&2
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$here/package-lock.json" "$stamp"
fi

# ---- the profile format's JSON Schema (needs no binary) ----------------------------
status=0
echo "== profile format: profiler/profile.schema.json (ajv) against tests/fixtures/profiles"
timeout 60 node "$repo/tests/profile_schema_check.mjs" </dev/null || status=1

# ---- SARIF: advise check --format sarif samples/ (sarif-multitool and the 2.1.0 schema) ----
echo "== SARIF: advise check --format sarif samples/ (sarif-multitool validate, ajv and the 2.1.0 schema)"
timeout 300 sh "$here/sarif_validate.sh" "$binary" </dev/null || status=1

# ---- the clients ------------------------------------------------------------------
# each one gets a wall-clock limit on top of its own timeouts
echo "== end-to-end: VS Code's client libraries (node $(node --version)) against $binary"
ADVISE_BINARY=$binary timeout 120 node "$here/vscode_client.mjs" "$binary" </dev/null || status=1

echo "== end-to-end: $(nvim --version | head -n 1) headless against $binary"
script=$(printf '%s' "$here/neovim_client.lua" | sed 's/[ \\|"]/\\&/g')   # escaped for :luafile
ADVISE_BINARY=$binary timeout 120 nvim --headless -u NONE -i NONE -n \
    -c "luafile $script" </dev/null || status=1

# ---- the editor plugins ---------------------------------------------------------------
# `advise` on PATH is the binary under test (a link in a folder of its own);
# HOME and the XDG folders are temporary, so nothing leaks into the user's.
editor_tmp=$(mktemp -d "${TMPDIR:-/tmp}/advise-e2e-editors.XXXXXX")
trap 'rm -rf "$editor_tmp"' EXIT
mkdir -p "$editor_tmp/bin" "$editor_tmp/home"
ln -s "$binary" "$editor_tmp/bin/advise"
editor_env() {
    env HOME="$editor_tmp/home" XDG_CONFIG_HOME="$editor_tmp/home/.config" XDG_CACHE_HOME="$editor_tmp/home/.cache" \
        XDG_DATA_HOME="$editor_tmp/home/.local/share" XDG_STATE_HOME="$editor_tmp/home/.local/state" \
        PATH="$editor_tmp/bin:$PATH" ADVISE_BINARY="$binary" "$@"
}

echo "== editors: the Neovim plugin (editors/nvim) on $(nvim --version | head -n 1), headless"
script=$(printf '%s' "$here/neovim_plugin.lua" | sed 's/[ \\|"]/\\&/g')   # escaped for :luafile
if editor_env timeout 120 nvim --headless -u NONE -i NONE -n -c "luafile $script" </dev/null; then
    echo "PASS: editors/nvim"
else
    echo "FAIL: editors/nvim"
    status=1
fi

echo "== editors: the Emacs package (editors/emacs/advise.el) on $(emacs --version | head -n 1), batch"
if editor_env timeout 120 emacs --batch --no-site-file -l "$here/emacs_eglot.el" </dev/null; then
    echo "PASS: editors/emacs"
else
    echo "FAIL: editors/emacs"
    status=1
fi

# ---- the HTML report in headless Chromium (skipped when there is none) -----------
echo "== report: advise report --format html rendered by headless Chromium"
shot_status=0
timeout 300 sh "$repo/tests/report/screenshot.sh" "$binary" </dev/null || shot_status=$?
if [ "$shot_status" -eq 77 ]; then
    echo "e2e: the report screenshot check was skipped (no Chromium; apt-get install chromium)" >&2
elif [ "$shot_status" -ne 0 ]; then
    status=1
fi

# ---- the VS Code extension (editors/vscode): once per suite ------------------------
if [ "${ADVISE_E2E_VSCODE:-1}" != 0 ]; then
    echo "== editors: the VS Code extension (editors/vscode/test/run.sh)"
    if sh "$repo/editors/vscode/test/run.sh" "$binary" </dev/null; then
        echo "PASS: editors/vscode"
    else
        echo "FAIL: editors/vscode"
        status=1
    fi
else
    echo "e2e: the VS Code extension's tests are not run with this binary (ADVISE_E2E_VSCODE=0)"
fi

if [ "$status" -ne 0 ]; then
    echo "e2e: FAILED" >&2
    exit 1
fi
echo "== end-to-end: the clients, the editor plugins, the profile schema and SARIF checks, the report rendering and the VS Code extension passed"
