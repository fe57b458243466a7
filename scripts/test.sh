#!/usr/bin/env bash
# The README's second command: install, build, build the guest image, run the
# whole test suite (unit, integration, e2e). Extra arguments go to ctest,
# e.g. scripts/test.sh -L unit
# A test that skips fails the run unless tests/allowed-skips.txt allows it
# (scripts/check-skips.sh reads ctest's JUnit output, build/Testing/junit.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

scripts/install-deps.sh
scripts/build.sh
# e2e tests boot the real guest image from here.
export DISKSWEEP_TEST_IMAGE_DIR="${DISKSWEEP_TEST_IMAGE_DIR:-/var/lib/disksweep/images}"
scripts/build-guest-image.sh "$DISKSWEEP_TEST_IMAGE_DIR"
junit="$root/build/Testing/junit.xml"
rm -f "$junit"
cd build
status=0
ctest --output-on-failure --timeout 1500 --output-junit "$junit" "$@" || status=$?
if ! "$root/scripts/check-skips.sh" "$junit"; then
    [[ $status != 0 ]] || status=1
fi
exit "$status"
