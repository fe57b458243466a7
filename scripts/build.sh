#!/usr/bin/env bash
# Configures and builds disksweep into build/ (RelWithDebInfo), through ccache
# (scripts/ccache.sh).
# Arguments are ninja targets (e.g. disksweepd hostctl disksweep-agent);
# without any, everything is built, the tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ccache.sh
source scripts/ccache.sh
# DISKSWEEP_COLD_BUILD=1 (scripts/quickstart.sh): a build that expects no
# cache hits, on a fresh machine, built for the speed of compiling:
#  * no debug info: -g is a third of a large source's compile time
#    (18.7 s -> 12.2 s for compare.cpp);
#  * -O1: 23% less compile time than -O2 over the five largest sources
#    (39.5 s -> 30.6 s of CPU). The quick start's I/O is fio's (a Debian
#    binary) and the daemon's work is waiting on guests, so nothing it
#    measures depends on our code's optimisation level;
#  * nlohmann/json.hpp precompiled (CMakeLists.txt says why).
cmake_args=(-DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DDISKSWEEP_PRECOMPILE_JSON=OFF)
if [ "${DISKSWEEP_COLD_BUILD:-0}" = 1 ]; then
  cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
              -DDISKSWEEP_PRECOMPILE_JSON=ON)
fi
cmake -S . -B build -G Ninja "${cmake_args[@]}" "${CCACHE_CMAKE_ARGS[@]}" >/dev/null
# DISKSWEEP_BUILD_JOBS: ninja's -j (default: one job per core).
ninja -C build -j"${DISKSWEEP_BUILD_JOBS:-$(nproc)}" "$@"
