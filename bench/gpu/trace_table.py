#!/usr/bin/env python3
"""A decode step's critical path from libmoepage-kernel-trace's CSV (bench/gpu/decode-trace.sh).

Steps end at the greedy pick (greedy_kernel); the main stream is the greedy kernel's. For the
steps in [FROM, TO): the step's wall time (greedy end to greedy end), the time no kernel of any
stream ran, and for each main-stream kernel (named with its occurrence in the step, so a layer's
kernels stay apart) what it adds to the step, its end past the end of the main-stream kernel
before it, beside how long it ran from its own start (which includes a launch-overlapped kernel's
wait for its predecessor), and the main stream's idle gap before it: where the gap is past 2 us,
the side-stream kernel that ended last before it started (the join it most likely waited on).
Side-stream kernels are summed by name.

Usage: trace_table.py KERNELS.csv [FROM] [TO]
"""
import collections
import csv
import statistics
import sys


def load(path, kernels_only=True):
    """(start, end, stream, name) sorted; the copies and runtime calls (MOEPAGE_KERNEL_TRACE_API)
    only when kernels_only is false."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if kernels_only and r["name"].startswith(("memcpy:", "api:")):
                continue
            rows.append((int(r["start_ns"]), int(r["end_ns"]), int(r["stream"]), r["name"]))
    rows.sort()
    return rows


def short(name):
    """The kernel's name without namespaces and arguments, its template arguments kept."""
    for noise in ("(anonymous namespace)::", "moepage::ds4::gpu::", "void "):
        name = name.replace(noise, "")
    depth = 0
    for i, ch in enumerate(name):  # the argument list: the first "(" outside the template brackets
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "(" and depth == 0:
            return name[:i]
    return name


def covered(intervals, lo, hi):
    """Nanoseconds of [lo, hi) inside the union of the intervals."""
    total, at = 0, lo
    for s, e in sorted(intervals):
        s, e = max(s, at), min(e, hi)
        if e > s:
            total += e - s
            at = e
    return total


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    last = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    greedy = [r for r in rows if "greedy_kernel" in r[3]]
    if len(greedy) < 2:
        sys.exit(f"trace_table.py: {sys.argv[1]} holds {len(greedy)} greedy picks; a decode needs two or more")
    main_stream = greedy[0][2]
    last = min(last, len(greedy) - 1)
    if first < 1 or first >= last:
        sys.exit(f"trace_table.py: steps [{first}, {last}) are empty ({len(greedy)} steps traced)")
    walls, idles = [], []
    adds = collections.defaultdict(list)
    runs = collections.defaultdict(list)
    order = {}
    side = collections.defaultdict(float)
    gaps = collections.defaultdict(list)
    waited = collections.defaultdict(collections.Counter)
    for i in range(first, last):
        lo, hi = greedy[i - 1][1], greedy[i][1]
        walls.append(hi - lo)
        inside = [r for r in rows if r[1] > lo and r[1] <= hi]
        idles.append((hi - lo) - covered([(s, e) for s, e, _, _ in inside], lo, hi))
        seen = collections.Counter()
        prev_end = lo
        for s, e, stream, name in inside:
            if stream != main_stream:
                side[short(name)] += (e - s) / (last - first)
                continue
            seen[short(name)] += 1
            key = f"{short(name)} #{seen[short(name)]}"
            order.setdefault(key, (len(order), key))
            adds[key].append(e - max(prev_end, lo))
            runs[key].append(e - s)
            gap = s - max(prev_end, lo)
            gaps[key].append(max(gap, 0))
            if gap > 2000:
                before = [r for r in inside if r[2] != main_stream and r[1] <= s]
                if before:
                    waited[key][short(max(before, key=lambda r: r[1])[3])] += 1
            prev_end = max(prev_end, e)
    wall = statistics.mean(walls)
    print(f"steps {first}..{last - 1} of {len(greedy)}: wall {wall / 1e3:.1f} us a step "
          f"(median {statistics.median(walls) / 1e3:.1f}), no kernel running {statistics.mean(idles) / 1e3:.1f} us")
    print(f"{'main stream, in step order':58} {'adds us':>8} {'runs us':>8} {'gap us':>7} {'share':>6} {'seen':>5}"
          "  waited on")
    total = 0.0
    for _, key in sorted(order.values()):
        a = statistics.mean(adds[key]) / 1e3
        total += a * len(adds[key]) / (last - first)
        joins = ", ".join(f"{n} x{c}" for n, c in waited[key].most_common(2))
        print(f"{key[:58]:58} {a:8.2f} {statistics.mean(runs[key]) / 1e3:8.2f} "
              f"{statistics.mean(gaps[key]) / 1e3:7.2f} {a / (wall / 1e3):6.1%} {len(adds[key]):5d}  {joins}")
    idle_main = sum(statistics.mean(v) * len(v) for v in gaps.values()) / (last - first) / 1e3
    print(f"main stream adds {total:.1f} us a step in all; it sits idle {idle_main:.1f} us of that")
    by_name = collections.defaultdict(float)
    for key, values in adds.items():
        by_name[key.rsplit(" #", 1)[0]] += sum(values) / (last - first) / 1e3
    print("\nmain stream by kernel (us a step):")
    for name, us in sorted(by_name.items(), key=lambda kv: -kv[1]):
        print(f"  {us:8.1f}  {name}")
    print("\nside streams by kernel (us a step, run time):")
    for name, ns in sorted(side.items(), key=lambda kv: -kv[1]):
        print(f"  {ns / 1e3:8.1f}  {name}")


if __name__ == "__main__":
    main()
