#!/bin/sh
# Measures what the fuzz targets (tests/fuzz/) reach: builds each target with
# clang 19's source-based coverage (-fprofile-instr-generate
# -fcoverage-mapping) and tests/fuzz/replay_main.c instead of libFuzzer, in
# build-fuzzcov/, replays the target's inputs through it (the corpus that
# scripts/fuzz.sh grew in build-fuzz/corpus/TARGET when there is one, the
# seeds scripts/fuzz.sh starts from, and tests/fuzz/crashes/TARGET/), merges
# the profiles with llvm-profdata and prints per target the line, function
# and branch coverage (llvm-cov report) of the advise files that target is
# meant to reach (its scope, listed in the last column), and the line
# coverage of all the advise code linked into it. Tests, build folders (the
# generated registry, the tree-sitter grammar) and system headers are left
# out of both. Full reports in build-fuzzcov/reports/: TARGET.txt (all the
# advise code linked, file by file), TARGET.scope.txt (the scope, file by
# file), TARGET.functions.txt (the scope, function by function) and
# TARGET.replay.log.
#
# usage: scripts/fuzz-coverage.sh [TARGET...]     (default: every target)
#   ADVISE_JOBS: build jobs (default: the number of CPUs)
#   FUZZCOV_TIMEOUT: seconds a target's replay may take (default 600); a
#   target whose replay takes longer is reported as skipped
# Exits 1 when a target could not be measured (a replay that failed or ran
# out of time).
set -eu
cd "$(dirname "$0")/.."
root=$PWD
build="build-fuzzcov"
targets=${*:-"profile torch_import config ignore edits python jsonrpc cuda"}
jobs=${ADVISE_JOBS:-$(nproc)}
for t in $targets; do
    case $t in
        profile | torch_import | config | ignore | edits | python | jsonrpc | cuda) ;;
        *) echo "fuzz-coverage: no such target: $t" >&2; exit 2 ;;
    esac
done
replay_timeout=${FUZZCOV_TIMEOUT:-600}

packages="clang-19 libclang-rt-19-dev llvm-19 cmake pkg-config libjansson-dev libtree-sitter-dev libcriterion-dev libclang-19-dev libdw-dev"
command -v npm >/dev/null 2>&1 || packages="$packages nodejs npm" # the grammar is fetched from npm
missing=""
for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
# shellcheck disable=SC2086 # one word per package
scripts/apt-install.sh fuzz-coverage $missing

# the replay programs (ADVISE_TESTS builds them; only they are built here)
flags="-fprofile-instr-generate -fcoverage-mapping"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-19 -DADVISE_TESTS=ON \
    -DADVISE_FUZZ=OFF -DADVISE_SANITIZE=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
build_targets=""
for t in $targets; do build_targets="$build_targets fuzz_replay_$t"; done
# shellcheck disable=SC2086 # one word per target
cmake --build "$build" -j"$jobs" --target $build_targets 2>&1 | grep -E "(error|warning):|Error [0-9]" || true
for t in $targets; do
    test -x "$build/fuzz_replay_$t" || { echo "fuzz-coverage: the build of fuzz_replay_$t failed" >&2; exit 1; }
done

. scripts/fuzz-seeds.sh

# the advise code each target is meant to reach (files or folders)
scope_of() {
    case $1 in
        profile) echo profiler/profile.c profiler/profile_check.c profiler/profile_json.c profiler/profile_json_parse.c \
            profiler/profile_prescan.c profiler/profile_view.c profiler/memory_part.c ;;
        torch_import) echo profiler/import ;;
        config) echo rules/engine/config.c rules/engine/config_toml.c ;;
        ignore) echo server/workspace/ignore_rules.c ;;
        edits) echo analysis/edits.c ;;
        python) echo analysis/python rules/python rules/profile rules/measure ;;
        cuda) echo analysis/cuda rules/cuda ;;
        jsonrpc) echo server/lsp ;;
    esac
}

# not advise code: tests, build folders (generated sources, the grammar), system headers
root_regex=$(printf '%s' "$root" | sed 's/[].[^$*+?(){}|\\]/\\&/g')
ignore="^$root_regex/(tests|build[^/]*)/|/_deps/|^/usr/"

