#!/usr/bin/env python3
"""bench/gpu/paged_bound.py on a made-up benchmark folder whose answers are known.

    paged_bound_test.py SCRIPT

Two layers, one paged arm per transport. Each reads its misses at a rate where the answer is
plain arithmetic: the mapped arm's bound takes the pinned copy as its ceiling (it has no reader
threads), the pinned-async arm's the slower of the pinned copy and the page-cache readers; a
layer whose copies take less than its resident time is bound by the resident time.
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


def arm(misses_per_layer, tokens, expert_bytes):
    bytes_read = sum(misses_per_layer) * expert_bytes
    return {
        "run": {"prompt_tokens": 1, "generated_tokens": tokens - 1, "decode_seconds": 0.02 * (tokens - 1)},
        "pager": {"resident": False, "bytes_read": bytes_read, "load_bytes_read": 0, "predictions": 0,
                  "hit_rate": 0.5},
        "layers": [{"misses": m} for m in misses_per_layer],
    }


def main(script):
    failures = []
    with tempfile.TemporaryDirectory() as out:
        expert_bytes = 10 * MB
        tokens = 100
        # Two layers of 256 experts of 10 MB each; resident: 2 ms a token, 1 ms a layer.
        write(out, "weights.json", {"routed_bytes_all": 2 * 256 * expert_bytes})
        write(out, "bandwidth.json", {"pinned_to_device": {"bytes_per_s": 50e9},
                                      "page_cache": {"runs": [{"threads": 8, "bytes_per_s": 25e9}]}})
        write(out, "resident.json", {"run": {"prompt_tokens": 1, "generated_tokens": 99, "decode_seconds": 0.198},
                                     "pager": {"resident": True}, "layers": [{}, {}]})
        # Layer 0: 500 misses over 100 tokens = 50 MB a token; layer 1: 2 misses (0.2 MB a token).
        for name, transport in (("m", "mapped"), ("p", "pinned-async")):
            write(out, name + ".json", arm([500, 2], tokens, expert_bytes))
            with open(os.path.join(out, name + ".log"), "w") as fh:
                fh.write(f"[info] run: model /tmp/x, arch deepseek4, pager lru, transport {transport}\n")
        got = subprocess.run([sys.executable, script, out, "m", "p"], capture_output=True, text=True, check=True).stdout
        rows = {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in got.splitlines()[1:]}
        # Layer 0: 50 MB at 50 GB/s = 1 ms (mapped) or at 25 GB/s = 2 ms (pinned-async); layer 1 is
        # under its 1 ms resident time either way.
        want = {"m": 1.0 + 1.0, "p": 2.0 + 1.0}
        for name, bound_ms in want.items():
            if abs(rows[name]["bound_ms"] - bound_ms) > 1e-6:
                failures.append(f"{name}: bound {rows[name]['bound_ms']} ms, expected {bound_ms}")
        if "mapped-transport arms: the pinned copy" not in got.splitlines()[0]:
            failures.append("the header line does not say which ceiling mapped arms take: " + got.splitlines()[0])
    for f in failures:
        print("FAIL:", f)
    print("paged_bound_test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
