#!/usr/bin/env python3
"""The LRU hit-rate curve of a recorded routing trace, beside hipfire's on the real DeepSeek-V4-Flash.

    bench/routing/lru_curve.py TRACE [--slots 14,28,64,112] [--hash-layers 3] [--json OUT]

Plain demand LRU per layer: each request's experts are looked up, misses are loaded, the least
recently used expert leaves. Hint and predict rows are ignored, so the figure is comparable with
hipfire's curve (measured with its plain per-layer LRU, 2026 PR #563): the routing's own
cacheability, before any prefetch. `moepage simulate` gives the engine's figures with hints and
predictions replayed. Reads trace v1-v4, plain or .xz (standard library only).
"""
import argparse
import json
import lzma
import sys
from collections import OrderedDict

# hipfire's plain LRU on the real V4-Flash (43 layers, 256 experts, top-6): slots -> hit rate.
HIPFIRE = {14: 0.405, 28: 0.594, 56: 0.744, 112: 0.865, 224: 0.910}


def requests(path):
    """Yields (layer, [experts]) per request, in trace order."""
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", encoding="ascii") as f:
        header = f.readline().split()
        if len(header) < 3 or header[1] != "moepage-trace":
            raise SystemExit(f"{path}: not a moepage trace (first line {' '.join(header)!r})")
        meta = dict(field.split("=", 1) for field in header[3:] if "=" in field)
        yield int(meta["layers"]), int(meta["experts"])
        current, key = [], None
        for line in f:
            if line[0] == "a":  # v4: "a LAYER E E E ..."
                fields = line.split()
                yield int(fields[1]), [int(v) for v in fields[2:]]
                continue
            if not line[0].isdigit():  # v1-v3 hint/predict rows, v4 t/h/p lines, comments
                if current:
                    yield key[1], current
                    current, key = [], None
                continue
            token, layer, expert = line.split(",")[:3]
            if (token, int(layer)) != key:
                if current:
                    yield key[1], current
                current, key = [], (token, int(layer))
            current.append(int(expert))
        if current:
            yield key[1], current


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--slots", default="14,28,64,112")
    p.add_argument("--hash-layers", type=int, default=3, help="leading hash-routed layers (reported apart)")
    p.add_argument("--json")
    args = p.parse_args()
    slots = [int(v) for v in args.slots.split(",")]
    stream = requests(args.trace)
    layers, experts = next(stream)
    caches = {s: [OrderedDict() for _ in range(layers)] for s in slots}
    hits = {s: [0] * layers for s in slots}
    accesses = [0] * layers
    for layer, chosen in stream:
        accesses[layer] += len(chosen)
        for s in slots:
            cache = caches[s][layer]
            for e in chosen:
                if e in cache:
                    hits[s][layer] += 1
                    cache.move_to_end(e)
                else:
                    cache[e] = True
                    if len(cache) > s:
                        cache.popitem(last=False)
    scored = range(min(args.hash_layers, layers), layers)
    result = {"trace": args.trace, "layers": layers, "experts": experts, "hash_layers": args.hash_layers,
              "accesses": sum(accesses), "curve": {}}
    print(f"plain LRU hit rate per layer, {args.trace}: {layers} layers, {experts} experts, {sum(accesses)} accesses")
    print()
    print("| slots/layer | all layers | hash layers | scored layers | hipfire, real V4-Flash |")
    print("|---:|---:|---:|---:|---:|")
    for s in slots:
        def rate(ls):
            n = sum(accesses[l] for l in ls)
            return sum(hits[s][l] for l in ls) / n if n else float("nan")
        row = {"all": rate(range(layers)), "hash": rate(range(min(args.hash_layers, layers))),
               "scored": rate(scored), "per_layer": [hits[s][l] / accesses[l] if accesses[l] else None
                                                     for l in range(layers)]}
        result["curve"][str(s)] = row
        capped = " (all fit)" if s >= experts else ""
        ref = f"{HIPFIRE[s]:.1%}" if s in HIPFIRE else "-"
        print(f"| {s}{capped} | {row['all']:.1%} | {row['hash']:.1%} | {row['scored']:.1%} | {ref} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
