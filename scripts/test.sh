#!/usr/bin/env bash
# The README's second command: install, build, build the guest images and
# the Debian 13 root with QEMU 10, run the whole test suite (unit,
# integration, e2e, proxmox on 8.4 and 9.1, ...). Extra arguments go to ctest,
# e.g. scripts/test.sh -L unit
# The unit tier runs in parallel, beside the others, which run one test at a
# time (scripts/lib/ctest-tiers.sh). A test that skips fails the run unless
# tests/allowed-skips.txt allows it (scripts/check-skips.sh reads ctest's
# JUnit output, build/Testing/junit.unit.xml and junit.serial.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

scripts/install-deps.sh
# e2e tests boot the real guest image from here.
export DISKSWEEP_TEST_IMAGE_DIR="${DISKSWEEP_TEST_IMAGE_DIR:-/var/lib/disksweep/images}"
# The guests' root file systems and the Debian 13 root with QEMU 10 (the
# simulated Proxmox VE 9.1 runs its real guests under it) are mmdebstrap
# builds: minutes of downloads and dpkg, mostly one core, each cached by
# content (a warm machine finds them in a second). On a fresh machine they
# build while the binaries compile; the images are finished once the agent
# is there. Their output goes to a log, printed when they fail.
roots_log=$(mktemp /tmp/disksweep-roots.XXXXXX.log)
{
    scripts/build-guest-image.sh --rootfs-only "$DISKSWEEP_TEST_IMAGE_DIR" &&
        tests/support/build-debian13-root.sh
} >"$roots_log" 2>&1 &
roots_pid=$!
# A failed build does not leave them running.
trap 'kill "$roots_pid" 2>/dev/null || true; rm -f "$roots_log"' EXIT
scripts/build.sh
echo "[test] waiting for the guests' root file systems and the Debian 13 root (log: $roots_log)"
wait "$roots_pid" || { cat "$roots_log" >&2; exit 1; }
scripts/build-guest-image.sh "$DISKSWEEP_TEST_IMAGE_DIR"
# shellcheck source=lib/ctest-tiers.sh
source scripts/lib/ctest-tiers.sh
# The unit pass runs beside the serial one (ctest-tiers.sh).
CTEST_TIERS_UNIT_BESIDE=1 run_ctest_tiers "$root/build" "$root/build/Testing/junit" "$@"
