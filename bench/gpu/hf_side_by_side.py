#!/usr/bin/env python3
"""The peer's half of a side-by-side run: HF transformers' DeepseekV4ForCausalLM at the geometry of
a moepage checkpoint (its config.json), bf16, random weights, every expert on the GPU, experts
through the `grouped_mm` backend where this transformers has it, eager attention (the only kind
the model supports).

Prefill: one forward of N tokens (no cache kept), timed with CUDA events, the median of --reps
after one warm-up. Decode: a 128-token prompt, then --decode single-token steps with the cache.
The weights are random (not the checkpoint's): speed does not depend on their values, and the
checkpoint's FP8/FP4 tensors have no bf16 twin to load.

Usage: hf_side_by_side.py MODEL_DIR [--prefill 128,1024,4096] [--decode 32] [--reps 3]
Prints one JSON object: {"prefill": {"N": tok/s, ...}, "decode_tok_s": x, "setup": {...}}.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch


def build_model(model_dir):
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    with open(os.path.join(model_dir, "config.json")) as fh:
        raw = json.load(fh)
    raw.pop("quantization_config", None)  # the checkpoint's FP8 note: the peer runs bf16
    raw.pop("expert_dtype", None)
    cfg = AutoConfig.for_model(**raw)
    setup = {"transformers": transformers.__version__, "torch": torch.__version__, "attention": "eager"}
    kwargs = {"dtype": torch.bfloat16, "attn_implementation": "eager"}
    torch.manual_seed(0)
    # Built on the GPU: initialising ~13 GB of expert weights on the CPU takes minutes.
    with torch.device("cuda"):
        try:
            model = AutoModelForCausalLM.from_config(cfg, experts_implementation="grouped_mm", **kwargs)
            setup["experts"] = "grouped_mm"
        except (TypeError, ValueError) as err:  # an older transformers: its default experts loop
            print(f"hf_side_by_side: grouped_mm refused ({err}); default experts", file=sys.stderr)
            model = AutoModelForCausalLM.from_config(cfg, **kwargs)
            setup["experts"] = "default"
    model = model.eval()
    setup["parameters"] = sum(p.numel() for p in model.parameters())
    return model, cfg, setup


def prompt_ids(n, vocab):
    return torch.tensor([[(i * 7919 + 17) % vocab for i in range(n)]], device="cuda")


def time_ms(fn, reps):
    fn()  # warm-up
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--prefill", default="128,1024,4096")
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    t0 = time.time()
    model, cfg, setup = build_model(args.model_dir)
    setup["build_seconds"] = round(time.time() - t0, 1)
    result = {"setup": setup, "prefill": {}, "prefill_ms": {}}
    with torch.inference_mode():
        for n in [int(x) for x in args.prefill.split(",") if x]:
            ids = prompt_ids(n, cfg.vocab_size)
            try:
                ms, all_ms = time_ms(lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1), args.reps)
                result["prefill"][str(n)] = round(n / (ms / 1e3), 1)
                result["prefill_ms"][str(n)] = [round(t, 2) for t in all_ms]
            except torch.cuda.OutOfMemoryError as err:
                result["prefill"][str(n)] = None
                result["prefill_ms"][str(n)] = f"out of memory: {err}"[:200]
                torch.cuda.empty_cache()
        if args.decode > 0:
            ids = prompt_ids(128, cfg.vocab_size)

            def decode():
                out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
                past = out.past_key_values
                nxt = out.logits[:, -1:].argmax(-1)
                torch.cuda.synchronize()
                t = time.perf_counter()
                for _ in range(args.decode):
                    out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                    past = out.past_key_values
                    nxt = out.logits[:, -1:].argmax(-1)
                torch.cuda.synchronize()
                return time.perf_counter() - t

            decode()  # warm-up
            seconds = statistics.median(decode() for _ in range(args.reps))
            result["decode_tok_s"] = round(args.decode / seconds, 2)
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
