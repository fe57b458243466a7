#!/bin/bash
# build-debian13-root.sh [--find] [CACHEDIR]
#
# Builds (or finds) a Debian 13 ("trixie") root directory with QEMU 10 in it,
# and prints on stdout the path of a wrapper that runs that QEMU on this
# Debian 12 host: CACHEDIR/debian13-root-KEY/bin/qemu-system-x86_64 (and
# bin/qemu-img next to it). Log lines go to stderr. --find builds nothing:
# it prints the wrapper's path when this script's root is built, else exits 3
# (for tests that need QEMU 10 but must not spend a minute building it).
#
# Users: the simulated PVE 9.1 (tests/support/pve_fake/real_backend.py runs
# its guests under QEMU 10) and issue 33's Debian 13 host/guest work. To add
# packages for a new user, extend PACKAGES: the cache key changes with it.
#
# CACHEDIR: the first argument, else $DISKSWEEP_DEBIAN13_CACHE, else
# /var/cache/disksweep. The root lives in CACHEDIR/debian13-root-KEY where
# KEY is a sha256 of this script (PACKAGES is part of it) and the suite, so a
# changed script builds a new root and an unchanged one, in a fresh clone
# too, reuses the old. The root is built in CACHEDIR/tmp.* and renamed into
# place only once its QEMU answers --version with 10.x: a failed build
# leaves nothing that a later run would take for a finished root. A lock
# (CACHEDIR/debian13-root.lock) keeps two concurrent callers from building
# it twice.
#
# Why a loader wrapper and not a chroot: the root's QEMU needs the root's
# glibc and libraries, which its own dynamic loader finds given
# --library-path. Run that way QEMU sees the host's file system as it is,
# so QMP/QGA unix sockets, disk images and logs under /tmp or
# /var/lib/disksweep work with no bind mounts, no root privileges and
# nothing to unmount after a crash. Firmware comes from the root through -L,
# one per directory of Debian's firmware path (/usr/share/qemu, seabios,
# ipxe), searched before the compiled-in ones, which here are the host's
# QEMU 7.2 files (`-L help` lists the order); modules (qemu-block-extra)
# come through QEMU_MODULE_DIR, since QEMU locates
# them relative to /proc/self/exe, which is the loader here.
set -euo pipefail

SUITE=trixie
# Everything the root must contain. One variable so it can grow.
PACKAGES=(qemu-system-x86 qemu-utils qemu-block-extra)
# Debian's QEMU firmware path (its --firmwarepath), in its order.
FIRMWARE_DIRS=(usr/share/qemu usr/share/seabios usr/lib/ipxe/qemu)
KEEP=2 # cache entries kept, most recently built first

log() { echo "build-debian13-root: $*" >&2; }
die() { log "error: $*"; exit 1; }

FIND_ONLY=0
if [[ ${1:-} == --find ]]; then
    FIND_ONLY=1
    shift
fi
CACHEDIR=${1:-${DISKSWEEP_DEBIAN13_CACHE:-/var/cache/disksweep}}
SELF=$(readlink -f "${BASH_SOURCE[0]}")
KEY=$( { echo "$SUITE"; cat "$SELF"; } | sha256sum | cut -c1-16)
FINAL=$CACHEDIR/debian13-root-$KEY
ARCH_TRIPLET=x86_64-linux-gnu

# write_wrapper DIR BINARY [EXTRA_ARGS...]: DIR/bin/BINARY runs
# DIR/root/usr/bin/BINARY through the root's loader. The wrapper finds the
# root relative to itself, so the rename from tmp.* keeps it valid.
write_wrapper() {
    local dir=$1 bin=$2
    shift 2
    mkdir -p "$dir/bin"
    cat >"$dir/bin/$bin" <<EOF
#!/bin/sh
# Runs Debian 13's $bin from ../root with its own loader and libraries
# (written by tests/support/build-debian13-root.sh).
R=\$(cd "\$(dirname "\$0")/../root" && pwd) || exit 127
L=\$R/usr/lib/$ARCH_TRIPLET
export QEMU_MODULE_DIR=\$L/qemu
exec "\$L/ld-linux-x86-64.so.2" --library-path "\$L:\$R/lib/$ARCH_TRIPLET" \\
    --argv0 $bin "\$R/usr/bin/$bin" $* "\$@"
EOF
    chmod 755 "$dir/bin/$bin"
}

