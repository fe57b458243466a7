#!/usr/bin/env bash
# Regression test of the skip mechanism (tests/support/skip.h,
# SKIP_RETURN_CODE, scripts/check-skips.sh):
#  1. a test case that calls skip_test() is reported by ctest as skipped, in
#     its JUnit output too, and a skip alone does not fail the ctest run;
#  2. check-skips.sh fails naming that test, and only it, unless the
#     allowed-skips list allows it by a whole-name regex with a reason;
#  3. the project's tests/allowed-skips.txt is well-formed;
#  4. every test of this build has SKIP_RETURN_CODE set to the skip code
#     (a test without it would report a skip as a failure).
#
#   skip_mechanism_test.sh PROBE SKIP_CODE CHECK_SKIPS BUILD_DIR
set -euo pipefail
[[ $# == 4 ]] || { echo "usage: $0 PROBE SKIP_CODE CHECK_SKIPS BUILD_DIR" >&2; exit 2; }
probe=$1 code=$2 check_skips=$3 build_dir=$4

work=$(mktemp -d /tmp/disksweep-skip-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0

# check DESCRIPTION COMMAND...: records a failure unless COMMAND succeeds.
check() {
    if "${@:2}"; then echo "ok: $1"; else echo "FAILED: $1"; failures=$((failures + 1)); fi
}
# exits_with STATUS COMMAND...: COMMAND's exit status is STATUS (its output
# goes to $work/out and $work/err).
exits_with() {
    local expected=$1 status=0
    "${@:2}" >"$work/out" 2>"$work/err" || status=$?
    [[ $status == "$expected" ]] || { echo "  exit status $status, expected $expected"; cat "$work/out" "$work/err"; return 1; }
}
# check-skips.sh on the probe suite's JUnit file with an allowed list of LINES.
check_skips_allowing() {
    printf '%s\n' "# fabricated allowed-skips list" "$@" >"$work/allowed.txt"
    "$check_skips" "$work/junit.xml" "$work/allowed.txt"
}

# 1. The probe through ctest, as scripts/test.sh runs the real suite.
mkdir "$work/suite"
cat >"$work/suite/CTestTestfile.cmake" <<EOF
add_test([=[probe/skips]=] "$probe" "the probe skips")
add_test([=[probe/passes]=] "$probe" "the probe passes")
set_tests_properties([=[probe/skips]=] [=[probe/passes]=] PROPERTIES SKIP_RETURN_CODE $code)
EOF
check "ctest runs the probe suite and a skip is no failure" \
    exits_with 0 ctest --test-dir "$work/suite" --output-junit "$work/junit.xml"
check "ctest reports the skipping test as skipped" grep -Eq 'probe/skips \.+\*\*\*Skipped' "$work/out"
marked_skipped() { grep -A1 -F "<testcase name=\"$1\"" "$work/junit.xml" | grep -q '<skipped'; }
check "the JUnit file marks it skipped" marked_skipped probe/skips
check "the JUnit file marks no other test skipped" bash -c "! grep -A1 -F '<testcase name=\"probe/passes\"' '$work/junit.xml' | grep -q '<skipped'"
check "the JUnit file has the test's reason" grep -q 'SKIPPED: the probe always skips' "$work/junit.xml"
check "the passing test ran" grep -Eq '<testcase name="probe/passes".*status="run"' "$work/junit.xml"

# 2. The checker.
check "a skip that is not allowed fails the check" exits_with 1 check_skips_allowing
check "the failure names the test and its reason" \
    grep -qF 'unexpected skip: probe/skips: the probe always skips' "$work/err"
check "the failure names no test that ran" bash -c "! grep -q 'probe/passes' '$work/err'"
check "an allowed skip passes" exits_with 0 check_skips_allowing 'probe/sk.* # the probe skips on purpose'
check "the allowed skip is named with its reason" \
    grep -qF 'allowed skip: probe/skips (the probe skips on purpose)' "$work/out"
check "a regex matching part of the name does not allow it" exits_with 1 check_skips_allowing 'probe/sk # part'
check "an allowed skip without a reason is an error" exits_with 2 check_skips_allowing 'probe/skips'

# 3. The project's own list, on a run with no tests.
printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite tests="0">\n</testsuite>\n' >"$work/empty.xml"
check "tests/allowed-skips.txt is well-formed" exits_with 0 "$check_skips" "$work/empty.xml"

# 4. SKIP_RETURN_CODE on every test of the build. In ctest's JSON a test's
# "name" line is followed by its "properties", a property's by its "value".
# A test binary that is not built shows as a NOT_BUILT placeholder: skipped.
tests_without_skip_code() {
    ctest --test-dir "$build_dir" --show-only=json-v1 | awk -v code="$code" '
        function finish() { if (test != "" && test !~ /_NOT_BUILT/ && !has_code) print test }
        /"name" : / { pending = $0; sub(/^[^:]*: "/, "", pending); sub(/",?[ \t\r]*$/, "", pending); next }
        pending != "" && /"value" : / {
            if (pending == "SKIP_RETURN_CODE") { value = $0; sub(/^[^:]*: /, "", value); gsub(/[",]/, "", value); has_code = (value + 0 == code) }
            pending = ""; next
        }
        pending != "" { finish(); test = pending; has_code = 0; pending = "" }
        END { finish() }'
}
tests_without_skip_code >"$work/without" || { echo "FAILED: ctest --show-only on $build_dir"; failures=$((failures + 1)); }
check "every test of the build has SKIP_RETURN_CODE $code" test ! -s "$work/without"
sed 's/^/  no SKIP_RETURN_CODE: /' "$work/without"

echo "skip_mechanism_test: $failures failed"
((failures == 0))
