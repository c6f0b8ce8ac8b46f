#!/usr/bin/env python3
"""Bytes of weights one decode token touches in a DeepSeek-V4 checkpoint (for the HBM roofline).

Every dense tensor is read whole once per token, except lookup tables, of which one row is read
(the embedding, the hash layers' tid2eid). Of the routed experts, top_k per layer are read.
Usage: weights_per_token.py MODEL_DIR  -> one JSON object on stdout.
"""
import json
import os
import struct
import sys


def tensors(model_dir):
    files = sorted(f for f in os.listdir(model_dir) if f.endswith(".safetensors"))
    for name in files:
        with open(os.path.join(model_dir, name), "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        for key, meta in header.items():
            if key == "__metadata__":
                continue
            begin, end = meta["data_offsets"]
            yield key, meta["shape"], end - begin


def main():
    model_dir = sys.argv[1]
    with open(os.path.join(model_dir, "config.json")) as fh:
        config = json.load(fh)
    top_k = config["num_experts_per_tok"]
    n_experts = config["n_routed_experts"]
    dense = routed = lookup = 0
    for key, shape, nbytes in tensors(model_dir):
        if ".experts." in key:
            routed += nbytes
        elif key.endswith("embed.weight") or key.endswith("embed_tokens.weight") or key.endswith("tid2eid"):
            lookup += nbytes // max(1, shape[0])  # one row
        else:
            dense += nbytes
    per_token = dense + lookup + routed * top_k // n_experts
    print(json.dumps({"dense_bytes": dense, "lookup_row_bytes": lookup, "routed_bytes_all": routed,
                      "routed_bytes_per_token": routed * top_k // n_experts, "bytes_per_token": per_token}))


if __name__ == "__main__":
    main()
