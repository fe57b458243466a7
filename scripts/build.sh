#!/usr/bin/env bash
# Configures and builds disksweep into build/, through ccache
# (scripts/ccache.sh).
# Arguments are ninja targets (e.g. disksweepd hostctl disksweep-agent);
# without any, everything is built, the tests included.
#
# How it compiles: by default for the speed of compiling, as the test
# command, CI and the quick start build it:
#  * no debug info: -g is a third of a large source's compile time
#    (18.7 s -> 12.2 s for compare.cpp; in all, compare.cpp 18.2 -> 9.9 s and
#    api.cpp 14.7 -> 8.2 s of CPU at -O1 without -g against -O2 -g);
#  * -O1: 23% less compile time than -O2 over the five largest sources
#    (39.5 s -> 30.6 s of CPU). What the tests and the quick start measure
#    is guests' I/O, fio's (a Debian binary) and the agent's waiting on the
#    kernel, so nothing they assert depends on our code's optimisation level.
#    (The tests' own code is -O0 -g1 in every build: tests/CMakeLists.txt.)
# BUILD_TYPE=RelWithDebInfo (-O2 -g) builds as a release ships and a
# debugger wants: the figures in bench/ are measured so, and a .deb for
# installing elsewhere is built so (`cd build && cpack`).
# DISKSWEEP_COLD_BUILD=1 (scripts/quickstart.sh): a build that expects no
# cache hits, on a fresh machine, also precompiles nlohmann/json.hpp
# (CMakeLists.txt says why and why not always).
if [ -n "${BUILD_TYPE:-}" ]; then
  # -U: a build type's own flags again, not the default's -O1 left in the cache.
  cmake_args=(-DCMAKE_BUILD_TYPE="$BUILD_TYPE" -UCMAKE_CXX_FLAGS_RELEASE -DDISKSWEEP_PRECOMPILE_JSON=OFF)
else
  cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
              -DDISKSWEEP_PRECOMPILE_JSON="$([ "${DISKSWEEP_COLD_BUILD:-0}" = 1 ] && echo ON || echo OFF)")
fi
cmake -S . -B build -G Ninja "${cmake_args[@]}" "${CCACHE_CMAKE_ARGS[@]}" >/dev/null
# DISKSWEEP_BUILD_JOBS: ninja's -j (default: one job per core).
ninja -C build -j"${DISKSWEEP_BUILD_JOBS:-$(nproc)}" "$@"
