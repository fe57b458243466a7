#!/usr/bin/env bash
# Builds (or reuses, by content hash) the guest images the daemon boots: the
# base image into IMAGE_DIR and the MariaDB variant (mariadb-atis,
# sysbench-oltp) into IMAGE_DIR/mariadb. The base image is also the Proxmox
# template's guest: scripts/pve-make-template.sh --from-image IMAGE_DIR.
# Usage: scripts/build-guest-image.sh [--suite SUITE] [--rootfs-only] [IMAGE_DIR]   (default /var/lib/disksweep/images)
# --suite: a Debian suite of guest/suites.txt (default bookworm). Each suite's
# images go to their own directory below IMAGE_DIR, the one the daemon reads
# for `[guest] suite = "SUITE"` (suites.txt's IMAGE_SUBDIR): bookworm to
# IMAGE_DIR and IMAGE_DIR/mariadb, trixie to IMAGE_DIR/trixie and
# IMAGE_DIR/trixie/mariadb. So both are cached side by side.
# DISKSWEEP_IMAGE_VARIANTS="base mariadb" (the default) selects what to build.
# --rootfs-only: only the root file systems (mmdebstrap, the slow part) into
# the cache, without the agent; a later call without it finishes in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC2034 # read by guest/lib/suites.sh
GUEST_DIR=$PWD/guest
# shellcheck source=../guest/lib/suites.sh
source guest/lib/suites.sh
usage() { echo "usage: $0 [--suite SUITE] [--rootfs-only] [IMAGE_DIR]" >&2; exit 2; }
agent_args=(build/guestagent/disksweep-agent)
suite=$(guest_default_suite)
while [ $# -gt 0 ] && [[ $1 == --* ]]; do
  case "$1" in
    --rootfs-only) agent_args=() && shift ;;
    --suite) [ $# -ge 2 ] || usage; suite=$2 && shift 2 ;;
    *) echo "$0: unknown option $1" >&2; usage ;;
  esac
done
[ $# -le 1 ] || usage
guest_check_suite "$suite" || exit 2
image_dir="${1:-${DISKSWEEP_IMAGE_DIR:-/var/lib/disksweep/images}}"
suite_dir=$image_dir/$(guest_suite_field "$suite" 3)
suite_dir=${suite_dir%/.}
variants="${DISKSWEEP_IMAGE_VARIANTS:-base mariadb}"
if [ ${#agent_args[@]} -gt 0 ] && [ ! -x build/guestagent/disksweep-agent ]; then
  scripts/build.sh disksweep-agent
fi
# Another suite's mariadb image may lend its sql-bench when this suite's
# 'mariadb' sources cannot be fetched (guest/build-image.sh says so loudly and
# the manifest records the version): the default suite's cache.
default_dir=$image_dir/$(guest_suite_field "$(guest_default_suite)" 3)
default_dir=${default_dir%/.}
for variant in $variants; do
  case "$variant" in
    base) dir=$suite_dir variant_args=() ;;
    mariadb) dir=$suite_dir/mariadb variant_args=(--variant mariadb) ;;
    *) echo "unknown image variant '$variant' (known: base mariadb)" >&2; exit 2 ;;
  esac
  variant_args+=(--suite "$suite")
  if [ "$variant" = mariadb ] && [ "$suite" != "$(guest_default_suite)" ]; then
    variant_args+=(--sql-bench-fallback "$default_dir/mariadb/cache")
  fi
  if [ ${#agent_args[@]} -eq 0 ]; then
    guest/build-image.sh "${variant_args[@]}" --rootfs-only "$dir"
  else
    guest/build-image.sh "${variant_args[@]}" "$dir" "${agent_args[@]}"
  fi
done
