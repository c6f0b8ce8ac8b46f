#!/usr/bin/env python3
"""Where a paged decode step waits, from a libmoepage-kernel-trace CSV recorded with
MOEPAGE_KERNEL_TRACE_API=1 (bench/gpu/decode-trace.sh with that variable and a paged profile in
MOEPAGE_SET). A step runs from one greedy pick's end to the next's. Each moment of a step is one
of four states, by whether some kernel runs on the GPU and whether an expert copy (a host-to-device
copy of at least MIN_BYTES, default 1 MiB: the token's upload and the pointer tables are smaller)
is on the link:

  both       a kernel runs and a copy is on the link: the overlap a pipeline is for
  compute    a kernel runs, the link is idle
  bytes      no kernel runs, a copy is on the link: the GPU waits for expert bytes
  host       neither: the GPU waits for the host to queue work (or a readback to reach it)

and beside them the host's time blocked in the runtime's waits (event and stream synchronize) and
the link's rate while busy. Means over the steps in [FROM, TO), in microseconds a step.

Usage: paged_step.py KERNELS.csv [FROM] [TO] [MIN_BYTES]
"""
import re
import statistics
import sys

from trace_table import load

HOST_WAITS = ("api:cudaEventSynchronize", "api:cudaStreamSynchronize", "api:cudaDeviceSynchronize")
# CUPTI names a runtime call with the version of its entry point ("api:cudaEventSynchronize_v3020").
API_VERSION = re.compile(r"_v\d+$")


def is_host_wait(name):
    return name.startswith("api:") and API_VERSION.sub("", name) in HOST_WAITS


def merged(intervals):
    """The union of (start, end) intervals as sorted, disjoint intervals."""
    out = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def clipped(intervals, lo, hi):
    return [(max(s, lo), min(e, hi)) for s, e in intervals if e > lo and s < hi]


def length(intervals):
    return sum(e - s for s, e in intervals)


def overlap(a, b):
    """Length of the intersection of two sorted, disjoint interval lists."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, e - s)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def copy_bytes(name):
    """BYTES of a 'memcpy:HtoD:BYTES' record, else None."""
    parts = name.split(":")
    if len(parts) == 3 and parts[0] == "memcpy" and parts[1] == "HtoD" and parts[2].isdigit():
        return int(parts[2])
    return None


def classify(rows, min_bytes):
    """The trace's kernels, expert copies (start, end, bytes) and host waits, sorted out once."""
    kernels = [(s, e) for s, e, _, n in rows if not n.startswith(("memcpy:", "api:"))]
    copies = [(s, e, copy_bytes(n)) for s, e, _, n in rows if (copy_bytes(n) or 0) >= min_bytes]
    waits = [(s, e) for s, e, _, n in rows if is_host_wait(n)]
    return kernels, copies, waits


def step_states(kernel_rows, copies, wait_rows, lo, hi):
    kernels = merged(clipped(kernel_rows, lo, hi))
    link = merged(clipped([(s, e) for s, e, _ in copies], lo, hi))
    waits = merged(clipped(wait_rows, lo, hi))
    wall, busy, on_link = hi - lo, length(kernels), length(link)
    both = overlap(kernels, link)
    # A copy's bytes count in the step its copy ends in.
    moved = sum(b for s, e, b in copies if lo < e <= hi)
    return {
        "wall": wall,
        "both": both,
        "compute": busy - both,
        "bytes": on_link - both,
        "host": wall - busy - on_link + both,
        "host_blocked": length(waits),
        "copies": sum(1 for s, e, b in copies if lo < e <= hi),
        "moved": moved,
        "link_busy": on_link,
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    last = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    min_bytes = int(sys.argv[4]) if len(sys.argv) > 4 else 1 << 20
    try:
        rows = load(path, kernels_only=False)
    except OSError as e:
        sys.exit(f"paged_step.py: {path}: cannot read: {e.strerror or e}")
    except (KeyError, ValueError) as e:
        sys.exit(f"paged_step.py: {path}: not a kernel-trace CSV (start_ns,end_ns,stream,...,name): {e}")
    greedy = [r for r in rows if "greedy_kernel" in r[3]]
    if not any(n.startswith("memcpy:") for _, _, _, n in rows):
        sys.exit(f"paged_step.py: {path} has no copies (trace with MOEPAGE_KERNEL_TRACE_API=1)")
    last = min(last, len(greedy) - 1)
    if first < 1 or first >= last:
        sys.exit(f"paged_step.py: steps [{first}, {last}) are empty ({len(greedy)} greedy picks in {path})")
    kernels, copies, waits = classify(rows, min_bytes)
    steps = [step_states(kernels, copies, waits, greedy[i - 1][1], greedy[i][1]) for i in range(first, last)]
    mean = {k: statistics.mean(s[k] for s in steps) for k in steps[0]}
    wall = mean["wall"]
    print(f"steps {first}..{last - 1} of {len(greedy)}: wall {wall / 1e3:.1f} us a step "
          f"(median {statistics.median(s['wall'] for s in steps) / 1e3:.1f})")
    for key, what in (("both", "kernels and expert copies at once"), ("compute", "kernels only, link idle"),
                      ("bytes", "no kernel: waiting for expert bytes"), ("host", "neither: waiting for the host")):
        print(f"  {key:8} {mean[key] / 1e3:9.1f} us {mean[key] / wall:6.1%}  {what}")
    rate = mean["moved"] / mean["link_busy"] if mean["link_busy"] else 0.0
    print(f"  host blocked in the runtime's waits {mean['host_blocked'] / 1e3:.1f} us; {mean['copies']:.1f} expert "
          f"copies, {mean['moved'] / 1e6:.1f} MB, link busy {mean['link_busy'] / 1e3:.1f} us at {rate:.2f} GB/s")


if __name__ == "__main__":
    main()
