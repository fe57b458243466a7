#!/usr/bin/env bash
# The README's first command: install, build, build the guest image, start
# disksweepd on the embedded libvirt default, run config/sweeps/quickstart.toml
# and print its comparison. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# Only what the quick start runs; scripts/test.sh builds the tests.
scripts/build.sh disksweepd hostctl disksweep-agent
# The quick start sweep runs fio only: the base image is enough (the MariaDB
# variant is built by scripts/build-guest-image.sh without this variable).
DISKSWEEP_IMAGE_VARIANTS=base scripts/build-guest-image.sh /var/lib/disksweep/images

socket=/run/disksweep/disksweepd.sock
export DISKSWEEP_SOCKET="$socket"
if ! build/hostctl/hostctl --socket "$socket" status >/dev/null 2>&1; then
  mkdir -p /var/lib/disksweep /run/disksweep
  echo "[quickstart] starting disksweepd (log: /var/lib/disksweep/disksweepd.log)"
  nohup build/daemon/disksweepd --config config/disksweepd.conf \
    >>/var/lib/disksweep/disksweepd.log 2>&1 &
  for _ in $(seq 1 120); do
    [ -S "$socket" ] && build/hostctl/hostctl --socket "$socket" status >/dev/null 2>&1 && break
    sleep 1
  done
fi
build/hostctl/hostctl --socket "$socket" status
build/hostctl/hostctl --socket "$socket" sweep submit config/sweeps/quickstart.toml --wait
echo "[quickstart] disksweepd keeps running; stop it with: kill \$(cat /var/lib/disksweep/disksweepd.lock)"
