#!/bin/bash
# Builds the disksweep guest image. Run as root.
#
#   guest/build-image.sh [--suite SUITE] [--variant mariadb]
#                        [--sql-bench-fallback DIR] OUTDIR AGENT_BINARY
#
# --suite: a Debian suite of guest/suites.txt (default: its first, bookworm).
# Packages are named as bookworm names them; suites.txt maps the names that
# differ (trixie: libaio1t64). The suite's images go where the caller says:
# scripts/build-guest-image.sh --suite puts them where the daemon looks.
#
# Produces OUTDIR/vmlinuz (Debian bzImage), OUTDIR/vmlinux (the same kernel as
# an uncompressed PVH ELF: boots ~10 s faster under TCG), OUTDIR/initrd.img,
# OUTDIR/root.img and, last, OUTDIR/manifest.json (present only when the
# others match each other).
# --variant mariadb adds packages-mariadb.txt (mariadb-server, PostgreSQL, Perl DBI,
# sysbench) and MariaDB's sql-bench in /opt/sql-bench (lib/sqlbench.sh); the
# daemon expects it in IMAGE_DIR/mariadb (scripts/build-guest-image.sh).
# --sql-bench-fallback DIR: when no 'mariadb' source version of this suite
# can be fetched, the most recent sqlbench-* of this image's own cache, else
# of DIR (another suite's IMAGE_DIR/mariadb/cache), is used, with a warning;
# the manifest's sql_bench.version says which version went in.
# Caches under OUTDIR/cache/ (see guest/README.md):
#   rootfs-KEY/  Debian root fs + kernel, KEY = sha256 of the suite, its
#                package renames, packages.txt, lib/rootfs.sh,
#                lib/customize-rootfs.sh, lib/suites.sh and the apt sources
#                (variant: + packages-VARIANT.txt, lib/sqlbench.sh and the
#                sql-bench source version)
#   sqlbench-VERSION/  (variant mariadb) the prepared sql-bench files
#   apt-SUITE/   (variant mariadb, a suite the host's apt lacks) a private
#                apt state with the suite's deb-src entries (lib/sqlbench.sh)
#   initrd-KEY/  initramfs, KEY = sha256 of the root fs KEY, the agent binary,
#                initramfs/init, initramfs/qga-init, initramfs/modules.txt,
#                lib/initramfs.sh
# Every cache entry is built in cache/tmp.* and renamed into place, so a
# killed build leaves nothing that looks valid.
set -euo pipefail

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/suites.sh
source "$GUEST_DIR/lib/suites.sh"
KEEP_ROOTFS=3 # cache entries kept (most recently used first)
KEEP_INITRD=6

guest_log() { echo "[guest] $*"; }
guest_die() { echo "[guest] ERROR: $*" >&2; exit 1; }

# guest_safe_rm PATH...: unmounts whatever is still mounted below PATH (a
# killed mmdebstrap can leave proc, sys, devpts mounted in its chroot), then
# removes PATH without crossing into another file system.
guest_safe_rm() {
    local p m
    for p in "$@"; do
        [[ -e $p ]] || continue
        p=$(readlink -f "$p")
        awk -v p="$p" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo |
            sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
        rm -rf --one-file-system "$p"
    done
}

# --rootfs-only: build (or find) the root fs and kernel in the cache and stop:
# no agent needed, so it can run while the agent compiles (scripts/quickstart.sh).
usage() {
    echo "usage: $0 [--suite SUITE] [--variant mariadb] [--sql-bench-fallback DIR] OUTDIR AGENT_BINARY" >&2
    echo "       $0 [--suite SUITE] [--variant mariadb] [--sql-bench-fallback DIR] --rootfs-only OUTDIR" >&2
    exit 2
}
VARIANT='' ROOTFS_ONLY=0 SUITE='' SQLBENCH_FALLBACK=''
while [[ ${1:-} == --* ]]; do
    case $1 in
    --suite | --variant | --sql-bench-fallback) [[ $# -ge 2 ]] || usage ;;&
    --suite) SUITE=$2 ;;
    --variant) VARIANT=$2 ;;
    --sql-bench-fallback) SQLBENCH_FALLBACK=$2 ;;
    --rootfs-only) ROOTFS_ONLY=1 && shift && continue ;;
    *) echo "$0: unknown option $1" >&2 && usage ;;
    esac
    shift 2
