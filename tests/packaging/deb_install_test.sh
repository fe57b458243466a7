#!/usr/bin/env bash
# The Debian package installs into a fresh Debian root and works there:
#  1. cpack builds the .deb in BUILD_DIR (or DEB is taken as it is);
#  2. mmdebstrap makes a fresh root of the host's Debian release (the .deb
#     is built per release; its version ends in ~debN, N that release's
#     number, checked first) (--variant=apt: no systemd, so
#     the postinst's fallback path creates the accounts and directories)
#     and installs the .deb into it with apt, which resolves its Depends;
#  3. in that root: `disksweepd --version` prints the project's version,
#     `hostctl --help` works, every file is where it belongs, the conffile
#     is registered, the disksweep group and the directories exist with the
#     declared modes, the bash completion offers exactly hostctl's commands,
#     and the installed disksweepd starts (embedded QEMU driver, as root)
#     and answers a member of the disksweep group but not an outsider.
#
#   deb_install_test.sh BUILD_DIR SKIP_CODE [DEB]
#
# Everything it writes stays in BUILD_DIR/packaging-test/ (removed at the
# end): mmdebstrap's root lives there (null format: mmdebstrap deletes it).
# Needs root, mmdebstrap and the Debian mirror of the host's apt sources.
# Exit status: 0 passed, 1 failed, SKIP_CODE when mmdebstrap is missing.
set -euo pipefail

SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF=$SOURCE_DIR/tests/packaging/deb_install_test.sh
# The host's release: the .deb's library dependencies are this release's.
# shellcheck source=/dev/null
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
# shellcheck source=/dev/null
SUITE_NUMBER=$(. /etc/os-release && echo "${VERSION_ID:-}")

# What the package must put where (paths inside the installed root);
# the sweeps come from config/sweeps/ below.
EXPECTED_EXECUTABLES=(
    /usr/bin/disksweepd
    /usr/bin/hostctl
    /usr/bin/disksweep-replay
    /usr/lib/disksweep/disksweep-agent
    /usr/share/disksweep/guest/build-image.sh
)
EXPECTED_FILES=(
    /lib/systemd/system/disksweepd.service
    /usr/lib/sysusers.d/disksweep.conf
    /usr/lib/tmpfiles.d/disksweep.conf
    /etc/disksweep/disksweepd.conf
    /usr/share/man/man8/disksweepd.8.gz
    /usr/share/man/man1/hostctl.1.gz
    /usr/share/man/man1/disksweep-replay.1.gz
    /usr/share/bash-completion/completions/hostctl
    /usr/share/doc/disksweep/README.md
    /usr/share/disksweep/guest/lib/rootfs.sh
    /usr/share/disksweep/guest/packages.txt
)
# PATH MODE OWNER:GROUP of every directory packaging/tmpfiles.d/disksweep.conf
# declares (its "d" lines; the mode as stat prints it, without leading zeros),
# so the file the package installs is the one statement of them.
mapfile -t EXPECTED_DIRECTORIES < <(awk '$1 == "d" { sub(/^0+/, "", $3); print $2, $3, $4 ":" $5 }' \
    "$SOURCE_DIR/packaging/tmpfiles.d/disksweep.conf")
API_SOCKET=/run/disksweep/disksweepd.sock

# ---- checks, run as mmdebstrap's customize hook: check_root ROOT RESULTS ----

failures=0
# check DESCRIPTION COMMAND...: records a failure unless COMMAND succeeds.
check() {
    if "${@:2}"; then
        echo "ok: $1"
    else
        echo "FAILED: $1"
        failures=$((failures + 1))
    fi
}

in_root() { chroot "$ROOT" "$@"; }

prints_version() {
    local expected
    expected="disksweepd $(sed -n 's/^project(disksweep VERSION \([0-9.]*\).*/\1/p' "$SOURCE_DIR/CMakeLists.txt")"
    local got
    got=$(in_root disksweepd --version) || return 1
    [[ $got == "$expected" ]] || { echo "  got '$got', expected '$expected'"; return 1; }
}

