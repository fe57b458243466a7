#!/usr/bin/env bash
# A "remote" libvirt host for the tests (issue 20): a second libvirtd that
# disksweepd can reach only through libvirt's API, at
# qemu+tcp://127.0.0.1:PORT/system (auth_tcp = "none", loopback only).
#
#   tests/remote/remote-libvirtd.sh up DIR [PORT]   start it (a free port if none)
#   tests/remote/remote-libvirtd.sh kill DIR        SIGKILL libvirtd only
#   tests/remote/remote-libvirtd.sh start DIR       start libvirtd again after kill
#   tests/remote/remote-libvirtd.sh down DIR        end everything, remove DIR
#
# Why a mount namespace with tmpfs: on a real remote host, the daemon cannot
# open the host's files. Here libvirtd runs in a mount namespace of its own
# with tmpfs (not bind mounts of DIR) over /etc/libvirt, /var/lib/libvirt,
# /var/cache/libvirt, /var/log/libvirt and /run/libvirt: its config, domain
# state, channel sockets, QEMU logs and its storage pool exist only inside
# it. A test that finds one of them as a file is not testing the remote
# path. The namespace is held by a small long-lived holder process, so the
# namespace and its tmpfs outlive a killed libvirtd (`kill`, then `start`
# reconnects to the guests that survived, from its state on the tmpfs, as on
# a real host whose libvirtd crashed).
#
# The storage pool: `disksweep`, type dir, persistent and autostarted, its
# target /var/lib/libvirt/images/disksweep on the namespace's 6 GiB tmpfs
# (a 1 GiB guest image and a few 1 GiB sparse volumes; the tmpfs takes memory
# only for what is written). It is defined by its XML in the namespace's
# /etc/libvirt/storage/ before libvirtd starts, not through the API.
#
# QEMU runs as root (qemu.conf: user/group root, dynamic_ownership = 0,
# security_driver = "none": nothing to confine inside a test namespace, and
# the host's AppArmor profiles are host state); stdio_handler = "file", so no
# virtlogd; namespaces = [] (QEMU in libvirtd's namespace, not one per guest,
# so `down` finds the guests as its processes). A devpts of its own hides the
# guests' console ptys from the host. No /dev/kvm handling: QEMU as root opens
# it if there is one, and the guests run TCG anyway. libvirtd's unix sockets
# are in /run/libvirt/disksweep-remote/ (UNIX_SOCK_DIR says why).
#
# DIR holds only bookkeeping, never anything of libvirt's:
#   .disksweep-remote-libvirtd  marker: `down` deletes only such a DIR
#   env              shell assignments for the tests:
#                      REMOTE_LIBVIRT_URI          qemu+tcp://127.0.0.1:PORT/system
#                      REMOTE_LIBVIRTD_PID         libvirtd's pid
#                      REMOTE_LIBVIRTD_HOLDER_PID  the namespace holder's pid
#                      REMOTE_LIBVIRTD_LOG         libvirtd's log (warnings, errors)
#                      REMOTE_LIBVIRT_POOL         disksweep
#   port             the TCP port
#   holder.pid holder.ns holder.log  the holder (its namespace's id, its stderr)
#   libvirtd.pid libvirtd.log        written by libvirtd
#   made-mountpoints the empty host directories `up` created to mount on
# For debugging only (never in a test's assertions): the namespace's files
# are readable as root under /proc/HOLDER_PID/root/, e.g. QEMU's logs in
# /proc/HOLDER_PID/root/var/log/libvirt/qemu/.
#
# Exit status: 0 done (`up` on a DIR already up: 0); 77 skipped ("SKIPPED:
# reason": not root, or libvirtd, unshare or nsenter missing); 1 anything else
# (libvirtd's log tail is printed); 2 usage.
#
# Measured on the 2-core dev machine (libvirt 9.0, Debian 12): `up` 0.7 to
# 1.3 s, `kill` 0.2 s, `start` 0.3 to 0.4 s, `down` 0.6 to 1.2 s (2.5 s with
# a running guest, which ends on SIGTERM).
#
# Environment: REMOTE_LIBVIRTD_TIMEOUT  seconds to wait for libvirtd (default 60)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../support/harness-lib.sh
source "$here/../support/harness-lib.sh"

