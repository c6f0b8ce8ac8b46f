#!/usr/bin/env python3
"""Sums an `ncu --csv --metrics gpu__time_duration.sum` log by kernel name: time, calls, name."""
import collections
import csv
import sys

UNITS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}


def main():
    rows = [r for r in csv.reader(open(sys.argv[1])) if r]
    start = next(i for i, r in enumerate(rows) if r[0] == "ID")
    header = rows[start]
    name_at, value_at, unit_at = header.index("Kernel Name"), header.index("Metric Value"), header.index("Metric Unit")
    total, calls = collections.defaultdict(float), collections.Counter()
    for r in rows[start + 1:]:
        if len(r) <= value_at:
            continue
        ns = float(r[value_at].replace(",", "")) * UNITS.get(r[unit_at], 1.0)
        name = r[name_at].split("(")[0]
        total[name] += ns
        calls[name] += 1
    print(f"total {sum(total.values()) / 1e3:.1f} us over {sum(calls.values())} kernels")
    for name, ns in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"{ns / 1e3:10.1f} us {calls[name]:5d}  {name[:100]}")


if __name__ == "__main__":
    main()
