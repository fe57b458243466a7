#!/usr/bin/env bash
# The README's second command: install, build, build the guest image, run the
# whole test suite (unit, integration, e2e). Extra arguments go to ctest,
# e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
# e2e tests boot the real guest image from here.
export DISKSWEEP_TEST_IMAGE_DIR="${DISKSWEEP_TEST_IMAGE_DIR:-/var/lib/disksweep/images}"
scripts/build-guest-image.sh "$DISKSWEEP_TEST_IMAGE_DIR"
cd build
ctest --output-on-failure --timeout 1500 "$@"
