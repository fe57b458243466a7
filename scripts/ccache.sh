# shellcheck shell=bash
# The compiler cache of every build of this project (scripts/build.sh,
# fuzz/lib.sh): a rebuild in the same checkout, or a fresh build directory in
# it, reuses what was compiled before. Not shared between checkouts in other
# directories: that needs ccache's base_dir, which makes __FILE__ relative,
# and tests find their data files from __FILE__. Sourced, not run; sets
# CCACHE_CMAKE_ARGS, the cmake arguments that use ccache, empty when ccache is
# missing (scripts/install-deps.sh installs it).
CCACHE_CMAKE_ARGS=()
if command -v ccache >/dev/null; then
    CCACHE_CMAKE_ARGS=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
