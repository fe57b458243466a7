# shellcheck shell=bash
# Sourced by guest/build-image.sh: builds the Debian root fs + kernel.
# Everything in this file, packages.txt, customize-rootfs.sh and the apt
# sources used is part of the root fs cache key.

# guest_apt_sources SUITE OUTFILE: writes the host's enabled apt entries for
# SUITE (SUITE, SUITE-updates, SUITE-security, ...; deb822 and one-line
# style) to OUTFILE. Returns 1 when the host has none, in which case
# mmdebstrap's default mirror for SUITE is used. No mirror host name is
# written in this repository: it comes from the host's configuration.
guest_apt_sources() {
    local suite=$1 out=$2 f
    : >"$out"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] || continue
        awk -v s="$suite" '
            /^[[:space:]]*#/ { next }
            $1 == "deb" {
                for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) break
                if ($(i + 1) == s || index($(i + 1), s "-") == 1) print
            }' "$f" >>"$out"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        # deb822: one stanza per paragraph; keep enabled binary stanzas whose
        # Suites name SUITE or SUITE-*; drop comment lines.
        awk -v s="$suite" '
            BEGIN { RS = ""; ORS = "\n\n" }
            {
                n = split($0, L, "\n"); keep_type = 0; keep_suite = 0; disabled = 0; out = ""
                for (i = 1; i <= n; i++) {
                    if (L[i] ~ /^[[:space:]]*#/) continue
                    out = out L[i] "\n"
                    if (L[i] ~ /^Types:/ && L[i] ~ /[[:space:]]deb([[:space:]]|$)/) keep_type = 1
                    if (L[i] ~ /^Enabled:[[:space:]]*no/) disabled = 1
                    if (L[i] ~ /^Suites:/) {
                        m = split(L[i], S, /[[:space:]]+/)
                        for (j = 2; j <= m; j++) if (S[j] == s || index(S[j], s "-") == 1) keep_suite = 1
                    }
                }
                if (keep_type && keep_suite && !disabled) printf "%s\n", out
            }' "$f" >>"$out"
    done
    [[ -s $out ]]
}

# guest_read_packages FILE: prints the package names, comma separated, as
# $SUITE names them (guest/suites.txt; FILE spells them as bookworm does).
guest_read_packages() {
    sed -e 's/#.*//' -e 's/[[:space:]]//g' "$1" | awk 'NF' | guest_package_names "$SUITE" | paste -sd, -
}

# guest_read_os_release TREE: prints the OS_* lines of rootfs.env from
# TREE/etc/os-release and TREE/etc/debian_version (the point release, e.g.
# 13.8), and fails when VERSION_ID is not the one guest/suites.txt gives
# $SUITE: the mirror served another release than the suite asked for.
guest_read_os_release() {
    local tree=$1 want
    want=$(guest_suite_field "$SUITE" 2)
    (
        # shellcheck disable=SC1091
        . "$tree/etc/os-release"
        [[ ${VERSION_ID:-} == "$want" ]] || {
            echo "[guest] ERROR: the $SUITE root fs is Debian '${VERSION_ID:-?}' (${PRETTY_NAME:-no os-release}), guest/suites.txt says $want" >&2
            exit 1
        }
        printf 'OS_ID=%q\nOS_VERSION_ID=%q\nOS_CODENAME=%q\n' "$ID" "$VERSION_ID" "${VERSION_CODENAME:-}"
        printf 'OS_DEBIAN_VERSION=%q\n' "$(cat "$tree/etc/debian_version" 2>/dev/null)"
    )
}

# The bzImage compressions extract_pvh_vmlinux undoes: the kernel config
# symbol and the command that decompresses the payload on stdin. bookworm's
# 6.1 is xz, trixie's 6.12 zstd.
PVH_DECOMPRESSORS=(
    "CONFIG_KERNEL_XZ xz -dc --single-stream"
    "CONFIG_KERNEL_ZSTD zstd -dc"
)

# _le32 FILE OFFSET: the little-endian 32-bit number at OFFSET of FILE.
_le32() { od -An -tu4 -j "$2" -N 4 --endian=little "$1" | tr -d ' '; }

