#!/usr/bin/env bash
# bench/platforms: disksweep on a fresh Debian 12 (bookworm) or 13 (trixie)
# host, as a person or CI would check a release (issue 33 §2). Builds a fresh
# root of that release (mmdebstrap, cached by content), clones this
# checkout's HEAD into it and runs there, under chroot, one phase after the
# other:
#
#   quickstart   scripts/quickstart.sh, the README's first command: install,
#                build, guest image, disksweepd on the embedded libvirt driver
#                and that release's QEMU, the quick start sweep, its verdicts
#                (sub-phases as bench/quickstart_fresh/run.sh prints them)
#   deps         scripts/install-deps.sh: every package the tests use
#   build        scripts/build.sh: everything, tests included, in the quick
#                start's build directory with its flags (DISKSWEEP_COLD_BUILD:
#                -O1, no debug info; the tests are -O0 in every build), so the
#                libraries it built are not built again; its compiler warnings
#                are counted (that release's GCC)
#   images       scripts/build-guest-image.sh: the guest images the tests boot
#                (base and MariaDB variant), as scripts/test.sh builds them
#   unit         ctest -L unit, one test per core
#   integration  ctest -L integration
#   axes         ctest -L axes: every disk axis read back at every level
#                (domain XML, QMP, the QEMU process, the guest) from that
#                release's libvirt and QEMU, and the injected mismatches
#                that must fail their runs (docs/verification.md)
#   packaging    ctest -L packaging: the .deb built for that release,
#                installed in a fresh root of it
#
# and prints each phase's wall time (also of the root and the clone), its
# exit status and the tests' summaries; --json prints the same figures.
#
#   bench/platforms/run.sh trixie|bookworm [--json] [--keep DIR] [--phases LIST]
#   bench/platforms/run.sh [--json] --from-log FILE
#
# --keep DIR keeps the root and the log (DIR/platforms.log) in DIR.
# --phases LIST runs only those phases (comma separated, in the order above;
# a test phase needs a build from this run or a kept DIR's); with --keep and
# a root kept there, they run in that root and add to its log, and the
# figures are the last run of each phase. --from-log FILE prints the figures
# of a log kept earlier without running anything.
#
# The root: CACHE_DIR/platform-SUITE-KEY.tar (DISKSWEEP_PLATFORM_CACHE, else
# /var/cache/disksweep), KEY a hash of how it is made (bench/lib/
# fresh_root.sh). The quick start's guest is Debian 12 (the default guest)
# whatever the host: on a trixie root guest/build-image.sh finds no
# bookworm apt entries and takes mmdebstrap's default mirror. Needs root,
# mmdebstrap, git and the Debian mirror; about an hour on 2 cores (the
# build is most of it). The root shares the host's kernel and CPU: run it
# on an otherwise idle machine. Not part of every CI run (scripts/test.sh).
# Exit status: 0 when every phase run passed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/fresh_root.sh
source "$repo/bench/lib/fresh_root.sh"

SUITES=(bookworm trixie)
# Each phase: its name and the command it runs in the clone, in order. The
# ctest phases check their skips as scripts/test.sh does (scripts/check-skips.sh).
IMAGE_DIR=/var/lib/disksweep/images # scripts/test.sh's DISKSWEEP_TEST_IMAGE_DIR
ctest_phase() {
  echo "export DISKSWEEP_TEST_IMAGE_DIR=$IMAGE_DIR && source scripts/lib/reaper.sh &&" \
    "junit=build/Testing/platform-$1.xml && rm -f \$junit &&" \
    "{ with_reaper ctest --test-dir build -L '^$1\$' $2 --output-on-failure --timeout 1500 --output-junit \"\$PWD/\$junit\";" \
    "s=\$?; [ ! -f \$junit ] || scripts/check-skips.sh \$junit || s=1; exit \$s; }"
}
PHASES=(
  quickstart "scripts/quickstart.sh"
  deps "scripts/install-deps.sh"
  build "DISKSWEEP_COLD_BUILD=1 scripts/build.sh"
  images "scripts/build-guest-image.sh $IMAGE_DIR"
  unit "$(ctest_phase unit "-j\$(nproc)")"
  integration "$(ctest_phase integration "")"
  axes "$(ctest_phase axes "")"
  packaging "$(ctest_phase packaging "")"
)
# Phases that need the build: not run when it failed in this run.
NEEDS_BUILD=" images unit integration axes packaging "

