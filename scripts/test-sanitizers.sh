#!/usr/bin/env bash
# CI's sanitizer tier (docs/fuzzing.md, "Sanitizers"): the unit and
# integration tiers once more, built with clang's ASan + UBSan in the fuzz
# targets' instrumented build directory (fuzz/lib.sh: build-fuzz/, or
# DISKSWEEP_FUZZ_BUILD_DIR; nothing is reused from build/), so that the fuzz
# stage after it only links its targets. Only the test binaries and the
# programs those tests start are built. Extra arguments go to ctest, e.g.
# scripts/test-sanitizers.sh -R store
# DISKSWEEP_SANITIZE_BUILD_ONLY=1 builds and stops.
# DISKSWEEP_SANITIZE_TIERS="unit" or "integration" runs only that tier's
# tests (default: both). CI builds and runs the unit tier beside
# scripts/test.sh's guest tiers, which keep about one core busy, and the
# integration tier after them, alone, as it boots guests (.ci/run). Each
# selection keeps its own JUnit files and report directory, so the second
# run does not remove the first one's.
#
# Fails when a test fails, when a test skips that tests/allowed-skips.txt
# does not allow (as scripts/test.sh), and when any process wrote a sanitizer
# report, even one whose output no test looks at (a disksweepd that a test
# started): every report goes to a file in BUILD/sanitizer-reports/, and the
# files are printed at the end. Known third-party findings are suppressed by
# tests/sanitizers/*.supp, each line with its reason.
set -euo pipefail
# shellcheck source=../fuzz/lib.sh
source "$(dirname "$0")/../fuzz/lib.sh"
root=$FUZZ_REPO
cd "$root"
build=$FUZZ_BUILD_DIR
read -r -a tiers <<<"${DISKSWEEP_SANITIZE_TIERS:-unit integration}"
for tier in "${tiers[@]}"; do
    case "$tier" in
        unit | integration) ;;
        *) echo "DISKSWEEP_SANITIZE_TIERS: unknown tier '$tier' (known: unit integration)" >&2; exit 2 ;;
    esac
done
selection=$(IFS=-; echo "${tiers[*]}")
reports=$build/sanitizer-reports/$selection
junit_base=$build/Testing/junit-$selection

# The unit and integration binaries (tests/CMakeLists.txt: unit_DIR for each
# tests/unit/DIR that holds C++ sources, skip_probe; tests/integration/
# CMakeLists.txt) and the programs the integration tests exec (tests/support/
# daemon_fixture.cpp); building integration_tests also builds disksweep-agent
# (a dependency of the fixture, for the e2e tier). A directory of scripts
# only (tests/unit/guest) has no binary, as CMake makes none for it.
targets=(skip_probe integration_tests chaos_test disksweepd hostctl)
for dir in "$root"/tests/unit/*/; do
    [ -n "$(find "$dir" -name '*.cpp' -print -quit)" ] || continue
    targets+=("unit_$(basename "$dir")")
done

# Tests left out of this tier, as ctest regexes, each with its reason.
excluded=(
    # It asserts a bound on the whole process's RSS (100 MiB); ASan's shadow
    # memory and quarantine alone exceed it (baseline 114 MiB). The build
    # without sanitizers checks the bound.
    'unit/daemon/hostile guests: every run fails with its reason and memory stays bounded'
    # The simulated PVE's own tests: Python, nothing the sanitizers instrument
    # (the main build's unit pass runs them).
    'proxmox/pve_fake_'
    'proxmox/qemu_server_cfg2cmd'
)

# A report stops the process that found it (halt_on_error, and
# -fno-sanitize-recover for UBSan) with a non-zero status. The reports go to
# $reports/asan.PID and $reports/ubsan.PID instead of stderr; the JUnit file
# (the tests' output) is searched too, for a process that wrote to stderr.
sanitizer_environment() {
    local supp=$root/tests/sanitizers
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:log_path=$reports/asan"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan:suppressions=$supp/ubsan.supp"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
}

# Prints every ASan/LSan report file and every UBSan line of the tests'
# output; returns 1 when there was any.
check_reports() {
    local files ubsan
    files=$(find "$reports" -type f | sort)
    ubsan=$(grep -a 'runtime error:' "$junit_base".*.xml || true)
    [ -z "$files" ] && [ -z "$ubsan" ] && return 0
    echo "[sanitizers] sanitizer reports:" >&2
    if [ -n "$files" ]; then
        while read -r file; do
            echo "---- $file" >&2
            cat "$file" >&2
        done <<<"$files"
    fi
    [ -z "$ubsan" ] || printf -- '---- UBSan, in the tests output (%s):\n%s\n' "$junit_base.*.xml" "$ubsan" >&2
    return 1
}

echo "[sanitizers] building ${targets[*]} in $build"
fuzz_configure
ninja -C "$build" -j"${DISKSWEEP_SANITIZE_JOBS:-$(nproc)}" "${targets[@]}"
echo "[sanitizers] built in ${SECONDS}s"
[ "${DISKSWEEP_SANITIZE_BUILD_ONLY:-0}" != 1 ] || exit 0
built_at=$SECONDS

# The integration tests that boot a guest use the image scripts/test.sh built.
export DISKSWEEP_TEST_IMAGE_DIR="${DISKSWEEP_TEST_IMAGE_DIR:-/var/lib/disksweep/images}"
rm -rf "$reports"
mkdir -p "$reports"
sanitizer_environment
status=0
exclude=$(IFS='|'; echo "${excluded[*]}")
# The JUnit files keep every test's output (UBSan's reports) in full. The
# unit tier runs in parallel, integration one test at a time
# (scripts/lib/ctest-tiers.sh, which also checks the skips).
# shellcheck source=lib/ctest-tiers.sh
source "$root/scripts/lib/ctest-tiers.sh"
CTEST_TIERS_EXTRA=(-E "$exclude" --test-output-size-passed 4194304 --test-output-size-failed 4194304)
labels=$(IFS='|'; echo "${tiers[*]}")
run_ctest_tiers "$build" "$junit_base" -L "$labels" "$@" || status=$?
echo "[sanitizers] tests ran in $((SECONDS - built_at))s"
if ! check_reports; then
    [[ $status != 0 ]] || status=1
fi
exit "$status"