# extract_pvh_vmlinux BZIMAGE KERNEL_CONFIG OUT: writes the uncompressed ELF
# kernel inside Debian's bzImage to OUT. QEMU (and so libvirt direct kernel
# boot) starts such an ELF through its PVH entry point, skipping the
# firmware's bzImage setup and the decompressor, which take about 10 s
# under TCG. Same kernel, same bytes once decompressed. Returns 1 (OUT
# removed) when the compression is not in PVH_DECOMPRESSORS or the kernel
# has no PVH entry note.
extract_pvh_vmlinux() {
    local bz=$1 config=$2 out=$3 row sym setup_sects off len
    local -a cmd=()
    grep -q '^CONFIG_PVH=y' "$config" || return 1
    for row in "${PVH_DECOMPRESSORS[@]}"; do
        read -r sym _ <<<"$row"
        grep -q "^$sym=y" "$config" && read -r -a cmd <<<"${row#* }" && break
    done
    ((${#cmd[@]})) || return 1
    # The payload, from the setup header (Documentation/arch/x86/boot.rst):
    # setup_sects (0x1f1, 0 meaning 4) sectors after the boot sector, then
    # payload_offset (0x248) into the protected-mode code, payload_length
    # (0x24c) bytes long, the last 4 of which are the compressor's size
    # suffix, not part of the stream.
    setup_sects=$(od -An -tu1 -j $((0x1f1)) -N 1 "$bz" | tr -d ' ')
    ((setup_sects > 0)) || setup_sects=4
    off=$(( (setup_sects + 1) * 512 + $(_le32 "$bz" $((0x248))) ))
    len=$(( $(_le32 "$bz" $((0x24c))) - 4 ))
    # head stops reading after len bytes: tail may die of SIGPIPE.
    if ((len > 0)) && { tail -c +$((off + 1)) "$bz" || true; } | head -c "$len" | "${cmd[@]}" >"$out" 2>/dev/null &&
        [[ $(head -c 4 "$out" | od -An -c | tr -d ' ') == '177ELF' ]]; then
        # XEN_ELFNOTE_PHYS32_ENTRY (18): the PVH entry QEMU looks for
        if ! command -v readelf >/dev/null || readelf -n "$out" | grep 'type: (0x00000012)' >/dev/null; then
            return 0
        fi
    fi
    rm -f "$out"
    return 1
}

# build_rootfs STAGE SOURCES_FILE|"" KEY: fills the empty directory STAGE with
#   root.img  raw ext4, no journal (mounted read-only)
#   vmlinuz   the kernel of the modules inside root.img (Debian bzImage)
#   vmlinux   the same kernel uncompressed (ELF, PVH entry), when extractable
#   kernel-config, packages.tsv (Package<TAB>Version), rootfs.env
build_rootfs() {
    local stage=$1 sources=$2 key=$3
    local tree=$stage/tree log=$stage/mmdebstrap.log t0 t1
    local -a mirror=()
    [[ -n $sources ]] && mirror=("$sources")
    t0=$(date +%s)

    guest_log "building root fs with mmdebstrap (1.5 to 3 min; log: ${log#"$OUTDIR"/})..."
    if ! mmdebstrap --mode=root --variant=apt --architectures=amd64 \
        --include="$(guest_read_packages "$GUEST_DIR/packages.txt")" \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-include=/usr/share/locale/locale.alias' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        --customize-hook="$GUEST_DIR/lib/customize-rootfs.sh" \
        "$SUITE" "$tree" "${mirror[@]}" </dev/null >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        cp "$log" "$CACHE/failed-mmdebstrap.log"
        guest_die "mmdebstrap failed (full log: $CACHE/failed-mmdebstrap.log)"
    fi

    # mmdebstrap unmounts its proc/sys/devpts; make sure before touching /dev.
    if awk -v p="$(readlink -f "$tree")/" 'index($5, p) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
        guest_die "mounts left under $tree after mmdebstrap"
    fi
    find "$tree/dev" -xdev -mindepth 1 -delete
    local os_release
    os_release=$(guest_read_os_release "$tree") || guest_die "wrong release in the root fs (log: $log)"

    # shellcheck disable=SC1091
    source "$tree/.disksweep-kernel"
    rm -f "$tree/.disksweep-kernel"
    local moddir busybox
    moddir=$(readlink -f "$tree/lib/modules/$KERNEL_RELEASE")
    busybox=$(readlink -f "$tree/bin/busybox")
    [[ -f $moddir/modules.dep ]] || guest_die "no modules.dep for $KERNEL_RELEASE in the image"
    [[ -x $busybox ]] || guest_die "busybox-static missing from the image"

    mv "$tree/boot/vmlinuz-$KERNEL_RELEASE" "$stage/vmlinuz"
    cp "$tree/boot/config-$KERNEL_RELEASE" "$stage/kernel-config"
    rm -f "$tree/boot/System.map-$KERNEL_RELEASE"
    if extract_pvh_vmlinux "$stage/vmlinuz" "$stage/kernel-config" "$stage/vmlinux"; then
        guest_log "extracted the PVH ELF kernel (vmlinux) for fast direct boot"
    else
        guest_log "warning: no PVH ELF kernel could be extracted: only vmlinuz (bzImage) is available"
    fi
    dpkg-query --admindir="$tree/var/lib/dpkg" -W -f='${Package}\t${Version}\n' >"$stage/packages.tsv"

    # Size: what the tree uses + 15% + 128 MiB for small-file slack; inodes
    # likewise. The agent never writes to the root.
    local used_kib files size_mib inodes uuid
    used_kib=$(du -skx "$tree" | cut -f1)
    files=$(find "$tree" -xdev | wc -l)
    size_mib=$(( used_kib * 115 / 100 / 1024 + 128 ))
    inodes=$(( files * 12 / 10 + 4096 ))
    uuid=$(sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/\1-\2-\3-\4-\5/' <<<"$key")
    guest_log "making root.img (${size_mib} MiB ext4, $files files)..."
    truncate -s "${size_mib}M" "$stage/root.img"
    mkfs.ext4 -q -F -d "$tree" -L disksweep-root -U "$uuid" -E "hash_seed=$uuid,nodiscard" \
        -O ^has_journal,^orphan_file -m 0 -b 4096 -I 256 -N "$inodes" \
        "$stage/root.img" >>"$log" 2>&1 || { tail -n 20 "$log" >&2; guest_die "mkfs.ext4 -d failed"; }

    t1=$(date +%s)
    {
        echo "KERNEL_RELEASE=$KERNEL_RELEASE"
        echo "KERNEL_PACKAGE=$KERNEL_PACKAGE"
        echo "KERNEL_PACKAGE_VERSION=$KERNEL_PACKAGE_VERSION"
        echo "MODULES_DIR=${moddir#"$tree"}"
        echo "BUSYBOX_PATH=${busybox#"$tree"}"
        echo "ROOTFS_KEY=$key"
        echo "$os_release"
        echo "ROOTFS_BUILT_AT=$(date -u -d "@$t1" +%Y-%m-%dT%H:%M:%SZ)"
        echo "ROOTFS_BUILD_SECONDS=$((t1 - t0))"
    } >"$stage/rootfs.env"
    guest_safe_rm "$tree"
}
