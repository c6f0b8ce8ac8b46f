"""The fixtures train.py ships, all from the reloaded (dequantized) model: the tokenizer's ids of
held-out and tricky lines, the routing trace, the float64 logits of a held-out prompt with its
greedy continuation, and a decoded sample continuation."""
import io
import json
import lzma

import routing_trace
from train_log import fail, log
from train_loop import heldout_windows
from train_model import set_experts_implementation


TRICKY_TEXTS = [
    "I'm sure they'll say it's fine, but we've seen DON'T and can't.",
    "Numbers: 3.14159, 1,000,000 and 0x7fff_ffff; dates 2026-11-30.",
    "Spaces:   three, then\ttab, then\n\nblank lines\n",
    "   leading spaces and trailing   ",
    "Unicode: naïve café, Ωmega, 日本語のテキスト, ½ and ٣.",
    "Emoji 👋🏽 and 🎉!! mixed with punctuation...?!",
    "Special tokens inside text: <|bos|> hello <|eos|> world",
    "path/to/file.c:42: error: 'struct foo' has no member named 'bar'",
    "--option=value -x -- \"quoted\" 'single' `backtick`",
    "\u00a0no-break\u00a0space and zero\u200bwidth",
]


def tokenizer_fixture(tokenizer, heldout_lines, count):
    records = []
    for text in heldout_lines[:count] + TRICKY_TEXTS:
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        decoded = tokenizer.decode(ids, skip_special_tokens=False)
        if decoded != text:  # the C++ test requires decode == text, so such a line cannot be a case
            log(f"WARNING: HF tokenizers does not round-trip {text[:80]!r} (got {decoded[:80]!r}); left out")
            continue
        records.append(json.dumps({"text": text, "ids": ids}, ensure_ascii=False))
    return "\n".join(records) + "\n", len(records)


def record_trace(torch, qmodel, tap, heldout_stream, cfg, args):
    seq = args.seq
    inputs, _ = heldout_windows(torch, heldout_stream, seq, args.trace_tokens)
    set_experts_implementation(qmodel, "eager")
    tap.choices = {}
    tap.recording = True
    with torch.no_grad():
        for i in range(0, inputs.shape[0], 8):
            qmodel(input_ids=inputs[i:i + 8], use_cache=False)
    tap.recording = False
    tap.counts = {}
    layers = cfg["num_hidden_layers"]
    choices = []
    for layer in range(layers):
        flat = torch.cat(tap.choices[layer]).view(-1, cfg["num_experts_per_tok"])
        choices.append(flat.tolist())
    if any(len(c) != inputs.numel() for c in choices):
        fail(f"trace: expected {inputs.numel()} tokens per layer, got {[len(c) for c in choices]}")
    return choices


