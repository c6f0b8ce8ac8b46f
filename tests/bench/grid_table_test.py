#!/usr/bin/env python3
"""bench/gpu/grid_table.py on a made-up grid folder whose answers are known.

    grid_table_test.py SCRIPT

Two layers, resident at 10 ms a token; at the 25% budget lru runs twice (20 and 25 ms a token) and
lfru with proposals once (16 ms, with its access trace); a paths.json beside them is not an arm.
The table must gather lru's two runs into one row, give lfru's ratio to lru's mean and its ratio
to each token's own bound (none for lru, which has no trace), and say the ids are identical; a
run whose ids differ must make it say so and exit non-zero.
"""
import json
import os
import subprocess
import sys
import tempfile

MB = 1e6


def write(folder, name, obj):
    with open(os.path.join(folder, name), "w") as fh:
        json.dump(obj, fh)


def run_stats(ms_per_token, misses, tokens=101):
    return {"run": {"prompt_tokens": 1, "generated_tokens": tokens - 1, "decode_seconds": ms_per_token * (tokens - 1) / 1e3},
            "pager": {"resident": False, "bytes_read": sum(misses) * 10 * MB, "load_bytes_read": 0, "predictions": 0,
                      "hit_rate": 0.75},
            "layers": [{"misses": m} for m in misses]}


def log(folder, name, ids="1 2 3"):
    with open(os.path.join(folder, name + ".log"), "w") as fh:
        fh.write(f"[info] run: model /tmp/x, arch deepseek4, pager lru, transport mapped\ntoken ids: {ids}\n")


def main(script):
    failures = []
    with tempfile.TemporaryDirectory() as out:
        write(out, "weights.json", {"routed_bytes_all": 2 * 256 * 10 * MB})
        write(out, "bandwidth.json", {"pinned_to_device": {"bytes_per_s": 50e9},
                                      "page_cache": {"runs": [{"threads": 8, "bytes_per_s": 25e9}]}})
        write(out, "resident.json", {"run": {"prompt_tokens": 1, "generated_tokens": 100, "decode_seconds": 1.0},
                                     "pager": {"resident": True}, "layers": [{}, {}]})
        write(out, "paths.json", {"paths": [{"name": "pinned", "bytes_per_s": 5e10}]})
        log(out, "resident")
        for name, ms in (("lru-25-r1", 20.0), ("lru-25-r2", 25.0), ("lfru-top3-25-r1", 16.0)):
            write(out, name + ".json", run_stats(ms, [100, 50]))
            log(out, name)
        # lfru's run left a trace, each step reading nothing (its bound: 2 x 5 ms of resident time a
        # layer). Its 1.6 s of decode cover 99 steps (the prefill made the first of its 100 tokens):
        # 16.16 ms a step, 1.616 over the bound; lru's runs have no trace ("-").
        with open(os.path.join(out, "lfru-top3-25-r1.trace"), "w") as fh:
            fh.write("# moepage-trace v3 layers=2 experts=256 top_k=6\n")
            fh.write("".join(f"{t},{layer},7,1,0\n" for t in range(101) for layer in (0, 1)))
        got = subprocess.run([sys.executable, script, out], capture_output=True, text=True)
        if got.returncode != 0:
            failures.append(f"exit {got.returncode}: {got.stderr.strip()}")
        rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
                for line in got.stdout.splitlines() if line.startswith("| ") and not line.startswith("| arm")}
        # lru: 50 and 40 tok/s, mean 45; lfru 62.5 tok/s, 62.5 / 45 = 1.389 of lru; resident 100 tok/s.
        want = {"lru-25": ["2", "45.00 (40.00-50.00)", "1.000", "0.450"], "lfru-top3-25": ["1", "62.50 (62.50)", "1.389", "0.625"]}
        for arm, cells in want.items():
            if rows.get(arm, [])[:4] != cells:
                failures.append(f"{arm}: got {rows.get(arm)}, expected {cells} first")
        if rows.get("lfru-top3-25", [""] * 6)[5] != "1.616" or rows.get("lru-25", [""] * 6)[5] != "-":
            failures.append(f"over token bound: lfru {rows.get('lfru-top3-25')}, lru {rows.get('lru-25')}; expected "
                            "1.616 and -")
        if "paths" in rows:
            failures.append("paths.json was taken for an arm")
        if "distinct token-id lines over all runs (1 = neutral): 1" not in got.stdout:
            failures.append("identical ids not reported: " + got.stdout)
        log(out, "lru-25-r2", ids="1 2 4")
        got = subprocess.run([sys.executable, script, out], capture_output=True, text=True)
        if got.returncode == 0 or "(1 = neutral): 2" not in got.stdout:
            failures.append(f"differing ids not flagged (exit {got.returncode})")
    for f in failures:
        print("FAIL:", f)
    print("grid_table_test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