done
if [[ $ROOTFS_ONLY == 1 ]]; then
    [[ $# == 1 ]] || usage
    set -- "$1" /dev/null
fi
SUITE=${SUITE:-$(guest_default_suite)}
guest_check_suite "$SUITE" || exit 2
[[ -z $VARIANT || $VARIANT == mariadb ]] || guest_die "unknown image variant '$VARIANT' (known: mariadb)"
[[ $# == 2 ]] || usage
[[ $EUID == 0 ]] || guest_die "must run as root (mmdebstrap --mode=root, mknod)"
[[ $ROOTFS_ONLY == 1 || -f $2 ]] || guest_die "agent binary not found: $2"
for tool in mmdebstrap mkfs.ext4 debugfs dpkg-deb dpkg-query cpio zstd sha256sum flock; do
    command -v "$tool" >/dev/null || guest_die "missing tool: $tool"
done

# shellcheck source=lib/rootfs.sh
source "$GUEST_DIR/lib/rootfs.sh"
# shellcheck source=lib/initramfs.sh
source "$GUEST_DIR/lib/initramfs.sh"
if [[ -n $VARIANT ]]; then
    # shellcheck source=lib/sqlbench.sh
    source "$GUEST_DIR/lib/sqlbench.sh"
    command -v dpkg-source >/dev/null || guest_die "missing tool: dpkg-source (package dpkg-dev)"
fi

mkdir -p "$1"
OUTDIR=$(cd "$1" && pwd)
AGENT=$(readlink -f "$2")
CACHE=$OUTDIR/cache
mkdir -p "$CACHE"
T_START=$(date +%s.%N)

exec 9>"$CACHE/.lock"
if ! flock -n 9; then
    guest_log "waiting for another build in $OUTDIR..."
    flock 9
fi
# Leftovers of killed builds (we hold the lock: nobody else is building).
guest_safe_rm "$CACHE"/tmp.* "$OUTDIR"/.publish.*
STAGE=
trap 'if [[ -n $STAGE ]]; then guest_safe_rm "$STAGE"; fi' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# hash_inputs LABEL FILE...: sha256 over the label and each file's name and
# content.
hash_inputs() {
    local label=$1 f
    shift
    {
        echo "$label"
        for f in "$@"; do
            printf '\n== %s %s\n' "$(basename "$f")" "$(wc -c <"$f")"
            cat "$f"
        done
    } | sha256sum | cut -c1-64
}

# ---- root fs + kernel ------------------------------------------------------
SOURCES=$CACHE/tmp.sources
if guest_apt_sources "$SUITE" "$SOURCES"; then
    SOURCES_ARG=$SOURCES
else
    guest_log "no $SUITE entries in the host's apt sources: using mmdebstrap's default mirror"
    SOURCES_ARG=
fi
# The suite and its renames: a rename rebuilds only its own suite.
SUITE_LABEL="$SUITE amd64"
[[ -z $(guest_suite_renames "$SUITE") ]] || SUITE_LABEL+=" $(guest_suite_renames "$SUITE")"
if [[ -z $VARIANT ]]; then
    ROOTFS_KEY=$(hash_inputs "disksweep-rootfs-v1 $SUITE_LABEL" \
        "$GUEST_DIR/packages.txt" "$GUEST_DIR/lib/rootfs.sh" "$GUEST_DIR/lib/customize-rootfs.sh" \
        "$GUEST_DIR/lib/suites.sh" "$SOURCES")
else
    # ---- sql-bench, cached by the source package's version --------------------
    # Sources come from where the root fs comes from: the host's apt when it
    # carries the suite, else a private apt state for mmdebstrap's default
    # mirror (the host's /etc/apt is left alone).
    [[ -n $SOURCES_ARG ]] || sqlbench_use_private_apt "$SUITE" "$CACHE/apt-$SUITE"
    # The newest source version that is cached or can be fetched (the
    # binaries' version when the mirror carries its sources).
    mapfile -t versions < <(sqlbench_source_versions)
    if ((${#versions[@]} == 0)) && [[ -n $SOURCES_ARG ]]; then
        guest_log "warning: apt knows no 'mariadb' source package: add a deb-src entry (scripts/install-deps.sh writes one) and run apt-get update"
    elif ((${#versions[@]} == 0)); then
        guest_log "warning: the default mirror's $SUITE deb-src index has no 'mariadb' (log: $CACHE/apt-$SUITE/update.log)"
    fi
    SQLBENCH_VERSION=
    for v in "${versions[@]}"; do
        SQLBENCH_CACHE=$CACHE/sqlbench-${v//:/_}
        if [[ -f $SQLBENCH_CACHE/SOURCE ]]; then
            guest_log "sql-bench $v: using cache ${SQLBENCH_CACHE#"$OUTDIR"/}"
            SQLBENCH_VERSION=$v
            break
        fi
        STAGE=$CACHE/tmp.sqlbench.$$
        mkdir "$STAGE"
        if sqlbench_fetch "$v" "$STAGE"; then
            mv -T "$STAGE" "$SQLBENCH_CACHE"
            STAGE=
            SQLBENCH_VERSION=$v
            break
        fi
        rm -rf "$STAGE"
        STAGE=
    done
    [[ -n $SQLBENCH_VERSION || -z $SQLBENCH_FALLBACK ]] || sqlbench_reuse_fallback "$SQLBENCH_FALLBACK"
    [[ -n $SQLBENCH_VERSION ]] || guest_die "no 'mariadb' source version of $SUITE could be fetched (tried: ${versions[*]:-none})${SQLBENCH_FALLBACK:+, and neither this cache nor $SQLBENCH_FALLBACK has a sqlbench-*: build the mariadb image of the default suite first (scripts/build-guest-image.sh): this one then reuses its sql-bench}"
    touch "$SQLBENCH_CACHE"
    ROOTFS_KEY=$(hash_inputs "disksweep-rootfs-v1 $SUITE_LABEL variant=$VARIANT sql-bench=$SQLBENCH_VERSION" \
        "$GUEST_DIR/packages.txt" "$GUEST_DIR/packages-$VARIANT.txt" "$GUEST_DIR/lib/rootfs.sh" \
        "$GUEST_DIR/lib/customize-rootfs.sh" "$GUEST_DIR/lib/suites.sh" "$GUEST_DIR/lib/sqlbench.sh" "$SOURCES")
    # build_rootfs (lib/rootfs.sh) is shared with the base image, whose cache
    # key covers its bytes: the variant adds its packages and its customize
    # hook by wrapping the mmdebstrap call instead of editing it (mmdebstrap
    # accumulates --include lists and runs customize hooks in order).
    mmdebstrap() {
        command mmdebstrap --include="$(guest_read_packages "$GUEST_DIR/packages-$VARIANT.txt")" \
            --customize-hook="bash -c 'source \"\$0\" && sqlbench_install \"\$1\" \"\$2\"' '$GUEST_DIR/lib/sqlbench.sh' '$SQLBENCH_CACHE' \"\$1\"" \
            "$@"
    }
fi
ROOTFS_DIR=$CACHE/rootfs-${ROOTFS_KEY:0:16}
if [[ -f $ROOTFS_DIR/rootfs.env ]]; then
    guest_log "root fs + kernel: using cache ${ROOTFS_DIR#"$OUTDIR"/}"
    ROOTFS_CACHE=hit
else
    STAGE=$CACHE/tmp.rootfs.$$
    mkdir "$STAGE"
    [[ -n $SOURCES_ARG ]] && cp "$SOURCES" "$STAGE/apt-sources" && SOURCES_ARG=$STAGE/apt-sources
    build_rootfs "$STAGE" "$SOURCES_ARG" "$ROOTFS_KEY"
    mv -T "$STAGE" "$ROOTFS_DIR"
    STAGE=
    ROOTFS_CACHE=built
fi
rm -f "$SOURCES"
touch "$ROOTFS_DIR"
if [[ $ROOTFS_ONLY == 1 ]]; then
    guest_log "root fs + kernel ready ($ROOTFS_CACHE): ${ROOTFS_DIR#"$OUTDIR"/} (--rootfs-only: no initramfs, nothing published)"
    exit 0
fi

# ---- initramfs ---------------------------------------------------------------
AGENT_SHA=$(sha256sum "$AGENT" | cut -c1-64)
INITRD_KEY=$(hash_inputs "disksweep-initrd-v1 $ROOTFS_KEY $AGENT_SHA" \
    "$GUEST_DIR/initramfs/init" "$GUEST_DIR/initramfs/qga-init" "$GUEST_DIR/initramfs/modules.txt" \
    "$GUEST_DIR/lib/initramfs.sh")
INITRD_DIR=$CACHE/initrd-${INITRD_KEY:0:16}
if [[ -f $INITRD_DIR/initrd.env ]]; then
    guest_log "initramfs: using cache ${INITRD_DIR#"$OUTDIR"/}"
    INITRD_CACHE=hit
else
    guest_log "building initramfs (a few seconds)..."
    STAGE=$CACHE/tmp.initrd.$$
    mkdir "$STAGE"
    build_initramfs "$ROOTFS_DIR" "$AGENT" "$STAGE"
    mv -T "$STAGE" "$INITRD_DIR"
    STAGE=
    INITRD_CACHE=built
fi
touch "$INITRD_DIR"

# ---- manifest + publish ------------------------------------------------------
# shellcheck disable=SC1091
source "$ROOTFS_DIR/rootfs.env"
# shellcheck disable=SC1091
source "$INITRD_DIR/initrd.env"

json_str() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
pkg_version() { awk -F'\t' -v p="$1" '$1 == p { print $2 }' "$ROOTFS_DIR/packages.tsv"; }

manifest() {
    local p first=1
    echo "{"
    echo "  \"format\": 1,"
    if [[ -n $VARIANT ]]; then
        echo "  \"variant\": $(json_str "$VARIANT"),"
        echo "  \"sql_bench\": {\"source_package\": \"mariadb\", \"version\": $(json_str "$SQLBENCH_VERSION"), \"path\": $(json_str "$SQLBENCH_DIR_IN_IMAGE")},"
    fi
    echo "  \"input_hash\": $(json_str "$INITRD_KEY"),"
    echo "  \"rootfs_hash\": $(json_str "$ROOTFS_KEY"),"
    echo "  \"agent_sha256\": $(json_str "$AGENT_SHA"),"
    echo "  \"suite\": $(json_str "$SUITE"),"
    echo "  \"os_release\": {\"id\": $(json_str "$OS_ID"), \"version_id\": $(json_str "$OS_VERSION_ID"), \"codename\": $(json_str "$OS_CODENAME"), \"debian_version\": $(json_str "$OS_DEBIAN_VERSION")},"
    echo "  \"kernel\": {\"release\": $(json_str "$KERNEL_RELEASE"), \"package\": $(json_str "$KERNEL_PACKAGE"), \"version\": $(json_str "$KERNEL_PACKAGE_VERSION"), \"pvh_elf\": $PVH},"
    echo "  \"packages\": {"
    # qemu-guest-agent: scripts/pve-make-template.sh --from-image checks it.
    local -a pkgs=(fio e2fsprogs xfsprogs btrfs-progs libaio1 util-linux kmod lvm2 thin-provisioning-tools libc6 busybox-static qemu-guest-agent)
    # A variant's packages as its list names them (packages-VARIANT.txt).
    [[ -n $VARIANT ]] && mapfile -t -O ${#pkgs[@]} pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$GUEST_DIR/packages-$VARIANT.txt" | awk 'NF')
    # Under the suite's names (trixie: libaio1t64).
    mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | guest_package_names "$SUITE")
    for p in "${pkgs[@]}"; do
        [[ $first == 1 ]] || echo ","
        first=0
        printf '    %s: %s' "$(json_str "$p")" "$(json_str "$(pkg_version "$p")")"
    done
    echo
    echo "  },"
    echo "  \"initrd\": {\"compression\": $(json_str "$INITRD_COMPRESSION"), \"bytes\": $(stat -c %s "$INITRD_DIR/initrd.img"), \"modules\": $(json_str "$INITRD_MODULES")},"
    echo "  \"root_img_bytes\": $(stat -c %s "$ROOTFS_DIR/root.img"),"
    echo "  \"rootfs_built_at\": $(json_str "$ROOTFS_BUILT_AT"),"
    echo "  \"rootfs_build_seconds\": $ROOTFS_BUILD_SECONDS,"
    echo "  \"initrd_built_at\": $(json_str "$INITRD_BUILT_AT"),"
    echo "  \"initrd_build_seconds\": $INITRD_BUILD_SECONDS"
    echo "}"
}

# Publish: manifest.json goes first and comes back last, so its presence
# means the three files match. Hard links into the cache cost nothing.
publish() {
    local src=$1 name=$2 tmp=$OUTDIR/.publish.$2.$$
    [[ $src -ef $OUTDIR/$name ]] && return 0 # already published
    ln -f "$src" "$tmp" 2>/dev/null || cp --sparse=always "$src" "$tmp"
    mv -f -T "$tmp" "$OUTDIR/$name"
}
rm -f "$OUTDIR/manifest.json"
publish "$ROOTFS_DIR/vmlinuz" vmlinuz
if [[ -f $ROOTFS_DIR/vmlinux ]]; then
    publish "$ROOTFS_DIR/vmlinux" vmlinux
    PVH=\"vmlinux\"
else
    rm -f "$OUTDIR/vmlinux"
    PVH=null
fi
publish "$ROOTFS_DIR/root.img" root.img
publish "$INITRD_DIR/initrd.img" initrd.img
manifest >"$OUTDIR/.publish.manifest.$$"
mv -f -T "$OUTDIR/.publish.manifest.$$" "$OUTDIR/manifest.json"

# ---- cache cleanup: keep the most recently used entries -----------------------
prune() {
    local pattern=$1 keep=$2
    # shellcheck disable=SC2012,SC2086 # $pattern is a glob on purpose
    # No match is fine (e.g. no sqlbench-* in the base image's cache): ls's
    # status must not fail the pipeline under pipefail.
    { ls -1dt "$CACHE"/$pattern 2>/dev/null || true; } | tail -n +$((keep + 1)) | while read -r old; do
        guest_log "removing old cache entry ${old#"$OUTDIR"/}"
        rm -rf "$old"
    done
}
prune 'rootfs-*' "$KEEP_ROOTFS"
prune 'initrd-*' "$KEEP_INITRD"
prune 'sqlbench-*' 2

elapsed=$(awk -v a="$T_START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [[ $ROOTFS_CACHE == hit && $INITRD_CACHE == hit ]]; then
    guest_log "done in ${elapsed} s (used the cache): $OUTDIR (kernel $KERNEL_RELEASE)"
else
    guest_log "done in ${elapsed} s (root fs: $ROOTFS_CACHE, initramfs: $INITRD_CACHE): $OUTDIR (kernel $KERNEL_RELEASE)"
fi
