# shellcheck shell=bash disable=SC2034
# Shared by libvirtd-up.sh and libvirtd-down.sh (sourced, not run): the layout
# of a test libvirtd in DIR and how its processes are found.
#
# DIR layout:
#   .disksweep-test-libvirtd  marker: DIR belongs to a test libvirtd, so
#                             libvirtd-down.sh may delete it
#   etc/                   libvirtd's /etc/libvirt (libvirtd.conf, qemu.conf)
#   lib/ cache/ log/       its /var/lib/libvirt, /var/cache/libvirt,
#                          /var/log/libvirt (QEMU's logs are in log/qemu/)
#   libvirtd.pid           written by libvirtd
#   libvirtd.log           libvirtd's own log (warnings and errors)
#   run-before             the entries of /run/libvirt before it started
#   made-mountpoints       the mount points it created (empty directories)
#   env                    shell assignments for tests (see libvirtd-up.sh)
#
# Why the private directories: libvirtd's qemu driver reads
# /etc/libvirt/qemu.conf and keeps its state under /var; no option moves them.
# libvirtd runs in a mount namespace of its own where DIR's directories are
# bind-mounted over those paths, so neither the host's config nor its /var
# sees anything of it. /run/libvirt stays shared: clients reach
# qemu:///system through /run/libvirt/libvirt-sock.

readonly LIBVIRTD_TEST_MARKER=.disksweep-test-libvirtd
# The host paths libvirtd gets from DIR, as "HOST_PATH DIR_SUBDIR".
readonly LIBVIRTD_TEST_BINDS=("/etc/libvirt etc" "/var/lib/libvirt lib"
                              "/var/cache/libvirt cache" "/var/log/libvirt log")
readonly LIBVIRTD_RUN_DIR=/run/libvirt

# The pid of the libvirtd started from DIR $1, or nothing: the pid file is
# trusted only while that pid is a libvirtd started with DIR's pid file.
libvirtd_test_pid() {
    local dir=$1 pid arg args=()
    pid=$(cat "$dir/libvirtd.pid" 2>/dev/null) || return 0
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    { mapfile -d '' args <"/proc/$pid/cmdline"; } 2>/dev/null || return 0
    for arg in "${args[@]}"; do
        [[ $arg == "$dir/libvirtd.pid" ]] && { echo "$pid"; return 0; }
    done
    return 0
}

# Whether process $1 sees the host's /run/libvirt. One with a /run/libvirt
# of its own (a libvirtd in a mount namespace with a tmpfs there, like the
# remote test host of tests/remote/remote-libvirtd.sh) serves neither
# qemu:///system nor the guests whose pid files are there: it is no other
# libvirtd to this harness. /proc/PID/root/run/libvirt is resolved in that
# process's mount namespace.
shares_host_run_dir() {
    local proc=/proc/$1
    [[ $proc/root$LIBVIRTD_RUN_DIR -ef $LIBVIRTD_RUN_DIR ]] ||
        [[ ! -e $proc/root$LIBVIRTD_RUN_DIR && ! -e $LIBVIRTD_RUN_DIR ]]
}

# Every running libvirtd on the host that shares the host's /run/libvirt
# (above), one pid a line (not zombies: one killed a moment ago may not be
# reaped yet).
libvirtd_all_pids() {
    local proc comm state
    for proc in /proc/[0-9]*; do
        comm=$(cat "$proc/comm" 2>/dev/null) || continue
        [[ $comm == libvirtd ]] || continue
        state=$(grep -m1 '^State:' "$proc/status" 2>/dev/null) || continue
        [[ $state == *Z* ]] && continue
        shares_host_run_dir "${proc#/proc/}" && echo "${proc#/proc/}"
    done
    return 0
}

# The pids serving qemu:///system's socket, one a line. `ss` lists unix
# sockets by the path they were bound to, whatever the mount namespace, so
# a libvirtd with a /run/libvirt of its own is left out (above).
libvirt_sock_server_pids() {
    local pid
    ss -Hxlp "src = $LIBVIRTD_RUN_DIR/libvirt-sock" 2>/dev/null |
        grep -o 'pid=[0-9]*' | while read -r pid; do
        pid=${pid#pid=}
        shares_host_run_dir "$pid" && echo "$pid"
    done
    return 0
}

# The QEMU processes of the system libvirtd's guests (its pid files in
# /run/libvirt/qemu), one pid a line. Only called while no other libvirtd
# runs, so every such guest is the test libvirtd's.
libvirtd_test_guest_pids() {
    local file pid
    for file in "$LIBVIRTD_RUN_DIR"/qemu/*.pid; do
        [[ -r $file ]] || continue
        pid=$(cat "$file" 2>/dev/null)
        [[ $pid =~ ^[0-9]+$ ]] || continue
        [[ $(cat "/proc/$pid/comm" 2>/dev/null) == qemu-system* ]] && echo "$pid"
    done
    return 0
}

# SIGTERM to the pids given, up to $1 seconds for them to end, then SIGKILL.
libvirtd_test_stop_pids() {
    local grace=$1 pid deadline
    shift
    (($# > 0)) || return 0
    kill -TERM "$@" 2>/dev/null || true
    deadline=$((SECONDS + grace))
    while ((SECONDS < deadline)); do
        local alive=()
        for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
        ((${#alive[@]} == 0)) && return 0
        sleep 0.2
    done
    kill -KILL "$@" 2>/dev/null || true
    sleep 0.5
}
