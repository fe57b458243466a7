#!/usr/bin/env bash
# bench/quickstart_fresh: the README's first command as a new user meets it
# (issue 21 §1: at most 10 minutes on 2 cores from a fresh clone to a called
# verdict). Builds a fresh Debian 12 root (mmdebstrap --variant=important,
# plus git), clones this checkout's HEAD into it, runs scripts/quickstart.sh
# there under chroot, and prints each phase's wall time:
#
#   install  scripts/install-deps.sh --for quickstart (apt-get update + install)
#   build    the daemon, hostctl and the agent (the guest's root fs builds alongside)
#   image    what is left of the guest image once the binaries are built
#   start    disksweepd's start-up, until the sweep is submitted
#   sweep    config/sweeps/quickstart.toml, until its comparison is printed
#   report   the comparison, the HTML report, the closing lines
#   total    the whole command
#
#   bench/quickstart_fresh/run.sh [--json] [--keep DIR] [--root-tar FILE]
#   bench/quickstart_fresh/run.sh [--json] --from-log FILE
#
# The root, its mounts, the clone and the stamped log are bench/lib/
# fresh_root.sh's (bench/platforms/run.sh runs the same quick start on
# Debian 12 or 13, then the test tiers). Nothing is shared with the host's
# installation: no ccache, no guest image, no packages but the fresh root's.
# The root shares the host's kernel, network, /dev and CPU; run it on an
# otherwise idle machine (the figures are the machine's, and a concurrent
# build or guest slows every phase).
# --keep DIR keeps the root and the command's log in DIR. --root-tar FILE
# reuses (or, when missing, saves) the fresh root as a tarball, which saves
# the minute mmdebstrap takes when measuring repeatedly. Needs root,
# mmdebstrap and git. About 10 minutes. --from-log FILE prints the phases of
# a log kept earlier (DIR/quickstart.log) without running anything.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/fresh_root.sh
source "$repo/bench/lib/fresh_root.sh"
json=0 keep="" root_tar="" from_log=""
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=1; shift ;;
    --keep) keep=$2; shift 2 ;;
    --root-tar) root_tar=$2; shift 2 ;;
    --from-log) from_log=$2; shift 2 ;;
    *) echo "quickstart_fresh: unknown argument '$1' (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
note() { [ "$json" = 1 ] || echo "[quickstart_fresh] $*"; }

run_quickstart() {
  fresh_root_require quickstart_fresh
  fresh_root_init quickstart "${keep:-$(mktemp -d /var/tmp/quickstart-fresh.XXXXXX)}" "$([ -n "$keep" ] && echo 1 || echo 0)"
  if [ -n "$root_tar" ] && [ -f "$root_tar" ]; then
    note "fresh root from $root_tar"
  else
    note "fresh root: mmdebstrap --variant=important bookworm (about a minute)"
  fi
  fresh_root_build bookworm "$root_tar"
  fresh_root_enter "$repo"
  log=$FRESH_LOG
  note "running scripts/quickstart.sh at $FRESH_COMMIT (log: $log)"
  fresh_root_stamp_start quickstart_fresh
  local status=0
  fresh_root_run scripts/quickstart.sh || status=$?
  fresh_root_stamp "exit status $status"
}

if [ -n "$from_log" ]; then
  log=$from_log
  [ -r "$log" ] || { echo "quickstart_fresh: cannot read $log" >&2; exit 1; }
else
  run_quickstart
fi

# ---- phases, from the lines that end each one ----------------------------------
commit=$(awk '$2 == "[quickstart_fresh]" && $3 == "commit" { print $4; exit }' "$log")
status=$(awk '$2 == "[quickstart_fresh]" && $3 == "exit" { print $5; exit }' "$log")
total=$(stamped_at "$log" '^[0-9.]+ \[quickstart_fresh\] exit status')
quickstart_phases "$log" 0 "$total"
phases=("${QS_PHASES[@]}" total "$(span 0 "$total")")

if [ "$json" = 1 ]; then
  printf '{"commit": "%s", "exit_status": %s, "called_verdicts": %d, "seconds": %s}\n' \
    "$commit" "${status:-null}" "$QS_VERDICTS" "$(phases_json "${phases[@]}")"
else
  phases_table 8 "${phases[@]}"
  echo "commit ${commit:-?}, exit status ${status:-?}, $QS_VERDICTS verdict(s) called (faster/slower) in the comparison"
  quickstart_comparison "$log"
fi
[ "${status:-1}" = 0 ]
