#!/bin/sh
# Builds advise's libFuzzer targets (tests/fuzz/) with clang 19, AddressSanitizer
# and UndefinedBehaviorSanitizer in build-fuzz/, and runs each for a time box
# on a corpus seeded from the fixtures and samples (kept in build-fuzz/corpus/).
# Prints per target the executions, executions per second, coverage (edges)
# and corpus size; exits 1 when a target found a crash, a leak, a timeout or
# a sanitizer report, naming the input (copy it into tests/fuzz/crashes/TARGET/
# to make it a regression test once fixed).
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET [CUDA_SECONDS [TARGET...]]]
#        (defaults: 60 s each, 120 s for the slow CUDA target, every target)
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
cuda_seconds=${2:-120}
[ $# -ge 2 ] && shift 2 || shift $#
targets=${*:-"profile torch_import config ignore edits python jsonrpc cuda"}

missing=""
for p in clang-19 libclang-rt-19-dev; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
# shellcheck disable=SC2086 # one word per package
scripts/apt-install.sh fuzz $missing
ADVISE_BUILD_DIR=build-fuzz scripts/setup.sh -DADVISE_FUZZ=ON -DADVISE_TESTS=OFF -DCMAKE_C_COMPILER=clang-19 >/dev/null

seeds_of() {
    case $1 in
        profile) echo tests/fixtures/profiles samples/profiles tests/fuzz/seeds/profile ;;
        torch_import) echo tests/fixtures/traces ;;
        python) echo tests/fixtures/python samples/python ;;
        cuda) echo samples/cuda tests/fixtures/cuda ;;
        *) echo "tests/fuzz/seeds/$1" ;;
    esac
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp"
export LIBCLANG_NOTHREADS=1 LIBCLANG_DISABLE_CRASH_RECOVERY=1
failed=0
printf '%-13s %12s %9s %7s %7s %s\n' target executions exec/s edges corpus result
for t in $targets; do
    corpus=build-fuzz/corpus/$t
    mkdir -p "$corpus" build-fuzz/artifacts build-fuzz/logs
    limit=$seconds
    [ "$t" = cuda ] && limit=$cuda_seconds
    log=build-fuzz/logs/$t.log
    # -timeout: one input taking this long is a hang; -rss_limit_mb: a leak or a blow-up
    status=0
    # shellcheck disable=SC2046
    build-fuzz/fuzz_"$t" -max_total_time="$limit" -print_final_stats=1 -timeout=25 -rss_limit_mb=4096 \
        -artifact_prefix=build-fuzz/artifacts/"$t"- "$corpus" $(seeds_of "$t") >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    edges=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    files=$(ls "$corpus" | wc -l)
    result=ok
    if [ "$status" -ne 0 ]; then
        result="FAILED (exit $status): $(ls -t build-fuzz/artifacts/"$t"-* 2>/dev/null | head -n 1), see $log"
        failed=1
    fi
    printf '%-13s %12s %9s %7s %7s %s\n' "$t" "${runs:-?}" "${speed:-?}" "${edges:-?}" "$files" "$result"
done
exit $failed
