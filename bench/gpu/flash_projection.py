#!/usr/bin/env python3
"""Projects full DeepSeek-V4-Flash (43 layers) paged decode on the H200 from slice measurements.

flash_projection.py [--reads SLOTS:READS_PER_ACCESS ...]

Method (each input is a measurement recorded in bench/results, named in the output):
  1. Resident time per token is linear in the layer count: two synthesized Flash slices measured on
     the H200 on 2026-12-07 (4 layers: 1,085.9 tok/s, 12 layers: 436.96 tok/s, means of 3 and 2
     runs, 2026-12-07-h200.md call 1) give the per-layer time and the fixed rest (embedding, head).
  2. The expert budget buys slots per layer: budget / (43 layers x 13,369,344 bytes per expert).
  3. Expert reads per access at those slots come from `moepage simulate` on the held-out 256-expert
     trace (lru, and lfru with the adapter's top 3: misses plus prefetch reads, hints included),
     with every layer taken as the trace's average layer.
  4. The bound per token: the fixed rest plus, per layer, max(the resident layer time, the layer's
     bytes read / the pinned-copy ceiling, 54.91 GB/s, measured beside the grid of step 5).
  5. The projection: that bound times the measured time/bound (each layer's misses spread evenly
     over the run, as in step 4) of the mapped transport at the nearest share of expert bytes on the
     12-layer slice under replayed routing (bench/gpu/replay-grid.sh on the same H200, 2026-12-07-
     h200.md call 2, means of two runs). Every input but the simulated reads is that one machine's.
The trace routes far less cacheably than the real model (plain LRU hits 27% at 28 slots where real
V4-Flash hits 59%, 2026-12-01-real-routing.md), so this errs low. It assumes the experts fit in host
RAM (the mapped transport reads the page cache); the H200 machine's 128 GiB does not hold Flash's
137 GiB of experts, and from its disk (1.4-1.65 GB/s O_DIRECT) the misses alone would cost far more.
"""
import sys

LAYERS = 43
EXPERT_BYTES = 13_369_344
TOP_K = 6
CEILING = 54.91e9
ROUTED_TOTAL = LAYERS * 256 * EXPERT_BYTES
# Resident ms/token of synthesized Flash slices: (layers, ms).
RESIDENT = [(4, 1 / 1.0859), (12, 1 / 0.43696)]
# Measured time/bound of the mapped transport on the 12-layer slice, by share of expert bytes:
# (share, lru, lfru + adapter top 3).
OVER_BOUND = [(0.125, 1.195, 1.1145), (0.25, 1.2675, 1.1955), (0.5, 1.524, 1.333)]
# moepage simulate on tests/data/ds4-flash-routing-heldout.trace.xz: slots -> (lru, lfru+prefetch:3)
# expert reads per access (run 2026-12-06 for 44, 89 and 179 slots).
READS = {44: (0.617, 0.605), 89: (0.383, 0.376), 179: (0.104, 0.099)}
BUDGETS_GIB = (24, 48, 96)


def nearest_factor(share, column):
    return min(OVER_BOUND, key=lambda row: abs(row[0] - share))[column]


def main():
    (l1, t1), (l2, t2) = RESIDENT
    per_layer = (t2 - t1) / (l2 - l1)
    fixed = t1 - l1 * per_layer
    resident_ms = fixed + LAYERS * per_layer
    print(f"resident, {LAYERS} layers: {resident_ms:.3f} ms/token ({1e3 / resident_ms:.1f} tok/s): "
          f"{per_layer:.4f} ms per layer + {fixed:.3f} ms")
    print("| expert budget | share | slots/layer | policy | MB read/token | bound tok/s | x measured time/bound | projected tok/s |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|")
    for gib in BUDGETS_GIB:
        budget = gib * 2**30
        slots = budget // (LAYERS * EXPERT_BYTES)
        share = budget / ROUTED_TOTAL
        reads = READS.get(int(slots))
        if reads is None:
            sys.exit(f"no simulated reads for {slots} slots: run moepage simulate --slots {slots}")
        for column, policy in ((1, "lru"), (2, "lfru + adapter top 3")):
            per_access = reads[column - 1]
            layer_bytes = per_access * TOP_K * EXPERT_BYTES
            layer_ms = max(per_layer, 1e3 * layer_bytes / CEILING)
            bound_ms = fixed + LAYERS * layer_ms
            factor = nearest_factor(share, column)
            print(f"| {gib} GiB | {share:.1%} | {slots} | {policy} | {LAYERS * layer_bytes / 1e6:.0f} | "
                  f"{1e3 / bound_ms:.1f} | {factor:.3f} | **{1e3 / (bound_ms * factor):.1f}** |")


if __name__ == "__main__":
    main()
