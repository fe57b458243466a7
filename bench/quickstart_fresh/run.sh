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
# Nothing is shared with the host's installation: no ccache, no guest image,
# no packages but the fresh root's. The root shares the host's kernel,
# network, /dev and CPU; run it on an otherwise idle machine (the figures are
# the machine's, and a concurrent build or guest slows every phase).
# --keep DIR keeps the root and the command's log in DIR. --root-tar FILE
# reuses (or, when missing, saves) the fresh root as a tarball, which saves
# the minute mmdebstrap takes when measuring repeatedly. Needs root,
# mmdebstrap and git. About 10 minutes. --from-log FILE prints the phases of
# a log kept earlier (DIR/quickstart.log) without running anything.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
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
  [ "$(id -u)" = 0 ] || { echo "quickstart_fresh: needs root (chroot, mounts)" >&2; exit 1; }
  for tool in mmdebstrap git chroot; do
    command -v "$tool" >/dev/null || { echo "quickstart_fresh: $tool is missing" >&2; exit 1; }
  done

  work=${keep:-$(mktemp -d /var/tmp/quickstart-fresh.XXXXXX)}
  mkdir -p "$work"
  root=$work/root log=$work/quickstart.log
  mounted=()
  cleanup() {
    # The quick start leaves disksweepd running (it says how to stop it).
    local lock=$root/var/lib/disksweep/disksweepd.lock pid
    if [ -f "$lock" ] && read -r pid <"$lock" 2>/dev/null && [[ $pid =~ ^[0-9]+$ ]]; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    fi
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}" 2>/dev/null || umount -lR "${mounted[i]}" || true; done
    [ -n "$keep" ] && return
    # Never remove through a mount that is still there (the root's /dev and
    # /sys are the host's own).
    if awk -v p="$root/" 'index($5, p) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
      echo "quickstart_fresh: mounts left under $root: not removing $work" >&2
      return
    fi
    rm -rf --one-file-system "$work"
  }
  trap cleanup EXIT

  # ---- a fresh Debian 12 root ---------------------------------------------------
  rm -rf --one-file-system "$root"
  if [ -n "$root_tar" ] && [ -f "$root_tar" ]; then
    note "fresh root from $root_tar"
    mkdir -p "$root" && tar -C "$root" -xf "$root_tar"
  else
    note "fresh root: mmdebstrap --variant=important bookworm (about a minute)"
    sources=()
    [ -f /etc/apt/sources.list.d/debian.sources ] && sources=(/etc/apt/sources.list.d/debian.sources)
    mmdebstrap --variant=important --include=git,ca-certificates bookworm "$root" "${sources[@]}" \
      >"$work/mmdebstrap.log" 2>&1 || { tail -n 20 "$work/mmdebstrap.log" >&2; exit 1; }
    [ -z "$root_tar" ] || tar -C "$root" -cf "$root_tar" .
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

  mount -t proc proc "$root/proc" && mounted+=("$root/proc")
  for dir in sys dev; do
    mount --rbind "/$dir" "$root/$dir" && mount --make-rslave "$root/$dir" && mounted+=("$root/$dir")
  done
  for dir in run tmp; do mount -t tmpfs tmpfs "$root/$dir" && mounted+=("$root/$dir"); done
  git clone -q "$repo" "$root/root/disksweep"
  commit=$(git -C "$root/root/disksweep" rev-parse --short HEAD)
  note "running scripts/quickstart.sh at $commit (log: $log)"

  # ---- the command, each line stamped with its elapsed time ----------------------
  start=$(date +%s%N)
  echo "0.000 [quickstart_fresh] commit $commit" >"$log"
  set +e
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c 'cd /root/disksweep && scripts/quickstart.sh' 2>&1 |
    while IFS= read -r line; do
      now=$(date +%s%N)
      printf '%d.%03d %s\n' $(((now - start) / 1000000000)) $((((now - start) / 1000000) % 1000)) "$line"
    done >>"$log"
  local status=${PIPESTATUS[0]} end
  set -e
  end=$(date +%s%N)
  printf '%d.%03d [quickstart_fresh] exit status %d\n' $(((end - start) / 1000000000)) \
    $((((end - start) / 1000000) % 1000)) "$status" >>"$log"
}

if [ -n "$from_log" ]; then
  log=$from_log
  [ -r "$log" ] || { echo "quickstart_fresh: cannot read $log" >&2; exit 1; }
else
  run_quickstart
fi

# ---- phases, from the lines that end each one ----------------------------------
# The elapsed time of the first line matching the ERE in $RE (empty when none
# does); through the environment, so awk leaves its backslashes alone.
at() { RE=$1 awk '$0 ~ ENVIRON["RE"] { print $1; exit }' "$log"; }
commit=$(awk '$2 == "[quickstart_fresh]" && $3 == "commit" { print $4; exit }' "$log")
status=$(awk '$2 == "[quickstart_fresh]" && $3 == "exit" { print $5; exit }' "$log")
total=$(at '^[0-9.]+ \[quickstart_fresh\] exit status')
t_install=$(at '\[deps\] (done|all [0-9]+ packages)')
t_build=$(at "\[quickstart\] waiting for the guest's root fs")
t_image=$(at '\[guest\] done in')
t_start=$(at '^[0-9.]+ sweep [0-9]+ ".*" submitted')
t_sweep=$(at '^[0-9.]+ sweep [0-9]+ (succeeded|failed|cancelled)')
verdicts=$(awk '/ (faster|slower) +[0-9]+( +!)?$/ { n++ } END { print n + 0 }' "$log")
span() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }' || echo null; }
phases=(install "$(span 0 "$t_install")" build "$(span "$t_install" "$t_build")"
        image "$(span "$t_build" "$t_image")" start "$(span "$t_image" "$t_start")"
        sweep "$(span "$t_start" "$t_sweep")" report "$(span "$t_sweep" "$total")" total "$(span 0 "$total")")

if [ "$json" = 1 ]; then
  printf '{"commit": "%s", "exit_status": %s, "called_verdicts": %d, "seconds": {' "$commit" "${status:-null}" "$verdicts"
  for ((i = 0; i < ${#phases[@]}; i += 2)); do
    printf '%s"%s": %s' "$([ "$i" = 0 ] || echo ', ')" "${phases[i]}" "${phases[i + 1]}"
  done
  printf '}}\n'
else
  printf '%-8s %8s\n' phase seconds
  for ((i = 0; i < ${#phases[@]}; i += 2)); do printf '%-8s %8s\n' "${phases[i]}" "${phases[i + 1]}"; done
  echo "commit ${commit:-?}, exit status ${status:-?}, $verdicts verdict(s) called (faster/slower) in the comparison"
  # The comparison the command printed: from its title to its "!" legend.
  awk '/^[0-9.]+ sweep [0-9]+: / { on = 1 } on { sub(/^[0-9.]+ /, ""); print } on && /^! / { exit }' "$log"
fi
[ "${status:-1}" = 0 ]
