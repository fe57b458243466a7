#!/usr/bin/env bash
# Renders a disksweep HTML report (hostctl results report SWEEP -o FILE) in
# headless Chromium (Debian's `chromium` package), as the report tier's test
# and the docs' images (docs/images/report-*.png) do:
#
#   scripts/report-screenshot.sh REPORT.html OUT.png [WIDTH,HEIGHT]
#       a PNG of the page's first WIDTH x HEIGHT pixels (default 1280,4000)
#   scripts/report-screenshot.sh --dump-dom REPORT.html
#       the DOM as Chromium built it, on stdout
#
# Chromium gets a throwaway profile and every background connection off
# (no component updates, sync, QUIC or first-run pages): the report is
# self-contained and nothing should be fetched. Runs as root (--no-sandbox).
# Exit status: 0 done, 1 Chromium failed (its log's tail on stderr), 2 usage,
# 3 Chromium is not installed.
set -euo pipefail

usage() {
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

mode=screenshot
if [[ ${1-} == --dump-dom ]]; then
    mode=dom
    shift
    [[ $# -eq 1 ]] || usage
else
    [[ $# -eq 2 || $# -eq 3 ]] || usage
fi
report=$1
[[ -r $report ]] || { echo "report-screenshot: cannot read $report" >&2; exit 2; }
command -v chromium >/dev/null ||
    { echo "report-screenshot: chromium is not installed (scripts/install-deps.sh installs it)" >&2; exit 3; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
path=$(realpath "$report")
url="file://${path// /%20}"
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --hide-scrollbars --force-device-scale-factor=1 --user-data-dir="$scratch/profile")

failed() {
    echo "report-screenshot: chromium failed on $report:" >&2
    tail -n 20 "$scratch/chromium.log" >&2
    exit 1
}

if [[ $mode == dom ]]; then
    timeout 120 chromium "${flags[@]}" --dump-dom "$url" 2>"$scratch/chromium.log" || failed
    exit 0
fi
out=$(realpath -m "$2")
size=${3:-1280,4000}
rm -f "$out"
timeout 120 chromium "${flags[@]}" --window-size="$size" --screenshot="$out" "$url" \
    >"$scratch/chromium.log" 2>&1 || failed
[[ -s $out ]] || failed
echo "wrote $2"
