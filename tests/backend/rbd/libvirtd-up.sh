#!/usr/bin/env bash
# Starts a libvirtd of the tests' own, serving qemu:///system, with its
# config and state in DIR (no systemd, no virtlogd). It is what the libvirt
# secret path of RBD disks needs: libvirt 9.0's embedded driver has no secret
# driver (docs/storage-rbd.md). Stop it with libvirtd-down.sh DIR.
#
#   tests/backend/rbd/libvirtd-up.sh DIR
#
# On success DIR/env holds, for tests to read:
#   LIBVIRTD_URI           qemu:///system
#   LIBVIRTD_PID           the daemon's pid
#   LIBVIRTD_LOG           its log (warnings and errors)
#   LIBVIRTD_QEMU_LOG_DIR  QEMU's per-guest logs (NAME.log)
#
# The host is left as it was: libvirtd runs in a mount namespace of its own
# with DIR's directories over /etc/libvirt, /var/lib/libvirt,
# /var/cache/libvirt and /var/log/libvirt (libvirtd-lib.sh says why); what it
# adds to the shared /run/libvirt and the empty mount points it needed are
# removed by libvirtd-down.sh.
#
# QEMU runs as libvirt's QEMU user (libvirt-qemu), as under any system
# libvirtd, so it cannot read root-only keyrings: the key must come from the
# secret. qemu.conf changes two defaults, both about files not secrets:
# stdio_handler = "file" (no virtlogd needed) and dynamic_ownership = 0 (the
# guest image's files are shared by all guests and readable by anyone;
# libvirt would otherwise chown them to libvirt-qemu for each guest). In the
# namespace /dev/kvm is group libvirt-qemu (see kvm_mounts).
#
# Exit status: 0 ready (or already up in DIR); 77 skipped: not root, libvirtd
# or unshare not installed, or a libvirtd not started from DIR is running (the
# test needs one whose guests and secrets are only its own); 1 anything else
# (the log's tail is printed).
#
# Environment: LIBVIRTD_TEST_TIMEOUT  seconds to wait for the socket (default 60)
set -euo pipefail

