#!/bin/sh
# The ready-made CI recipes stay usable: every YAML block of docs/ci.md and
# .pre-commit-hooks.yaml parses, each hook has what pre-commit needs, and the
# hooks run as pre-commit runs them (entry, then the staged files' names)
# with the result the docs promise.
#
#   tests/check_ci_recipes.sh BUILD_DIR/advise
set -eu
advise=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_ci_recipes: $*" >&2; exit 1; }

# Debian's python3 with python3-yaml (scripts/setup.sh installs both)
/usr/bin/python3 - "$root/docs/ci.md" "$root/.pre-commit-hooks.yaml" <<'PY' || fail "a recipe does not parse"
import re, sys, yaml
doc = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
assert len(blocks) >= 5, f"docs/ci.md: {len(blocks)} yaml blocks"
for i, b in enumerate(blocks):
    yaml.safe_load(b)  # raises on a broken block
hooks = yaml.safe_load(open(sys.argv[2], encoding="utf-8"))
assert isinstance(hooks, list) and hooks, "no hooks"
ids = set()
for h in hooks:
    for key in ("id", "name", "entry", "language", "files"):
        assert key in h, f"hook without {key}: {h}"
    assert h["language"] == "system", h
    assert h["entry"].split()[0] == "advise", h
    assert re.search(h["files"], "src/train.py") and re.search(h["files"], "kernels/k.cu"), h
    assert not re.search(h["files"], "README.md"), h
    ids.add(h["id"])
    print(h["id"], "\t", h["entry"])
assert ids >= {"advise", "advise-fix"}, ids
for d in re.findall(r"- id: ([\w-]+)", doc):
    assert d in ids, f"docs/ci.md names hook {d}, which .pre-commit-hooks.yaml lacks"
PY

# Run each hook as pre-commit does: ENTRY FILE... in a repository.
entry_of() {
    /usr/bin/python3 -c 'import sys, yaml
for h in yaml.safe_load(open(sys.argv[1])):
    if h["id"] == sys.argv[2]: print(h["entry"])' "$root/.pre-commit-hooks.yaml" "$1"
}
cd "$tmp"
cat >flagged.py <<'PY'
import torch


def run(loader):
    for x in loader:
        torch.cuda.empty_cache()
PY
cat >clean.py <<'PY'
def add(a, b):
    return a + b
PY
cat >fixable.py <<'PY'
import torch


def make_cache(n, device):
    return torch.zeros(n, n).to(device)
PY
hook=$(entry_of advise)
set +e
# shellcheck disable=SC2086 # the entry is a command line, split as pre-commit splits it
$(echo "$hook" | sed "s#^advise#$advise#") --no-profile clean.py >out.txt 2>&1
status=$?
[ $status -eq 0 ] || fail "hook advise on a clean file: exit $status: $(cat out.txt)"
$(echo "$hook" | sed "s#^advise#$advise#") --no-profile clean.py flagged.py >out.txt 2>&1
status=$?
[ $status -eq 1 ] || fail "hook advise on a flagged file: exit $status, not 1: $(cat out.txt)"
grep -q "flagged.py:6" out.txt || fail "hook advise did not name the finding: $(cat out.txt)"
cp fixable.py before.py
fixhook=$(entry_of advise-fix)
$(echo "$fixhook" | sed "s#^advise#$advise#") --no-profile fixable.py >out.txt 2>&1
status=$?
set -e
cmp -s fixable.py before.py && fail "hook advise-fix changed nothing (exit $status): $(cat out.txt)"
grep -q "torch.zeros(n, n, device=device)" fixable.py || fail "hook advise-fix wrote: $(cat fixable.py)"
echo "check_ci_recipes: yaml blocks, hooks and their runs as documented"
