#!/usr/bin/env bash
# CI's sanitizer tier (docs/fuzzing.md, "Sanitizers"): the unit and
# integration tiers once more, built with clang's ASan + UBSan in the fuzz
# targets' instrumented build directory (fuzz/lib.sh: build-fuzz/, or
# DISKSWEEP_FUZZ_BUILD_DIR; nothing is reused from build/), so that the fuzz
# stage after it only links its targets. Only the test binaries and the
# programs those tests start are built. The unit tier's binaries each run
# whole, in one process (run_unit_binary says why), the integration tier
# through ctest. Extra arguments go to ctest, and then the unit tier runs
# through it too, e.g. scripts/test-sanitizers.sh -R store
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
unit_binaries=()
for dir in "$root"/tests/unit/*/; do
    [ -n "$(find "$dir" -name '*.cpp' -print -quit)" ] || continue
    unit_binaries+=("unit_$(basename "$dir")")
done
targets=(skip_probe integration_tests chaos_test disksweepd hostctl "${unit_binaries[@]}")

# Unit test cases left out of this tier, as BINARY:TEST CASE NAME (exact),
# each with its reason.
excluded_unit_cases=(
    # It asserts a bound on the whole process's RSS (100 MiB); ASan's shadow
    # memory and quarantine alone exceed it (baseline 114 MiB). The build
    # without sanitizers checks the bound.
    'unit_daemon:hostile guests: every run fails with its reason and memory stays bounded'
)
# Other tests left out, as ctest regexes, each with its reason.
excluded=(
    # The simulated PVE's own tests: Python, nothing the sanitizers instrument
    # (the main build's unit pass runs them).
    'proxmox/pve_fake_'
    'proxmox/qemu_server_cfg2cmd'
)
# ...and the unit cases above in ctest's names (tests/CMakeLists.txt:
# unit_COMPONENT's cases are unit/COMPONENT/NAME), regex characters escaped.
for case_spec in "${excluded_unit_cases[@]}"; do
    binary=${case_spec%%:*}
    excluded+=("$(printf 'unit/%s/%s' "${binary#unit_}" "${case_spec#*:}" |
        sed 's/[][\\.^$*+?(){}|]/\\&/g')")
done

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
    ubsan=$(grep -a 'runtime error:' "$junit_base".*.xml "$unit_logs".*.log 2>/dev/null || true)
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
# The JUnit files keep every test's output (UBSan's reports) in full.
# shellcheck source=lib/ctest-tiers.sh
source "$root/scripts/lib/ctest-tiers.sh"
CTEST_TIERS_EXTRA=(-E "$exclude" --test-output-size-passed 4194304 --test-output-size-failed 4194304)
unit_logs=$build/Testing/sanitize-unit
# No file of an earlier run may be read as this one's.
rm -f "$unit_logs".*.log "$junit_base".*.xml

# run_unit_binary BINARY: BINARY's test cases but the excluded ones, in one
# process: an instrumented binary takes about 0.5 s to start and end (the
# dynamic loader relocating it, LeakSanitizer scanning its globals), so the
# ~1000 unit cases took 527 s one process each and take about 80 s this way.
# Output in $unit_logs.BINARY.log. When the process fails or skips, its cases
# run again one process each through ctest, which names each failure and
# checks each skip against tests/allowed-skips.txt (scripts/check-skips.sh)
# into $junit_base.BINARY.unit.xml. A failure of the whole process fails the
# binary even when every case passes alone: its cases then depend on each
# other, or one corrupted what another used.
run_unit_binary() {
    local binary=$1 case_spec whole=0 alone=0
    # Catch2's test spec: ~"NAME" leaves a case out; exclusions separated by
    # spaces must all hold.
    local -a exclusions=() spec_args=()
    for case_spec in "${excluded_unit_cases[@]}"; do
        if [[ ${case_spec%%:*} == "$binary" ]]; then exclusions+=("~\"${case_spec#*:}\""); fi
    done
    if [[ ${#exclusions[@]} -gt 0 ]]; then spec_args=("${exclusions[*]}"); fi
    (cd "$build/tests" && timeout 1800 "./$binary" "${spec_args[@]}") >"$unit_logs.$binary.log" 2>&1 ||
        whole=$?
    # Catch2 ends a run that selected no case with status 0 too.
    local passed
    passed=$(grep -a '^All tests passed' "$unit_logs.$binary.log" | tail -1)
    if [[ $whole == 0 && -n $passed ]]; then
        echo "[sanitizers] $binary: $passed"
        return 0
    fi
    if [[ $whole == 0 ]]; then whole="0, but no test case passed"; fi
    echo "[sanitizers] $binary failed in one process (status $whole); the end of its output:"
    tail -n 60 "$unit_logs.$binary.log"
    echo "[sanitizers] $binary's cases again, one process each:"
    run_ctest_tiers "$build" "$junit_base.$binary" -L unit -R "^unit/${binary#unit_}/" || alone=$?
    if [[ $alone != 0 ]]; then return "$alone"; fi
    # A case that skipped (tests/support/skip.h prints "SKIPPED: why" and
    # ends the process) has just been checked, with the others, one at a time.
    if grep -a -q '^SKIPPED: ' "$unit_logs.$binary.log"; then return 0; fi
    echo "[sanitizers] $binary: every case passes alone, but not together in one process" >&2
    return 1
}

# The unit binaries (largest first, so it does not start last), at most one
# per core at a time.
run_unit_binaries() {
    local binary status=0 running=0
    local -a binaries
    mapfile -t binaries < <(for binary in "${unit_binaries[@]}"; do
        echo "$(stat -c %s "$build/tests/$binary") $binary"
    done | sort -rn | cut -d' ' -f2)
    local results
    results=$(mktemp -d)
    for binary in "${binaries[@]}"; do
        if ((running >= $(nproc))); then
            wait -n || true
            running=$((running - 1))
        fi
        {
            local binary_status=0
            run_unit_binary "$binary" >"$results/$binary.out" 2>&1 || binary_status=$?
            echo "$binary_status" >"$results/$binary.status"
        } &
        running=$((running + 1))
    done
    wait
    for binary in "${binaries[@]}"; do
        cat "$results/$binary.out"
        [[ $(cat "$results/$binary.status") == 0 ]] || status=1
    done
    rm -rf "$results"
    return "$status"
}

# The unit tier runs its binaries whole; with ctest arguments (e.g. -R
# store), which select ctest's tests, it runs through ctest, one process each,
# as the integration tier does. The unit tier's script tests (tests/unit/
# guest, unit/tests/*) run only in scripts/test.sh: nothing in them is built
# with the sanitizers.
ctest_tiers=()
for tier in "${tiers[@]}"; do
    if [[ $tier == unit && $# == 0 ]]; then
        run_unit_binaries || status=1
    else
        ctest_tiers+=("$tier")
    fi
done
if [[ ${#ctest_tiers[@]} -gt 0 ]]; then
    labels=$(IFS='|'; echo "${ctest_tiers[*]}")
    run_ctest_tiers "$build" "$junit_base" -L "$labels" "$@" || status=$?
fi
echo "[sanitizers] tests ran in $((SECONDS - built_at))s"
if ! check_reports; then
    [[ $status != 0 ]] || status=1
fi
exit "$status"