prints_help() {
    in_root hostctl --help >"$RESULTS/hostctl-help.txt" &&
        grep -q '^  sweep submit FILE' "$RESULTS/hostctl-help.txt"
}

all_present() {
    local test_op=$1 path missing=0
    shift
    for path in "$@"; do
        in_root test "$test_op" "$path" || { echo "  missing: $path"; missing=1; }
    done
    return "$missing"
}

sweeps_installed() {
    local spec paths=()
    for spec in "$SOURCE_DIR"/config/sweeps/*.toml; do
        paths+=("/usr/share/disksweep/sweeps/$(basename "$spec")")
    done
    all_present -f "${paths[@]}"
}

conffile_registered() {
    grep -qx /etc/disksweep/disksweepd.conf "$ROOT/var/lib/dpkg/info/disksweep.conffiles"
}

package_installed() {
    # shellcheck disable=SC2016 # ${Status} is dpkg-query's field, not ours
    [[ $(in_root dpkg-query -W -f='${Status}' disksweep) == "install ok installed" ]]
}

group_exists() { in_root getent group disksweep >/dev/null; }

directories_as_declared() {
    local entry path mode owner got wrong=0
    ((${#EXPECTED_DIRECTORIES[@]} > 0)) || { echo "  no d lines in packaging/tmpfiles.d/disksweep.conf"; return 1; }
    for entry in "${EXPECTED_DIRECTORIES[@]}"; do
        read -r path mode owner <<<"$entry"
        got=$(in_root stat -c '%a %U:%G' "$path" 2>&1) || got="missing"
        [[ $got == "$mode $owner" ]] || { echo "  $path: $got, expected $mode $owner"; wrong=1; }
    done
    return "$wrong"
}

# The commands `hostctl --help` lists, one "WORD [WORD]" a line, sorted: the
# lower-case words of each usage line (indented by two spaces; its help
# follows, indented deeper).
help_commands() {
    sed -n '/^commands:/,/^$/p' "$RESULTS/hostctl-help.txt" | awk '
        NR > 1 && /^  [^ ]/ {
            sub(/^ +/, ""); split($0, columns, /  +/); n = split(columns[1], words, " ")
            name = ""
            for (i = 1; i <= n; i++) if (words[i] ~ /^[a-z]+$/) name = name (name == "" ? "" : " ") words[i]
            print name
        }' | sort
}

# What the installed completion offers: top level, then for each group.
completion_offers() {
    local words=$1
    # shellcheck disable=SC2016 # expanded by the root's bash
    in_root bash -c 'source /usr/share/bash-completion/completions/hostctl
                     read -r -a COMP_WORDS <<<"hostctl $1 x"; COMP_WORDS[-1]=""
                     COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _hostctl 2>/dev/null
                     printf "%s\n" "${COMPREPLY[@]}"' completion "$words"
}

completion_matches_help() {
    local offered group
    # A top-level word is a group when what follows it is sub-commands
    # rather than options.
    # What follows is read whole before it is tested: `... | grep -q` under
    # pipefail fails when grep exits at its first match while the writer is
    # still writing (SIGPIPE), which made a group look like a command.
    local following
    offered=$(for group in $(completion_offers "" | grep -vx help); do
        following=$(completion_offers "$group" | grep -v '^-' || true)
        if [[ -n $following ]]; then
            sed "s/^/$group /" <<<"$following"
        else
            echo "$group"
        fi
    done | sort)
    [[ $offered == "$(help_commands)" ]] ||
        { echo "  completion offers:"; echo "$offered"; echo "  hostctl --help lists:"; help_commands; return 1; }
}

DAEMON_PID=
stop_daemon() {
    [[ -n $DAEMON_PID ]] || return 0
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    local status=0
    wait "$DAEMON_PID" || status=$?
    DAEMON_PID=
    return "$status"
}

# Whatever this test started in the root and is still running there (a
# daemon that ignored SIGTERM, a QEMU it left): mmdebstrap cannot remove a
# root that processes still use.
kill_processes_in_root() {
    local link pid
    for link in /proc/[0-9]*/root; do
        [[ $(readlink "$link" 2>/dev/null) == "$ROOT" ]] || continue
        pid=${link#/proc/}
        pid=${pid%/root}
        echo "  killing pid $pid left in the root: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
        kill -KILL "$pid" 2>/dev/null || true
    done
}

# The installed daemon, with the installed config, in the fresh root. Not
# through in_root: $! must be the daemon (chroot execs it), not a subshell.
daemon_starts() {
    chroot "$ROOT" disksweepd --config /etc/disksweep/disksweepd.conf >"$RESULTS/disksweepd.log" 2>&1 &
    DAEMON_PID=$!
    local waited=0
    until in_root test -S "$API_SOCKET"; do
        if ! kill -0 "$DAEMON_PID" 2>/dev/null || ((waited >= 60)); then
            echo "  no socket after ${waited} s; daemon log:"
            sed 's/^/    /' "$RESULTS/disksweepd.log"
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

# as_user USER COMMAND...: COMMAND in the root as USER with USER's groups
# (numeric ids: no name lookups outside the root, no PAM).
as_user() {
    local uid gid groups
    uid=$(in_root id -u "$1") && gid=$(in_root id -g "$1") && groups=$(in_root id -G "$1") || return 1
    chroot --userspec="$uid:$gid" --groups="${groups// /,}" "$ROOT" "${@:2}"
}

member_may_use_api() {
    in_root useradd --no-create-home --groups disksweep sweeper || return 1
    as_user sweeper hostctl status >"$RESULTS/status.txt" 2>&1 ||
        { sed 's/^/    /' "$RESULTS/status.txt"; return 1; }
    grep -q . "$RESULTS/status.txt"
}

outsider_refused() {
    in_root useradd --no-create-home outsider || return 1
    local status=0
    as_user outsider hostctl status >"$RESULTS/outsider.txt" 2>&1 || status=$?
    # 1: the API refused (403); 3: the socket's directory kept it out.
    [[ $status == 1 || $status == 3 ]] ||
        { echo "  exit status $status:"; sed 's/^/    /' "$RESULTS/outsider.txt"; return 1; }
}

daemon_stops_cleanly() {
    stop_daemon || { echo "  exit status $?; daemon log:"; sed 's/^/    /' "$RESULTS/disksweepd.log"; return 1; }
}

check_root() {
    ROOT=$(readlink -f "$1") RESULTS=$2
    trap 'stop_daemon; kill_processes_in_root' EXIT
    check "the package is installed" package_installed
    check "disksweepd --version prints the project's version" prints_version
    check "hostctl --help lists the commands" prints_help
    check "binaries and scripts are installed executable" all_present -x "${EXPECTED_EXECUTABLES[@]}"
    check "unit, sysusers.d, tmpfiles.d, config, man pages, completion are installed" \
        all_present -f "${EXPECTED_FILES[@]}"
    check "every example sweep is installed" sweeps_installed
    check "/etc/disksweep/disksweepd.conf is a conffile" conffile_registered
    check "the postinst created the disksweep group" group_exists
    check "the postinst created the directories as declared" directories_as_declared
    check "the bash completion offers exactly hostctl's commands" completion_matches_help
    if check "the installed disksweepd starts in the fresh root" daemon_starts; then
        check "a member of the disksweep group may use the API" member_may_use_api
        check "a user outside the group is refused" outsider_refused
        check "disksweepd stops on SIGTERM with status 0" daemon_stops_cleanly
    fi
    echo "checks: $failures failed"
    ((failures == 0))
}

# ---- the test: build the .deb, bootstrap, install, check ---------------------

skip() {
    echo "SKIPPED: $1"
    exit "$SKIP_CODE"
}

# build_deb BUILD_DIR OUT: runs cpack, prints the .deb's path.
build_deb() {
    local out=$2
    cpack --config "$1/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 ||
        { cat "$out/cpack.log" >&2; return 1; }
    local debs=("$out"/disksweep_*.deb)
    [[ ${#debs[@]} == 1 && -f ${debs[0]} ]] || { echo "cpack made no single .deb: ${debs[*]}" >&2; return 1; }
    echo "${debs[0]}"
}

# bootstrap DEB WORK: a fresh root with DEB installed; check_root runs in it.
bootstrap() {
    local deb=$1 work=$2 sources=$2/apt-sources
    local -a mirror=()
    # The host's apt entries for the suite, as the guest image uses them.
    # shellcheck source=/dev/null # guest/lib/rootfs.sh
    if (source "$SOURCE_DIR/guest/lib/rootfs.sh" && guest_apt_sources "$SUITE" "$sources"); then
        mirror=("$sources")
    fi
    mkdir -p "$work/results"
    # The .deb goes in by apt inside the root (apt resolves its Depends from
    # the mirror): mmdebstrap 1.3's --include=PATH.deb fails to hand a path
    # outside the root to the chroot's dpkg.
    TMPDIR=$work mmdebstrap --mode=root --variant=apt \
        --customize-hook="copy-in '$deb' /tmp" \
        --customize-hook="chroot \"\$1\" env DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends '/tmp/$(basename "$deb")'" \
        --customize-hook="'$SELF' --check-root \"\$1\" '$work/results' >'$work/results/checks.log' 2>&1" \
        "$SUITE" /dev/null "${mirror[@]}" </dev/null >"$work/mmdebstrap.log" 2>&1
}

main() {
    [[ $# == 2 || $# == 3 ]] || { echo "usage: $0 BUILD_DIR SKIP_CODE [DEB]" >&2; exit 2; }
    local build_dir
    build_dir=$(cd "$1" && pwd)
    SKIP_CODE=$2
    command -v mmdebstrap >/dev/null || skip "mmdebstrap is not installed (apt-get install mmdebstrap)"
    [[ $EUID == 0 ]] || { echo "FAILED: must run as root (mmdebstrap --mode=root, chroot)"; exit 1; }

    local started=$SECONDS deb
    WORK=$build_dir/packaging-test
    rm -rf --one-file-system "$WORK"
    mkdir -p "$WORK"
    trap 'rm -rf --one-file-system "$WORK"' EXIT

    if [[ $# == 3 ]]; then
        deb=$(readlink -f "$3")
    else
        deb=$(build_deb "$build_dir" "$WORK") || { echo "FAILED: cpack"; exit 1; }
    fi
    echo "package: $(basename "$deb")"
    dpkg-deb --field "$deb" Depends | sed 's/^/Depends: /'
    [[ -n $SUITE && -n $SUITE_NUMBER ]] || { echo "FAILED: no VERSION_CODENAME/VERSION_ID in /etc/os-release"; exit 1; }
    local version
    version=$(dpkg-deb --field "$deb" Version)
    [[ $version == *"~deb$SUITE_NUMBER" ]] ||
        { echo "FAILED: version '$version' does not name Debian $SUITE_NUMBER (~deb$SUITE_NUMBER; packaging/Packaging.cmake)"; exit 1; }
    echo "ok: version $version is for Debian $SUITE_NUMBER ($SUITE)"

    local status=0
    bootstrap "$deb" "$WORK" || status=$?
    cat "$WORK/results/checks.log" 2>/dev/null || echo "FAILED: the checks did not run"
    if ((status != 0)); then
        echo "FAILED: mmdebstrap exited $status; its log's end:"
        tail -n 25 "$WORK/mmdebstrap.log"
        exit 1
    fi
    echo "passed in $((SECONDS - started)) s"
}

if [[ ${1:-} == --check-root ]]; then
    check_root "$2" "$3"
else
    main "$@"
fi
