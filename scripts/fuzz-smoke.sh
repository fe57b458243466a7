#!/usr/bin/env bash
# CI's short fuzzing pass (docs/fuzzing.md): builds the four libFuzzer targets
# in build-fuzz/ (clang++-14, ASan+UBSan; DISKSWEEP_FUZZ_BUILD_DIR; after
# scripts/test-sanitizers.sh, which builds there too, only linking), replays
# the saved reproducers of fuzz/regressions/, then runs each target for a
# fixed number of executions (the table below) with a fixed seed, starting
# from its committed seeds: a count rather than a time, so that every run of
# one commit tries the same inputs, on a slow machine too. For that the
# corpus is never reloaded (-reload=0, libFuzzer rereads it every second) and
# address randomisation is off where the system allows it (setarch -R; with
# it on, the pointers the targets compare steer the mutations differently).
# The committed seeds stay untouched (new inputs go to a scratch corpus).
# Exits non-zero on any crash, sanitizer report, timeout or OOM; the inputs
# and logs are kept in build-fuzz/smoke-crashes/.
#
#   FUZZ_SMOKE_RUNS=N  N executions for every target instead of the table
#   FUZZ_SMOKE_SEED=S  libFuzzer's -seed (default 1)
set -euo pipefail
# shellcheck source=../fuzz/lib.sh
source "$(dirname "$0")/../fuzz/lib.sh"

# Executions per target: 10-40 s each on a 2-core machine in CI's -O0 build
# (docs/fuzzing.md), about two minutes for the five.
declare -A smoke_runs=(
    [fuzz_spec]=25000
    [fuzz_guest_result]=15000
    [fuzz_http_request]=50000
    [fuzz_output_parsers]=5000
    [fuzz_write_log]=20000
)
seed=${FUZZ_SMOKE_SEED:-1}
if setarch "$(uname -m)" -R true 2>/dev/null; then
    FUZZ_LAUNCHER=(setarch "$(uname -m)" -R)
else
    echo "[fuzz-smoke] setarch -R is not allowed here: runs differ with address randomisation" >&2
fi
crash_dir="$FUZZ_BUILD_DIR/smoke-crashes"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "[fuzz-smoke] building the fuzz targets in $FUZZ_BUILD_DIR"
# Quiet when it works; a failed build shows why (CI reads only this output).
build_log="$scratch/build.log"
if ! fuzz_build >"$build_log" 2>&1; then
    tail -n 60 "$build_log" >&2
    echo "[fuzz-smoke] building the fuzz targets failed (the output's end above)" >&2
    exit 1
fi
echo "[fuzz-smoke] built in ${SECONDS}s"

failed=0
for target in "${FUZZ_TARGETS[@]}"; do
    if ! fuzz_replay "$target" "$FUZZ_REPO/fuzz/regressions/$target"; then
        echo "[fuzz-smoke] $target: a reproducer in fuzz/regressions/$target still fails" >&2
        failed=1
    fi
done

echo "[fuzz-smoke] a fixed number of executions per target, -seed=$seed"
printf '%-22s %12s %10s %8s %10s\n' target execs exec/s crashes seconds
for target in "${FUZZ_TARGETS[@]}"; do
    runs=${FUZZ_SMOKE_RUNS:-${smoke_runs[$target]}}
    status=0
    line=$(fuzz_run "$target" "$crash_dir" "$scratch/$target" \
        -runs="$runs" -seed="$seed" -reload=0) || status=$?
    read -r name execs rate crashes seconds <<<"$line"
    printf '%-22s %12s %10s %8s %10s\n' "$name" "$execs" "$rate" "$crashes" "$seconds"
    if [ "$status" -ne 0 ]; then
        echo "[fuzz-smoke] $target failed (libFuzzer status $status): see $crash_dir/$target.log" >&2
        failed=1
    fi
done
echo "[fuzz-smoke] done in ${SECONDS}s"
exit "$failed"
