#!/bin/sh
# Builds advise's libFuzzer targets (tests/fuzz/) with clang 19, AddressSanitizer
# and UndefinedBehaviorSanitizer in build-fuzz/, and runs each for a time box
# on a corpus seeded from the fixtures and samples (kept in build-fuzz/corpus/).
# Prints per target the executions, executions per second, coverage (edges),
# corpus size and peak memory (RSS, MB); exits 1 when a target found a crash,
# a leak, a timeout or a sanitizer report, naming the input (copy it into
# tests/fuzz/crashes/TARGET/ to make it a regression test once fixed).
#
# usage: scripts/fuzz.sh [--runs N] [SECONDS_PER_TARGET [CUDA_SECONDS [TARGET...]]]
#        (defaults: 60 s each, 120 s for the slow CUDA target, every target)
#        --runs N: run each target for N executions (libFuzzer's -runs)
#        instead of a time box; a time given as well still bounds it, and the
#        time boxes default to 0 (none): scripts/fuzz.sh --runs 10000000 config
set -eu
cd "$(dirname "$0")/.."
runs=-1 # libFuzzer's default: no limit on the executions
default_seconds=60 default_cuda_seconds=120
if [ "${1:-}" = --runs ]; then
    case ${2:-} in
        '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [--runs N] [SECONDS [CUDA_SECONDS [TARGET...]]]" >&2; exit 2 ;;
    esac
    runs=$2
    shift 2
    default_seconds=0 default_cuda_seconds=0 # libFuzzer's -max_total_time=0: no time limit
fi
# the times may be left out: the first word that is not a number starts the
# targets (scripts/fuzz.sh --runs 10000000 config); libFuzzer would read a
# name as 0, no limit
case ${1:-} in
    '' | *[!0-9]*) set -- "$default_seconds" "$default_cuda_seconds" "$@" ;;
    *) case ${2:-} in '' | *[!0-9]*) first=$1 && shift && set -- "$first" "$default_cuda_seconds" "$@" ;; esac ;;
esac
seconds=${1:-$default_seconds}
cuda_seconds=${2:-$default_cuda_seconds}
[ $# -ge 2 ] && shift 2 || shift $#
targets=${*:-"profile torch_import config ignore edits python jsonrpc cuda"}

missing=""
for p in clang-19 libclang-rt-19-dev; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
# shellcheck disable=SC2086 # one word per package
scripts/apt-install.sh fuzz $missing
ADVISE_BUILD_DIR=build-fuzz scripts/setup.sh -DADVISE_FUZZ=ON -DADVISE_TESTS=OFF -DCMAKE_C_COMPILER=clang-19 >/dev/null

. scripts/fuzz-seeds.sh

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp"
export LIBCLANG_NOTHREADS=1 LIBCLANG_DISABLE_CRASH_RECOVERY=1
failed=0
printf '%-13s %12s %9s %7s %7s %7s %s\n' target executions exec/s edges corpus rss_mb result
for t in $targets; do
    corpus=build-fuzz/corpus/$t
    mkdir -p "$corpus" build-fuzz/artifacts build-fuzz/logs
    limit=$seconds
    [ "$t" = cuda ] && limit=$cuda_seconds
    log=build-fuzz/logs/$t.log
    # -timeout: one input taking this long is a hang; -rss_limit_mb: a leak or a blow-up
    status=0
    # shellcheck disable=SC2046
    build-fuzz/fuzz_"$t" -max_total_time="$limit" -runs="$runs" -print_final_stats=1 -timeout=25 -rss_limit_mb=4096 \
        -artifact_prefix=build-fuzz/artifacts/"$t"- "$corpus" $(seeds_of "$t") >"$log" 2>&1 || status=$?
    executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    edges=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    files=$(ls "$corpus" | wc -l)
    result=ok
    if [ "$status" -ne 0 ]; then
        result="FAILED (exit $status): $(ls -t build-fuzz/artifacts/"$t"-* 2>/dev/null | head -n 1), see $log"
        failed=1
    fi
    printf '%-13s %12s %9s %7s %7s %7s %s\n' "$t" "${executed:-?}" "${speed:-?}" "${edges:-?}" "$files" "${rss:-?}" "$result"
done
exit $failed