# relativize_links TREE SUBDIR: absolute symlinks under TREE/SUBDIR (e.g.
# firmware links into /usr/share/seabios) would resolve on the host, to
# QEMU 7.2's files; make them point inside TREE.
relativize_links() {
    local tree=$1 sub=$2 link target
    [[ -d $tree/$sub ]] || return 0
    while IFS= read -r -d '' link; do
        target=$(readlink "$link")
        [[ $target == /* ]] || continue
        ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$tree$target")" "$link"
    done < <(find "$tree/$sub" -type l -print0)
}

# build STAGE: mmdebstrap into STAGE/root, wrappers, packages.tsv, check.
build() {
    local stage=$1 t0 t1
    t0=$(date +%s)
    log "mmdebstrap $SUITE (${PACKAGES[*]}) into $stage (about 2 min; log: $stage/mmdebstrap.log)"
    if ! mmdebstrap --mode=root --variant=apt --architectures=amd64 \
        --include="$(IFS=,; echo "${PACKAGES[*]}")" \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        "$SUITE" "$stage/root" </dev/null >"$stage/mmdebstrap.log" 2>&1; then
        tail -n 30 "$stage/mmdebstrap.log" >&2
        cp "$stage/mmdebstrap.log" "$CACHEDIR/failed-debian13-mmdebstrap.log"
        return 1
    fi
    # mmdebstrap unmounts what it mounted; never rename a tree with mounts.
    if awk -v p="$(readlink -f "$stage/root")/" 'index($5, p) == 1 { f = 1 } END { exit !f }' /proc/self/mountinfo; then
        log "mounts left under $stage/root after mmdebstrap"
        return 1
    fi
    local dir firmware_args=""
    for dir in "${FIRMWARE_DIRS[@]}"; do
        relativize_links "$stage/root" "$dir"
        firmware_args+=" -L \"\$R/$dir\""
    done
    write_wrapper "$stage" qemu-system-x86_64 "$firmware_args"
    write_wrapper "$stage" qemu-img
    dpkg-query --admindir="$stage/root/var/lib/dpkg" -W -f='${Package}\t${Version}\n' >"$stage/packages.tsv"
    local version
    version=$("$stage/bin/qemu-system-x86_64" --version | head -n 1)
    [[ $version == "QEMU emulator version 10."* ]] || { log "unexpected QEMU: $version"; return 1; }
    "$stage/bin/qemu-img" --version >/dev/null || { log "qemu-img does not run"; return 1; }
    t1=$(date +%s)
    {
        echo "SUITE=$SUITE"
        echo "KEY=$KEY"
        echo "QEMU_VERSION='${version#QEMU emulator version }'"
        echo "BUILD_SECONDS=$((t1 - t0))"
        echo "BUILT=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$stage/root.env"
    log "built in $((t1 - t0)) s, $(du -sh "$stage/root" | cut -f1): $version"
}

# prune: keep the KEEP newest debian13-root-* entries.
prune() {
    local old
    # shellcheck disable=SC2012 # names are ours, no odd characters
    ls -1dt "$CACHEDIR"/debian13-root-*/ 2>/dev/null | tail -n +$((KEEP + 1)) | while read -r old; do
        log "removing old cache entry $old"
        rm -rf --one-file-system "$old"
    done
}

main() {
    if ((FIND_ONLY)); then
        [[ -x $FINAL/bin/qemu-system-x86_64 && -f $FINAL/root.env ]] || exit 3
        echo "$FINAL/bin/qemu-system-x86_64"
        exit 0
    fi
    for tool in mmdebstrap sha256sum flock dpkg-query; do
        command -v "$tool" >/dev/null || die "$tool not found (apt-get install mmdebstrap)"
    done
    mkdir -p "$CACHEDIR"
    exec 9>"$CACHEDIR/debian13-root.lock"
    flock 9
    if [[ -x $FINAL/bin/qemu-system-x86_64 && -f $FINAL/root.env ]]; then
        log "using cache $FINAL"
    else
        local stage
        stage=$(mktemp -d "$CACHEDIR/tmp.debian13.XXXXXX")
        # A failed build removes its stage; the final name is never half-made.
        if ! build "$stage"; then
            rm -rf --one-file-system "$stage"
            die "building the Debian 13 root failed"
        fi
        mv -T "$stage" "$FINAL"
        prune
    fi
    echo "$FINAL/bin/qemu-system-x86_64"
}

main
