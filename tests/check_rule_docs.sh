#!/bin/sh
# ctest rule_docs_current: docs/rules.md and docs/rules/<CODE>.md are what the
# rule registry generates. Regenerates them into a temporary folder with the
# built advise and compares.
#
# usage: tests/check_rule_docs.sh ADVISE_BINARY SOURCE_DIR
set -eu
advise=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$advise" rules --format markdown --output-dir "$tmp/docs" 2>"$tmp/err" || {
    cat "$tmp/err" >&2
    echo "check_rule_docs: advise rules --format markdown --output-dir failed" >&2
    exit 1
}

status=0
diff -u "$src/docs/rules.md" "$tmp/docs/rules.md" || status=1
diff -ru "$src/docs/rules" "$tmp/docs/rules" || status=1
if [ "$status" -ne 0 ]; then
    cat >&2 <<MSG

check_rule_docs: docs/rules.md or docs/rules/ differ from what the rule
registry generates (the diff above: - committed, + generated). They are
written from the rule descriptors in rules/ and must not be edited by hand.
Regenerate them from the repository root with

    build/advise rules --format markdown --output-dir docs

and commit the result.
MSG
    exit 1
fi
echo "check_rule_docs: docs/rules.md and docs/rules/ match the rule registry"
