#!/usr/bin/env bash
# Checks CEPH_TEST_DELAY_MS of ceph-up.sh by its effect: a cluster made with
# a 2 ms delay serves a 4 KiB read at queue depth 1 no faster than one round
# trip (2 x 2 ms); with the delay's iptables rule removed (the setting made
# wrong for real), the same read is faster than that; and ceph-down.sh leaves
# no rule behind. Exit 77 (skip) where ceph-up.sh skips.
#
#   tests/support/ceph/ceph_delay_test.sh [DIR]   (default: a new temp dir)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ceph-lib.sh
source "$here/ceph-lib.sh"

readonly delay_ms=2 round_trip_s=0.004
dir=${1:-$(mktemp -d /tmp/ceph-delay-test.XXXXXX)}
trap '"$here/ceph-down.sh" "$dir" >/dev/null 2>&1 || true' EXIT

status=0
CEPH_TEST_DELAY_MS=$delay_ms "$here/ceph-up.sh" "$dir" || status=$?
((status == 0)) || exit "$status"
# shellcheck disable=SC1091
. "$dir/env"
rados=(rados -c "$CEPH_CONF" --id "$CEPH_USER" -p "$CEPH_POOL")
"${rados[@]}" bench 2 write -b 4096 -t 1 --no-cleanup >/dev/null

# The mean latency in seconds of 2 s of 4 KiB random reads at queue depth 1.
read_latency() {
    "${rados[@]}" bench 2 rand -t 1 | awk '/^Average Latency\(s\)/ { print $3 }'
}
is_below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

delayed=$(read_latency)
echo "ceph_delay_test: qd1 4k read with a ${delay_ms} ms delay: $delayed s"
if is_below "$delayed" "$round_trip_s"; then
    echo "FAIL: a read took $delayed s, less than the round trip of $round_trip_s s"
    exit 1
fi
read -r _ packets _ < "$dir/run/netdelay.stats"
((packets > 0)) || { echo "FAIL: no packet passed netdelay.py"; exit 1; }

queue=$(sed -n 's/^queue=//p' "$dir/netdelay")
ports=$(sed -n 's/^ports=//p' "$dir/netdelay")
# shellcheck disable=SC2046  # the rule's words
iptables -w $(ceph_test_delay_rule -D "$queue" "$ports")
undelayed=$(read_latency)
echo "ceph_delay_test: the same without the rule: $undelayed s"
if ! is_below "$undelayed" "$round_trip_s"; then
    echo "FAIL: without the delay's rule a read still took $undelayed s: the check cannot fail"
    exit 1
fi
# Put it back so that ceph-down.sh has a rule to remove.
# shellcheck disable=SC2046
iptables -w $(ceph_test_delay_rule -A "$queue" "$ports")
"$here/ceph-down.sh" "$dir"
trap - EXIT
if iptables -w -S OUTPUT | grep -q -- "--queue-num $queue\$"; then
    echo "FAIL: ceph-down.sh left the rule for queue $queue"
    exit 1
fi
echo "ceph_delay_test: passed"
