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
    with_reaper ctest "${common[@]}" -L unit -j"$(nproc)" --output-junit "$junit_base.unit.xml" "$@" ||
        status=$?
    with_reaper ctest "${common[@]}" -LE unit --output-junit "$junit_base.serial.xml" "$@" || status=$?
    for pass in unit serial; do
        # A pass that selected no test writes no file: nothing to check.
        [ -f "$junit_base.$pass.xml" ] || continue
        if ! "$scripts_dir/check-skips.sh" "$junit_base.$pass.xml"; then
            [[ $status != 0 ]] || status=1
        fi
    done
    return "$status"
}
