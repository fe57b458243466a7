# shellcheck shell=bash
# shellcheck disable=SC2034 # FRESH_*, QS_* are read by the scripts that source this
# A fresh Debian root to run this checkout in, as a new user's machine would
# be: what bench/quickstart_fresh/run.sh (the README's quick start on Debian
# 12) and bench/platforms/run.sh (quick start and test tiers on Debian 12 or
# 13) share. Sourced, not run. Needs root, mmdebstrap, git and chroot.
#
# The root shares the host's kernel, network, /dev, /sys and CPU; /run and
# /tmp are its own (tmpfs). Nothing else is shared with the host's
# installation: no ccache, no guest image, no packages but the root's.
#
#   fresh_root_require NAME            root and the tools, or exit 1 naming what is missing
#   fresh_root_init NAME WORK KEEP     WORK/root, WORK/NAME.log; cleanup on EXIT
#   fresh_root_build SUITE [TAR]       mmdebstrap SUITE into the root, or unpack TAR
#   fresh_root_cached SUITE CACHE_DIR  the same, through a tarball cached by content
#   fresh_root_enter REPO              mounts, resolv.conf, REPO's HEAD cloned to /root/disksweep
#   fresh_root_stamp_start TAG [append]  starts the log: "0.000 [TAG] commit ID"
#   fresh_root_run COMMAND             runs COMMAND in the clone, each output line
#                                      stamped with its elapsed time into the log
#   fresh_root_stamp TEXT              appends "ELAPSED [TAG] TEXT" to the log
#   fresh_root_stop_daemon             stops a disksweepd the quick start left running
#   stamped_at LOG ERE                 elapsed time of the log's first line matching ERE
#   span FROM TO                       TO - FROM with one decimal, or null

# The root: --variant=important is a small Debian as a person installs it
# (apt, systemd's tools, no desktop); git to clone, ca-certificates for apt.
FRESH_ROOT_MMDEBSTRAP_ARGS=(--variant=important "--include=git,ca-certificates")
FRESH_ROOT_LIB=$(readlink -f "${BASH_SOURCE[0]}")

fresh_root_require() {
  local name=$1 tool
  [ "$(id -u)" = 0 ] || { echo "$name: needs root (chroot, mounts)" >&2; exit 1; }
  for tool in mmdebstrap git chroot; do
    command -v "$tool" >/dev/null || { echo "$name: $tool is missing (apt-get install $tool)" >&2; exit 1; }
  done
}

# fresh_root_init NAME WORK KEEP: the root is WORK/root and the log
# WORK/NAME.log (FRESH_ROOT, FRESH_LOG). On EXIT the root's mounts go, and
# WORK too unless KEEP is 1.
fresh_root_init() {
  FRESH_NAME=$1 FRESH_WORK=$2 FRESH_KEEP=$3
  mkdir -p "$FRESH_WORK"
  FRESH_ROOT=$FRESH_WORK/root FRESH_LOG=$FRESH_WORK/$FRESH_NAME.log
  FRESH_MOUNTED=()
  trap fresh_root_cleanup EXIT
}

