#!/usr/bin/env python3
"""One table of a paged-decode grid (bench/gpu/replay-grid.sh): each arm's runs gathered.

grid_table.py OUT
  OUT holds resident.json, weights.json, bandwidth.json and <arm>-r<i>.json / .log per run of an
  arm (a name without -r<i> is one run). An arm's budget is the last field of its name that is a
  number (lru-12.5, lfru-top3-25). Per arm: its runs, mean decode tok/s with the lowest and highest,
  the mean over lru's mean at the same budget (lru-<budget>), the fraction of resident tok/s, the
  ratio to its physical bound with each layer's bytes spread evenly over the run and, where the run
  left its access trace (<arm>-r<i>.trace), to each token's own bound (paged_bound.py; lowest and
  highest over the runs), hit rate, expert MB read a token and the miss path's rate as a fraction
  of the ceiling. Last, whether every run printed the same token ids.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paged_bound  # noqa: E402  (the bound of one run, and the ceiling each transport takes)

RUN = re.compile(r"^(?P<arm>.+?)(-r(?P<rep>\d+))?$")


def budget_of(arm):
    numbers = [f for f in arm.split("-") if re.fullmatch(r"\d+(\.\d+)?", f)]
    return numbers[-1] if numbers else None


def mean(values):
    return sum(values) / len(values)


def span(values, digits):
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}" if len(values) == 1 else f"{lo:.{digits}f}-{hi:.{digits}f}"


def gather(out):
    """Every paged run of OUT by arm (paged_bound.py's row of each): arm -> [row], and resident tok/s."""
    folder = paged_bound.Folder(out)
    arms = {}
    for name, row in folder.rows():
        arms.setdefault(RUN.match(name).group("arm"), []).append(row)
    return arms, folder.resident_tok_s()


def distinct_ids(out):
    lines = set()
    for f in os.listdir(out):
        if f.endswith(".log"):
            with open(os.path.join(out, f), errors="replace") as fh:
                lines.update(line for line in fh if line.startswith("token ids:"))
    return len(lines)


def main(out):
    arms, res_tok_s = gather(out)
    if not arms:
        print(f"grid_table.py: no paged arm's statistics in {out}", file=sys.stderr)
        return 1
    print(f"resident {res_tok_s:.1f} tok/s\n")
    print("| arm | runs | tok/s mean (range) | / lru | of resident | over bound | over token bound | hit rate | MB a token "
          "| miss path / ceiling |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    order = sorted(arms, key=lambda a: (float(budget_of(a) or 1e9), a))
    for arm in order:
        rows = arms[arm]
        tok = [r["decode_tok_s"] for r in rows]
        lru = arms.get(f"lru-{budget_of(arm)}")
        vs_lru = f"{mean(tok) / mean([r['decode_tok_s'] for r in lru]):.3f}" if lru else "-"
        paths = [r["of_ceiling"] for r in rows if r["of_ceiling"] is not None]
        token = [r["over_token_bound"] for r in rows if "over_token_bound" in r]
        print(f"| {arm} | {len(rows)} | {mean(tok):.2f} ({span(tok, 2)}) | {vs_lru} | {mean(tok) / res_tok_s:.3f} | "
              f"{span([r['over_bound'] for r in rows], 3)} | {span(token, 3) if token else '-'} | "
              f"{mean([r['hit_rate'] for r in rows]):.4f} | "
              f"{mean([r['mb_read_per_token'] for r in rows]):.1f} | {span(paths, 2) if paths else '-'} |")
    n = distinct_ids(out)
    print(f"\ndistinct token-id lines over all runs (1 = neutral): {n}")
    return 0 if n == 1 else 2


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
