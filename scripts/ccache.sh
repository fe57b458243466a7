# shellcheck shell=bash
# The compiler cache of every build of this project (scripts/build.sh,
# fuzz/lib.sh), shared by every checkout on the machine: a rebuild, a fresh
# build directory, a worktree or a fresh clone elsewhere (CI's) reuses what
# any of them compiled from the same sources with the same flags.
#
# How: ccache's base_dir is the checkout's root, so the paths below it that
# reach the compiler (the source, -I) are made relative to the build
# directory, and hash_dir is off, so the build directory's own path is not
# part of the key. What that costs, and why it is fine here:
#  * __FILE__ is relative. Nothing depends on it: the tests find the
#    repository from a CMake definition (tests/support/test_data.cpp), and
#    assert messages only name the file.
#  * A cached object's debug info names the directory it was first compiled
#    in (DW_AT_comp_dir); a debugger in another checkout is told where the
#    sources are (gdb `directory`).
#  * A definition holding an absolute path (DISKSWEEP_SOURCE_DIR, the test
#    fixtures' program paths) keeps its file checkout-specific: it compiles
#    again, which is correct.
# Sourced, not run; sets CCACHE_CMAKE_ARGS, the cmake arguments that compile
# through ccache so configured (the launcher carries the settings, so a
# plain `ninja -C build` later uses them too), empty when ccache is missing
# (scripts/install-deps.sh installs it).
CCACHE_CMAKE_ARGS=()
if command -v ccache >/dev/null; then
    ccache_checkout_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    CCACHE_CMAKE_ARGS=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$ccache_checkout_root;CCACHE_NOHASHDIR=true;ccache")
    unset ccache_checkout_root
fi
