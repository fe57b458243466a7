# shellcheck shell=bash
# How every test run of this project calls ctest (scripts/test.sh,
# scripts/test-sanitizers.sh): the unit tier in parallel, one test per core,
# then every other tier one test at a time. Sourced, not run.
#
# Why two passes: the unit tier is ~600 short processes that need nothing but
# a core (fakes, temporary files), and on 2 cores it takes half the time in
# parallel. The other tiers boot TCG guests, a Ceph, a libvirtd or Chromium;
# a guest under TCG takes a core of its own and its timeouts assume it has
# one, so they run alone, as before.
#
# run_ctest_tiers BUILD_DIR JUNIT_BASE [CTEST_ARGS...]
#   Runs both passes in BUILD_DIR (CTEST_ARGS go to both, e.g. -R store or
#   -L e2e: ctest ANDs its -L options, so `-L e2e` selects nothing in the
#   unit pass). Writes JUNIT_BASE.unit.xml and JUNIT_BASE.serial.xml (every
#   test's output in full) and checks each with scripts/check-skips.sh.
#   Returns non-zero when a test failed or skipped without being allowed.
#   CTEST_TIERS_EXTRA (an array, optional) is passed to both passes first.
#   CTEST_TIERS_UNIT_BESIDE=1 runs the unit pass beside the serial one,
#   niced, instead of before it (scripts/test.sh): a serial test keeps about
#   one core busy with its guest, and the unit tests fill the other. Their
#   output goes to BUILD_DIR/Testing/unit-pass.log, printed once both end,
#   so the two do not interleave.
#   Both run under a subreaper (scripts/lib/reaper.sh): the guests' QEMUs are
#   reaped as they end, whatever this machine's PID 1 does.
# shellcheck source=reaper.sh
source "$(dirname "${BASH_SOURCE[0]}")/reaper.sh"
run_ctest_tiers() {
    local build=$1 junit_base=$2
    shift 2
    local scripts_dir status=0 pass
    scripts_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    local -a common=(--test-dir "$build" --output-on-failure --timeout 1500
                     "${CTEST_TIERS_EXTRA[@]}")
    rm -f "$junit_base".unit.xml "$junit_base".serial.xml
    local -a unit_pass=(ctest "${common[@]}" -L unit -j"$(nproc)"
                        --output-junit "$junit_base.unit.xml" "$@")
    if [[ ${CTEST_TIERS_UNIT_BESIDE:-0} == 1 ]]; then
        # nice 10, not 19: a unit test that waits for its own threads would
        # starve at 19 whenever the serial pass takes both cores a moment.
        local unit_log=$build/Testing/unit-pass.log unit_pid unit_status=0
        mkdir -p "$build/Testing"
        with_reaper nice -n 10 "${unit_pass[@]}" >"$unit_log" 2>&1 &
        unit_pid=$!
        with_reaper ctest "${common[@]}" -LE unit --output-junit "$junit_base.serial.xml" "$@" ||
            status=$?
        wait "$unit_pid" || unit_status=$?
        echo "[tiers] the unit pass, run beside the serial one ($unit_log):"
        cat "$unit_log"
        [[ $unit_status == 0 ]] || status=$unit_status
    else
        with_reaper "${unit_pass[@]}" || status=$?
        with_reaper ctest "${common[@]}" -LE unit --output-junit "$junit_base.serial.xml" "$@" ||
            status=$?
    fi
    for pass in unit serial; do
        # A pass that selected no test writes no file: nothing to check.
        [ -f "$junit_base.$pass.xml" ] || continue
        if ! "$scripts_dir/check-skips.sh" "$junit_base.$pass.xml"; then
            [[ $status != 0 ]] || status=1
        fi
    done
    return "$status"
}
