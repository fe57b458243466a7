#!/usr/bin/env bash
# CI's short fuzzing pass (docs/fuzzing.md): builds the four libFuzzer targets
# in build-fuzz/ (clang++-14, ASan+UBSan), replays the saved reproducers of
# fuzz/regressions/, then fuzzes each target for FUZZ_SMOKE_SECONDS (default
# 20) from its committed seeds, which stay untouched (new inputs go to a
# scratch corpus). Exits non-zero on any crash, sanitizer report, timeout or
# OOM; the inputs and logs are kept in build-fuzz/smoke-crashes/.
set -euo pipefail
source "$(dirname "$0")/../fuzz/lib.sh"

seconds=${FUZZ_SMOKE_SECONDS:-20}
crash_dir="$FUZZ_BUILD_DIR/smoke-crashes"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "[fuzz-smoke] building the fuzz targets in $FUZZ_BUILD_DIR"
fuzz_build >/dev/null

failed=0
for target in "${FUZZ_TARGETS[@]}"; do
    if ! fuzz_replay "$target" "$FUZZ_REPO/fuzz/regressions/$target"; then
        echo "[fuzz-smoke] $target: a reproducer in fuzz/regressions/$target still fails" >&2
        failed=1
    fi
done

echo "[fuzz-smoke] ${seconds}s per target"
printf '%-22s %12s %10s %8s\n' target execs exec/s crashes
for target in "${FUZZ_TARGETS[@]}"; do
    status=0
    line=$(fuzz_run "$target" "$crash_dir" "$scratch/$target" -max_total_time="$seconds") ||
        status=$?
    read -r name execs rate crashes _ <<<"$line"
    printf '%-22s %12s %10s %8s\n' "$name" "$execs" "$rate" "$crashes"
    if [ "$status" -ne 0 ]; then
        echo "[fuzz-smoke] $target failed (libFuzzer status $status): see $crash_dir/$target.log" >&2
        failed=1
    fi
done
exit "$failed"
