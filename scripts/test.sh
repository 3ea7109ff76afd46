#!/bin/sh
# The whole test suite: installs and builds what is missing (scripts/setup.sh),
# then runs every Criterion suite (unit tests, rule fixtures, CLI) under ctest
# and the end-to-end tests of `advise server` with real clients (tests/e2e:
# VS Code's client libraries from npm, headless Neovim), once in a normal
# build and once under AddressSanitizer + UBSan; the VS Code extension
# (editors/vscode: its .vsix, unit tests, and an end-to-end test in
# code-server) with the normal build only.
set -eu
cd "$(dirname "$0")/.."

scripts/setup.sh
echo "== test suite (build/)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
echo "== end-to-end tests of advise server (build/)"
tests/e2e/run.sh build/advise

if [ "${ADVISE_SKIP_SANITIZERS:-0}" != 1 ]; then
    echo "== test suite under AddressSanitizer + UBSan (build-asan/)"
    ADVISE_BUILD_DIR=build-asan scripts/setup.sh -DADVISE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp" \
        LIBCLANG_NOTHREADS=1 LIBCLANG_DISABLE_CRASH_RECOVERY=1 \
        ctest --test-dir build-asan --output-on-failure -j"$(nproc)"
    echo "== end-to-end tests of advise server under AddressSanitizer + UBSan (build-asan/)"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp" \
        LIBCLANG_NOTHREADS=1 LIBCLANG_DISABLE_CRASH_RECOVERY=1 ADVISE_E2E_VSCODE=0 \
        tests/e2e/run.sh build-asan/advise
fi
echo "== all tests passed"
