#!/usr/bin/env bash
# Longer fuzzing of the four libFuzzer targets (docs/fuzzing.md).
#
#   bench/fuzz.sh [SECONDS | -runs=N] [TARGET...]
#   e.g. bench/fuzz.sh -runs=10000000 fuzz_spec; bench/fuzz.sh 120
#
# Each target runs SECONDS, or N executions (default -runs=10000000), from its
# committed seeds plus a corpus kept between runs in build-fuzz-O1/corpus/TARGET.
# A target stops at its first crash. Prints target / execs / exec/s / crashes;
# crash inputs and logs go to FUZZ_CRASH_DIR (default build-fuzz-O1/crashes).
# Exits non-zero when any target crashed.
#
# The targets are built at -O1 in build-fuzz-O1/ (DISKSWEEP_FUZZ_BUILD_DIR),
# not in CI's -O0 build-fuzz/ (fuzz/lib.sh, FUZZ_OPT): a long run is worth
# the slower build.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export DISKSWEEP_FUZZ_OPT=${DISKSWEEP_FUZZ_OPT:--O1}
export DISKSWEEP_FUZZ_BUILD_DIR=${DISKSWEEP_FUZZ_BUILD_DIR:-$repo/build-fuzz-O1}
# shellcheck source=../fuzz/lib.sh
source "$repo/fuzz/lib.sh"

usage() {
    echo "usage: $0 [SECONDS | -runs=N] [TARGET...]; targets: ${FUZZ_TARGETS[*]}" >&2
    exit 2
}
limit=(-runs=10000000)  # the issue's goal: 0 crashes after 10M executions each
case "${1:-}" in
    -runs=[0-9]*) limit=("$1"); shift ;;
    [0-9]*) limit=(-max_total_time="$1"); shift ;;
    -*) usage ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${FUZZ_TARGETS[@]}")
for target in "${targets[@]}"; do
    [[ " ${FUZZ_TARGETS[*]} " == *" $target "* ]] || usage
done
crash_dir=${FUZZ_CRASH_DIR:-$FUZZ_BUILD_DIR/crashes}

fuzz_build >/dev/null
printf '%-22s %12s %10s %8s %10s\n' target execs exec/s crashes seconds
failed=0
for target in "${targets[@]}"; do
    status=0
    line=$(fuzz_run "$target" "$crash_dir" "$FUZZ_BUILD_DIR/corpus/$target" "${limit[@]}") ||
        status=$?
    read -r name execs rate crashes seconds <<<"$line"
    printf '%-22s %12s %10s %8s %10s\n' "$name" "$execs" "$rate" "$crashes" "$seconds"
    [ "$status" -eq 0 ] || failed=1
done
[ "$failed" -eq 0 ] || echo "crash inputs and logs: $crash_dir" >&2
exit "$failed"
