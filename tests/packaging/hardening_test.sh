#!/usr/bin/env bash
# The service's hardening as systemd judges it (issue 9): prints the exposure
# score of `systemd-analyze security --offline=true` for systemd/disksweepd.service
# and every exposure it still reports; fails when the score is above 5.0 or
# when a reported exposure has no "# exposure NAME: reason" line in the unit,
# NAME being the check's name after "~" (CAP_KILL, AF_NETLINK, @resources) or
# before "=" (ProcSubset). Skips (exit SKIP_CODE) without systemd-analyze.
# Usage: hardening_test.sh UNIT_FILE SKIP_CODE
set -euo pipefail
unit=$1
skip_code=$2
max_score=5.0

command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is missing"; exit "$skip_code"; }
report=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1) || {
    echo "systemd-analyze failed:"; echo "$report"; exit 1; }

score=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' <<<"$report")
[[ -n $score ]] || { echo "no overall exposure level in:"; echo "$report"; exit 1; }
echo "exposure score of $(basename "$unit"): $score (at most $max_score)"

failures=0
while read -r check; do
    name=${check#*=~}
    [[ $name != "$check" ]] || name=${check%%=*}
    if grep -qF "# exposure $name: " "$unit"; then
        echo "  kept: $check -- $(grep -F "# exposure $name: " "$unit" | head -1 | sed 's/^# exposure [^:]*: //')"
    else
        echo "  FAILED: $check has no '# exposure $name: reason' line in $unit"
        failures=$((failures + 1))
    fi
done < <(grep '^✗' <<<"$report" | awk '{print $2}')

if awk -v s="$score" -v m="$max_score" 'BEGIN { exit !(s > m) }'; then
    echo "FAILED: the score $score is above $max_score"
    failures=$((failures + 1))
fi
exit $((failures > 0))
