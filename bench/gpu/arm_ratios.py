#!/usr/bin/env python3
"""Decode tok/s of benchmark arms side by side, with the ratio of each to the row's first arm.

arm_ratios.py OUT LABEL=ARM[,ARM...] ...
  OUT holds one <arm>.json per arm (moepage run --stats-json). Each row is its LABEL and its arms'
  decode tok/s (generated tokens over decode seconds), then every later arm over the first. A
  missing or unreadable arm prints the row as failed, naming it.
"""
import json
import os
import sys


def decode_rate(out, arm):
    run = json.load(open(os.path.join(out, arm + ".json")))["run"]
    return run["generated_tokens"] / run["decode_seconds"]


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out, rows = argv[0], [r.split("=", 1) for r in argv[1:]]
    width = max(len(arms.split(",")) for _, arms in rows)
    print("| row | " + " | ".join(f"arm {i + 1} tok/s" for i in range(width)) +
          "".join(f" | {i + 1} / 1" for i in range(1, width)) + " |")
    print("|---|" + "---:|" * (2 * width - 1))
    for label, arms in rows:
        try:
            rates = [decode_rate(out, a) for a in arms.split(",")]
        except (OSError, KeyError, ValueError, ZeroDivisionError) as e:
            print(f"| {label} | failed: {e} |")
            continue
        print(f"| {label} | " + " | ".join(f"{r:.1f}" for r in rates) +
              "".join(f" | {r / rates[0]:.3f}" for r in rates[1:]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
