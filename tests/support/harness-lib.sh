# shellcheck shell=bash
# Shared by the test harnesses that start a daemon for the tests
# (tests/backend/rbd/libvirtd-*.sh, tests/remote/remote-libvirtd.sh).
# Sourced, not run.

# Writes stdin to FILE ($1) as a whole: a test reading FILE never sees half
# of it (the harnesses' DIR/env).
write_file_atomically() {
    cat >"$1.new"
    mv "$1.new" "$1"
}

# "NAME: WHAT in N.N s (DETAILS)" on stdout, N the seconds since STARTED_AT
# (date +%s.%N): how long a harness took, for the tests' time budgets.
report_elapsed() {
    local name=$1 what=$2 started_at=$3 details=$4 now
    now=$(date +%s.%N)
    echo "$name: $what in $(awk -v a="$started_at" -v b="$now" 'BEGIN { printf "%.1f", b - a }') s ($details)"
}

# Mount points. A harness that runs its daemon in a mount namespace of its
# own may have to create an empty mount point on the host
# (/var/lib/libvirt is not there without libvirt-daemon-system) and removes it
# when it stops. A leftover namespace of the other harness may have mounted
# something on that same directory; removing it would silently detach that
# mount there (Linux detaches mounts of other namespaces on a removed
# directory), breaking the other daemon under its feet.

# Whether some process outside our mount namespace has a mount on PATH ($1)
# in its own namespace. One process of each other namespace is asked (one
# `find` for all of /proc: a readlink per process would fork hundreds of
# times).
mounted_in_another_namespace() {
    local path=$1 own proc
    own=$(readlink /proc/self/ns/mnt)
    while read -r proc; do
        # mountinfo's fifth field is the mount point.
        awk -v p="$path" '$5 == p { found = 1 } END { exit !found }' \
            "$proc/mountinfo" 2>/dev/null && return 0
    done < <(find /proc/[0-9]*/ns/mnt -maxdepth 0 -printf '%l %h\n' 2>/dev/null |
        awk -v own="$own" '$1 != own && !seen[$1]++ { sub(/\/ns$/, "", $2); print $2 }')
    return 1
}

# Removes the empty mount points listed in FILE ($1), one a line, unless
# another namespace still mounts on one (see above): that one stays. A
# namespace whose last process was just killed may still show its mounts
# for a moment, so each is given up to 2 s.
remove_made_mountpoints() {
    local file=$1 mountpoint deadline
    [[ -r $file ]] || return 0
    while read -r mountpoint; do
        [[ -n $mountpoint ]] || continue
        deadline=$((SECONDS + 2))
        while mounted_in_another_namespace "$mountpoint" && ((SECONDS < deadline)); do
            sleep 0.1
        done
        if mounted_in_another_namespace "$mountpoint"; then
            echo "keeping $mountpoint: another mount namespace mounts on it" >&2
        else
            rmdir "$mountpoint" || echo "could not remove the mount point $mountpoint" >&2
        fi
    done <"$file"
}
