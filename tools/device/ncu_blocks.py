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
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_table import kernel_rows  # noqa: E402

SITE_KERNELS = ("hc_prompt_kernel", "hc_mix_kernel")
SITE_PARTS = SITE_KERNELS + ("hc_finish_kernel", "collapse_norm_kernel", "sinkhorn_kernel")


def main():
    blocks, main_stream, seen_site = [], None, False
    for full_name, stream, ns in kernel_rows(sys.argv[1]):
        us = ns / 1e3
        name = full_name.split("(")[0].replace("void ", "").replace("moepage::<unnamed>::", "")
        main_stream = main_stream or stream
        site = any(k in name for k in SITE_KERNELS)
        if not blocks or (site and seen_site):  # the embedding joins layer 0's attention, as in the timeline
            blocks.append({"main": 0.0, "side": 0.0, "site": 0.0, "kernels": {}})
        seen_site = seen_site or site
        b = blocks[-1]
        b["main" if stream == main_stream else "side"] += us
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
