#!/bin/sh
# Installs Debian packages with apt-get, as root or through sudo, quietly:
# the one install step that scripts/setup.sh, scripts/fuzz.sh and
# tests/e2e/run.sh share. Does nothing without packages.
#
# usage: scripts/apt-install.sh WHO PACKAGE...   (WHO prefixes the message)
set -eu
who=$1
shift
[ $# -gt 0 ] || exit 0
echo "$who: installing $*" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