readonly MARKER=.disksweep-remote-libvirtd
readonly POOL_NAME=disksweep
readonly POOL_TARGET=/var/lib/libvirt/images/disksweep
# libvirtd's unix sockets, in the namespace's /run/libvirt. Not the default
# /run/libvirt/libvirt-sock: `ss` lists unix sockets by their bound path
# whatever the mount namespace, and the rbd harness looks for that path to
# tell whether qemu:///system is served (tests/backend/rbd/libvirtd-up.sh).
readonly UNIX_SOCK_DIR=/run/libvirt/disksweep-remote
# The namespace's tmpfs mounts, "PATH SIZE".
readonly NS_TMPFS=("/etc/libvirt 16m" "/var/lib/libvirt 6g" "/var/cache/libvirt 256m"
                   "/var/log/libvirt 256m" "/run/libvirt 64m")
# Where the first free port is looked for when `up` is given none.
readonly PORT_RANGE=(16610 16999)
readonly step_timeout=${REMOTE_LIBVIRTD_TIMEOUT:-60}
started_at=$(date +%s.%N)
dir=""

say() { echo "remote-libvirtd: $*" >&2; }
fail() {
    say "$*"
    if [[ -n $dir && -r $dir/libvirtd.log ]]; then
        say "--- last lines of $dir/libvirtd.log"
        tail -n 20 "$dir/libvirtd.log" >&2
    fi
    if [[ -n $dir && -s $dir/holder.log ]]; then
        say "--- $dir/holder.log"
        cat "$dir/holder.log" >&2
    fi
    exit 1
}
skip() {
    echo "SKIPPED: $*"
    exit 77
}
usage() {
    echo "usage: $0 up DIR [PORT] | kill DIR | start DIR | down DIR" >&2
    exit 2
}

# ---- Finding our processes: by pid file, checked against what it must be.

# The holder's pid, or nothing. The holder is `sleep` run as "DIR/holder"
# (its argv[0]), so a reused pid is never taken for it.
holder_pid() {
    local pid argv0
    pid=$(cat "$dir/holder.pid" 2>/dev/null) || return 0
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    argv0=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1) || return 0
    [[ $argv0 == "$dir/holder" ]] && echo "$pid"
    return 0
}

# The namespace's id ("mnt:[N]"): the live holder's, else the one recorded
# at `up` (guests and libvirtd keep a namespace alive after its holder died).
# Never our own namespace: everything in the one named here is ended by
# `down`.
namespace_id() {
    local pid ns
    pid=$(holder_pid)
    if [[ -n $pid ]]; then
        ns=$(readlink "/proc/$pid/ns/mnt" 2>/dev/null) || ns=""
    else
        ns=$(cat "$dir/holder.ns" 2>/dev/null) || ns=""
    fi
    [[ $ns == mnt:* && $ns != "$(readlink /proc/self/ns/mnt)" ]] && echo "$ns"
    return 0
}

# Every live process in the namespace, one pid a line; with a comm given
# ($1), only those whose comm starts with it. One `find` for all of /proc
# (a readlink per process would fork hundreds of times per call).
namespace_pids() {
    local prefix=${1:-} ns pid comm
    ns=$(namespace_id)
    [[ -n $ns ]] || return 0
    while read -r pid; do
        proc_line "$pid" comm comm || continue
        [[ $comm == "$prefix"* ]] && is_alive "$pid" && echo "$pid"
    done < <(find /proc/[0-9]*/ns/mnt -maxdepth 0 -printf '%l %p\n' 2>/dev/null |
        awk -v ns="$ns" '$1 == ns { split($2, part, "/"); print part[3] }')
    return 0
}

# libvirtd's pid, or nothing: the pid file is trusted only while that pid is
# a live libvirtd in our namespace.
libvirtd_pid() {
    local pid comm holder
    pid=$(cat "$dir/libvirtd.pid" 2>/dev/null) || return 0
    [[ $pid =~ ^[0-9]+$ ]] && is_alive "$pid" || return 0
    proc_line "$pid" comm comm || return 0
    holder=$(holder_pid)
    if [[ -n $holder ]]; then
        [[ $comm == libvirtd && /proc/$pid/ns/mnt -ef /proc/$holder/ns/mnt ]] && echo "$pid"
    else
        namespace_pids libvirtd | grep -qx "$pid" && echo "$pid"
    fi
    return 0
}

