#!/usr/bin/env bash
# Stops the throwaway test Ceph that ceph-up.sh started in DIR and deletes
# DIR. Safe to run twice, on a half-made DIR, or on a DIR whose daemons were
# killed or hang.
#
#   tests/support/ceph/ceph-down.sh DIR
#
# Contract with the caller: stop your guests FIRST. A QEMU whose RBD disk
# sits on an OSD that is gone blocks in I/O and ignores SIGTERM. Anything
# still connected to the cluster when this runs (a guest the caller forgot,
# a hung rbd) is therefore ended here while the OSD is still up: SIGTERM,
# then SIGKILL after 10 s. Only then are the OSD and the mon stopped.
#
# Refuses to delete a DIR that ceph-up.sh did not make (no marker file).
# Exit status: 0 stopped (or nothing to stop), 1 refused or a daemon survived.
set -euo pipefail

[[ $# -eq 1 && -n $1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ceph-lib.sh
source "$here/ceph-lib.sh"

say() { echo "ceph-down: $*" >&2; }

[[ -d $1 ]] || exit 0
dir=$(cd "$1" && pwd -P)
if [[ ! -e $dir/$CEPH_TEST_MARKER ]]; then
    [[ -z $(ls -A "$dir") ]] && exit 0
    say "$dir was not made by ceph-up.sh (no $CEPH_TEST_MARKER); leaving it alone"
    exit 1
fi

# Phase 0: the emulated network delay (CEPH_TEST_DELAY_MS), so that nothing
# below waits on it, and no rule is left behind for ports a later run reuses.
command -v iptables >/dev/null || [[ ! -e $dir/netdelay ]] ||
    say "iptables is gone: cannot remove the delay's rule (see $dir/netdelay)"
command -v iptables >/dev/null && { ceph_test_delay_remove "$dir" || exit 1; }

# Phase 1: clients still holding the cluster, while the OSD can still answer.
mapfile -t clients < <(ceph_test_client_pids "$dir")
if ((${#clients[@]} > 0)); then
    say "ending processes still connected to the cluster: ${clients[*]}"
    ceph_test_stop_pids 10 "${clients[@]}"
fi

# Phase 2: the daemons, newest first (OSD, then mon); then any process still
# started with this DIR's config (a pid file lost in a killed run).
for ((i = ${#CEPH_TEST_DAEMONS[@]} - 1; i >= 0; --i)); do
    pid=$(ceph_test_daemon_pid "$dir" "${CEPH_TEST_DAEMONS[i]}")
    [[ -n $pid ]] && ceph_test_stop_pids 20 "$pid"
done
mapfile -t leftovers < <(ceph_test_pids_by_config "$dir")
((${#leftovers[@]} > 0)) && ceph_test_stop_pids 5 "${leftovers[@]}"
mapfile -t survivors < <(ceph_test_pids_by_config "$dir")
if ((${#survivors[@]} > 0)); then
    say "processes of the test Ceph survived SIGKILL: ${survivors[*]}; $dir kept"
    exit 1
fi

# Phase 3: the data (the sparse BlueStore file, keys, logs).
rm -rf "$dir"
say "stopped and removed $dir"
