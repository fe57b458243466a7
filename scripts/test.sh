#!/usr/bin/env bash
# The README's second command: install, build, build the guest images and
# the Debian 13 root with QEMU 10, run the whole test suite (unit,
# integration, e2e, proxmox on 8.4 and 9.1, ...). Extra arguments go to ctest,
# e.g. scripts/test.sh -L unit
# The unit tier runs in parallel, the others one test at a time
# (scripts/lib/ctest-tiers.sh). A test that skips fails the run unless
# tests/allowed-skips.txt allows it (scripts/check-skips.sh reads ctest's
# JUnit output, build/Testing/junit.unit.xml and junit.serial.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

scripts/install-deps.sh
scripts/build.sh
# e2e tests boot the real guest image from here.
export DISKSWEEP_TEST_IMAGE_DIR="${DISKSWEEP_TEST_IMAGE_DIR:-/var/lib/disksweep/images}"
scripts/build-guest-image.sh "$DISKSWEEP_TEST_IMAGE_DIR"
# QEMU 10 from a Debian 13 root (cached by content in /var/cache/disksweep):
# the simulated Proxmox VE 9.1 runs its real guests under it.
tests/support/build-debian13-root.sh >/dev/null
# shellcheck source=lib/ctest-tiers.sh
source scripts/lib/ctest-tiers.sh
run_ctest_tiers "$root/build" "$root/build/Testing/junit" "$@"