export LIBCLANG_NOTHREADS=1 LIBCLANG_DISABLE_CRASH_RECOVERY=1

# "covered/total (percent)" from llvm-cov report's TOTAL line; $1: the report,
# $2: the column of the total (functions 5, lines 8, branches 11)
figure() {
    awk -v c="$2" '$1 == "TOTAL" { t = $c; m = $(c + 1); if (t > 0) printf "%d/%d (%.1f%%)", t - m, t, 100 * (t - m) / t; else printf "-"; }' "$1"
}

mkdir -p "$build/reports" "$build/profiles"
failed=0
printf '%-13s %7s %22s %22s %22s %9s  %s\n' target inputs lines functions branches all-lines scope
for t in $targets; do
    scope=$(scope_of "$t")
    inputs=""
    [ -d "build-fuzz/corpus/$t" ] && inputs="build-fuzz/corpus/$t"
    inputs="$inputs $(seeds_of "$t") tests/fuzz/crashes/$t"
    profiles=$build/profiles/$t
    rm -rf "$profiles"
    mkdir -p "$profiles"
    log=$build/reports/$t.replay.log
    status=0
    # shellcheck disable=SC2086 # one word per folder
    LLVM_PROFILE_FILE="$profiles/%p.profraw" timeout "$replay_timeout" "$build/fuzz_replay_$t" $inputs >"$log" 2>&1 || status=$?
    note=""
    if [ "$status" -eq 124 ]; then
        printf '%-13s skipped: the replay took more than %s s (FUZZCOV_TIMEOUT)\n' "$t" "$replay_timeout"
        failed=1
        continue
    elif [ "$status" -ne 0 ]; then
        # an input that crashes the target stops the replay before the
        # profile is written: replay file by file, each with its own profile
        rm -f "$profiles"/*.profraw
        count=0 bad=0
        # shellcheck disable=SC2086
        for f in $(find $inputs -type f ! -name '.*' 2>/dev/null | sort); do
            if LLVM_PROFILE_FILE="$profiles/%p.profraw" timeout "$replay_timeout" "$build/fuzz_replay_$t" "$f" >>"$log" 2>&1; then
                count=$((count + 1))
            else
                bad=$((bad + 1))
                echo "fuzz-coverage: $t failed on $f" >>"$log"
            fi
        done
        note=" (replayed file by file: $bad inputs failed, see $log)"
        failed=1
    else
        count=$(sed -n 's/^replay: \([0-9]*\) inputs ran$/\1/p' "$log")
    fi
    if ! ls "$profiles"/*.profraw >/dev/null 2>&1; then
        printf '%-13s no profile written: no input ran (see %s)\n' "$t" "$log"
        failed=1
        continue
    fi
    llvm-profdata-19 merge -sparse "$profiles"/*.profraw -o "$build/profiles/$t.profdata"
    # shellcheck disable=SC2046 # one word per file or folder
    llvm-cov-19 report "$build/fuzz_replay_$t" -instr-profile="$build/profiles/$t.profdata" \
        -ignore-filename-regex="$ignore" -show-branch-summary >"$build/reports/$t.txt" 2>/dev/null
    # shellcheck disable=SC2046
    llvm-cov-19 report "$build/fuzz_replay_$t" -instr-profile="$build/profiles/$t.profdata" \
        -ignore-filename-regex="$ignore" -show-branch-summary $(for s in $scope; do echo "$root/$s"; done) \
        >"$build/reports/$t.scope.txt" 2>/dev/null
    # shellcheck disable=SC2046
    llvm-cov-19 report "$build/fuzz_replay_$t" -instr-profile="$build/profiles/$t.profdata" -show-functions \
        -ignore-filename-regex="$ignore" $(for s in $scope; do echo "$root/$s"; done) \
        >"$build/reports/$t.functions.txt" 2>/dev/null
    all=$(awk '$1 == "TOTAL" { print $10 }' "$build/reports/$t.txt")
    printf '%-13s %7s %22s %22s %22s %9s  %s%s\n' "$t" "$count" "$(figure "$build/reports/$t.scope.txt" 8)" \
        "$(figure "$build/reports/$t.scope.txt" 5)" "$(figure "$build/reports/$t.scope.txt" 11)" "${all:-?}" \
        "$scope" "$note"
done
exit $failed
