#!/usr/bin/env bash
# Configures and builds disksweep into build/ (RelWithDebInfo), through ccache
# (scripts/ccache.sh).
# Arguments are ninja targets (e.g. disksweepd hostctl disksweep-agent);
# without any, everything is built, the tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ccache.sh
source scripts/ccache.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
    "${CCACHE_CMAKE_ARGS[@]}" >/dev/null
ninja -C build -j"$(nproc)" "$@"
