#!/usr/bin/env bash
# Installs every Debian 12 package disksweep needs to build, test and run.
# Idempotent; run as root.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config clang-format
  libvirt-dev libxml2-dev libboost-program-options-dev libsqlitecpp-dev libsqlite3-dev
  libaio-dev catch2 libtomlplusplus-dev nlohmann-json3-dev
  # run: libvirt's embedded QEMU driver, QEMU, qemu-img
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils
  # guest image: Debian root fs, kernel modules, initramfs
  mmdebstrap busybox-static cpio zstd kmod e2fsprogs xfsprogs btrfs-progs
  # tests and tools: host-side mkfs/mount on loop devices, fio, curl over the socket
  fio util-linux curl sqlite3 ca-certificates
)

# libvirt's QEMU driver, run as root, looks up its default 'libvirt-qemu'
# user before reading qemu.conf (libvirt-daemon-system would create it; we
# do not need that package's system services).
ensure_libvirt_user() {
  getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
  getent passwd libvirt-qemu >/dev/null \
    || useradd --system --gid libvirt-qemu --no-create-home --shell /usr/sbin/nologin libvirt-qemu
}

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "[deps] all ${#packages[@]} packages present"
  ensure_libvirt_user
  exit 0
fi
echo "[deps] installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
ensure_libvirt_user
echo "[deps] done"
