#!/usr/bin/env bash
# Starts a throwaway single-node Ceph for tests in DIR: one mon, one OSD with
# BlueStore on a sparse file, one pool of size 1 initialised for RBD, a cephx
# client user for disksweep. No systemd, no mgr; every daemon binds to
# 127.0.0.1 on ports checked free first. Stop it with ceph-down.sh DIR.
#
#   tests/support/ceph/ceph-up.sh DIR
#
# On success DIR/env holds, for tests to source:
#   CEPH_CONF      DIR/ceph.conf, the clients' config (monitors, cephx, keyring)
#   CEPH_KEYRING   the client user's keyring (mode 0600: root only)
#   CEPH_POOL      the RBD pool
#   CEPH_USER      the cephx id, without "client."
#   CEPH_MON_HOST  the monitor's address, IP:PORT
#   CEPH_ADMIN_CONF  a clients' config that authenticates as client.admin,
#                  for QEMU under libvirt's embedded driver, which cannot
#                  pass a user (docs/storage-rbd.md)
#   CEPH_TEST_DELAY_MS  the network delay the cluster runs with (below)
# and the time it took is printed ("ceph-up: ready in 14.2 s").
#
# Idempotent: a cluster already running in DIR and answering is kept; a DIR
# left by a killed run (dead or hung daemons) is stopped and wiped first.
#
# Exit status: 0 ready; 77 Ceph is not installed (the caller reports its
# tests as skipped); 1 anything else (the daemons' log tails are printed).
#
# Environment (all optional):
#   CEPH_TEST_POOL       pool name (default disksweep)
#   CEPH_TEST_USER       client id (default disksweep)
#   CEPH_TEST_OSD_SIZE   size of the sparse BlueStore file in GiB (default 16)
#   CEPH_TEST_TIMEOUT    seconds to wait for each step (default 120)
#   CEPH_TEST_DELAY_MS   network delay in ms (default 0: none; e.g. 0.5, 1, 2):
#                        every TCP packet to or from the cluster's ports waits
#                        this long, each way, as with `tc netem delay D` on
#                        loopback (a round trip gains 2 D). This host's kernel
#                        has no sch_netem, so an iptables rule (-o lo, the
#                        cluster's ports) queues the packets to netdelay.py,
#                        which holds each for D. Needs iptables and
#                        CONFIG_NETFILTER_XT_TARGET_NFQUEUE; traffic of other
#                        ports (other clusters) is untouched. A cluster up in
#                        DIR with another delay is remade. ceph-down.sh
#                        removes the rule. (docs/storage-rbd.md, "A test Ceph
#                        with network latency")
#
# Why these settings (measured with Debian 12's ceph 16.2, see
# docs/storage-rbd.md):
#   * no mgr: the mon and OSD serve RBD alone. Without a mgr no PG states are
#     reported, so readiness is a real write and read through the client user.
#   * Debian's ceph-osd is built without tcmalloc, and osd_memory_target below
#     896 MiB is ignored: with cache autotuning the OSD's RSS reaches 1.4 GB.
#     A small fixed BlueStore cache, small RocksDB memtables and tcmalloc
#     preloaded keep it near 320 MB under load.
#   * pool size 1 needs mon_allow_pool_size_one; the no-redundancy and
#     low-disk warnings are lowered so that health reflects the cluster, not
#     the test setup.
set -euo pipefail

