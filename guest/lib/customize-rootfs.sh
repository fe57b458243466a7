#!/bin/bash
# mmdebstrap --customize-hook for the disksweep guest root fs.
# Usage (by mmdebstrap, in root mode): customize-rootfs.sh ROOTDIR
#
# 1. Unpacks Debian's kernel (the versioned package that linux-image-amd64
#    depends on) into ROOTDIR without installing it through dpkg: installing
#    would pull initramfs-tools and build an initrd we never use. The package
#    comes from the same apt sources as the rest of the image.
# 2. Runs depmod so the agent can `modprobe btrfs`, `xfs`, `dm-thin-pool`...
# 3. Makes the tree fit a read-only root with tmpfs on /run, /tmp, /mnt,
#    /var/tmp (mounted by the initramfs /init).
# Writes ROOTDIR/.disksweep-kernel (package, version, kernel release) for
# build-image.sh, which moves it out of the tree.
set -euo pipefail

root=${1:?usage: customize-rootfs.sh ROOTDIR}

meta=$(chroot "$root" apt-cache depends linux-image-amd64 |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
[[ -n $meta ]] || { echo "customize-rootfs: cannot resolve linux-image-amd64" >&2; exit 1; }

work=$(mktemp -d "$root/tmp/kernel.XXXXXX")
chmod 0777 "$work"   # apt's _apt sandbox user downloads into it
chroot "$root" sh -c "cd '/tmp/${work##*/}' && apt-get download -q '$meta'" >&2
deb=$(ls "$work"/*.deb)
pkg_version=$(dpkg-deb -f "$deb" Version)
dpkg-deb -x "$deb" "$work/x"
# bookworm's kernel package ships lib/modules, trixie's (6.12) usr/lib/modules.
pkgmods=$work/x/usr/lib/modules
[[ -d $pkgmods ]] || pkgmods=$work/x/lib/modules
kver=$(ls "$pkgmods")
[[ $(wc -w <<<"$kver") == 1 ]] || { echo "customize-rootfs: unexpected modules dirs in $deb: $kver" >&2; exit 1; }

# Copy into the image's real directories (both suites have merged /usr: /lib
# and /boot handling must not replace the /lib -> usr/lib symlink).
moddir=$(readlink -f "$root/lib")/modules
mkdir -p "$moddir" "$root/boot"
cp -a "$pkgmods/$kver" "$moddir/"
cp -a "$work/x/boot/." "$root/boot/"
rm -rf "$work"

chroot "$root" depmod -a "$kver"

printf 'KERNEL_PACKAGE=%s\nKERNEL_PACKAGE_VERSION=%s\nKERNEL_RELEASE=%s\n' \
    "$meta" "$pkg_version" "$kver" >"$root/.disksweep-kernel"

# Identity and a read-only-friendly layout.
echo disksweep-guest >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tdisksweep-guest\n' >"$root/etc/hosts"
rm -f "$root/etc/resolv.conf"
echo "# root is mounted read-only by the disksweep initramfs; nothing else here" >"$root/etc/fstab"
ln -sf ../proc/self/mounts "$root/etc/mtab"
: >"$root/etc/machine-id"
mkdir -p "$root/run" "$root/tmp" "$root/mnt" "$root/var/tmp" "$root/dev" "$root/proc" "$root/sys"
chmod 1777 "$root/tmp" "$root/var/tmp"
# /dev (devpts is still mounted on it here) is emptied by build_rootfs once
# mmdebstrap has unmounted everything: devtmpfs replaces it at boot.
