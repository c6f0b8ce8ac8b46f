#!/usr/bin/env python3
"""bench/routing/pipeline_model.py's slot pools against pager-core's, through `moepage simulate`.

    pipeline_model_test.py MOEPAGE TRACE MODEL_SCRIPT

The timing model is only worth its tables if its pools keep the experts pager-core keeps. This
replays the first 257 positions of TRACE (a decode of 1 + 256 tokens, as the GPU grid runs) through
`moepage simulate` and through the model, under lru and lfru, with and without the top-3
predictions, at 32 and 64 slots, and requires every hit rate to agree within 0.05 points. It also
checks the model's timing where the answer is known: a resident model copies nothing and costs
its compute alone; with no compute and no host costs a token costs exactly its copies, on every
copy mode (the link is never idle and its work is conserved); and a resident model under the
slot table looks every scored layer up on the device and costs its compute plus the pick's trip to
the host and the hash layers' hints, which run-ahead hides as well.
"""
import importlib.util
import json
import lzma
import os
import subprocess
import sys
import tempfile

POSITIONS = 257
ARMS = {"lru": "lru", "lfru": "lfru", "observe3": "lru+prefetch:3", "lfru-observe3": "lfru+prefetch:3"}


def main(moepage, trace, script):
    spec = importlib.util.spec_from_file_location("pipeline_model", script)
    pm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pm)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        head = os.path.join(tmp, "head.trace")
        with lzma.open(trace, "rt", encoding="ascii") as src, open(head, "w", encoding="ascii") as dst:
            seen = 0
            for line in src:
                seen += line.startswith("t ")
                if seen > POSITIONS:
                    break
                dst.write(line)
        out = os.path.join(tmp, "sim.json")
        subprocess.run([moepage, "simulate", head, "--slots", "32,64", "--policies", ",".join(ARMS.values()),
                        "--json", out, "--log-level", "warn"], check=True, stdout=subprocess.DEVNULL)
        with open(out) as fh:
            sim = json.load(fh)
        layers, n_experts, steps = pm.load_trace(head, POSITIONS)
        for result in sim["results"]:
            slots, policy = result["layer_slots"][0], result["policy"]
            arm = next(a for a, p in ARMS.items() if p == policy)
            simulated = 1.0 - sum(l["misses"] for l in result["layers"]) / result["accesses"]
            model = pm.Model(layers, steps, slots, pm.ARMS[arm], dict(pm.DEFAULTS))
            modelled = model.run()["hit_rate"]
            print(f"{slots} slots, {arm}: simulate {simulated:.4%}, model {modelled:.4%}")
            if abs(simulated - modelled) > 0.0005:
                failures.append(f"{slots} slots, {arm} ({policy}): the model hits {modelled:.4%}, "
                                f"moepage simulate {simulated:.4%}")
        if len(sim["results"]) != 2 * len(ARMS):
            failures.append(f"moepage simulate gave {len(sim['results'])} results, expected {2 * len(ARMS)}")

        r = pm.resident_run(layers, n_experts, steps, dict(pm.DEFAULTS))
        c = pm.DEFAULTS
        compute = layers * (c["pre"] + 6 * c["expert"]) + c["head"]
        if r["mb_per_token"] != 0 or r["copy_share"] != 0 or r["hit_rate"] != 1.0 or r["us_per_token"] < compute:
            failures.append(f"a resident model copied, or took less than its {compute} us of compute: {r}")
        scored = layers - len(steps[0]["h"])
        # Without run-ahead the device waits for the pick's trip and the host's hash-layer hints.
        waited = c["readback"] + len(steps[0]["h"]) * c["hint"]
        for arm, expected in (("lru-slot", compute + waited), ("lru-slot-ra", compute)):
            model = pm.Model(layers, steps, n_experts, pm.ARMS[arm], dict(c))
            for pool in model.pools:
                pool.entries = {e: None for e in range(n_experts)}
            r = model.run()
            if r["slot_layers_per_token"] != scored or abs(r["us_per_token"] - expected) > 0.5:
                failures.append(f"resident, {arm}: {r['slot_layers_per_token']} device lookups a token (expected "
                                f"{scored}), {r['us_per_token']} us a token (expected {expected:.1f})")
        copies_only = {k: (v if k in ("expert_mb", "copy_gb_s", "copy_setup") else 0.0) for k, v in c.items()}
        copy_us = c["expert_mb"] / c["copy_gb_s"] * 1e3 + c["copy_setup"]
        for arm in ("lru", "observe3", "acquire3", "launched3", "launched3-fifo", "launched3-yield"):
            r = pm.Model(layers, steps, 32, pm.ARMS[arm], copies_only).run()
            expected = r["reads_per_token"] * copy_us
            if abs(r["us_per_token"] - expected) > 0.5 or abs(r["copy_share"] - 1.0) > 1e-3:
                failures.append(f"{arm}, copies only: {r['us_per_token']} us per token, expected {expected:.1f}; "
                                f"link busy {r['copy_share']}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
