#!/bin/sh
# `advise server` under ThreadSanitizer: builds build-tsan/ (-DADVISE_TSAN=ON,
# RelWithDebInfo) with scripts/setup.sh, then runs the server's transcripts
# (test_lsp_transcripts: a plain Criterion runner, since Criterion cannot run
# under TSan, driving this build's server) and the JSON-RPC fuzz replay under
# ctest, and the end-to-end tests with real clients (tests/e2e/run.sh, without
# the VS Code extension). Every TSan report of any advise process (the
# server, and `advise check` in the SARIF check) goes to a log under
# build-tsan/tsan-logs/ and fails the run; tests/tsan.supp holds the
# suppressions (reports wholly inside libclang/libLLVM only). Ends with one
# line: "tsan: PASS ..." or "tsan: FAIL ...". Not part of scripts/test.sh.
#
# usage: scripts/tsan.sh
set -eu
cd "$(dirname "$0")/.."
repo=$(pwd)
build="build-tsan"
start=$(date +%s)

ADVISE_BUILD_DIR=$build scripts/setup.sh -DADVISE_TSAN=ON

logs=$repo/$build/tsan-logs
rm -rf "$logs"
mkdir -p "$logs"
# halt_on_error: a report ends the process (status 66), so the test that
# started it fails where it happened. LIBCLANG_*: as for the ASan run of
# scripts/test.sh, libclang parses on the calling thread, without LLVM's own
# crash recovery.
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$repo/tests/tsan.supp:log_path=$logs/tsan"
LIBCLANG_NOTHREADS=1
LIBCLANG_DISABLE_CRASH_RECOVERY=1
export TSAN_OPTIONS LIBCLANG_NOTHREADS LIBCLANG_DISABLE_CRASH_RECOVERY

status=0
transcripts=$(find tests/lsp -name '*.jsonrpc' | wc -l | tr -d ' ')
echo "== the server's transcripts and the JSON-RPC fuzz replay under ThreadSanitizer ($build/)"
if ctest --test-dir "$build" --output-on-failure -R '^(test_lsp_transcripts|fuzz_replay_jsonrpc)$'; then ctest=0; else ctest=1; status=1; fi

echo "== end-to-end tests of advise server under ThreadSanitizer ($build/)"
e2e_log=$logs/e2e.txt
if ADVISE_E2E_VSCODE=0 tests/e2e/run.sh "$build/advise" >"$e2e_log" 2>&1; then e2e=0; else e2e=1; status=1; fi
cat "$e2e_log"
# the clients' own counts ("vscode-client: 82 passed, 0 failed", ...)
checks=$(grep -Eo '(^|: )[0-9]+ (checks )?passed' "$e2e_log" | grep -Eo '[0-9]+' | awk '{n += $1} END {print n + 0}')

reports=$(find "$logs" -name 'tsan.*' | wc -l | tr -d ' ')
if [ "$reports" -gt 0 ]; then
    status=1
    for f in "$logs"/tsan.*; do
        echo "== ThreadSanitizer report: $f"
        cat "$f"
    done
fi

seconds=$(($(date +%s) - start))
if [ "$status" -eq 0 ]; then
    echo "tsan: PASS: $transcripts server transcripts, the JSON-RPC fuzz replay and the end-to-end tests ($checks client checks) under ThreadSanitizer, no report (${seconds}s)"
else
    word() { if [ "$1" -eq 0 ]; then echo passed; else echo FAILED; fi; }
    echo "tsan: FAIL: $reports ThreadSanitizer report(s) in $logs; transcripts and fuzz replay $(word "$ctest"), end-to-end $(word "$e2e"); see above (${seconds}s)"
fi
exit "$status"
