#!/usr/bin/env bash
# scripts/install-deps.sh picks package names by the host's Debian release
# and refuses any other release (issue 33 §1). Reads fabricated os-release
# files through DISKSWEEP_OS_RELEASE and --print, so it installs nothing and
# runs anywhere:
#  1. bookworm and trixie are accepted; each gets its own names for what
#     differs (clang 14 on bookworm, 19 on trixie) and the same for the rest;
#  2. another release, or none, is refused with exit status 2 and a message
#     naming it and the supported releases;
#  3. an unreadable os-release file is an error naming the file.
#
#   install_deps_release_test.sh INSTALL_DEPS
set -euo pipefail
[[ $# == 1 ]] || { echo "usage: $0 INSTALL_DEPS" >&2; exit 2; }
install_deps=$1
work=$(mktemp -d /tmp/disksweep-deps-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
check() {
    if "${@:2}"; then echo "ok: $1"; else echo "FAILED: $1"; failures=$((failures + 1)); fi
}

# names RELEASE [ARGS...]: what install-deps.sh --print prints on RELEASE
# (into $work/RELEASE.txt, its errors into $work/RELEASE.err); its status.
names() {
    local release=$1
    shift
    printf 'ID=debian\nVERSION_CODENAME=%s\n' "$release" >"$work/$release.os-release"
    DISKSWEEP_OS_RELEASE=$work/$release.os-release "$install_deps" --print "$@" \
        >"$work/$release.txt" 2>"$work/$release.err"
}
lists() { grep -qx "$2" "$work/$1.txt" && ! grep -qx "$3" "$work/$1.txt"; }
same_elsewhere() {
    diff <(grep -v clang "$work/bookworm.txt") <(grep -v clang "$work/trixie.txt")
}
# refused RELEASE SHOWN: refused, the message naming SHOWN and the supported.
refused() {
    local status=0
    names "$1" || status=$?
    if ! { [[ $status == 2 ]] && grep -q "'$2'" "$work/$1.err" && grep -q "bookworm trixie" "$work/$1.err"; }; then
        echo "  status $status: $(cat "$work/$1.err")"
        return 1
    fi
}
quickstart_same() {
    names bookworm --for quickstart && cp "$work/bookworm.txt" "$work/quickstart-bookworm.txt" &&
        names trixie --for quickstart && diff "$work/quickstart-bookworm.txt" "$work/trixie.txt"
}
unreadable() {
    ! DISKSWEEP_OS_RELEASE=$work/missing "$install_deps" --print >/dev/null 2>"$work/missing.err" &&
        grep -q "$work/missing" "$work/missing.err"
}

check "bookworm is accepted" names bookworm
check "trixie is accepted" names trixie
check "bookworm installs clang-14" lists bookworm clang-14 clang-19
check "trixie installs clang-19, not clang-14" lists trixie clang-19 clang-14
check "trixie installs libclang-rt-19-dev" lists trixie libclang-rt-19-dev libclang-rt-14-dev
check "every other name is the same on both" same_elsewhere
check "the quick start's list is the same on both" quickstart_same
check "bullseye is refused, naming the supported releases" refused bullseye bullseye
check "forky is refused" refused forky forky
check "an os-release without a codename is refused" refused "" unknown
check "an unreadable os-release names the file" unreadable
echo "checks: $failures failed"
((failures == 0))
