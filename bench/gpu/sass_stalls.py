#!/usr/bin/env python3
"""Summarises ncu's per-instruction source page (SOURCE=1 kernel-detail.sh's *-sass.csv.xz): the
share of warp stall samples by reason, by opcode, and the instructions that hold the most samples.

    python3 bench/gpu/sass_stalls.py OUT/source-expert_up_mma-sass.csv.xz [TOP]
"""
import collections
import csv
import lzma
import sys


def number(text):
    text = text.replace(",", "")
    return int(text) if text and text != "-" else 0


def main():
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rows = list(csv.reader(lzma.open(path, "rt")))
    header = rows[1]  # row 0 names the kernel
    col = {h: i for i, h in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    lines = [r for r in rows[2:] if len(r) >= len(header)]
    samples = lambda r: number(r[col["Warp Stall Sampling (All Samples)"]])
    total = sum(samples(r) for r in lines) or 1
    by_reason = collections.Counter()
    by_op, executed = collections.Counter(), collections.Counter()
    for r in lines:
        words = r[col["Source"]].split()
        op = (words[1] if words and words[0].startswith("@") and len(words) > 1 else words[0] if words else "")
        op = op.split(".")[0]
        by_op[op] += samples(r)
        executed[op] += number(r[col["Instructions Executed"]])
        for reason in reasons:
            by_reason[reason[len("stall_"):]] += number(r[col[reason]])
    print(rows[0][1] if len(rows[0]) > 1 else "")
    print(f"stall samples: {total}")
    print("by reason:")
    for reason, n in by_reason.most_common(10):
        print(f"  {reason:18s} {n:9d} {100 * n / total:5.1f}%")
    print("by opcode (samples, instructions executed):")
    for op, n in by_op.most_common(14):
        print(f"  {op:10s} {n:9d} {100 * n / total:5.1f}%  {executed[op]}")
    print(f"the {top} instructions with the most samples (line, samples, first two reasons):")
    for i in sorted(range(len(lines)), key=lambda i: -samples(lines[i]))[:top]:
        r = lines[i]
        main_reasons = sorted(((number(r[col[c]]), c[len("stall_"):]) for c in reasons), reverse=True)[:2]
        print(f"  {i:5d} {samples(r):6d} {r[col['Source']].strip()[:58]:58s} {main_reasons}")


if __name__ == "__main__":
    main()
