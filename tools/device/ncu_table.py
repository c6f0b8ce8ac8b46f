#!/usr/bin/env python3
"""Sums an `ncu --csv --metrics gpu__time_duration.sum` log by kernel name: time, calls, name.
kernel_rows() reads such a log for the other tools of this folder (ncu_blocks.py)."""
import collections
import csv
import sys

UNITS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}


def kernel_rows(path):
    """The log's kernels in launch order, each as (full kernel name, stream, nanoseconds)."""
    rows = [r for r in csv.reader(open(path)) if r]
    start = next(i for i, r in enumerate(rows) if r[0] == "ID")
    header = rows[start]
    name_at, stream_at = header.index("Kernel Name"), header.index("Stream")
    value_at, unit_at = header.index("Metric Value"), header.index("Metric Unit")
    for r in rows[start + 1:]:
        if len(r) > value_at:
            yield r[name_at], r[stream_at], float(r[value_at].replace(",", "")) * UNITS.get(r[unit_at], 1.0)


def main():
    total, calls = collections.defaultdict(float), collections.Counter()
    for full_name, _, ns in kernel_rows(sys.argv[1]):
        name = full_name.split("(")[0]
        total[name] += ns
        calls[name] += 1
    print(f"total {sum(total.values()) / 1e3:.1f} us over {sum(calls.values())} kernels")
    for name, ns in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"{ns / 1e3:10.1f} us {calls[name]:5d}  {name[:100]}")


if __name__ == "__main__":
    main()
