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

# guest_read_packages FILE: prints the package names, comma separated.
guest_read_packages() {
    sed -e 's/#.*//' -e 's/[[:space:]]//g' "$1" | awk 'NF' | paste -sd, -
}

# extract_pvh_vmlinux BZIMAGE KERNEL_CONFIG OUT: writes the uncompressed ELF
# kernel inside Debian's bzImage to OUT. QEMU (and so libvirt direct kernel
# boot) starts such an ELF through its PVH entry point, skipping the
# firmware's bzImage setup and the xz decompressor, which take about 10 s
# under TCG. Same kernel, same bytes once decompressed. Returns 1 (OUT
# removed) when the image is not xz-compressed or has no PVH entry note.
extract_pvh_vmlinux() {
    local bz=$1 config=$2 out=$3 off
    grep -q '^CONFIG_KERNEL_XZ=y' "$config" && grep -q '^CONFIG_PVH=y' "$config" || return 1
    # the xz stream magic FD 37 7A 58 5A 00 (bash strings stop at NUL)
    off=$(LC_ALL=C grep -abo $'\xfd7zXZ' "$bz" | awk -F: 'NR == 1 { print $1 }')
    [[ -n $off ]] || return 1
    # xz stops reading at the end of its stream: tail may die of SIGPIPE.
    if { tail -c +$((off + 1)) "$bz" || true; } | xz -dc --single-stream >"$out" 2>/dev/null &&
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
        bookworm "$tree" "${mirror[@]}" </dev/null >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        cp "$log" "$CACHE/failed-mmdebstrap.log"
        guest_die "mmdebstrap failed (full log: $CACHE/failed-mmdebstrap.log)"
    fi

    # mmdebstrap unmounts its proc/sys/devpts; make sure before touching /dev.
    if awk -v p="$(readlink -f "$tree")/" 'index($5, p) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
        guest_die "mounts left under $tree after mmdebstrap"
    fi
    find "$tree/dev" -xdev -mindepth 1 -delete

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
        echo "ROOTFS_BUILT_AT=$(date -u -d "@$t1" +%Y-%m-%dT%H:%M:%SZ)"
        echo "ROOTFS_BUILD_SECONDS=$((t1 - t0))"
    } >"$stage/rootfs.env"
    guest_safe_rm "$tree"
}
