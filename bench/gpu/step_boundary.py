#!/usr/bin/env python3
"""Where a decode step's host round trip goes, from a libmoepage-kernel-trace CSV recorded with
MOEPAGE_KERNEL_TRACE_API=1 (bench/gpu/decode-trace.sh with that variable set): for each step in
[FROM, TO), every copy, runtime call and kernel from the previous step's greedy pick to the end of
the first mHC kernel, at its median start and end (microseconds after that greedy pick ended).

Usage: step_boundary.py KERNELS.csv [FROM] [TO]
"""
import bisect
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
    first = max(first, 2)
    starts, ends = collections.defaultdict(list), collections.defaultdict(list)
    order = {}
    at = [r[0] for r in rows]  # rows are sorted by start: each step reads only its own window
    for i in range(first, last):
        lo = greedy[i - 1][1]
        after = range(bisect.bisect_right(at, lo), len(rows))
        mix = next((rows[j] for j in after if "hc_mix_kernel" in rows[j][3]), None)
        if mix is None:
            continue
        seen = collections.Counter()
        # From the pick two steps back: what ends after the previous pick started (the host's
        # synchronize starts during the step before) and starts before the first mHC kernel ends.
        window = rows[bisect.bisect_left(at, greedy[i - 2][1]):bisect.bisect_right(at, mix[1])]
        for s, e, stream, name in window:
            if e <= greedy[i - 1][0]:
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
