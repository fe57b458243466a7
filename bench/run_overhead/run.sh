#!/usr/bin/env bash
# bench/run_overhead: what a run costs besides its workload (issue 21 §3).
# Starts a private disksweepd (its own state dir and socket, the embedded
# libvirt driver), runs bench/run_overhead/overhead.toml, and prints each
# phase's median, min and max over the succeeded runs, per filesystem and
# over all (bench/run_overhead/phase_table.cpp says what each row is).
#
#   bench/run_overhead/run.sh [--runs N] [--accel tcg|kvm|auto] [--image-dir DIR]
#                             [--spec FILE] [--json] [--keep DIR] [--no-reaper]
#
# --runs N: repetitions of each configuration (default 3: 9 runs, about
# 3 minutes under TCG here). --keep DIR keeps the state dir (results.db,
# console logs of failed runs) in DIR. Run scripts/build.sh first.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
runs=3 accel=tcg image_dir=/var/lib/disksweep/images json=0 keep="" reaper=1
spec=$repo/bench/run_overhead/overhead.toml
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --accel) accel=$2; shift 2 ;;
    --image-dir) image_dir=$2; shift 2 ;;
    --spec) spec=$2; shift 2 ;;
    --json) json=1; shift ;;
    --keep) keep=$2; shift 2 ;;
    --no-reaper) reaper=0; shift ;;
    *) echo "run_overhead: unknown argument '$1' (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "run_overhead: --runs wants a positive integer, not '$runs'" >&2; exit 2; }
daemon=$repo/build/daemon/disksweepd hostctl=$repo/build/hostctl/hostctl
table=$repo/build/bench/run_overhead_table
for binary in "$daemon" "$hostctl" "$table"; do
  [ -x "$binary" ] || { echo "run_overhead: $binary is missing: run scripts/build.sh" >&2; exit 1; }
done

work=${keep:-$(mktemp -d /var/tmp/run-overhead.XXXXXX)}
mkdir -p "$work/state"
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT

socket=$work/api.sock
# Under a subreaper, as the tests and the quick start (scripts/lib/reaper.sh):
# --no-reaper measures what this machine's PID 1 costs each teardown.
# shellcheck source=../../scripts/lib/reaper.sh
source "$repo/scripts/lib/reaper.sh"
[ "$reaper" = 1 ] || REAPER=()
# A simple command, so that $! is tini's pid (or the daemon's) and the
# cleanup's SIGTERM reaches the daemon.
"${REAPER[@]}" "$daemon" --state-dir "$work/state" --socket "$socket" --image-dir "$image_dir" \
  --accel "$accel" --boot-timeout 300 >"$work/disksweepd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do
  "$hostctl" --socket "$socket" status >/dev/null 2>&1 && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/disksweepd.log" >&2; exit 1; }
  sleep 0.2
done

# The spec with `repetitions` replaced by --runs.
sed "s/^repetitions = .*/repetitions = $runs/" "$spec" >"$work/spec.toml"
submitted=$("$hostctl" --socket "$socket" sweep submit "$work/spec.toml")
sweep_id=$(sed -n 's/^sweep \([0-9][0-9]*\) .* submitted: .*/\1/p' <<<"$submitted")
[ -n "$sweep_id" ] || { echo "run_overhead: no sweep id in: $submitted" >&2; exit 1; }
echo "run_overhead: sweep $sweep_id, $(sed -n 's/.*submitted: //p' <<<"$submitted"), accel $accel" >&2
"$hostctl" --socket "$socket" sweep watch "$sweep_id" >&2 || echo "run_overhead: some runs failed; the table has the succeeded ones" >&2
"$hostctl" --socket "$socket" --json sweep show "$sweep_id" --limit 10000 |
  if [ "$json" = 1 ]; then "$table" --json; else "$table"; fi