# proc_line PID FILE VAR: the first line of /proc/PID/FILE into VAR; fails,
# quietly, when the process is gone. A process that ended may vanish from
# /proc at any moment (at once under a subreaper, scripts/lib/reaper.sh), and
# a failed redirection of `$(<file)` ends this script instead of failing.
proc_line() {
    local -n proc_line_into=$3
    { read -r proc_line_into <"/proc/$1/$2"; } 2>/dev/null
}

# Whether pid $1 runs (a zombie does not: state Z in /proc/PID/stat, the
# field after the command's parenthesis).
is_alive() {
    local stat
    proc_line "$1" stat stat || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]]
}

# Waits up to $1 seconds for the pids given to end; fails if one is left.
wait_gone() {
    local deadline=$((SECONDS + $1)) pid alive
    shift
    while :; do
        alive=0
        for pid in "$@"; do is_alive "$pid" && alive=1; done
        ((alive)) || return 0
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

# SIGTERM to the pids given, up to $1 seconds for them to end, then SIGKILL.
stop_pids() {
    local grace=$1
    shift
    (($# > 0)) || return 0
    kill -TERM "$@" 2>/dev/null || true
    wait_gone "$grace" "$@" && return 0
    kill -KILL "$@" 2>/dev/null || true
    wait_gone 5 "$@"
}

# Runs a command inside the namespace.
in_namespace() { nsenter --target "$(holder_pid)" --mount -- "$@"; }

# ---- up

check_tools() {
    local tool missing=()
    for tool in libvirtd unshare nsenter mount ss setsid; do
        command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || missing+=("$tool")
    done
    ((${#missing[@]} == 0)) ||
        skip "missing ${missing[*]} (apt-get install libvirt-daemon-driver-qemu util-linux iproute2)"
    [[ $(id -u) == 0 ]] || skip "the remote test libvirtd needs root (mount namespaces, tmpfs)"
}

# DIR is new, empty or ours (marker); never wipe anything else.
claim_dir() {
    mkdir -p "$1"
    dir=$(cd "$1" && pwd -P)
    if [[ ! -e $dir/$MARKER && -n $(ls -A "$dir") ]]; then
        fail "$dir is not empty and was not made by remote-libvirtd.sh; refusing to use it"
    fi
}

# An existing DIR, ours; for kill/start/down.
open_dir() {
    [[ -d $1 ]] || fail "no $1"
    dir=$(cd "$1" && pwd -P)
    [[ -e $dir/$MARKER ]] || fail "$dir was not made by remote-libvirtd.sh (no $MARKER)"
}

port_in_use() { [[ -n $(ss -Hltn "sport = :$1" 2>/dev/null) ]]; }

# The port asked for, else the first free one of PORT_RANGE. Another
# process may take it before libvirtd binds it: libvirtd then fails to
# start, and `up` says so.
choose_port() {
    local port=${1:-}
    if [[ -n $port ]]; then
        if [[ ! $port =~ ^[0-9]+$ ]] || ((port == 0 || port > 65535)); then
            fail "not a port: $port"
        fi
        port_in_use "$port" && fail "port $port is already in use"
        echo "$port"
        return 0
    fi
    for ((port = PORT_RANGE[0]; port <= PORT_RANGE[1]; port++)); do
        port_in_use "$port" || { echo "$port"; return 0; }
    done
    fail "no free port in ${PORT_RANGE[0]}-${PORT_RANGE[1]}"
}

# The tmpfs need directories to mount on; those missing on the host (the
# /var ones without libvirt-daemon-system) are made empty and recorded, and
# `down` removes them again.
make_mountpoints() {
    local entry path
    : >"$dir/made-mountpoints"
    for entry in "${NS_TMPFS[@]}"; do
        path=${entry%% *}
        [[ -e $path ]] && continue
        mkdir -p "$path"
        echo "$path" >>"$dir/made-mountpoints"
    done
}

# The holder: a process in a new mount namespace (private propagation, so
# nothing mounted there shows on the host) that mounts the tmpfs and then
# sleeps as "DIR/holder" until `down`. Detached (setsid, no inherited
# stdout) so that neither ctest nor a terminal waits for or signals it.
start_holder() {
    local entry mounts="" pid deadline
    for entry in "${NS_TMPFS[@]}"; do
        mounts+="mount -t tmpfs -o mode=0755,size=${entry#* } disksweep-remote '${entry%% *}' && "
    done
    # A devpts of its own: the guests' consoles are ptys, which would else
    # show on the host as /dev/pts/N (the console is read through libvirt's
    # stream). /dev/ptmx opens the devpts mounted beside it, this one.
    mounts+="mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 disksweep-remote /dev/pts && "
    setsid unshare --mount --propagation private -- \
        bash -c "${mounts}exec -a '$dir/holder' sleep infinity" \
        </dev/null >"$dir/holder.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/holder.pid"
    deadline=$((SECONDS + step_timeout))
    until [[ -n $(holder_pid) ]]; do
        [[ -d /proc/$pid ]] || fail "the namespace holder ended while mounting its tmpfs"
        ((SECONDS < deadline)) || fail "the namespace holder is not ready after ${step_timeout} s"
        sleep 0.05
    done
    readlink "/proc/$pid/ns/mnt" >"$dir/holder.ns"
}

# Writes stdin to PATH ($1) inside the namespace.
# shellcheck disable=SC2016 # $1 is the inner shell's
write_in_namespace() { in_namespace sh -c 'cat >"$1"' sh "$1"; }

write_libvirtd_conf() {
    in_namespace mkdir -p "$UNIX_SOCK_DIR"  # libvirtd does not make it
    write_in_namespace /etc/libvirt/libvirtd.conf <<EOF
# The disksweep tests' remote libvirtd (tests/remote/remote-libvirtd.sh).
# TCP on loopback only, no TLS, no authentication: the test's own host.
listen_tcp = 1
listen_tls = 0
tcp_port = "$1"
listen_addr = "127.0.0.1"
auth_tcp = "none"
unix_sock_dir = "$UNIX_SOCK_DIR"
log_outputs = "3:file:$dir/libvirtd.log"
EOF
}

write_qemu_conf() {
    write_in_namespace /etc/libvirt/qemu.conf <<'EOF'
# The disksweep tests' remote libvirtd (tests/remote/remote-libvirtd.sh).
# QEMU runs as root and its files keep their owners: the namespace's files
# are only its own.
user = "root"
group = "root"
dynamic_ownership = 0
# Nothing to confine in a test namespace; the host's profiles are host state.
security_driver = "none"
# QEMU's stdout/stderr go to files, not to virtlogd (none runs).
stdio_handler = "file"
# QEMU in libvirtd's own namespace (libvirt's default gives each guest a
# mount namespace of its own): `down` ends the guests as the processes of
# this namespace, and they use its devpts.
namespaces = []
EOF
}

# The pool, persistent and autostarted, as libvirt itself stores such a
# pool: its XML in /etc/libvirt/storage/ and a link in autostart/.
write_pool() {
    in_namespace mkdir -p /etc/libvirt/storage/autostart "$POOL_TARGET"
    write_in_namespace "/etc/libvirt/storage/$POOL_NAME.xml" <<EOF
<pool type='dir'>
  <name>$POOL_NAME</name>
  <target>
    <path>$POOL_TARGET</path>
  </target>
</pool>
EOF
    in_namespace ln -s "/etc/libvirt/storage/$POOL_NAME.xml" \
        "/etc/libvirt/storage/autostart/$POOL_NAME.xml"
}

# libvirtd in the namespace. `--listen` is what makes libvirt 9.0's libvirtd
# honour listen_tcp (without it the TCP settings are ignored); `-d` returns
# once the daemon runs, with its stdio on /dev/null.
start_libvirtd() {
    in_namespace libvirtd --daemon --listen --config /etc/libvirt/libvirtd.conf \
        --pid-file "$dir/libvirtd.pid" || fail "libvirtd did not start"
}

# Ready: libvirtd listens on the port. libvirtd 9.0 binds its sockets
# first and accepts clients only once every driver is initialised and the
# autostarted pool runs, so a client that connects now waits for that.
wait_until_ready() {
    local port=$1 deadline=$((SECONDS + step_timeout))
    until port_in_use "$port"; do
        [[ -n $(libvirtd_pid) ]] || fail "libvirtd ended while starting"
        ((SECONDS < deadline)) || fail "libvirtd is not listening on $port after ${step_timeout} s"
        sleep 0.1
    done
}

write_env() {
    write_file_atomically "$dir/env" <<EOF
REMOTE_LIBVIRT_URI=$(uri)
REMOTE_LIBVIRTD_PID=$(libvirtd_pid)
REMOTE_LIBVIRTD_HOLDER_PID=$(holder_pid)
REMOTE_LIBVIRTD_LOG=$dir/libvirtd.log
REMOTE_LIBVIRT_POOL=$POOL_NAME
EOF
}

uri() { echo "qemu+tcp://127.0.0.1:$(cat "$dir/port")/system"; }

report_time() {
    report_elapsed remote-libvirtd "$1" "$started_at" "libvirtd $(libvirtd_pid), $(uri), $dir/env"
}

cmd_up() {
    local port
    check_tools
    claim_dir "$1"
    if [[ -r $dir/env && -n $(libvirtd_pid) ]]; then
        report_time "already up"
        return 0
    fi
    if [[ -n $(ls -A "$dir") ]]; then
        say "cleaning what a previous run left in $dir"
        cmd_down "$dir"
        mkdir -p "$dir"
    fi
    touch "$dir/$MARKER"
    port=$(choose_port "${2:-}")
    echo "$port" >"$dir/port"
    make_mountpoints
    start_holder
    write_libvirtd_conf "$port"
    write_qemu_conf
    write_pool
    start_libvirtd
    wait_until_ready "$port"
    write_env
    report_time "ready"
}

# ---- kill / start

# SIGKILL to libvirtd alone: its guests are QEMU processes of their own
# (libvirt daemonizes them) and keep running, as when a host's libvirtd
# crashes.
cmd_kill() {
    local pid
    open_dir "$1"
    pid=$(libvirtd_pid)
    [[ -n $pid ]] || fail "no libvirtd of $dir is running"
    kill -KILL "$pid"
    wait_gone 5 "$pid" || fail "libvirtd $pid survived SIGKILL"
    say "killed libvirtd $pid"
}

# libvirtd again, in the same namespace: it finds its config, its pool and
# its running guests' state on the tmpfs and reconnects to them.
cmd_start() {
    check_tools
    open_dir "$1"
    [[ -n $(holder_pid) ]] || fail "the namespace of $dir is gone (run up again)"
    [[ -z $(libvirtd_pid) ]] || fail "libvirtd of $dir is already running"
    start_libvirtd
    wait_until_ready "$(cat "$dir/port")"
    write_env
    report_time "started again"
}

# ---- down

# Everything in the namespace ends: guests first (SIGTERM, as a host
# shutting down would; libvirtd's SIGTERM does not end them), then libvirtd,
# then whatever is left (the holder). The namespace and its tmpfs go with
# its last process. Then the mount points `up` made, and DIR.
cmd_down() {
    local pids
    [[ -d $1 ]] || return 0
    dir=$(cd "$1" && pwd -P)
    if [[ ! -e $dir/$MARKER ]]; then
        [[ -z $(ls -A "$dir") ]] && return 0
        fail "$dir was not made by remote-libvirtd.sh (no $MARKER); leaving it alone"
    fi
    mapfile -t pids < <(namespace_pids qemu-system)
    ((${#pids[@]} == 0)) || say "ending guests: ${pids[*]}"
    stop_pids 10 "${pids[@]}" || fail "guests ${pids[*]} survived SIGKILL; $dir kept"
    mapfile -t pids < <(namespace_pids libvirtd)
    stop_pids 20 "${pids[@]}" || fail "libvirtd ${pids[*]} survived SIGKILL; $dir kept"
    mapfile -t pids < <(namespace_pids)
    stop_pids 2 "${pids[@]}" || fail "processes ${pids[*]} in the namespace survived SIGKILL; $dir kept"
    remove_made_mountpoints "$dir/made-mountpoints"
    rm -rf "$dir"
    say "stopped and removed $dir"
}

main() {
    if (($# < 2)) || [[ -z $2 ]]; then usage; fi
    case $1 in
        up) (($# <= 3)) || usage; cmd_up "$2" "${3:-}" ;;
        kill) (($# == 2)) || usage; cmd_kill "$2" ;;
        start) (($# == 2)) || usage; cmd_start "$2" ;;
        down) (($# == 2)) || usage; cmd_down "$2" ;;
        *) usage ;;
    esac
}

main "$@"
