#!/usr/bin/env bash
# Fails when a test was skipped that the allowed-skips list does not allow:
# in CI a test that cannot run is an error unless someone said why it may
# not run there. scripts/test.sh runs this on ctest's JUnit output.
#
#   scripts/check-skips.sh JUNIT_XML [ALLOWED_SKIPS]
#
# JUNIT_XML      what `ctest --output-junit` wrote
# ALLOWED_SKIPS  default: tests/allowed-skips.txt. One allowed skip a line:
#                  REGEX # reason
#                REGEX is a POSIX extended regular expression that must match
#                the whole ctest test name; the first " # " ends it and the
#                reason after it is required. Lines starting with # are
#                comments.
# Exit status: 0 no unexpected skip, 1 unexpected skips (each named on
# stderr with the reason the test gave), 2 usage error or malformed input.
# Needs only bash and awk (Debian's base system).
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 JUNIT_XML [ALLOWED_SKIPS]" >&2
    exit 2
fi
junit=$1
allowed=${2:-"$(dirname "$0")/../tests/allowed-skips.txt"}
for file in "$junit" "$allowed"; do
    [[ -r $file ]] || { echo "check-skips: cannot read $file" >&2; exit 2; }
done

awk -v allowed_file="$allowed" '
function trim(text) {
    sub(/^[ \t\r]+/, "", text)
    sub(/[ \t\r]+$/, "", text)
    return text
}
# JUnit (XML) text to plain text; &amp; last, so "&amp;lt;" stays "&lt;".
function unescape(text) {
    gsub(/&quot;/, "\"", text)
    gsub(/&apos;/, "'\''", text)
    gsub(/&lt;/, "<", text)
    gsub(/&gt;/, ">", text)
    gsub(/&amp;/, "\\&", text)
    return text
}
function malformed(line_number, why) {
    printf "check-skips: %s:%d: %s\n", allowed_file, line_number, why > "/dev/stderr"
    failed_to_read = 1
}
# The allowed-skips file: patterns[i] (anchored) and reasons[i].
function read_allowed(    line, line_number, separator, pattern, reason) {
    while ((getline line < allowed_file) > 0) {
        ++line_number
        line = trim(line)
        if (line == "" || substr(line, 1, 1) == "#") continue
        separator = index(line, " # ")
        if (separator == 0) { malformed(line_number, "no \" # reason\" after the test-name regex"); continue }
        pattern = trim(substr(line, 1, separator - 1))
        reason = trim(substr(line, separator + 3))
        if (reason == "") { malformed(line_number, "the reason after \" # \" is empty"); continue }
        patterns[++pattern_count] = "^(" pattern ")$"
        reasons[pattern_count] = reason
    }
    close(allowed_file)
}
# The index of the first pattern matching `name`, or 0.
function allowing_pattern(name,    i) {
    for (i = 1; i <= pattern_count; ++i) if (name ~ patterns[i]) return i
    return 0
}
function judge(name, said,    allowed_by) {
    ++skipped
    allowed_by = allowing_pattern(name)
    if (allowed_by) {
        printf "check-skips: allowed skip: %s (%s)\n", name, reasons[allowed_by]
        return
    }
    ++unexpected
    printf "check-skips: unexpected skip: %s: %s\n", name, (said == "" ? "(no reason printed)" : said) > "/dev/stderr"
}
BEGIN { read_allowed(); if (failed_to_read) exit 2 }
# ctest writes one attribute-bearing <testcase ...> line per test; the test
# output inside is escaped, so a literal "<skipped" is always the element.
/<testcase / {
    name = $0
    sub(/^.*<testcase name="/, "", name)
    sub(/".*$/, "", name)
    name = unescape(name)
    in_test = 1; is_skipped = 0; said = ""
}
in_test && /<skipped/ { is_skipped = 1 }
in_test && said == "" && /SKIPPED: / { said = $0; sub(/^.*SKIPPED: /, "", said); sub(/<\/system-out>.*$/, "", said); said = unescape(said) }
in_test && /<\/testcase>/ { if (is_skipped) judge(name, said); in_test = 0 }
END {
    if (failed_to_read) exit 2
    printf "check-skips: %d skipped, %d allowed, %d unexpected\n", skipped, skipped - unexpected, unexpected
    if (unexpected > 0) {
        printf "check-skips: a test that cannot run in CI must be fixed, or listed with its reason in %s\n", allowed_file > "/dev/stderr"
        exit 1
    }
}
' "$junit"
