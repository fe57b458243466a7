#!/bin/bash
# The guest image's suite table (guest/suites.txt, read by guest/lib/suites.sh):
# its lookups and package renames, the daemon's copy of its columns
# (common/guest_suite.h kGuestSuites) kept in step with it, and the --suite
# argument of guest/build-image.sh and scripts/build-guest-image.sh refused,
# with the known suites named, before anything is built.
#
#   tests/unit/guest/suites_test.sh SOURCE_DIR
#
# Builds nothing, needs no root, no network: seconds.
set -uo pipefail
src=${1:?usage: suites_test.sh SOURCE_DIR}
fails=0
check() { # check WHAT EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}

GUEST_DIR=$src/guest
# shellcheck source=../../../guest/lib/suites.sh
source "$GUEST_DIR/lib/suites.sh"

check "default suite" bookworm "$(guest_default_suite)"
check "suites" "bookworm trixie" "$(guest_suite_names | paste -sd' ' -)"
check "trixie VERSION_ID" 13 "$(guest_suite_field trixie 2)"
check "trixie image subdir" trixie "$(guest_suite_field trixie 3)"
check "bookworm image subdir" . "$(guest_suite_field bookworm 3)"
check "bookworm keeps names" "fio libaio1 libssl3" "$(printf 'fio\nlibaio1\nlibssl3\n' | guest_package_names bookworm | paste -sd' ' -)"
check "trixie renames" "fio libaio1t64 libssl3t64" "$(printf 'fio\nlibaio1\nlibssl3\n' | guest_package_names trixie | paste -sd' ' -)"
check "unknown suite" 1 "$(guest_suite_field sid 2 >/dev/null; echo $?)"

# Every package of packages*.txt that a suite renames must be in that file:
# a rename of a name nobody lists is a typo.
listed=$(sed -e 's/#.*//' "$GUEST_DIR"/packages*.txt | awk 'NF { print $1 }' | sort -u)
for suite in $(guest_suite_names); do
    for pair in $(guest_suite_renames "$suite"); do
        grep -qx "${pair%%=*}" <<<"$listed" || check "$suite rename $pair names a listed package" listed missing
    done
done

# The daemon's table (C++) and this one agree on suite, VERSION_ID and
# directory ("" there is "." here).
cxx=$(grep -o 'GuestSuiteDef{"[^"]*", *"[^"]*", *"[^"]*"}' "$src/common/guest_suite.h" |
    sed -E 's/GuestSuiteDef\{"([^"]*)", *"([^"]*)", *"([^"]*)"\}/\1 \2 \3/; s/ $/ ./')
check "common/guest_suite.h matches guest/suites.txt" "$(guest_suite_rows | cut -d' ' -f1-3)" "$cxx"

# An unknown suite is refused first, exit 2, naming the known ones.
out=$("$src/guest/build-image.sh" --suite sid /nonexistent /nonexistent 2>&1)
check "build-image.sh --suite sid exits 2" 2 $?
check "build-image.sh names the known suites" yes "$(grep -q "unknown suite 'sid' (known: bookworm trixie" <<<"$out" && echo yes)"
out=$("$src/scripts/build-guest-image.sh" --suite sid /nonexistent 2>&1)
check "build-guest-image.sh --suite sid exits 2" 2 $?
check "build-guest-image.sh names the known suites" yes "$(grep -q "known: bookworm trixie" <<<"$out" && echo yes)"
out=$("$src/guest/build-image.sh" --suite 2>&1)
check "build-image.sh --suite without a value exits 2" 2 $?

((fails == 0)) || { echo "$fails check(s) failed"; exit 1; }
