# shellcheck shell=bash
# The compiler cache of every build of this project (scripts/build.sh,
# fuzz/lib.sh), shared between checkouts: paths inside the checkout are
# hashed relative to it and the build directory is not hashed, so a clone in
# another directory (CI's) reuses what an earlier clone compiled. (Debug info
# of a reused object names the directory it was first compiled in.) Sourced,
# not run; sets CCACHE_CMAKE_ARGS, the cmake arguments that use ccache, empty
# when ccache is missing (scripts/install-deps.sh installs it).
CCACHE_CMAKE_ARGS=()
if command -v ccache >/dev/null; then
    CCACHE_BASEDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    export CCACHE_BASEDIR
    export CCACHE_NOHASHDIR=true
    CCACHE_CMAKE_ARGS=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
