#!/usr/bin/env python3
"""One line per benchmark arm of flash-decode.sh: decode speed, paging counters and the roofline.

summarize_arm.py ARM.json WEIGHTS.json BANDWIDTH.json [RESIDENT.json]
  ARM.json        moepage run --stats-json output
  WEIGHTS.json    weights_per_token.py output (bytes of weights one decode token touches)
  BANDWIDTH.json  gpu_bandwidth output (device-to-device copy: the HBM roofline)
  RESIDENT.json   the resident arm's stats: the extra time per token over it is the paging cost
"""
import json
import sys


def load(path):
    with open(path) as fh:
        return json.load(fh)


def main():
    arm, weights, bw = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
    resident = load(sys.argv[4]) if len(sys.argv) > 4 else None
    run, pager = arm["run"], arm["pager"]
    tokens = run["prompt_tokens"] + run["generated_tokens"]
    decode_s = run["decode_seconds"]
    ms_per_token = 1e3 * decode_s / max(1, run["generated_tokens"])
    tok_s = run["generated_tokens"] / decode_s if decode_s > 0 else 0.0
    hbm = bw["device_to_device"]["read_write_bytes_per_s"]
    roofline_s = weights["bytes_per_token"] / hbm
    line = {
        "decode_tok_s": round(tok_s, 2),
        "ms_per_token": round(ms_per_token, 3),
        "prefill_tok_s": round(run["prompt_tokens"] / run["prefill_seconds"], 2) if run["prefill_seconds"] > 0 else None,
        "hit_rate": round(pager["hit_rate"], 4),
        "misses": pager["misses"],
        # Expert bytes read while running (not those a resident pager reads at load).
        "bytes_read_per_token": int((pager["bytes_read"] - pager["load_bytes_read"]) / max(1, tokens)),
        "slots_per_layer": pager["slots_per_layer"],
        "resident": pager["resident"],
        "wait_share": round(pager["wait_ns"] / 1e9 / max(1e-12, decode_s + run["prefill_seconds"]), 4),
        "roofline_fraction": round(roofline_s * 1e3 / ms_per_token, 4),
        "load_seconds": run.get("load_seconds"),
    }
    if resident is not None and not pager["resident"]:
        r = resident["run"]
        base_ms = 1e3 * r["decode_seconds"] / max(1, r["generated_tokens"])
        extra_ms = ms_per_token - base_ms
        line["io_share"] = round(extra_ms / ms_per_token, 4)
        # Miss-path throughput: the bytes paged in per decode token over the extra time they cost.
        per_token = (pager["bytes_read"] - pager["load_bytes_read"]) / max(1, tokens)
        line["miss_path_bytes_per_s"] = round(per_token / (extra_ms / 1e3)) if extra_ms > 0 else None
    print(json.dumps(line))


if __name__ == "__main__":
    main()