def pack_trace(choices, cfg, args, limit=2 * 1024 * 1024):
    """xz-compressed trace text; whole windows are dropped from the end until it fits `limit`."""
    tokens = len(choices[0])
    while True:
        kept = [layer[:tokens] for layer in choices]
        text = routing_trace.format_trace(kept, cfg["n_routed_experts"], cfg["num_experts_per_tok"],
                                          {"model": args.name, "source": "heldout", "window": args.seq,
                                           "windows": tokens // args.seq})
        meta, parsed = routing_trace.parse_trace(text)
        if [[sorted(c) for c in layer] for layer in kept] != parsed:
            fail("trace: parsing the written trace does not give back the recorded choices")
        packed = lzma.compress(text.encode("ascii"), preset=6)
        if len(packed) <= limit or tokens <= args.seq:
            return packed, tokens
        tokens = max(args.seq, (tokens // 2) // args.seq * args.seq)
        log(f"trace over {limit} bytes; keeping the first {tokens} tokens")


def greedy(torch, model, prompt, steps):
    """Greedy ids with the KV cache (generate) and, as the check, teacher-forced argmax."""
    ids = torch.tensor([prompt], device=next(model.parameters()).device)
    try:
        out = model.generate(input_ids=ids, max_new_tokens=steps, do_sample=False, eos_token_id=None,
                             pad_token_id=1, use_cache=True)
        generated = out[0, len(prompt):].tolist()
    except Exception as e:
        log(f"note: generate() failed ({type(e).__name__}: {str(e)[:160]}); decoding without a cache")
        generated = []
        with torch.no_grad():
            for _ in range(steps):
                seq = torch.tensor([prompt + generated], device=ids.device)
                generated.append(int(model(input_ids=seq, use_cache=False).logits[0, -1].argmax()))
    with torch.no_grad():
        full = torch.tensor([prompt + generated], device=ids.device)
        argmax = model(input_ids=full, use_cache=False).logits[0].argmax(-1).tolist()
    agree = sum(1 for i, t in enumerate(generated) if argmax[len(prompt) - 1 + i] == t)
    return generated, agree


def logits_fixture(torch, qmodel, tokenizer, heldout_lines, cfg):
    """Float64 reference logits of the dequantized model on a held-out prompt."""
    import numpy as np
    prompt = None
    for line in heldout_lines:
        ids = tokenizer.encode(line, add_special_tokens=False).ids
        if len(ids) >= 80:
            prompt = [cfg["bos_token_id"]] + ids[:63]  # 64 tokens: 16 CSA entries = index_topk, no ties
            break
    if prompt is None:
        fail("no held-out line has 80 tokens for the logits fixture")
    set_experts_implementation(qmodel, "eager")
    positions = list(range(len(prompt) - 8, len(prompt)))
    try:
        with torch.no_grad():
            x = torch.tensor([prompt], device=next(qmodel.parameters()).device)
            logits32 = qmodel(input_ids=x, use_cache=False).logits[0].double()
            qmodel.double()
            logits64 = qmodel(input_ids=x, use_cache=False).logits[0]
        continuation, agree = greedy(torch, qmodel, prompt, 16)
    finally:
        qmodel.float()  # the later stages run in float32 whatever happened here
    diff = (logits64 - logits32).abs().max().item()
    same_argmax = bool((logits64[positions].argmax(-1) == logits32[positions].argmax(-1)).all())
    log(f"logits fixture: {len(prompt)} prompt tokens, max |fp64 - fp32| {diff:.2e}, same argmax {same_argmax}, "
        f"cached greedy agrees with teacher-forced argmax on {agree}/{len(continuation)}")
    if not same_argmax or agree != len(continuation):
        log("WARNING: the logits fixture is close to a tie; treat its greedy ids with care")
    buf = io.BytesIO()
    np.save(buf, logits64[positions].float().cpu().numpy())
    meta = {"model": None, "prompt_ids": prompt, "positions": positions,
            "logits_file": "logits.npy", "logits_dtype": "float32 (computed in float64)",
            "reference": "transformers DeepseekV4ForCausalLM on the dequantized checkpoint, eager, float64",
            "greedy_continuation_ids": continuation, "greedy_agrees_with_full_forward": agree,
            "max_abs_diff_fp64_vs_fp32": diff, "tolerance_suggested": 1e-3}
    return buf.getvalue(), meta


def sample_continuation(torch, qmodel, tokenizer, heldout_lines):
    """A greedy continuation of a held-out prompt, decoded to text."""
    for line in heldout_lines[len(heldout_lines) // 2:]:
        ids = tokenizer.encode(line, add_special_tokens=False).ids
        if len(ids) >= 24:
            prompt = [0] + ids[:16]
            break
    else:
        raise RuntimeError("no held-out line has 24 tokens")
    continuation, agree = greedy(torch, qmodel, prompt, 48)
    prompt_text = tokenizer.decode(prompt, skip_special_tokens=True)
    continuation_text = tokenizer.decode(continuation, skip_special_tokens=True)
    log(f"sample prompt:       {prompt_text!r}")
    log(f"greedy continuation: {continuation_text!r}  (cache/full-forward agreement {agree}/{len(continuation)})")
    return {"prompt": prompt_text, "continuation": continuation_text, "prompt_ids": prompt,
            "continuation_ids": continuation}
