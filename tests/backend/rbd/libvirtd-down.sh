#!/usr/bin/env bash
# Stops the test libvirtd that libvirtd-up.sh started in DIR, with any guest
# it still runs, removes what it added to /run/libvirt and the mount points
# libvirtd-up.sh made, and deletes DIR. Safe to run twice, on a half-made DIR,
# or after the daemon died.
#
#   tests/backend/rbd/libvirtd-down.sh DIR
#
# Refuses to touch a DIR that libvirtd-up.sh did not make (no marker file).
# Exit status: 0 stopped (or nothing to stop), 1 refused or the daemon
# survived SIGKILL.
set -euo pipefail

[[ $# -eq 1 && -n $1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=libvirtd-lib.sh
source "$here/libvirtd-lib.sh"
# shellcheck source-path=SCRIPTDIR source=../../support/harness-lib.sh
source "$here/../../support/harness-lib.sh"

say() { echo "libvirtd-down: $*" >&2; }

[[ -d $1 ]] || exit 0
dir=$(cd "$1" && pwd -P)
if [[ ! -e $dir/$LIBVIRTD_TEST_MARKER ]]; then
    [[ -z $(ls -A "$dir") ]] && exit 0
    say "$dir was not made by libvirtd-up.sh (no $LIBVIRTD_TEST_MARKER); leaving it alone"
    exit 1
fi

# Phase 1: guests a failed test left (also when the daemon died: they outlive
# it), then the daemon (SIGTERM does not end libvirtd's guests). Guests are
# only ended while no other libvirtd runs, so that they are surely the test's.
pid=$(libvirtd_test_pid "$dir")
others=$(libvirtd_all_pids | grep -vx "${pid:-none}" || true)
if [[ -z $others ]]; then
    mapfile -t guests < <(libvirtd_test_guest_pids)
    if ((${#guests[@]} > 0)); then
        say "ending guests the test left: ${guests[*]}"
        libvirtd_test_stop_pids 10 "${guests[@]}"
    fi
fi
if [[ -n $pid ]]; then
    libvirtd_test_stop_pids 20 "$pid"
    if kill -0 "$pid" 2>/dev/null; then
        say "libvirtd $pid survived SIGKILL; $dir kept"
        exit 1
    fi
fi

# Phase 2: what it added to the shared /run/libvirt (sockets, state dirs).
if [[ -e $dir/run-absent ]]; then
    rm -rf "$LIBVIRTD_RUN_DIR"
elif [[ -r $dir/run-before && -d $LIBVIRTD_RUN_DIR ]]; then
    mapfile -t before <"$dir/run-before"
    for entry in "$LIBVIRTD_RUN_DIR"/* "$LIBVIRTD_RUN_DIR"/.[!.]*; do
        [[ -e $entry || -S $entry ]] || continue
        name=${entry##*/}
        [[ " ${before[*]} " == *" $name "* ]] || rm -rf "$entry"
    done
fi

# Phase 3: the empty mount points libvirtd-up.sh made (its namespace is gone
# with it, so they are empty again; one another namespace still mounts on
# stays: harness-lib.sh), then DIR.
remove_made_mountpoints "$dir/made-mountpoints"
rm -rf "$dir"
say "stopped and removed $dir"
