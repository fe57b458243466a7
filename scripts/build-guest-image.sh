#!/usr/bin/env bash
# Builds (or reuses, by content hash) the guest image the daemon boots.
# Usage: scripts/build-guest-image.sh [IMAGE_DIR]   (default /var/lib/disksweep/images)
set -euo pipefail
cd "$(dirname "$0")/.."
image_dir="${1:-${DISKSWEEP_IMAGE_DIR:-/var/lib/disksweep/images}}"
[ -x build/guestagent/disksweep-agent ] || scripts/build.sh disksweep-agent
exec guest/build-image.sh "$image_dir" build/guestagent/disksweep-agent
