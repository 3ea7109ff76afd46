#!/bin/sh
# Fetch the pinned tree-sitter-python grammar from the npm registry and check
# its integrity against the registry's published sha512. The generated parser
# is third-party code: it lives in the build tree and is never committed.
#
# usage: fetch-grammar.sh DEST_DIR
# env:   ADVISE_GRAMMAR_CACHE  folder that keeps downloaded tarballs
#                              (default: $HOME/.cache/advise)
set -eu
NAME=tree-sitter-python
VERSION=0.23.6   # ABI 14: the newest the Debian libtree-sitter 0.20.7 accepts
INTEGRITY='sha512-yIM9z0oxKIxT7bAtPOhgoVl6gTXlmlIhue7liFT4oBPF/lha7Ha4dQBS82Av6hMMRZoVnFJI8M6mL+SwWoLD3A=='

dest=$1
cache=${ADVISE_GRAMMAR_CACHE:-${HOME:-/tmp}/.cache/advise}
tarball="$cache/$NAME-$VERSION.tgz"

integrity_of() {
    printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 | tr -d '\n')"
}

if [ -f "$dest/src/parser.c" ] && [ -f "$dest/.integrity" ] &&
   [ "$(cat "$dest/.integrity")" = "$INTEGRITY" ]; then
    exit 0
fi

mkdir -p "$cache"
if [ ! -f "$tarball" ] || [ "$(integrity_of "$tarball")" != "$INTEGRITY" ]; then
    rm -f "$tarball"
    tmp=$(mktemp -d)
    if ! (cd "$tmp" && npm pack "$NAME@$VERSION" --silent >/dev/null); then
        echo "fetch-grammar: 'npm pack $NAME@$VERSION' failed (is npm installed and the registry reachable?)" >&2
        rm -rf "$tmp"; exit 1
    fi
    mv "$tmp/$NAME-$VERSION.tgz" "$tarball.part"
    rm -rf "$tmp"
    got=$(integrity_of "$tarball.part")
    if [ "$got" != "$INTEGRITY" ]; then
        echo "fetch-grammar: integrity mismatch for $NAME@$VERSION" >&2
        echo "  expected $INTEGRITY" >&2
        echo "  got      $got" >&2
        rm -f "$tarball.part"; exit 1
    fi
    mv "$tarball.part" "$tarball"
fi

rm -rf "$dest"
mkdir -p "$dest"
tar xzf "$tarball" -C "$dest" --strip-components=1 \
    --wildcards "package/src/parser.c" "package/src/scanner.c" "package/src/tree_sitter/*" "package/LICENSE"
printf '%s' "$INTEGRITY" > "$dest/.integrity"