fresh_root_cleanup() {
  fresh_root_stop_daemon
  local i
  for ((i = ${#FRESH_MOUNTED[@]} - 1; i >= 0; i--)); do
    umount -R "${FRESH_MOUNTED[i]}" 2>/dev/null || umount -lR "${FRESH_MOUNTED[i]}" || true
  done
  [ "$FRESH_KEEP" = 1 ] && return
  # Never remove through a mount that is still there (the root's /dev and
  # /sys are the host's own).
  if awk -v p="$FRESH_ROOT/" 'index($5, p) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    echo "$FRESH_NAME: mounts left under $FRESH_ROOT: not removing $FRESH_WORK" >&2
    return
  fi
  rm -rf --one-file-system "$FRESH_WORK"
}

# The quick start leaves disksweepd running (it says how to stop it).
fresh_root_stop_daemon() {
  local lock=$FRESH_ROOT/var/lib/disksweep/disksweepd.lock pid
  if [ -f "$lock" ] && read -r pid <"$lock" 2>/dev/null && [[ $pid =~ ^[0-9]+$ ]]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
}

# fresh_root_sources SUITE OUT: the host's apt entries for SUITE, as the
# guest image takes them (guest/lib/rootfs.sh); returns 1 when the host has
# none (then mmdebstrap's default mirror for SUITE serves it).
fresh_root_sources() {
  # shellcheck source=../../guest/lib/rootfs.sh
  (source "$(dirname "$FRESH_ROOT_LIB")/../../guest/lib/rootfs.sh" && guest_apt_sources "$1" "$2")
}

# fresh_root_build SUITE [TAR]: a fresh root of SUITE (about a minute), or
# TAR's when it exists; when TAR is given and missing, it is saved there.
fresh_root_build() {
  local suite=$1 tar=${2:-} sources=$FRESH_WORK/apt-sources
  rm -rf --one-file-system "$FRESH_ROOT"
  if [ -n "$tar" ] && [ -f "$tar" ]; then
    mkdir -p "$FRESH_ROOT" && tar -C "$FRESH_ROOT" -xf "$tar"
    return
  fi
  local -a mirror=()
  fresh_root_sources "$suite" "$sources" && mirror=("$sources")
  mmdebstrap "${FRESH_ROOT_MMDEBSTRAP_ARGS[@]}" "$suite" "$FRESH_ROOT" "${mirror[@]}" \
    >"$FRESH_WORK/mmdebstrap.log" 2>&1 || { tail -n 20 "$FRESH_WORK/mmdebstrap.log" >&2; exit 1; }
  [ -z "$tar" ] || tar -C "$FRESH_ROOT" -cf "$tar" .
}

# fresh_root_cached SUITE CACHE_DIR: fresh_root_build through
# CACHE_DIR/platform-SUITE-KEY.tar, KEY a sha256 of what makes the root
# (this file, the suite, mmdebstrap's arguments, the host's apt entries for
# the suite), as the guest image is cached: a changed recipe builds a new
# tarball, an unchanged one reuses it. Written under a temporary name and
# renamed, so a failed build leaves nothing; older tarballs of SUITE go.
# Sets FRESH_ROOT_TAR and FRESH_ROOT_FROM_CACHE (1 when reused).
fresh_root_cached() {
  local suite=$1 cache=$2 sources=$FRESH_WORK/apt-sources key
  fresh_root_sources "$suite" "$sources" || : >"$sources"
  key=$({ cat "$FRESH_ROOT_LIB"; echo "$suite"; printf '%s\n' "${FRESH_ROOT_MMDEBSTRAP_ARGS[@]}"; cat "$sources"; } |
    sha256sum | cut -c1-16)
  FRESH_ROOT_TAR=$cache/platform-$suite-$key.tar FRESH_ROOT_FROM_CACHE=1
  if [ ! -f "$FRESH_ROOT_TAR" ]; then
    FRESH_ROOT_FROM_CACHE=0
    mkdir -p "$cache"
    local partial=$FRESH_ROOT_TAR.partial.$$
    fresh_root_build "$suite" "$partial"
    find "$cache" -maxdepth 1 -name "platform-$suite-*.tar" -delete
    mv "$partial" "$FRESH_ROOT_TAR"
    return
  fi
  fresh_root_build "$suite" "$FRESH_ROOT_TAR"
}

# fresh_root_enter REPO: the root's mounts and name resolution, and a clone
# of REPO's HEAD in /root/disksweep (FRESH_COMMIT: its short id); a clone
# already there (a kept root) stays as it is.
fresh_root_enter() {
  local repo=$1 dir
  cp /etc/resolv.conf "$FRESH_ROOT/etc/resolv.conf" 2>/dev/null || true
  mount -t proc proc "$FRESH_ROOT/proc" && FRESH_MOUNTED+=("$FRESH_ROOT/proc")
  for dir in sys dev; do
    mount --rbind "/$dir" "$FRESH_ROOT/$dir" && mount --make-rslave "$FRESH_ROOT/$dir" &&
      FRESH_MOUNTED+=("$FRESH_ROOT/$dir")
  done
  for dir in run tmp; do mount -t tmpfs tmpfs "$FRESH_ROOT/$dir" && FRESH_MOUNTED+=("$FRESH_ROOT/$dir"); done
  [ -d "$FRESH_ROOT/root/disksweep" ] || git clone -q "$repo" "$FRESH_ROOT/root/disksweep"
  FRESH_COMMIT=$(git -C "$FRESH_ROOT/root/disksweep" rev-parse --short HEAD)
}

# Elapsed time since fresh_root_stamp_start, as SECONDS.MILLISECONDS.
fresh_root_elapsed() {
  local now=${EPOCHREALTIME/./} # microseconds
  local ms=$(((now - FRESH_START_US) / 1000))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

# fresh_root_stamp_start TAG [append]: starts the log; with "append" an
# existing log goes on, its clock from its last stamp (phases run again in a
# kept root add to the same log).
fresh_root_stamp_start() {
  FRESH_TAG=$1 FRESH_START_US=${EPOCHREALTIME/./}
  if [ "${2:-}" = append ] && [ -s "$FRESH_LOG" ]; then
    local last
    last=$(awk '$1 ~ /^[0-9]+\.[0-9]+$/ { t = $1 } END { print t }' "$FRESH_LOG")
    FRESH_START_US=$((FRESH_START_US - ${last/./} * 1000))
    return
  fi
  echo "0.000 [$FRESH_TAG] commit $FRESH_COMMIT" >"$FRESH_LOG"
}

fresh_root_stamp() { echo "$(fresh_root_elapsed) [$FRESH_TAG] $*" >>"$FRESH_LOG"; }

# fresh_root_run COMMAND: runs COMMAND (bash) in /root/disksweep inside the
# root with a clean environment, its output stamped into the log; returns
# COMMAND's exit status.
fresh_root_run() {
  local line status
  set +e
  chroot "$FRESH_ROOT" /usr/bin/env -i HOME=/root TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /root/disksweep && $1" 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$(fresh_root_elapsed)" "$line"; done >>"$FRESH_LOG"
  status=${PIPESTATUS[0]}
  set -e
  return "$status"
}

# stamped_at LOG ERE [FROM]: the elapsed time of LOG's first line matching
# ERE (at or after elapsed FROM; empty when none does); the ERE goes through
# the environment, so awk leaves its backslashes alone.
stamped_at() { RE=$2 awk -v from="${3:-0}" '$1 + 0 >= from + 0 && $0 ~ ENVIRON["RE"] { print $1; exit }' "$1"; }
# stamped_last LOG ERE: the same for the last matching line.
stamped_last() { RE=$2 awk '$0 ~ ENVIRON["RE"] { t = $1 } END { print t }' "$1"; }

span() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }' || echo null; }

# quickstart_phases LOG FROM TO: the quick start's phases in LOG, whose
# scripts/quickstart.sh began at elapsed FROM and ended at TO, from the
# lines that end each one: QS_PHASES (name, seconds, ...) and QS_VERDICTS
# (the comparison's faster/slower verdicts).
#   install  scripts/install-deps.sh --for quickstart (apt-get update + install)
#   build    the daemon, hostctl and the agent (the guest's root fs builds alongside)
#   image    what is left of the guest image once the binaries are built
#   start    disksweepd's start-up, until the sweep is submitted
#   sweep    config/sweeps/quickstart.toml, until its comparison is printed
#   report   the comparison, the HTML report, the closing lines
quickstart_phases() {
  local log=$1 from=$2 to=$3 t_install t_build t_image t_start t_sweep
  t_install=$(stamped_at "$log" '\[deps\] (done|all [0-9]+ packages)' "$from")
  t_build=$(stamped_at "$log" "\[quickstart\] waiting for the guest's root fs" "$from")
  t_image=$(stamped_at "$log" '\[guest\] done in' "$from")
  t_start=$(stamped_at "$log" '^[0-9.]+ sweep [0-9]+ ".*" submitted' "$from")
  t_sweep=$(stamped_at "$log" '^[0-9.]+ sweep [0-9]+ (succeeded|failed|cancelled)' "$from")
  QS_VERDICTS=$(awk -v a="$from" -v b="$to" '$1 + 0 >= a && $1 + 0 <= b && / (faster|slower) +[0-9]+( +!)?$/ { n++ } END { print n + 0 }' "$log")
  QS_PHASES=(install "$(span "$from" "$t_install")" build "$(span "$t_install" "$t_build")"
             image "$(span "$t_build" "$t_image")" start "$(span "$t_image" "$t_start")"
             sweep "$(span "$t_start" "$t_sweep")" report "$(span "$t_sweep" "$to")")
}

# quickstart_comparison LOG [FROM]: the comparison the quick start printed
# (at or after elapsed FROM), from its title to its "!" legend, without the
# stamps.
quickstart_comparison() {
  awk -v from="${2:-0}" '$1 + 0 >= from + 0 && /^[0-9.]+ sweep [0-9]+: / { on = 1 }
    on { sub(/^[0-9.]+ /, ""); print } on && /^! / { exit }' "$1"
}

# phases_json NAME VALUE...: {"NAME": VALUE, ...} (VALUEs are JSON already).
phases_json() {
  local sep=""
  printf '{'
  while [ $# -gt 1 ]; do printf '%s"%s": %s' "$sep" "$1" "$2"; sep=", "; shift 2; done
  printf '}'
}

# phases_table WIDTH NAME VALUE...: a "phase seconds" header, then one line
# each, the names WIDTH wide.
phases_table() {
  local width=$1
  shift
  printf "%-${width}s %8s\n" phase seconds
  while [ $# -gt 1 ]; do printf "%-${width}s %8s\n" "$1" "$2"; shift 2; done
}
