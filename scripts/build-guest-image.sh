#!/usr/bin/env bash
# Builds (or reuses, by content hash) the guest images the daemon boots: the
# base image into IMAGE_DIR and the MariaDB variant (mariadb-atis,
# sysbench-oltp) into IMAGE_DIR/mariadb. The base image is also the Proxmox
# template's guest: scripts/pve-make-template.sh --from-image IMAGE_DIR.
# Usage: scripts/build-guest-image.sh [--rootfs-only] [IMAGE_DIR]   (default /var/lib/disksweep/images)
# DISKSWEEP_IMAGE_VARIANTS="base mariadb" (the default) selects what to build.
# --rootfs-only: only the root file systems (mmdebstrap, the slow part) into
# the cache, without the agent; a later call without it finishes in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
agent_args=(build/guestagent/disksweep-agent)
if [ "${1:-}" = --rootfs-only ]; then
  agent_args=()
  shift
fi
image_dir="${1:-${DISKSWEEP_IMAGE_DIR:-/var/lib/disksweep/images}}"
variants="${DISKSWEEP_IMAGE_VARIANTS:-base mariadb}"
if [ ${#agent_args[@]} -gt 0 ] && [ ! -x build/guestagent/disksweep-agent ]; then
  scripts/build.sh disksweep-agent
fi
for variant in $variants; do
  case "$variant" in
    base) dir=$image_dir variant_args=() ;;
    mariadb) dir=$image_dir/mariadb variant_args=(--variant mariadb) ;;
    *) echo "unknown image variant '$variant' (known: base mariadb)" >&2; exit 2 ;;
  esac
  if [ ${#agent_args[@]} -eq 0 ]; then
    guest/build-image.sh "${variant_args[@]}" --rootfs-only "$dir"
  else
    guest/build-image.sh "${variant_args[@]}" "$dir" "${agent_args[@]}"
  fi
done
