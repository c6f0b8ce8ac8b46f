#!/usr/bin/env python3
"""Cold-disk arms against the disk's own O_DIRECT rate (issue 16's io-uring item).

cold_rate.py OUT DISK_JSONL [DISK_JSONL ...] -- ARM [ARM ...]
  DISK_JSONL: files of bench/gpu/disk_direct_rate.sh lines (OUT-relative or absolute); ARM: the
  name of an OUT/<arm>.json written by `moepage run --stats-json`. Prints every disk measurement,
  the best one, and per arm the expert bytes it read, its prefill + decode time, its read rate over
  that time (compute included, so a floor on the transport's own rate) and over the time the
  forward pass waited for reads, each as a fraction of the best disk rate.
"""
import json
import os
import sys


def main():
    args = sys.argv[1:]
    if "--" not in args or len(args) < 4:
        sys.exit(__doc__)
    out, disk_files, arms = args[0], args[1:args.index("--")], args[args.index("--") + 1:]
    disk = []
    for name in disk_files:
        path = name if os.path.isabs(name) else os.path.join(out, name)
        if os.path.exists(path):
            disk += [dict(json.loads(line), file=name) for line in open(path) if line.strip()]
    best = max((d["bytes_per_s"] for d in disk), default=0)
    print("| disk measurement | depth | GB/s |\n|---|---:|---:|")
    for d in disk:
        print(f"| {d['file']} | {d['depth']} | {d['bytes_per_s'] / 1e9:.2f} |")
    print(f"\nbest disk rate: {best / 1e9:.2f} GB/s\n")
    frac = lambda r: f"{r / best:.0%}" if best else "-"
    print("| arm | bytes read | prefill + decode | GB/s | of best disk | GB/s while waiting | of best disk |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for arm in arms:
        path = os.path.join(out, arm + ".json")
        if not os.path.exists(path):
            print(f"| {arm} | failed | | | | | |")
            continue
        stats = json.load(open(path))
        pager, run = stats["pager"], stats["run"]
        read = pager["bytes_read"] - pager["load_bytes_read"]
        wall = run["decode_seconds"] + run["prefill_seconds"]
        waited = pager["wait_ns"] / 1e9
        rate = read / wall if wall > 0 else 0.0
        rate_waiting = read / waited if waited > 0 else 0.0
        print(f"| {arm} | {read} | {wall:.3f} s | {rate / 1e9:.2f} | {frac(rate)} | {rate_waiting / 1e9:.2f} | "
              f"{frac(rate_waiting)} |")


if __name__ == "__main__":
    main()
