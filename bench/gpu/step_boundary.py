#!/usr/bin/env python3
"""Where a decode step's host round trip goes, from a libmoepage-kernel-trace CSV recorded with
MOEPAGE_KERNEL_TRACE_API=1 (bench/gpu/decode-trace.sh with that variable set): for each step in
[FROM, TO), every copy, runtime call and kernel from the previous step's greedy pick to the end of
the first mHC kernel, at its median start and end (microseconds after that greedy pick ended).

Usage: step_boundary.py KERNELS.csv [FROM] [TO]
"""
import collections
import statistics
import sys

from trace_table import load, short


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = load(sys.argv[1], kernels_only=False)
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    last = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    greedy = [r for r in rows if "greedy_kernel" in r[3]]
    if len(greedy) < 3:
        sys.exit(f"step_boundary.py: {sys.argv[1]} holds {len(greedy)} greedy picks")
    if not any(r[3].startswith("api:") for r in rows):
        sys.exit(f"step_boundary.py: {sys.argv[1]} has no runtime calls (trace with MOEPAGE_KERNEL_TRACE_API=1)")
    last = min(last, len(greedy) - 1)
    starts, ends = collections.defaultdict(list), collections.defaultdict(list)
    order = {}
    for i in range(first, last):
        lo = greedy[i - 1][1]
        mix = next((r for r in rows if r[0] > lo and "hc_mix_kernel" in r[3]), None)
        if mix is None:
            continue
        seen = collections.Counter()
        for s, e, stream, name in rows:
            if e <= greedy[i - 1][0] or s > mix[1]:
                continue
            label = name if name.startswith(("api:", "memcpy:")) else short(name)
            seen[label] += 1
            key = f"{label} #{seen[label]}"
            order.setdefault(key, len(order))
            starts[key].append((s - lo) / 1e3)
            ends[key].append((e - lo) / 1e3)
    print(f"steps {first}..{last - 1}: median start and end in us after the previous greedy pick ended")
    for key in sorted(order, key=lambda k: statistics.median(starts[k])):
        print(f"{statistics.median(starts[key]):9.1f} {statistics.median(ends[key]):9.1f}  {key}  "
              f"({len(starts[key])} steps)")


if __name__ == "__main__":
    main()
