#!/usr/bin/env python3
"""Prints the markdown tables of docs/storage-rbd.md ("Seed study B with
network latency") from what run.sh kept: for each DELAY, delay-DELAY.json
(hostctl --json results compare: read IOPS) and delay-DELAY-write.json (the
same with --metric write_iops).

    bench/seed-b-latency/table.py DIR DELAY...
"""
import json
import sys


def half_width(summary):
    low, high = summary.get("ci95_low"), summary.get("ci95_high")
    return None if low is None or high is None else (high - low) / 2


def cell(summary):
    width = half_width(summary)
    mean = summary["mean"]
    return f"{mean:.0f} ± {width:.0f}" if width is not None else f"{mean:.0f}"


def versus(row):
    vs = row.get("vs_baseline") or {}
    if row.get("is_baseline"):
        return "baseline"
    if "ratio" not in vs:
        return vs.get("verdict", "")
    return (f"{vs['ratio']:.2f} [{vs['ci95_low']:.2f}, {vs['ci95_high']:.2f}]"
            f" {vs['verdict']}")


def guest_rows(compare):
    return {row["filesystem"]: row for row in compare["rows"] if not row["host_baseline"]}


def table(directory, delay):
    reads = json.load(open(f"{directory}/delay-{delay}.json"))
    writes = json.load(open(f"{directory}/delay-{delay}-write.json"))
    host = next(row for row in reads["rows"] if row["host_baseline"])
    print(f"D = {delay} ms each way (round trip + {2 * float(delay):g} ms):\n")
    print("| filesystem | n | read IOPS (± 95% CI) | vs ext4, read: ratio [95% CI] verdict |"
          " write IOPS (± 95% CI) | vs ext4, write | read vs host |")
    print("|---|---|---|---|---|---|---|")
    write_rows = guest_rows(writes)
    # The baseline (ext4) first, then the others by name.
    ordered = sorted(guest_rows(reads).items(), key=lambda item: (not item[1]["is_baseline"], item[0]))
    for name, row in ordered:
        metrics = row["metrics"]
        share = (row.get("vs_host") or {}).get("ratios", {}).get("read_iops")
        print(f"| {name} | {metrics['read_iops']['n']} | {cell(metrics['read_iops'])} | "
              f"{versus(row)} | {cell(metrics['write_iops'])} | {versus(write_rows[name])} | "
              f"{'' if share is None else f'{share:.2f}'} |")
    print(f"| host, bare image (fio rbd engine) | {host['metrics']['read_iops']['n']} | "
          f"{cell(host['metrics']['read_iops'])} | | {cell(host['metrics']['write_iops'])} | | |\n")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for delay in sys.argv[2:]:
        table(sys.argv[1], delay)


if __name__ == "__main__":
    main()
