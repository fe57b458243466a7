#!/usr/bin/env bash
# Builds (or reuses, by content hash) the guest images the daemon boots: the
# base image into IMAGE_DIR and the MariaDB variant (mariadb-atis,
# sysbench-oltp) into IMAGE_DIR/mariadb. The base image is also the Proxmox
# template's guest: scripts/pve-make-template.sh --from-image IMAGE_DIR.
# Usage: scripts/build-guest-image.sh [IMAGE_DIR]   (default /var/lib/disksweep/images)
# DISKSWEEP_IMAGE_VARIANTS="base mariadb" (the default) selects what to build.
set -euo pipefail
cd "$(dirname "$0")/.."
image_dir="${1:-${DISKSWEEP_IMAGE_DIR:-/var/lib/disksweep/images}}"
variants="${DISKSWEEP_IMAGE_VARIANTS:-base mariadb}"
[ -x build/guestagent/disksweep-agent ] || scripts/build.sh disksweep-agent
for variant in $variants; do
  case "$variant" in
    base) guest/build-image.sh "$image_dir" build/guestagent/disksweep-agent ;;
    mariadb) guest/build-image.sh --variant mariadb "$image_dir/mariadb" build/guestagent/disksweep-agent ;;
    *) echo "unknown image variant '$variant' (known: base mariadb)" >&2; exit 2 ;;
  esac
done
