# shellcheck shell=bash
# Sourced by guest/build-image.sh and scripts/build-guest-image.sh: reads
# guest/suites.txt, the table of the Debian suites the guest image is built
# from. Nothing else lists the suites or their package renames.
# This file is part of every root fs cache key.

GUEST_SUITES_FILE=${GUEST_DIR:?GUEST_DIR must be set}/suites.txt

# guest_suite_rows: prints the table's rows, comments and blank lines
# dropped, fields separated by one space.
guest_suite_rows() {
    sed -e 's/#.*//' "$GUEST_SUITES_FILE" | awk 'NF { $1 = $1; print }'
}

# guest_suite_names: the suites, the default first, one per line.
guest_suite_names() { guest_suite_rows | awk '{ print $1 }'; }

# guest_default_suite: the first row's suite.
guest_default_suite() { guest_suite_names | head -n 1; }

# guest_suite_field SUITE N: field N of SUITE's row (2 VERSION_ID, 3
# IMAGE_SUBDIR); returns 1 for an unknown suite.
guest_suite_field() {
    guest_suite_rows | awk -v s="$1" -v n="$2" '$1 == s { print $n; found = 1 } END { exit !found }'
}

# guest_suite_renames SUITE: the suite's NAME=SUITE_NAME pairs, space separated.
guest_suite_renames() {
    guest_suite_rows | awk -v s="$1" '$1 == s { for (i = 4; i <= NF; i++) printf "%s%s", (i > 4 ? " " : ""), $i }'
}

# guest_check_suite SUITE: returns 1, with a message naming the known suites
# on stderr, when SUITE is not in the table.
guest_check_suite() {
    guest_suite_field "$1" 1 >/dev/null && return 0
    echo "unknown suite '$1' (known: $(guest_suite_names | paste -sd' ' -); guest/suites.txt lists them)" >&2
    return 1
}

# guest_package_names SUITE: filter from names as packages*.txt spell them
# (one a line) to SUITE's names.
guest_package_names() {
    awk -v r="$(guest_suite_renames "$1")" '
        BEGIN { n = split(r, P, " "); for (i = 1; i <= n; i++) { split(P[i], kv, "="); to[kv[1]] = kv[2] } }
        { print (($1 in to) ? to[$1] : $1) }'
}
