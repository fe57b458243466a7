# shellcheck shell=bash
# Sourced by guest/build-image.sh: builds the small initramfs.
# This file, initramfs/init, initramfs/modules.txt, the agent binary and the
# root fs key make up the initramfs cache key.
#
# Everything is taken out of the cached root.img with debugfs (no mount, no
# loop device): modules.dep/softdep/alias/builtin, the wanted .ko files and
# /bin/busybox, so the initramfs matches the image's kernel exactly.

# _ird_resolve DEPDIR WANTED_FILE: prints "path" (required) or "?path"
# (optional) lines in load order: every module after its dependencies and
# after its "softdep pre:" modules. Names in WANTED_FILE may be prefixed with
# '?' (optional: skipped at build time if unknown, failure to load ignored).
_ird_resolve() {
    local depdir=$1 wanted=$2
    awk -v depdir="$depdir" '
        function norm(s) { sub(/^.*\//, "", s); sub(/\.ko(\.(xz|zst|gz))?$/, "", s); gsub(/-/, "_", s); return s }
        function visit(name, opt,    i, n, d, parts, k) {
            name = norm(name)
            if (name in builtin) return
            if (!(name in path)) {
                if (name in alias_of) {   # e.g. crypto-crc32c -> crc32c_generic crc32c_intel
                    n = split(alias_of[name], parts, " ")
                    for (i = 1; i <= n; i++) visit(parts[i], 1)
                    return
                }
                if (opt) return
                printf "unknown module: %s\n", name > "/dev/stderr"; failed = 1; return
            }
            if (name in state) { if (!opt) required[name] = 1; return }
            state[name] = 1
            if (!opt) required[name] = 1
            n = split(soft[name], parts, " ")
            for (i = 1; i <= n; i++) visit(parts[i], 1)
            n = split(deps[name], parts, " ")
            # modules.dep lists the full closure; visiting each recursively
            # yields a valid order whatever order the list has.
            for (i = n; i >= 1; i--) visit(parts[i], opt)
            order[++count] = name
        }
        FILENAME == depdir "/modules.dep" {
            p = $1; sub(/:$/, "", p); m = norm(p); path[m] = p
            d = ""; for (i = 2; i <= NF; i++) d = d " " $i; deps[m] = d; next
        }
        FILENAME == depdir "/modules.builtin" { builtin[norm($1)] = 1; next }
        FILENAME == depdir "/modules.alias" {
            if ($1 == "alias" && $2 !~ /[*?\[]/) { a = $2; gsub(/-/, "_", a); alias_of[a] = alias_of[a] " " $3 }
            next
        }
        FILENAME == depdir "/modules.softdep" {
            if ($1 != "softdep") next
            m = norm($2); pre = 0
            for (i = 3; i <= NF; i++) {
                if ($i == "pre:") pre = 1; else if ($i == "post:") pre = 0
                else if (pre) soft[m] = soft[m] " " $i
            }
            next
        }
        {   # the wanted list
            sub(/#.*/, ""); if (NF == 0) next
            n = $1; o = 0; if (n ~ /^\?/) { o = 1; n = substr(n, 2) }
            visit(n, o)
        }
        END {
            if (failed) exit 1
            for (i = 1; i <= count; i++) print ((order[i] in required) ? "" : "?") path[order[i]]
        }' "$depdir/modules.dep" "$depdir/modules.builtin" "$depdir/modules.alias" \
        "$depdir/modules.softdep" "$wanted"
}

# _ird_dump IMAGE: runs the debugfs commands on stdin against IMAGE.
_ird_dump() {
    debugfs -f - "$1" >/dev/null 2>"$_ird_log" || guest_die "debugfs failed on $1 (see $_ird_log)"
}

# build_initramfs ROOTFS_DIR AGENT STAGE: writes STAGE/initrd.img and
# STAGE/initrd.env.
build_initramfs() {
    local rootfs=$1 agent=$2 stage=$3
    local t0 t1 work=$stage/work depdir=$stage/work-dep
    t0=$(date +%s)
    _ird_log=$stage/debugfs.log
    # shellcheck disable=SC1091
    source "$rootfs/rootfs.env"
    mkdir -p "$work" "$depdir"

    local f
    for f in modules.dep modules.builtin modules.alias modules.softdep; do
        echo "dump $MODULES_DIR/$f $depdir/$f"
    done | _ird_dump "$rootfs/root.img"
    for f in modules.dep modules.builtin modules.alias modules.softdep; do
        [[ -s $depdir/$f ]] || guest_die "could not read $MODULES_DIR/$f from root.img"
    done

    local order
    order=$(_ird_resolve "$depdir" "$GUEST_DIR/initramfs/modules.txt") ||
        guest_die "cannot resolve initramfs modules (guest/initramfs/modules.txt)"

    local kdir=/lib/modules/$KERNEL_RELEASE line rel
    mkdir -p "$work/bin" "$work/dev" "$work/proc" "$work/sys" "$work/newroot" "$work/etc" "$work$kdir"
    {
        echo "dump $BUSYBOX_PATH $work/bin/busybox"
        while read -r line; do
            rel=${line#\?}
            mkdir -p "$work$kdir/$(dirname "$rel")"
            echo "dump $MODULES_DIR/$rel $work$kdir/$rel"
        done <<<"$order"
    } | _ird_dump "$rootfs/root.img"

    : >"$work/etc/modules.load"
    while read -r line; do
        rel=${line#\?}
        [[ -s $work$kdir/$rel ]] || guest_die "could not extract $rel from root.img"
        # busybox insmod wants plain .ko: unpack compressed modules now.
        case $rel in
        *.ko.xz) xz -d "$work$kdir/$rel"; rel=${rel%.xz} ;;
        *.ko.zst) zstd -q -d --rm "$work$kdir/$rel"; rel=${rel%.zst} ;;
        *.ko.gz) gzip -d "$work$kdir/$rel"; rel=${rel%.gz} ;;
        esac
        if [[ $line == \?* ]]; then echo "?$kdir/$rel"; else echo "$kdir/$rel"; fi >>"$work/etc/modules.load"
    done <<<"$order"

    chmod 0755 "$work/bin/busybox"
    local applet
    for applet in $("$work/bin/busybox" --list); do
        [[ $applet == busybox ]] || ln -s busybox "$work/bin/$applet"
    done
    ln -s bin "$work/sbin"
    install -m 0755 "$GUEST_DIR/initramfs/init" "$work/init"
    # PID 1 of disksweep.guest=qga: init copies it into the new root.
    install -m 0755 "$GUEST_DIR/initramfs/qga-init" "$work/qga-init"
    # Without its debug info (42 MB -> 3 MB; the symbols stay for
    # backtraces): the kernel unpacks and init copies it on every boot.
    strip --strip-debug -o "$work/disksweep-agent" "$agent"
    chmod 0755 "$work/disksweep-agent"
    echo "$KERNEL_RELEASE" >"$work/etc/kernel-release"
    # Without /dev/console in the archive the kernel starts /init with no
    # stdin/stdout/stderr.
    mknod -m 0600 "$work/dev/console" c 5 1
    mknod -m 0666 "$work/dev/null" c 1 3

    # Reproducible archive: fixed order, owner and mtimes.
    find "$work" -exec touch -h -d @0 {} +
    local comp=(zstd -q -T0 -15) comp_name=zstd
    grep -q '^CONFIG_RD_ZSTD=y' "$rootfs/kernel-config" || { comp=(gzip -9 -n); comp_name=gzip; }
    (cd "$work" && find . -mindepth 1 | LC_ALL=C sort |
        cpio --quiet -o -H newc -R 0:0 --reproducible) | "${comp[@]}" >"$stage/initrd.img"

    t1=$(date +%s)
    {
        echo "INITRD_COMPRESSION=$comp_name"
        echo "INITRD_MODULES=\"$(sed -e 's|.*/||' -e 's|\.ko$||' "$work/etc/modules.load" | paste -sd' ' -)\""
        echo "INITRD_BUILT_AT=$(date -u -d "@$t1" +%Y-%m-%dT%H:%M:%SZ)"
        echo "INITRD_BUILD_SECONDS=$((t1 - t0))"
    } >"$stage/initrd.env"
    rm -rf "$work" "$depdir"
}