usage() { echo "usage: $0 DIR" >&2; exit 2; }
[[ $# -eq 1 && -n $1 ]] || usage
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=libvirtd-lib.sh
source "$here/libvirtd-lib.sh"
# shellcheck source-path=SCRIPTDIR source=../../support/harness-lib.sh
source "$here/../../support/harness-lib.sh"

readonly step_timeout=${LIBVIRTD_TEST_TIMEOUT:-60}
readonly tools=(libvirtd unshare mount qemu-system-x86_64 ss)
started_at=$(date +%s.%N)

say() { echo "libvirtd-up: $*" >&2; }
fail() {
    say "$*"
    if [[ -r $dir/libvirtd.log ]]; then
        say "--- last lines of $dir/libvirtd.log"
        tail -n 20 "$dir/libvirtd.log" >&2
    fi
    exit 1
}
skip() {
    echo "SKIPPED: $*"
    exit 77
}

# Phase: tools and privileges; missing ones are a skip, not a failure.
check_tools() {
    local tool missing=()
    for tool in "${tools[@]}"; do
        command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || missing+=("$tool")
    done
    ((${#missing[@]} == 0)) ||
        skip "missing ${missing[*]} (apt-get install libvirt-daemon-driver-qemu util-linux)"
    [[ $(id -u) == 0 ]] || skip "the test libvirtd needs root"
    getent passwd libvirt-qemu >/dev/null ||
        skip "no user libvirt-qemu for QEMU (scripts/install-deps.sh creates it)"
}

# Phase: DIR is new, empty or ours (marker); never wipe anything else.
claim_dir() {
    mkdir -p "$1"
    dir=$(cd "$1" && pwd -P)
    if [[ ! -e $dir/$LIBVIRTD_TEST_MARKER && -n $(ls -A "$dir") ]]; then
        say "$dir is not empty and was not made by libvirtd-up.sh; refusing to use it"
        exit 1
    fi
}

already_up() {
    [[ -r $dir/env && -n $(libvirtd_test_pid "$dir") && -S $LIBVIRTD_RUN_DIR/libvirt-sock ]]
}

# Phase: a DIR left by a killed run is stopped and wiped first.
clean_stale() {
    [[ -n $(ls -A "$dir") ]] || return 0
    say "cleaning what a previous run left in $dir"
    "$here/libvirtd-down.sh" "$dir" >&2
    mkdir -p "$dir"
}

# Phase: nobody else's libvirtd. Its guests and secrets would mix with the
# test's, and /run/libvirt/libvirt-sock is the one socket of qemu:///system.
check_no_other_libvirtd() {
    local others
    others=$(libvirtd_all_pids | paste -sd ' ')
    [[ -z $others ]] || skip "a libvirtd not started by this test is running (pid $others)"
    if [[ -n $(libvirt_sock_server_pids) ]]; then
        skip "something already serves $LIBVIRTD_RUN_DIR/libvirt-sock"
    fi
}

write_configs() {
    mkdir -p "$dir/etc" "$dir/lib" "$dir/cache" "$dir/log"
    cat >"$dir/etc/libvirtd.conf" <<EOF
# The disksweep tests' libvirtd (tests/backend/rbd/libvirtd-up.sh).
log_outputs = "3:file:$dir/libvirtd.log"
EOF
    cat >"$dir/etc/qemu.conf" <<'EOF'
# The disksweep tests' libvirtd (tests/backend/rbd/libvirtd-up.sh): libvirt's
# defaults for qemu:///system (QEMU runs as libvirt-qemu) except for files.
# QEMU's stdout/stderr go to files, not to virtlogd (none runs).
stdio_handler = "file"
# The guest image's files are shared and world-readable: do not chown them.
dynamic_ownership = 0
EOF
}

# Phase: what the host has now, so that libvirtd-down.sh removes only what
# the test's libvirtd added.
record_host_state() {
    if [[ -d $LIBVIRTD_RUN_DIR ]]; then
        ls -A "$LIBVIRTD_RUN_DIR" >"$dir/run-before"
    else
        : >"$dir/run-absent"
    fi
    : >"$dir/made-mountpoints"
    local bind host_path
    for bind in "${LIBVIRTD_TEST_BINDS[@]}"; do
        host_path=${bind%% *}
        if [[ ! -e $host_path ]]; then
            mkdir -p "$host_path"
            echo "$host_path" >>"$dir/made-mountpoints"
        fi
    done
}

# The mounts that give libvirtd's namespace a /dev/kvm its QEMU user may open
# (as udev's 0660 root:kvm with that user in group kvm would), as shell
# commands; none without /dev/kvm. Here /dev/kvm is root's only, and libvirt
# 9.0 then probes QEMU with KVM (the probe gets it) but finds KVM unusable for
# libvirt-qemu when it checks its cache, so it probes again at every domain
# start, for about 80 s. The guests run TCG all the same (--accel tcg): only
# the capabilities cache needs a consistent answer. The node lives on a tmpfs
# of the namespace, so nothing of it outlives the daemon.
kvm_mounts() {
    [[ -c /dev/kvm ]] || return 0
    local numbers
    numbers=$(stat -c '%Hr %Lr' /dev/kvm)
    mkdir -p "$dir/dev"
    echo "mount -t tmpfs -o mode=0755,size=64k disksweep-test-dev '$dir/dev' &&" \
        "mknod -m 0660 '$dir/dev/kvm' c $numbers && chgrp libvirt-qemu '$dir/dev/kvm' &&" \
        "mount --bind '$dir/dev/kvm' /dev/kvm && "
}

# Phase: the daemon, in its own mount namespace. -d returns once it runs.
start_libvirtd() {
    local mounts="" bind
    for bind in "${LIBVIRTD_TEST_BINDS[@]}"; do
        mounts+="mount --bind '$dir/${bind#* }' '${bind%% *}' && "
    done
    mounts+="$(kvm_mounts) "
    unshare --mount --propagation private -- sh -c \
        "${mounts}exec libvirtd -d -f '$dir/etc/libvirtd.conf' -p '$dir/libvirtd.pid'" ||
        fail "libvirtd did not start"
}

wait_until_ready() {
    local deadline=$((SECONDS + step_timeout))
    until [[ -n $(libvirtd_test_pid "$dir") ]] &&
        [[ -n $(libvirt_sock_server_pids) ]]; do
        ((SECONDS < deadline)) || fail "libvirtd does not serve qemu:///system after ${step_timeout} s"
        sleep 0.2
    done
}

write_env() {
    write_file_atomically "$dir/env" <<EOF
LIBVIRTD_URI=qemu:///system
LIBVIRTD_PID=$(libvirtd_test_pid "$dir")
LIBVIRTD_LOG=$dir/libvirtd.log
LIBVIRTD_QEMU_LOG_DIR=$dir/log/qemu
EOF
}

report_time() {
    report_elapsed libvirtd-up "$1" "$started_at" "pid $(libvirtd_test_pid "$dir"), qemu:///system, $dir/env"
}

main() {
    check_tools
    claim_dir "$1"
    if already_up; then
        report_time "already up"
        return 0
    fi
    clean_stale
    check_no_other_libvirtd
    touch "$dir/$LIBVIRTD_TEST_MARKER"
    write_configs
    record_host_state
    start_libvirtd
    wait_until_ready
    write_env
    report_time "ready"
}

main "$@"
