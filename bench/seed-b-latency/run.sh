#!/usr/bin/env bash
# Seed study B (config/sweeps/seed-fio-rbd.toml) on the throwaway test Ceph
# with an emulated network delay (issue 18 §5), one sweep per delay:
#
#   bench/seed-b-latency/run.sh BUILD IMAGE_DIR OUT_DIR DELAY_MS...
#   e.g. bench/seed-b-latency/run.sh build /var/tmp/ds-images bench/seed-b-latency 1 2 0.5
#
# For each delay: tests/support/ceph/ceph-up.sh with CEPH_TEST_DELAY_MS, a
# disksweepd of its own (TCG, the rbd storage line of
# tests/backend/rbd/rbd_guest_e2e_test.cpp), the study's sweep with the
# study's fio job unchanged (randrw 4k, qd 64, 4 jobs x 256 MiB, 10 s) but
# cache = "none" only, four filesystems (SEED_B_FILESYSTEMS) and adaptive
# rounds (SEED_B_REPETITIONS); then OUT_DIR/delay-D.json (hostctl --json
# results compare: read IOPS, the primary metric), delay-D-write.json (the
# same for write IOPS), delay-D.txt (the text table with --all),
# delay-D-sweep.txt (hostctl sweep show: the rounds' decisions) and
# delay-D-netdelay.txt (netdelay.py's counts).
# Guests run under flock /tmp/ds-guest.lock (one guest tier at a time).
set -euo pipefail

[[ $# -ge 4 ]] || { sed -n '2,17p' "$0" >&2; exit 2; }
build=$(cd "$1" && pwd)
image_dir=$2
out_dir=$(mkdir -p "$3" && cd "$3" && pwd)
shift 3
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ceph_dir=${SEED_B_CEPH_DIR:-/var/tmp/ds-seed-b-ceph}
readonly filesystems=${SEED_B_FILESYSTEMS:-'"ext4", "ext4:barrier=0,data=writeback", "btrfs", "btrfs:nodatacow"'}
readonly repetitions=${SEED_B_REPETITIONS:-'{ min = 3, max = 4, ci = "5%" }'}

say() { echo "seed-b-latency: $(date -u +%T) $*" >&2; }

# The shipped spec with this study's edits; each edit must apply exactly once.
write_spec() {
    python3 - "$source_dir/config/sweeps/seed-fio-rbd.toml" "$1" "$2" "$filesystems" \
        "$repetitions" <<'PY'
import re, sys
source, target, pool, filesystems, repetitions = sys.argv[1:]
spec = open(source).read()
edits = [
    (r'name = "seed-fio-rbd"', 'name = "seed-fio-rbd-latency"'),
    (r'repetitions = 3', f'repetitions = {repetitions}'),
    (r'storage = "rbd:disksweep"', f'storage = "rbd:{pool}"'),
    (r'cache = \["none", "unsafe"\]', 'cache = "none"'),
    (r'filesystem = \[[^\]]*\]', f'filesystem = [{filesystems}]'),
]
for pattern, replacement in edits:
    spec, count = re.subn(pattern, lambda _: replacement, spec)
    if count != 1:
        sys.exit(f"seed-fio-rbd.toml: '{pattern}' matched {count} times, not once")
open(target, "w").write(spec)
PY
}

# Phase: a daemon of our own on the cluster, until its socket answers.
start_daemon() {
    local state=$1
    # shellcheck disable=SC1091
    . "$ceph_dir/env"
    "$build/daemon/disksweepd" --state-dir "$state" --socket "$state/sock" \
        --image-dir "$image_dir" --accel tcg --boot-timeout 180 --instance seedblat \
        --storage "rbd:$CEPH_POOL,mon_host=$CEPH_MON_HOST,id=admin,conf=$CEPH_ADMIN_CONF" \
        >"$state/daemon.log" 2>&1 &
    daemon_pid=$!
    local tries
    for ((tries = 0; tries < 100; ++tries)); do
        "$build/hostctl/hostctl" --socket "$state/sock" sweep list >/dev/null 2>&1 && return 0
        kill -0 "$daemon_pid" 2>/dev/null || { tail "$state/daemon.log" >&2; return 1; }
        sleep 0.3
    done
    say "disksweepd did not answer in 30 s"
    return 1
}

run_delay() {
    local delay=$1 state
    state=$(mktemp -d /var/tmp/ds-seed-b-XXXXXX)
    CEPH_TEST_DELAY_MS=$delay "$source_dir/tests/support/ceph/ceph-up.sh" "$ceph_dir"
    # shellcheck disable=SC1091
    . "$ceph_dir/env"
    write_spec "$state/spec.toml" "$CEPH_POOL"
    start_daemon "$state"
    local hostctl=("$build/hostctl/hostctl" --socket "$state/sock")
    say "delay $delay ms: waiting for the guest lock"
    local started=$SECONDS status=0
    flock /tmp/ds-guest.lock "${hostctl[@]}" sweep submit "$state/spec.toml" --wait \
        >"$state/submit.out" 2>&1 || status=$?
    say "delay $delay ms: sweep done in $((SECONDS - started)) s (hostctl exit $status)"
    "${hostctl[@]}" --json results compare 1 >"$out_dir/delay-$delay.json" || true
    "${hostctl[@]}" --json results compare 1 --metric write_iops \
        >"$out_dir/delay-$delay-write.json" || true
    "${hostctl[@]}" results compare 1 --all >"$out_dir/delay-$delay.txt" || true
    "${hostctl[@]}" sweep show 1 >"$out_dir/delay-$delay-sweep.txt" || true
    cp "$ceph_dir/run/netdelay.stats" "$out_dir/delay-$delay-netdelay.txt" 2>/dev/null || true
    kill "$daemon_pid"; wait "$daemon_pid" || true
    "$source_dir/tests/support/ceph/ceph-down.sh" "$ceph_dir"
    say "delay $delay ms: state kept in $state"
}

for delay in "$@"; do run_delay "$delay"; done
