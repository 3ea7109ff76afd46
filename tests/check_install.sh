#!/bin/sh
# `cmake --install` puts what advise needs where it looks for it: the
# programs in bin/, the CUPTI injection library (with the libjansson it
# loads through $ORIGIN) in lib/advise/ where `advise profile` finds it, and
# docs/ with the rule pages in share/doc/advise/, which the installed
# language server links diagnostics to. Installs into a temporary prefix.
#
# usage: tests/check_install.sh BUILD_DIR
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "check_install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null || fail "cmake --install failed"
for f in bin/advise bin/advise-profile share/doc/advise/rules.md share/doc/advise/rules/PY001.md \
         share/doc/advise/FORMAT.md; do
    [ -e "$prefix/$f" ] || fail "$f was not installed"
done
"$prefix/bin/advise" --version | grep -q '^advise ' || fail "the installed advise does not run"
if ldd "$prefix/bin/advise" | grep -q 'not found'; then fail "the installed advise misses a library"; fi

# the injection library, when this build has CUPTI: `advise profile` must find
# it (on a machine without a GPU it then stops at the missing driver)
if [ -e "$build/libadvise_inject.so" ]; then
    [ -e "$prefix/lib/advise/libadvise_inject.so" ] || fail "libadvise_inject.so was not installed"
    [ -e "$prefix/lib/advise/libjansson.so.4" ] || fail "libjansson.so.4 was not installed beside it"
    [ -e "$prefix/lib/advise/advise-python/advise_memory.py" ] || fail "the --memory recorder was not installed beside it"
    out=$(cd "$prefix" && "$prefix/bin/advise" profile -o "$prefix/p.json" -- true 2>&1 || true)
    case $out in
        *"was not found beside advise"*) fail "advise profile does not find the installed library: $out" ;;
    esac
fi

# the installed server links a diagnostic to the installed rule page
work=$prefix/work
mkdir -p "$work"
printf 'import torch\nx = torch.zeros(3).cuda()\n' > "$work/a.py"
text='import torch\nx = torch.zeros(3).cuda()\n' # JSON escapes
frame() { printf 'Content-Length: %s\r\n\r\n%s' "$(printf '%s' "$1" | wc -c)" "$1"; }
reply=$( {
    frame '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}'
    frame '{"jsonrpc":"2.0","method":"initialized","params":{}}'
    frame "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":{\"textDocument\":{\"uri\":\"file://$work/a.py\",\"languageId\":\"python\",\"version\":1,\"text\":\"$text\"}}}"
    sleep 5 # the analysis of two lines takes milliseconds; shutdown must not overtake it
    frame '{"jsonrpc":"2.0","id":2,"method":"shutdown"}'
    frame '{"jsonrpc":"2.0","method":"exit"}'
} | (cd "$work" && timeout 60 "$prefix/bin/advise" server) 2>"$prefix/stderr" || true)
case $reply in
    *"\"href\":\"file://$prefix/share/doc/advise/rules/PY004.md\""*) ;;
    *) head -c 3000 "$prefix/stderr" >&2; printf '%s\n' "$reply" | head -c 2000 >&2
       fail "the installed server does not link PY004 to $prefix/share/doc/advise/rules/PY004.md: $(printf '%s' "$reply" | grep -o '"href":"[^"]*"' | head -n 1)" ;;
esac
echo "check_install: bin/, lib/advise/, share/doc/advise/ installed and found"
