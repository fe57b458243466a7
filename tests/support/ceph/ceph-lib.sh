# shellcheck shell=bash disable=SC2034
# Shared by ceph-up.sh and ceph-down.sh (sourced, not run): the layout of a
# throwaway test Ceph in DIR and how its processes are found and stopped.
#
# DIR layout (everything the cluster has lives here):
#   .disksweep-test-ceph   marker: this DIR belongs to a test Ceph, so
#                          ceph-down.sh may delete it
#   cluster.conf           the daemons' and the admin's config (admin.keyring)
#   ceph.conf              the clients' config: monitors, cephx, the client
#                          user's keyring (what disksweep and QEMU read)
#   admin-client.conf      the same for client.admin (embedded libvirt's QEMU)
#   admin.keyring          client.admin (mode 0600)
#   client.USER.keyring    the disksweep client (mode 0600, root only)
#   env                    shell assignments for tests (see ceph-up.sh)
#   ports                  the TCP ports the daemons bind, one a line
#   mon.a/ osd.0/          daemon data; osd.0/block is the sparse BlueStore file
#   run/ log/              pid files, admin sockets, daemon logs
#   netdelay               with CEPH_TEST_DELAY_MS: the netfilter queue and
#                          ports of the delay's iptables rule (queue=, ports=);
#                          run/netdelay.{pid,stats}, log/netdelay.log

# The daemons, in the order they start (and stop in reverse).
readonly CEPH_TEST_DAEMONS=(mon.a osd.0)
readonly CEPH_TEST_MARKER=.disksweep-test-ceph

# The pid in pid file $1, or nothing. The file is trusted only while that
# pid was started with argument $2, a path of this DIR (a pid file from a
# killed run may name a recycled pid).
ceph_test_pid_from_file() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    ceph_test_pid_has_arg "$pid" "$2" && echo "$pid"
    return 0
}

# The pid of daemon $2 of the cluster in $1, or nothing.
ceph_test_daemon_pid() {
    ceph_test_pid_from_file "$1/run/$2.pid" "$1/cluster.conf"
}

# True when process $1 was started with "$2/cluster.conf" on its command line:
# the exact path identifies this cluster's daemons even without pid files.
ceph_test_pid_uses_dir() {
    ceph_test_pid_has_arg "$1" "$2/cluster.conf"
}

# True when process $1 has argument $2. (Builtins only: it runs for every
# process on the host.)
ceph_test_pid_has_arg() {
    local arg args=()
    { mapfile -d '' args <"/proc/$1/cmdline"; } 2>/dev/null || return 1
    for arg in "${args[@]}"; do
        [[ $arg == "$2" ]] && return 0
    done
    return 1
}

# Every live process started with this DIR's cluster.conf (daemons whose pid
# file is gone, after a killed ceph-up.sh), one pid a line.
ceph_test_pids_by_config() {
    local dir=$1 proc pid
    for proc in /proc/[0-9]*; do
        pid=${proc#/proc/}
        [[ $pid == "$$" ]] && continue
        ceph_test_pid_uses_dir "$pid" "$dir" && echo "$pid"
    done
    return 0
}

# Sends SIGTERM to the pids given, waits up to $1 seconds for them to end,
# then SIGKILLs what is left.
ceph_test_stop_pids() {
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

# The pids of processes other than the cluster's own daemons with an
# established TCP connection to one of the cluster's ports (QEMU, rbd, ...).
ceph_test_client_pids() {
    local dir=$1 filter="" port
    [[ -r $dir/ports ]] || return 0
    while read -r port; do
        [[ $port =~ ^[0-9]+$ ]] || continue
        filter+="${filter:+ or }dport = :$port"
    done <"$dir/ports"
    [[ -n $filter ]] || return 0
    local daemons=" " daemon
    for daemon in "${CEPH_TEST_DAEMONS[@]}"; do
        daemons+="$(ceph_test_daemon_pid "$dir" "$daemon") "
    done
    ss -Htnp state established "( $filter )" 2>/dev/null |
        grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u |
        while read -r pid; do
            [[ $daemons == *" $pid "* || $pid == "$$" ]] || echo "$pid"
        done
}

# The iptables arguments of the delay's rule, for action $1 (-A, -C, -D): TCP
# leaving through loopback from or to one of the ports $3 (comma-separated)
# goes to netfilter queue $2, which netdelay.py serves.
ceph_test_delay_rule() {
    echo "$1 OUTPUT -o lo -p tcp -m multiport --ports $3 -j NFQUEUE --queue-num $2"
}

# The pid of the cluster's netdelay.py in $1, or nothing.
ceph_test_delay_pid() {
    ceph_test_pid_from_file "$1/run/netdelay.pid" "$1/run/netdelay.stats"
}

# Removes the delay of the cluster in $1: the rule first (a rule whose queue
# has no reader drops the packets), then netdelay.py, which lets what it
# holds go on when it stops.
ceph_test_delay_remove() {
    local dir=$1 queue="" ports="" line pid
    if [[ -r $dir/netdelay ]]; then
        while IFS= read -r line; do
            case $line in
            queue=*) queue=${line#queue=} ;;
            ports=*) ports=${line#ports=} ;;
            esac
        done <"$dir/netdelay"
    fi
    if [[ $queue =~ ^[0-9]+$ && $ports =~ ^[0-9,]+$ ]]; then
        # shellcheck disable=SC2046  # the rule's words
        while iptables -w $(ceph_test_delay_rule -C "$queue" "$ports") 2>/dev/null; do
            iptables -w $(ceph_test_delay_rule -D "$queue" "$ports") || return 1
        done
    fi
    pid=$(ceph_test_delay_pid "$dir")
    [[ -n $pid ]] && ceph_test_stop_pids 5 "$pid"
    return 0
}
