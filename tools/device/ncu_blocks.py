#!/usr/bin/env python3
"""Sums an `ncu --csv --metrics gpu__time_duration.sum` log of one prompt batch by block, to set
beside the `arch.timeline` line of the same batch: a block starts at its mHC site (the weights
kernel, hc_prompt_kernel or hc_mix_kernel), so blocks alternate attention and MoE and the last is
the head. Per block: every kernel, its mHC site's kernels (weights, finish, collapse and norm,
Sinkhorn), those of the compute stream (the stream of the first kernel) and those of side streams.
ncu runs kernels one at a time, so where a block's device time in the timeline exceeds its kernel
sum, the difference was lost between or beside its kernels.

    tools/device/ncu_blocks.py kernels-1024.csv [--detail]
"""
import csv
import sys

UNITS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}
SITE_KERNELS = ("hc_prompt_kernel", "hc_mix_kernel")
SITE_PARTS = SITE_KERNELS + ("hc_finish_kernel", "collapse_norm_kernel", "sinkhorn_kernel")


def main():
    rows = [r for r in csv.reader(open(sys.argv[1])) if r]
    start = next(i for i, r in enumerate(rows) if r[0] == "ID")
    header = rows[start]
    name_at, stream_at = header.index("Kernel Name"), header.index("Stream")
    value_at, unit_at = header.index("Metric Value"), header.index("Metric Unit")
    blocks, main_stream, seen_site = [], None, False
    for r in rows[start + 1:]:
        if len(r) <= value_at:
            continue
        us = float(r[value_at].replace(",", "")) * UNITS.get(r[unit_at], 1.0) / 1e3
        name = r[name_at].split("(")[0].replace("void ", "").replace("moepage::<unnamed>::", "")
        main_stream = main_stream or r[stream_at]
        site = any(k in name for k in SITE_KERNELS)
        if not blocks or (site and seen_site):  # the embedding joins layer 0's attention, as in the timeline
            blocks.append({"main": 0.0, "side": 0.0, "site": 0.0, "kernels": {}})
        seen_site = seen_site or site
        b = blocks[-1]
        b["main" if r[stream_at] == main_stream else "side"] += us
        if any(k in name for k in SITE_PARTS):
            b["site"] += us
        b["kernels"][name] = b["kernels"].get(name, 0.0) + us
    for i, b in enumerate(blocks):
        kind = "head" if i == len(blocks) - 1 else ("attention" if i % 2 == 0 else "MoE")
        layer = "" if kind == "head" else f"layer {i // 2} "
        total = b["main"] + b["side"]
        print(f"{layer}{kind}: {total:.1f} us = mHC site {b['site']:.1f} + {kind} {total - b['site']:.1f} "
              f"(compute stream {b['main']:.1f}, side {b['side']:.1f})")
        if "--detail" in sys.argv:
            for name, us in sorted(b["kernels"].items(), key=lambda kv: -kv[1]):
                print(f"    {us:9.1f} us  {name[:90]}")


if __name__ == "__main__":
    main()