usage() { echo "usage: bench/platforms/run.sh ${SUITES[*]// /|} [--json] [--keep DIR] [--phases LIST] | [--json] --from-log FILE" >&2; exit 2; }
suite="" json=0 keep="" from_log="" only=""
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=1; shift ;;
    --keep) keep=${2:?--keep needs a directory}; shift 2 ;;
    --phases) only=${2:?--phases needs a list}; shift 2 ;;
    --from-log) from_log=${2:?--from-log needs a file}; shift 2 ;;
    -*) echo "platforms: unknown option '$1'" >&2; usage ;;
    *) [ -z "$suite" ] || usage; suite=$1; shift ;;
  esac
done
note() { [ "$json" = 1 ] || echo "[platforms] $*"; }

check_arguments() {
  [[ " ${SUITES[*]} " == *" $suite "* ]] ||
    { echo "platforms: '${suite}' is not a release this checks; one of: ${SUITES[*]}" >&2; usage; }
  local name known=" "
  for ((i = 0; i < ${#PHASES[@]}; i += 2)); do known+="${PHASES[i]} "; done
  for name in ${only//,/ }; do
    [[ $known == *" $name "* ]] || { echo "platforms: no phase '$name'; the phases:$known" >&2; exit 2; }
  done
}

# run_phase NAME COMMAND: stamps its start and exit status into the log.
run_phase() {
  local status=0
  note "phase $1 (log: $FRESH_LOG)"
  fresh_root_stamp "phase $1 begins"
  fresh_root_run "$2" || status=$?
  fresh_root_stamp "phase $1 status $status"
  return "$status"
}

run_platform() {
  fresh_root_require platforms
  check_arguments
  local work=${keep:-$(mktemp -d /var/tmp/platform-"$suite".XXXXXX)} started=${EPOCHREALTIME/./}
  fresh_root_init platforms "$work" "$([ -n "$keep" ] && echo 1 || echo 0)"
  local root_note append=""
  if [ -n "$keep" ] && [ -n "$only" ] && [ -d "$FRESH_ROOT/root/disksweep" ]; then
    # Phases again in a kept root (e.g. the tests after a failed build): its
    # clone, build and packages as they are.
    note "reusing the root kept in $work (adding to its log)"
    root_note="kept $work" append=append
  else
    note "fresh $suite root (cache: ${DISKSWEEP_PLATFORM_CACHE:-/var/cache/disksweep})"
    fresh_root_cached "$suite" "${DISKSWEEP_PLATFORM_CACHE:-/var/cache/disksweep}"
    root_note="cached $FRESH_ROOT_FROM_CACHE $(basename "$FRESH_ROOT_TAR")"
  fi
  local rooted=${EPOCHREALTIME/./}
  fresh_root_enter "$repo"
  fresh_root_stamp_start platforms $append
  [ -z "$append" ] || fresh_root_stamp "commit $FRESH_COMMIT"
  fresh_root_stamp "suite $suite"
  [ -n "$append" ] || fresh_root_stamp "root $(awk -v us=$((rooted - started)) 'BEGIN { printf "%.1f", us / 1e6 }') s, $root_note"
  local failed=0 build_failed=0 name
  for ((i = 0; i < ${#PHASES[@]}; i += 2)); do
    name=${PHASES[i]}
    [ -z "$only" ] || [[ ",$only," == *",$name,"* ]] || continue
    if [ "$build_failed" = 1 ] && [[ $NEEDS_BUILD == *" $name "* ]]; then
      fresh_root_stamp "phase $name not run: the build failed"
      continue
    fi
    if ! run_phase "$name" "${PHASES[i + 1]}"; then
      failed=1
      [ "$name" != build ] || build_failed=1
    fi
    # The quick start leaves disksweepd running: the tests start their own.
    [ "$name" != quickstart ] || fresh_root_stop_daemon
  done
  fresh_root_stamp "exit status $failed"
}

if [ -n "$from_log" ]; then
  [ -r "$from_log" ] || { echo "platforms: cannot read $from_log" >&2; exit 1; }
  FRESH_LOG=$from_log
else
  [ -n "$suite" ] || usage
  run_platform
fi
log=$FRESH_LOG

# ---- figures, from the stamped log ----------------------------------------------
# field ERE N: field N of the last [platforms] line matching ERE.
field() { RE=$1 awk '$2 == "[platforms]" && $0 ~ ENVIRON["RE"] { f = $N } END { print f }' N="$2" "$log"; }
commit=$(field ' commit ' 4)
suite=$(field ' suite ' 4)
status=$(field ' exit status ' 5)
root_s=$(field ' root [0-9]' 4)
cached=$(field ' root [0-9]' 7)
total=$(stamped_last "$log" '^[0-9.]+ \[platforms\] exit status')
seconds=(root "${root_s:-null}")
statuses=() tests=() QS_PHASES=()
for ((i = 0; i < ${#PHASES[@]}; i += 2)); do
  name=${PHASES[i]}
  began=$(stamped_last "$log" "\\[platforms\\] phase $name begins\$")
  ended=$(stamped_at "$log" "\\[platforms\\] phase $name status " "${began:-0}")
  code=""
  [ -z "$ended" ] || code=$(field " phase $name status " 6)
  seconds+=("$name" "$(span "$began" "$ended")")
  statuses+=("$name" "${code:-null}")
  [ -n "$began" ] || continue
  # ctest's summary line and its skips, within the phase's lines.
  summary=$(awk -v a="$began" -v b="$ended" '$1 + 0 >= a && $1 + 0 <= b && / tests passed, / { sub(/^[0-9.]+ /, ""); print }' "$log" | tail -n 1)
  skipped=$(awk -v a="$began" -v b="$ended" '$1 + 0 >= a && $1 + 0 <= b && /\(Skipped\)$/ { n++ } END { print n + 0 }' "$log")
  [ -z "$summary" ] || tests+=("$name" "\"$summary, $skipped skipped\"")
  if [ "$name" = quickstart ]; then
    quickstart_phases "$log" "$began" "$ended"
    qs_began=$began
  fi
  if [ "$name" = build ]; then
    warnings=$(awk -v a="$began" -v b="$ended" '$1 + 0 >= a && $1 + 0 <= b && / warning: / { n++ } END { print n + 0 }' "$log")
  fi
done
seconds+=(total "$(span 0 "$total")")

if [ "$json" = 1 ]; then
  printf '{"suite": "%s", "commit": "%s", "exit_status": %s, "root_from_cache": %s, "seconds": %s, "status": %s, "quickstart_seconds": %s, "called_verdicts": %s, "build_warnings": %s, "tests": %s}\n' \
    "$suite" "$commit" "${status:-null}" "$([ "$cached" = 1 ] && echo true || echo false)" \
    "$(phases_json "${seconds[@]}")" "$(phases_json "${statuses[@]}")" \
    "$(phases_json "${QS_PHASES[@]}")" "${QS_VERDICTS:-null}" "${warnings:-null}" "$(phases_json "${tests[@]}")"
else
  phases_table 12 "${seconds[@]}"
  echo "Debian $suite, commit ${commit:-?}, exit status ${status:-?} (root from cache: ${cached:-?})"
  for ((i = 0; i < ${#statuses[@]}; i += 2)); do
    [ "${statuses[i + 1]}" = null ] || printf '  %-12s exit status %s\n' "${statuses[i]}" "${statuses[i + 1]}"
  done
  if [ ${#QS_PHASES[@]} -gt 0 ]; then
    echo "quick start: $QS_VERDICTS verdict(s) called (faster/slower); its phases:"
    phases_table 12 "${QS_PHASES[@]}" | sed 's/^/  /'
    quickstart_comparison "$log" "$qs_began"
  fi
  [ -z "${warnings:-}" ] || echo "build: $warnings compiler warning line(s)"
  for ((i = 0; i < ${#tests[@]}; i += 2)); do echo "${tests[i]}: ${tests[i + 1]//\"/}"; done
fi
[ "${status:-1}" = 0 ]
