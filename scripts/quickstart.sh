#!/usr/bin/env bash
# The README's first command: install, build, build the guest image, start
# disksweepd on the embedded libvirt default, run config/sweeps/quickstart.toml,
# print its comparison, write its HTML report. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

# Only the packages the quick start runs; scripts/test.sh installs the rest.
scripts/install-deps.sh --for quickstart
# The quick start sweep runs fio only: the base image is enough (the MariaDB
# variant is built by scripts/build-guest-image.sh without this variable).
export DISKSWEEP_IMAGE_VARIANTS=base
# The guest's root fs (mmdebstrap: minutes of downloads and dpkg, mostly one
# core) builds while the binaries compile; the image is finished once the
# agent is there. Its output goes to a log, so the two do not interleave.
rootfs_log=$(mktemp /tmp/disksweep-rootfs.XXXXXX.log)
scripts/build-guest-image.sh --rootfs-only /var/lib/disksweep/images >"$rootfs_log" 2>&1 &
rootfs_pid=$!
# A failed build does not leave it running.
trap 'kill "$rootfs_pid" 2>/dev/null || true' EXIT
# Only the binaries it runs; scripts/test.sh builds the tests. A fresh
# clone's build finds nothing in ccache: it builds for speed of compiling
# (scripts/build.sh, DISKSWEEP_COLD_BUILD); a build dir scripts/test.sh made
# keeps its own flags, and its objects.
if [ ! -f build/CMakeCache.txt ] || grep -q '^DISKSWEEP_PRECOMPILE_JSON:BOOL=ON' build/CMakeCache.txt; then
  export DISKSWEEP_COLD_BUILD=1
fi
# One job more than cores: the root fs build waits on downloads and disk for
# part of its time, and a third compiler fills those gaps.
DISKSWEEP_BUILD_JOBS=$(($(nproc) + 1)) scripts/build.sh disksweepd hostctl disksweep-agent
echo "[quickstart] waiting for the guest's root fs (log: $rootfs_log)"
wait "$rootfs_pid" || { cat "$rootfs_log" >&2; exit 1; }
trap - EXIT
rm -f "$rootfs_log"
scripts/build-guest-image.sh /var/lib/disksweep/images

socket=/run/disksweep/disksweepd.sock
state_dir=/var/lib/disksweep  # config/disksweepd.conf's state-dir
report=$state_dir/quickstart-report.html
export DISKSWEEP_SOCKET="$socket"
hostctl=(build/hostctl/hostctl --socket "$socket")
started_daemon=0
if ! "${hostctl[@]}" status >/dev/null 2>&1; then
  started_daemon=1
  mkdir -p "$state_dir" /run/disksweep
  echo "[quickstart] starting disksweepd (log: $state_dir/disksweepd.log)"
  nohup bash -c 'source scripts/lib/reaper.sh; with_reaper "$@"' _ \
    build/daemon/disksweepd --config config/disksweepd.conf >>"$state_dir/disksweepd.log" 2>&1 &
  for _ in $(seq 1 120); do
    [ -S "$socket" ] && "${hostctl[@]}" status >/dev/null 2>&1 && break
    sleep 1
  done
fi
"${hostctl[@]}" status
# Submitted without --wait to learn the sweep's id ("sweep ID "NAME" submitted:
# ..."), then followed and compared as --wait would.
submitted=$("${hostctl[@]}" sweep submit config/sweeps/quickstart.toml)
echo "$submitted"
sweep_id=$(sed -n 's/^sweep \([0-9][0-9]*\) .* submitted: .*/\1/p' <<<"$submitted")
[ -n "$sweep_id" ] || { echo "[quickstart] no sweep id in hostctl's answer" >&2; exit 1; }
# A failed run still leaves a comparison and a report of the others: the
# exit status comes at the end.
watched=0
"${hostctl[@]}" sweep watch "$sweep_id" || watched=$?
echo
"${hostctl[@]}" results compare "$sweep_id"
"${hostctl[@]}" results report "$sweep_id" --output "$report"
echo
echo "[quickstart] the sweep's HTML report: $report"
if [ "$started_daemon" -eq 1 ]; then
  # disksweepd writes its pid to STATE_DIR/disksweepd.lock and stops cleanly on SIGTERM.
  echo "[quickstart] disksweepd keeps running; stop it with: kill \$(cat $state_dir/disksweepd.lock)"
else
  echo "[quickstart] disksweepd was already running (not started by this script); it keeps running"
fi
exit "$watched"