usage() { echo "usage: $0 DIR" >&2; exit 2; }
[[ $# -eq 1 && -n $1 ]] || usage
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ceph-lib.sh
source "$here/ceph-lib.sh"

readonly pool=${CEPH_TEST_POOL:-disksweep}
readonly user=${CEPH_TEST_USER:-disksweep}
readonly osd_size_gib=${CEPH_TEST_OSD_SIZE:-16}
readonly step_timeout=${CEPH_TEST_TIMEOUT:-120}
readonly delay_ms=${CEPH_TEST_DELAY_MS:-0}
readonly osd_port_count=8  # public, cluster, two heartbeats; room to rebind
readonly tools=(ceph-mon ceph-osd ceph ceph-authtool monmaptool rados rbd ss)
started_at=$(date +%s.%N)

say() { echo "ceph-up: $*" >&2; }
fail() {
    say "$*"
    local log
    for log in "$dir"/log/*.log "$dir"/log/*.out; do
        [[ -r $log ]] || continue
        say "--- last lines of $log"
        tail -n 20 "$log" >&2
    done
    exit 1
}

# Phase: are the tools there at all? Missing packages are a skip, not a failure.
check_tools() {
    local tool missing=()
    for tool in "${tools[@]}"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
    if ((${#missing[@]} > 0)); then
        echo "SKIPPED: Ceph is not installed (missing ${missing[*]};" \
            "apt-get install ceph-mon ceph-osd ceph-common)"
        exit 77
    fi
    [[ $(id -u) == 0 ]] || { echo "SKIPPED: the test Ceph needs root"; exit 77; }
    if delay_wanted; then
        command -v iptables >/dev/null ||
            { say "CEPH_TEST_DELAY_MS needs iptables (apt-get install iptables)"; exit 1; }
    fi
}

# Phase: the delay is a plain decimal number of ms, at most 1000.
check_delay() {
    if [[ ! $delay_ms =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v d="$delay_ms" 'BEGIN { exit !(d <= 1000) }'; then
        say "CEPH_TEST_DELAY_MS must be a number of ms from 0 to 1000, not '$delay_ms'"
        exit 2
    fi
}

delay_wanted() { awk -v d="$delay_ms" 'BEGIN { exit !(d > 0) }'; }

# Phase: DIR is either new, empty, or ours (marker); never wipe anything else.
claim_dir() {
    mkdir -p "$1"
    dir=$(cd "$1" && pwd -P)
    if [[ ! -e $dir/$CEPH_TEST_MARKER && -n $(ls -A "$dir") ]]; then
        say "$dir is not empty and was not made by ceph-up.sh; refusing to use it"
        exit 1
    fi
}

# True when the cluster in DIR runs with the delay asked for and serves a
# write and a read.
cluster_answers() {
    [[ -r $dir/env ]] || return 1
    grep -qx "CEPH_TEST_DELAY_MS=$delay_ms" "$dir/env" || return 1
    if delay_wanted; then
        [[ -n $(ceph_test_delay_pid "$dir") && -r $dir/netdelay ]] || return 1
        local queue ports
        queue=$(sed -n 's/^queue=//p' "$dir/netdelay")
        ports=$(sed -n 's/^ports=//p' "$dir/netdelay")
        # shellcheck disable=SC2046  # the rule's words
        iptables -w $(ceph_test_delay_rule -C "$queue" "$ports") 2>/dev/null || return 1
    fi
    local daemon
    for daemon in "${CEPH_TEST_DAEMONS[@]}"; do
        [[ -n $(ceph_test_daemon_pid "$dir" "$daemon") ]] || return 1
    done
    probe_io 15
}

# Writes an object through the client user and reads it back, within $1 s.
probe_io() {
    local limit=$1 written="$dir/run/probe.in" read_back="$dir/run/probe.out"
    date +%s.%N >"$written"
    local rados=(rados -c "$dir/ceph.conf" --id "$user" -p "$pool")
    timeout "$limit" "${rados[@]}" put readiness-probe "$written" 2>/dev/null &&
        timeout "$limit" "${rados[@]}" get readiness-probe "$read_back" 2>/dev/null &&
        cmp -s "$written" "$read_back" &&
        timeout "$limit" "${rados[@]}" rm readiness-probe 2>/dev/null
}

# Phase: a stale DIR (killed run, hung daemons) is stopped and wiped.
clean_stale() {
    [[ -n $(ls -A "$dir") ]] || return 0
    say "cleaning what a previous run left in $dir"
    "$here/ceph-down.sh" "$dir" >&2
    mkdir -p "$dir"
}

# Free for a daemon: no socket on it but TIME-WAIT ones (Ceph binds with
# SO_REUSEADDR, so those left by a killed run do not block it).
port_is_free() {
    [[ -z $(ss -Htan exclude time-wait "( sport = :$1 )" 2>/dev/null) ]]
}

# The first port from $1 on that starts $2 consecutive free ports.
free_port_block() {
    local port=$1 count=$2 i
    while ((port + count <= 65535)); do
        for ((i = 0; i < count; ++i)); do
            port_is_free $((port + i)) || break
        done
        ((i == count)) && { echo "$port"; return 0; }
        port=$((port + i + 1))
    done
    return 1
}

# Phase: ports. The mon prefers 6789: a plain "IP:6789" is unambiguously the
# v1 protocol for every client (QEMU and libvirt pass plain IP:PORT).
choose_ports() {
    mon_port=$(free_port_block 6789 1) || fail "no free port for the mon"
    osd_port_min=$(free_port_block 6800 "$osd_port_count") || fail "no free ports for the OSD"
    if ((mon_port >= osd_port_min && mon_port < osd_port_min + osd_port_count)); then
        osd_port_min=$(free_port_block $((mon_port + 1)) "$osd_port_count") ||
            fail "no free ports for the OSD"
    fi
    {
        echo "$mon_port"
        seq "$osd_port_min" $((osd_port_min + osd_port_count - 1))
    } >"$dir/ports"
}

write_cluster_conf() {
    cat >"$dir/cluster.conf" <<EOF
# The daemons' config of the test Ceph made by ceph-up.sh (throwaway).
[global]
fsid = $fsid
mon_host = v1:127.0.0.1:$mon_port
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_msgr2 = false
ms_bind_ipv6 = false
ms_bind_port_min = $osd_port_min
ms_bind_port_max = $((osd_port_min + osd_port_count - 1))
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
run_dir = $dir/run
pid_file = $dir/run/\$name.pid
admin_socket = $dir/run/\$name.asok
log_file = $dir/log/\$name.log
crash_dir = $dir/crash
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
# No mgr by design: do not warn that none is active.
mon_mgr_mkfs_grace = 31536000
mon_data_avail_warn = 5
mon_data_avail_crit = 2
# Every client here is new enough: no insecure global_id reclaim (and no
# health warning about allowing it).
auth_allow_insecure_global_id_reclaim = false
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0

[mon]
mon_data = $dir/\$name
keyring = $dir/\$name/keyring

[osd]
osd_data = $dir/\$name
keyring = $dir/\$name/keyring
osd_objectstore = bluestore
bluestore_block_create = true
bluestore_block_size = $((osd_size_gib << 30))
bluestore_cache_autotune = false
bluestore_cache_size = 67108864
# RocksDB's default memtables (4 x 256 MiB) alone would take 1 GiB under
# small random writes; 2 x 32 MiB is plenty for a test OSD.
bluestore_rocksdb_options = compression=kNoCompression,max_write_buffer_number=2,min_write_buffer_number_to_merge=1,recycle_log_file_num=2,write_buffer_size=33554432,writable_file_max_buffer_size=0,compaction_readahead_size=2097152,max_background_compactions=2,max_total_wal_size=268435456

[client.admin]
keyring = $dir/admin.keyring
EOF
}

write_client_conf() {
    cat >"$dir/ceph.conf" <<EOF
# Clients of the test Ceph (disksweep, rbd, QEMU): monitors and cephx. The
# key is in the keyring file, which only root can read.
[global]
fsid = $fsid
# v1 said explicitly: on a port other than 6789 a plain IP:PORT makes
# clients try msgr2 first (and log an error) before falling back to v1.
mon_host = v1:127.0.0.1:$mon_port
auth_client_required = cephx

[client.$user]
keyring = $dir/client.$user.keyring
EOF
    # libvirt's embedded driver cannot pass a cephx user to QEMU (no <auth>
    # without a secret driver), so QEMU is client.admin there: this config
    # gives it that key (docs/storage-rbd.md).
    cat >"$dir/admin-client.conf" <<EOF
# Clients of the test Ceph that cannot name a cephx user and so are
# client.admin (QEMU under libvirt's embedded driver).
[global]
fsid = $fsid
mon_host = v1:127.0.0.1:$mon_port
auth_client_required = cephx

[client.admin]
keyring = $dir/admin.keyring
EOF
}

# Phase: configs, keys and the mon's store.
make_mon() {
    mkdir -p "$dir/run" "$dir/log" "$dir/crash"
    fsid=$(cat /proc/sys/kernel/random/uuid)
    write_cluster_conf
    write_client_conf
    (
        umask 077
        ceph-authtool --create-keyring "$dir/run/mon.keyring" --gen-key -n mon. \
            --cap mon 'allow *' >/dev/null
        ceph-authtool --create-keyring "$dir/admin.keyring" --gen-key -n client.admin \
            --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
        ceph-authtool "$dir/run/mon.keyring" --import-keyring "$dir/admin.keyring" >/dev/null
    )
    monmaptool --create --fsid "$fsid" --addv a "[v1:127.0.0.1:$mon_port]" \
        "$dir/run/monmap" >/dev/null
    # mkfs copies the keyring into the mon's data dir (an empty dir it fills).
    ceph-mon -c "$dir/cluster.conf" --mkfs -i a --monmap "$dir/run/monmap" \
        --keyring "$dir/run/mon.keyring" || fail "ceph-mon --mkfs failed"
    rm -f "$dir/run/mon.keyring"
}

admin() {
    timeout "$step_timeout" ceph -c "$dir/cluster.conf" --connect-timeout 20 "$@"
}

start_mon() {
    ceph-mon -c "$dir/cluster.conf" -i a >>"$dir/log/mon.a.out" 2>&1 ||
        fail "ceph-mon did not start: $(tail -n 5 "$dir/log/mon.a.out")"
    admin mon stat >/dev/null || fail "the mon does not answer"
}

# Debian's ceph-osd is linked without tcmalloc; with glibc's malloc its RSS
# keeps growing under small random writes (650 MB after 1.4 GB of 4 KiB
# writes, measured). tcmalloc (libgoogle-perftools4, a dependency of
# ceph-common) preloaded keeps it near 320 MB and writes faster.
osd_allocator_env() {
    if ldconfig -p 2>/dev/null | grep -q 'libtcmalloc\.so\.4 '; then
        osd_allocator=(LD_PRELOAD=libtcmalloc.so.4)
    else
        osd_allocator=(MALLOC_ARENA_MAX=2)
    fi
}

# Phase: the OSD's key (via stdin, never on a command line), its BlueStore on
# a sparse file, and the daemon.
make_osd() {
    local uuid osd_id key
    uuid=$(cat /proc/sys/kernel/random/uuid)
    mkdir -p "$dir/osd.0"
    osd_allocator_env
    (umask 077 && ceph-authtool --create-keyring "$dir/osd.0/keyring" --gen-key -n osd.0 >/dev/null)
    key=$(ceph-authtool "$dir/osd.0/keyring" -n osd.0 -p)
    osd_id=$(printf '{"cephx_secret": "%s"}' "$key" | admin osd new "$uuid" -i -) ||
        fail "ceph osd new failed"
    [[ $osd_id == 0 ]] || fail "expected osd.0, the mon made osd.$osd_id"
    ceph-osd -c "$dir/cluster.conf" -i 0 --mkfs --osd-uuid "$uuid" >"$dir/log/osd-mkfs.out" 2>&1 ||
        fail "ceph-osd --mkfs failed: $(tail -n 5 "$dir/log/osd-mkfs.out")"
    env "${osd_allocator[@]}" ceph-osd -c "$dir/cluster.conf" -i 0 >>"$dir/log/osd.0.out" 2>&1 ||
        fail "ceph-osd did not start: $(tail -n 5 "$dir/log/osd.0.out")"
}

# Phase: the pool for RBD and the disksweep client with a root-only keyring.
make_pool_and_user() {
    admin osd pool create "$pool" 8 8 replicated >>"$dir/log/setup.out" 2>&1 ||
        fail "pool create failed: $(tail -n 5 "$dir/log/setup.out")"
    admin osd pool set "$pool" size 1 --yes-i-really-mean-it >>"$dir/log/setup.out" 2>&1 ||
        fail "cannot set the size of $pool to 1: $(tail -n 5 "$dir/log/setup.out")"
    timeout "$step_timeout" rbd -c "$dir/cluster.conf" pool init "$pool" ||
        fail "rbd pool init $pool did not finish in ${step_timeout} s"
    (
        umask 077
        admin auth get-or-create "client.$user" mon 'profile rbd' \
            osd "profile rbd pool=$pool" -o "$dir/client.$user.keyring"
    ) || fail "cannot create client.$user"
    chmod 0600 "$dir/client.$user.keyring" "$dir/admin.keyring"
}

# The TCP ports the cluster's daemons listen on, comma-separated. Only these
# go in the delay's rule: the OSD binds 4 of the 8 ports it may use, and
# another cluster may bind the rest (its rule must not catch ours).
listening_ports() {
    local daemon pid pids=""
    for daemon in "${CEPH_TEST_DAEMONS[@]}"; do
        pid=$(ceph_test_daemon_pid "$dir" "$daemon")
        [[ -n $pid ]] && pids+="pid=$pid,"
    done
    [[ -n $pids ]] || return 1
    ss -Hltnp 2>/dev/null | awk -v pids="$pids" '{
        split(pids, want, ",")
        for (i in want) if (want[i] != "" && index($0, want[i] ",")) {
            n = split($4, part, ":"); print part[n]; break
        }
    }' | sort -un | paste -sd,
}

# Phase: the network delay. netdelay.py binds its queue first; only then does
# the rule send packets to it (a queue without a reader drops them). The
# queue's number is the mon's port: unique among the clusters on this host.
start_delay() {
    delay_wanted || return 0
    local queue ports
    queue=$(head -n 1 "$dir/ports")
    ports=$(listening_ports)
    [[ $ports =~ ^[0-9]+(,[0-9]+)+$ ]] || fail "cannot tell the daemons' ports (ss: '$ports')"
    setsid chrt --fifo 10 "$here/netdelay.py" --queue "$queue" --delay-ms "$delay_ms" \
        --stats "$dir/run/netdelay.stats" </dev/null >>"$dir/log/netdelay.log" 2>&1 &
    echo $! >"$dir/run/netdelay.pid"
    local deadline=$((SECONDS + 10))
    until [[ -s $dir/run/netdelay.stats ]]; do
        kill -0 "$(cat "$dir/run/netdelay.pid")" 2>/dev/null || fail "netdelay.py did not start"
        ((SECONDS < deadline)) || fail "netdelay.py did not bind queue $queue in 10 s"
        sleep 0.1
    done
    printf 'queue=%s\nports=%s\n' "$queue" "$ports" >"$dir/netdelay"
    # shellcheck disable=SC2046  # the rule's words
    iptables -w $(ceph_test_delay_rule -A "$queue" "$ports") ||
        fail "cannot add the iptables rule for the delay"
}

wait_until_ready() {
    local deadline=$((SECONDS + step_timeout))
    until probe_io 20; do
        ((SECONDS < deadline)) || fail "no write and read through client.$user in ${step_timeout} s"
        sleep 1
    done
}

write_env() {
    cat >"$dir/env.new" <<EOF
CEPH_CONF=$dir/ceph.conf
CEPH_KEYRING=$dir/client.$user.keyring
CEPH_POOL=$pool
CEPH_USER=$user
CEPH_MON_HOST=127.0.0.1:$mon_port
CEPH_ADMIN_CONF=$dir/admin-client.conf
CEPH_TEST_DELAY_MS=$delay_ms
EOF
    mv "$dir/env.new" "$dir/env"
}

report_time() {
    local now
    now=$(date +%s.%N)
    echo "ceph-up: $1 in $(awk -v a="$started_at" -v b="$now" 'BEGIN { printf "%.1f", b - a }') s" \
        "(mon 127.0.0.1:$(head -n 1 "$dir/ports"), pool $pool, client.$user," \
        "network delay $delay_ms ms each way, $dir/env)"
}

main() {
    check_delay
    check_tools
    claim_dir "$1"
    if cluster_answers; then
        report_time "already up"
        return 0
    fi
    clean_stale
    touch "$dir/$CEPH_TEST_MARKER"
    choose_ports
    make_mon
    start_mon
    make_osd
    make_pool_and_user
    start_delay
    wait_until_ready
    write_env
    report_time "ready"
}

main "$@"
