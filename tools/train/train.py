#!/usr/bin/env python3
"""Trains the tiny DeepSeek-V4 of issue 9 on the Debian documentation corpus, in one GPU call.

    PYTHONUNBUFFERED=1 python3 tools/train/train.py --corpus DIR --out DIR

DIR holds train.txt/heldout.txt or their .xz copies (tools/corpus/build_corpus.sh). Steps:
 1. byte-level BPE tokenizer (tokenizers, vocab 8192, <|bos|>=0, <|eos|>=1);
 2. self-checks before any training: FP8/FP4 codecs against scalar decoders, the model's
    state_dict against the layout ds4_layout expects, and a full export -> reload round trip;
 3. DeepseekV4ForCausalLM from scratch (AdamW, cosine, router aux loss plus DeepSeek's
    bias-based balancing) for as long as the wall-clock budget allows;
 4. export in the released layout (FP8 dense, FP4 experts, BF16/F32/I64 rest) to
    OUT/repo/models/NAME/, reload the dequantized weights into a fresh model, and use that
    model for every number and fixture below;
 5. held-out loss and perplexity against a unigram baseline, the tokenizer fixture, the routing
    trace, the float64 logits fixture and a greedy sample continuation;
 6. OUT/bundle.tar.partNN (each <= 15 MiB): `cat OUT/bundle.tar.part* | tar -x -C REPO`.
Any failed self-check aborts with a message; nothing is written half-checked.
"""
import argparse
import hashlib
import io
import json
import lzma
import math
import os
import platform
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_data  # noqa: E402
import ds4_layout as layout  # noqa: E402
import routing_trace  # noqa: E402

START = time.time()
PART_BYTES = 15 * 1024 * 1024
LOG_LINES = []  # the whole log also goes into the bundle (models/NAME/training_log.txt)


def log(message):
    line = f"[{time.time() - START:6.1f}s] {message}"
    LOG_LINES.append(line)
    print(line, flush=True)


def fail(message):
    log(f"FAILED: {message}")
    raise SystemExit(1)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="folder with train.txt(.xz) and heldout.txt(.xz)")
    p.add_argument("--out", required=True, help="work folder (created); OUT/repo mirrors the repository paths")
    p.add_argument("--bundle-dir", help="where bundle.tar.partNN go (default: --out)")
    p.add_argument("--name", default=None, help="model folder name (default: ds4-debian-tiny, or ds4-flash-routing)")
    p.add_argument("--preset", choices=sorted(layout.PRESETS), default="tiny",
                   help="tiny: the committed demo model; flash-routing: 256 experts, 12 layers, one MTP layer")
    p.add_argument("--tokenizer", help="reuse this tokenizer.json instead of training one")
    p.add_argument("--mtp-weight", type=float, default=0.3, help="weight of the MTP loss (models with an MTP layer)")
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--total-seconds", type=float, default=510.0,
                   help="wall-clock budget of the whole run; training gets what setup and the finish leave")
    p.add_argument("--max-train-seconds", type=float, default=360.0)
    p.add_argument("--finish-reserve", type=float, default=100.0, help="seconds kept for export and fixtures")
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=48)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--trace-tokens", type=int, default=16384)
    p.add_argument("--fixture-lines", type=int, default=1000)
    p.add_argument("--smoke", action="store_true",
                   help="a 2-3 minute rehearsal of every stage (30 s of training, small fixtures)")
    args = p.parse_args()
    if args.name is None:
        args.name = "ds4-debian-tiny" if args.preset == "tiny" else "ds4-" + args.preset
    if args.smoke:
        args.total_seconds = min(args.total_seconds, 200.0)
        args.max_train_seconds = 30.0
        args.trace_tokens = 4 * args.seq
        args.fixture_lines = 100
    return args


# ---------------------------------------------------------------------------------------------
# Model set-up

def build_model(torch, transformers, cfg, seed):
    torch.manual_seed(seed)
    config = transformers.DeepseekV4Config(**cfg)
    checks = {
        "layer_types": (list(config.layer_types), cfg["layer_types"]),
        "mlp_layer_types": (list(config.mlp_layer_types), cfg["mlp_layer_types"]),
        "qk_rope_head_dim": (config.qk_rope_head_dim, round(cfg["head_dim"] * cfg["partial_rotary_factor"])),
    }
    for what, (got, want) in checks.items():
        if got != want:
            fail(f"DeepseekV4Config {what} is {got!r}, expected {want!r}")
    rope = getattr(config, "rope_parameters", None) or {}
    log(f"rope parameters as HF built them: {rope}")
    if rope.get("compress", {}).get("rope_type") != "yarn" or rope.get("main", {}).get("rope_type") != "default":
        log("WARNING: expected a default 'main' rope and a yarn 'compress' rope")
    model = transformers.DeepseekV4ForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            # HF draws matrices from N(0, 0.02) and sets norms/scales to 1 and biases, sinks and
            # ape to 0. Anything else means the initialiser skipped the tensor (torch.empty).
            matrix = p.ndim >= 2 and "position_bias" not in name
            bad = not torch.isfinite(p).all() or p.abs().max() > 10 or (matrix and p.std() < 1e-3)
            if bad:
                log(f"note: {name} looks uninitialised; setting it as HF's initialiser would")
                if matrix:
                    p.normal_(0.0, 0.02)
                elif name.endswith(("norm.weight", "scale")):
                    p.fill_(1.0)
                else:
                    p.zero_()
        # Hash layers route by tid2eid[token]; HF starts it at zeros (every token -> expert 0).
        # Fill each row with k distinct experts, drawn per token and per layer.
        for layer, kind in enumerate(cfg["mlp_layer_types"]):
            if kind != "hash_moe":
                continue
            gate = model.model.layers[layer].mlp.gate
            gen = torch.Generator().manual_seed(seed * 100 + layer)
            table = torch.rand(cfg["vocab_size"], cfg["n_routed_experts"], generator=gen).argsort(dim=1)
            gate.tid2eid.copy_(table[:, : cfg["num_experts_per_tok"]])
    expected = layout.hf_param_shapes(cfg)
    actual = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    if actual != expected:
        missing = sorted(set(expected) - set(actual))[:6]
        extra = sorted(set(actual) - set(expected))[:6]
        wrong = [(k, actual[k], expected[k]) for k in expected if k in actual and actual[k] != expected[k]][:6]
        fail(f"state_dict differs from ds4_layout.hf_param_shapes: missing {missing}, extra {extra}, shapes {wrong}")
    return config, model


def set_experts_implementation(model, name):
    """Asks for an experts implementation; returns the one in force (HF may adjust it)."""
    setter = getattr(model, "set_experts_implementation", None)
    try:
        if callable(setter):
            setter(name)
        else:
            model.config._experts_implementation = name
    except Exception as e:  # the API moved: set the attribute the experts module reads
        log(f"note: set_experts_implementation({name}) failed ({type(e).__name__}: {e}); setting the config")
        try:
            model.config._experts_implementation = name
        except Exception:
            model.config._experts_implementation_internal = name
    got = getattr(model.config, "_experts_implementation", None)
    if got != name:
        log(f"WARNING: experts implementation is {got!r} after asking for {name!r}")
    return got


class RouterTap:
    """Forward hooks on every layer's router: the chosen experts, for balancing and traces."""

    def __init__(self, torch, model, cfg, mtp=None):
        self.torch = torch
        self.experts = cfg["n_routed_experts"]
        self.recording = False
        self.counts = {}
        self.choices = {}
        self.handles = []
        gates = {layer: block.mlp.gate for layer, block in enumerate(model.model.layers)}
        if mtp is not None:  # the MTP block's router counts as the layer after the last
            gates[mtp.layer_index] = mtp.block.mlp.gate
        # Scored routers (not hash ones) get DeepSeek's bias balancing.
        self.scored = {layer: gate for layer, gate in gates.items() if hasattr(gate, "e_score_correction_bias")}
        for layer, gate in gates.items():
            self.handles.append(gate.register_forward_hook(self._hook(layer)))

    def _hook(self, layer):
        def hook(module, inputs, output):
            indices = output[2].detach()
            if self.recording:
                self.choices.setdefault(layer, []).append(indices.cpu())
            counts = self.torch.bincount(indices.reshape(-1), minlength=self.experts)
            self.counts[layer] = self.counts.get(layer, 0) + counts
        return hook

    def close(self):
        for h in self.handles:
            h.remove()


def balance_router_bias(torch, tap, rate=1e-3):
    """DeepSeek's auxiliary-loss-free balancing: nudge gate.bias toward under-used experts."""
    with torch.no_grad():
        for layer, gate in tap.scored.items():
            if layer in tap.counts:
                load = tap.counts[layer].float()
                gate.e_score_correction_bias.add_(rate * torch.sign(load.mean() - load))
    tap.counts = {}


# ---------------------------------------------------------------------------------------------
# Data

def sample_batch(torch, stream, batch, seq, gen):
    starts = torch.randint(0, stream.numel() - seq, (batch,), generator=gen, device=stream.device)
    tokens = stream[starts[:, None] + torch.arange(seq, device=stream.device)]
    bos = torch.zeros(batch, 1, dtype=tokens.dtype, device=tokens.device)
    return torch.cat([bos, tokens[:, :-1]], dim=1), tokens


def heldout_windows(torch, stream, seq, max_tokens):
    """Consecutive windows: each held-out token is predicted once, from <|bos|> + its window."""
    count = min(stream.numel() // seq, max(1, max_tokens // seq))
    tokens = stream[: count * seq].view(count, seq)
    bos = torch.zeros(count, 1, dtype=tokens.dtype, device=tokens.device)
    return torch.cat([bos, tokens[:, :-1]], dim=1), tokens


def mean_nll(torch, model, inputs, targets, batch, autocast):
    import torch.nn.functional as F
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, inputs.shape[0], batch):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                logits = model(input_ids=inputs[i:i + batch], use_cache=False).logits
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets[i:i + batch].reshape(-1),
                                   reduction="sum")
            total += loss.item()
            count += targets[i:i + batch].numel()
    return total / count


def unigram_nll(torch, train_stream, targets, vocab):
    counts = torch.bincount(train_stream.long(), minlength=vocab).double()
    probs = (counts + 1.0) / (counts.sum() + vocab)  # add-one smoothing
    return -probs.log()[targets.reshape(-1).long()].mean().item()


# ---------------------------------------------------------------------------------------------
# Training

def probe_training_mode(torch, model, stream, cfg):
    """First (autocast, experts implementation) that runs a forward and backward here."""
    import torch.nn.functional as F
    gen = torch.Generator(device=stream.device).manual_seed(7)
    inputs, targets = sample_batch(torch, stream, 2, 128, gen)
    for autocast, experts in ((True, "grouped_mm"), (True, "eager"), (False, "eager")):
        try:
            experts = set_experts_implementation(model, experts)
            torch.backends.cuda.matmul.allow_tf32 = not autocast
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                out = model(input_ids=inputs, output_router_logits=True, use_cache=False)
            loss = F.cross_entropy(out.logits.float().reshape(-1, cfg["vocab_size"]), targets.reshape(-1))
            if out.aux_loss is not None:
                loss = loss + cfg["router_aux_loss_coef"] * out.aux_loss
            loss.backward()
            model.zero_grad(set_to_none=True)
            if not math.isfinite(loss.item()):
                raise RuntimeError(f"loss {loss.item()}")
            log(f"training mode: {'bf16 autocast' if autocast else 'fp32 (TF32)'}, experts={experts}, "
                f"probe loss {loss.item():.3f} (ln V = {math.log(cfg['vocab_size']):.3f})")
            return autocast, experts
        except Exception as e:  # the next mode is the fallback
            model.zero_grad(set_to_none=True)
            log(f"mode bf16={autocast} experts={experts} unusable here: {type(e).__name__}: {str(e)[:200]}")
    fail("no training mode works")


def train(torch, model, cfg, args, stream, heldout_inputs, heldout_targets, tap, autocast, seconds, mtp=None):
    import torch.nn.functional as F
    import ds4_mtp
    params = list(model.named_parameters()) + (list(mtp.named_parameters()) if mtp is not None else [])
    decay = [p for n, p in params if p.ndim >= 2]
    no_decay = [p for n, p in params if p.ndim < 2]
    final_tap = ds4_mtp.FinalStreamsTap(model) if mtp is not None else None
    mtp_ema = None
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    gen = torch.Generator(device=stream.device).manual_seed(args.seed)
    history = []
    step, tokens_seen, ema, skipped = 0, 0, None, 0
    began = time.time()
    last_log = began
    model.train()
    while True:
        progress = (time.time() - began) / seconds
        if progress >= 1.0:
            break
        warm = 0.03
        lr = args.lr * (progress / warm if progress < warm else
                        0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (progress - warm) / (1 - warm))))
        for group in opt.param_groups:
            group["lr"] = lr
        inputs, targets = sample_batch(torch, stream, args.batch, args.seq, gen)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=inputs, output_router_logits=True, use_cache=False)
            mtp_out = ds4_mtp.mtp_logits(model, mtp, final_tap, targets) if mtp is not None else None
        loss = F.cross_entropy(out.logits.float().reshape(-1, cfg["vocab_size"]), targets.reshape(-1))
        total = loss if out.aux_loss is None else loss + cfg["router_aux_loss_coef"] * out.aux_loss
        if mtp_out is not None:  # position t predicts the token after next, targets[t + 1]
            mtp_loss = F.cross_entropy(mtp_out[:, :-1].float().reshape(-1, cfg["vocab_size"]),
                                       targets[:, 1:].reshape(-1))
            total = total + args.mtp_weight * mtp_loss
            mtp_ema = mtp_loss.item() if mtp_ema is None else 0.95 * mtp_ema + 0.05 * mtp_loss.item()
        opt.zero_grad(set_to_none=True)
        total.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_([p for _, p in params], 1.0)
        value = loss.item()
        step += 1
        tokens_seen += targets.numel()
        if not (math.isfinite(value) and math.isfinite(grad_norm.item())):
            # One bad batch must not poison the weights: skip it, and give up only if it persists.
            skipped += 1
            log(f"step {step}: loss {value}, gradient norm {grad_norm.item()}; update skipped")
            if skipped > 20:
                fail("more than 20 non-finite steps")
            opt.zero_grad(set_to_none=True)
            tap.counts = {}
            continue
        opt.step()
        balance_router_bias(torch, tap)
        ema = value if ema is None else 0.95 * ema + 0.05 * value
        now = time.time()
        if now - last_log >= 20 or step == 1:
            model.eval()
            held = mean_nll(torch, model, heldout_inputs[:16], heldout_targets[:16], 16, autocast)
            model.train()
            rate = tokens_seen / (now - began)
            mtp_text = f"  MTP loss {mtp_ema:.3f}" if mtp_ema is not None else ""
            log(f"step {step:5d}  train loss {ema:.3f}{mtp_text}  held-out loss {held:.3f}  lr {lr:.2e}  "
                f"{rate / 1000:.0f}k tok/s  {tokens_seen / 1e6:.1f}M tokens")
            history.append({"step": step, "seconds": round(now - began, 1), "train_loss": round(ema, 4),
                            "heldout_loss": round(held, 4), "tokens": tokens_seen})
            last_log = now
    model.eval()
    if final_tap is not None:
        final_tap.close()
    return {"steps": step, "final_mtp_loss_ema": round(mtp_ema, 4) if mtp_ema is not None else None, "tokens": tokens_seen, "seconds": round(time.time() - began, 1), "skipped_steps": skipped,
            "final_train_loss_ema": round(ema, 4) if ema is not None else None, "history": history}


def mtp_accuracy(torch, model, mtp, inputs, targets, autocast, batch=16):
    """Held-out accuracy of the main head at t+1 and of the MTP head at t+2 (teacher-forced)."""
    import torch.nn.functional as F
    import ds4_mtp
    tap = ds4_mtp.FinalStreamsTap(model)
    main_right = mtp_right = positions = 0
    mtp_nll = 0.0
    try:
        with torch.no_grad():
            for i in range(0, inputs.shape[0], batch):
                x, y = inputs[i:i + batch], targets[i:i + batch]
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                    logits = model(input_ids=x, use_cache=False).logits
                    second = ds4_mtp.mtp_logits(model, mtp, tap, y)
                main_right += (logits[:, :-1].argmax(-1) == y[:, :-1]).sum().item()
                mtp_right += (second[:, :-1].argmax(-1) == y[:, 1:]).sum().item()
                mtp_nll += F.cross_entropy(second[:, :-1].float().reshape(-1, second.shape[-1]), y[:, 1:].reshape(-1),
                                           reduction="sum").item()
                positions += y[:, 1:].numel()
    finally:
        tap.close()
    return {"positions": positions, "main_next_token_accuracy": main_right / positions,
            "mtp_token_after_next_accuracy": mtp_right / positions, "mtp_loss": mtp_nll / positions,
            "evaluated_on": "the float (not re-quantized) model"}


# ---------------------------------------------------------------------------------------------
# Export and reload

def export_and_reload(torch, transformers, ds4_export, model, config, cfg, model_dir, label, mtp=None, limited=True):
    """Writes model.safetensors, reloads it dequantized into a fresh model, checks the error.

    With an MTP block its tensors go into the same file under mtp.0 (as the released checkpoint
    has them); the reload checks the main model's tensors and skips mtp.*.
    """
    state = {k: v.detach().float() if v.is_floating_point() else v.detach() for k, v in model.state_dict().items()}
    entries = ds4_export.export_tensors(state, cfg["moe_intermediate_size"])
    if mtp is not None:
        import ds4_mtp
        mtp_state = {k: v.detach().float() for k, v in mtp.state_dict().items()}
        block_state, own = ds4_mtp.export_names(mtp_state, cfg["num_hidden_layers"])
        block_entries = ds4_export.export_tensors(block_state, cfg["moe_intermediate_size"])
        entries += ds4_mtp.rename_exported(block_entries, cfg["num_hidden_layers"])
        for name, tensor in own.items():
            ds4_export.export_one(name, tensor, entries)
    path = os.path.join(model_dir, "model.safetensors")
    size = layout.write_safetensors(path, entries, metadata={"format": "pt", "producer": "moepage tools/train"})
    if limited and size > layout.CHECKPOINT_LIMIT_BYTES:
        fail(f"{label}: checkpoint is {size / 1e6:.1f} MB, over the {layout.CHECKPOINT_LIMIT_BYTES / 1e6:.0f} MB limit")
    reloaded = ds4_export.load_dequantized(path, list(state), ignore_prefix="mtp.")
    worst = {}
    for name, original in state.items():
        back = reloaded[name].to(original.device)
        if back.shape != original.shape:
            fail(f"{label}: {name} came back as {tuple(back.shape)}, expected {tuple(original.shape)}")
        which = layout.expert_layer(name)
        kind = "fp4" if which else layout.storage_kind(layout.released_name(name))
        if kind in ("i64", "f32"):
            if not torch.equal(back.to(original.dtype), original):
                fail(f"{label}: {name} ({kind}) did not round-trip exactly")
            continue
        err = ((back - original).norm() / original.norm().clamp_min(1e-30)).item()
        worst[kind] = max(worst.get(kind, 0.0), err)
    # Typical relative errors: bf16 0.002, fp8 0.03, fp4 0.12. Far beyond them is a layout bug.
    limits = {"bf16": 0.05, "fp8": 0.2, "fp4": 0.5}
    for kind, err in worst.items():
        if err > limits[kind]:
            fail(f"{label}: {kind} relative error {err:.4f} exceeds {limits[kind]}: the export layout is wrong")
    qmodel = transformers.DeepseekV4ForCausalLM(config)
    missing, unexpected = qmodel.load_state_dict(reloaded, strict=True)
    del missing, unexpected
    log(f"{label}: wrote {path} ({size / 1e6:.2f} MB, {len(entries)} tensors); reload errors "
        + ", ".join(f"{k} {v:.4f}" for k, v in sorted(worst.items())))
    return qmodel.to(next(model.parameters()).device).eval(), size


def check_hf_reads_config(transformers, released, cfg):
    """The exported config.json, read by Hugging Face, must give the trained geometry."""
    try:
        plain = {k: v for k, v in released.items() if k not in ("quantization_config", "expert_dtype")}
        c = transformers.DeepseekV4Config.from_dict(plain)
        got = (list(c.layer_types), list(c.mlp_layer_types), c.qk_rope_head_dim, dict(c.compress_rates),
               c.rope_parameters["compress"].get("rope_type"), c.rope_parameters["compress"].get("factor"))
        want = (cfg["layer_types"], cfg["mlp_layer_types"], round(cfg["head_dim"] * cfg["partial_rotary_factor"]),
                cfg["compress_rates"], "yarn", cfg["rope_parameters"]["factor"])
        if got != want:
            log(f"WARNING: HF reads the exported config.json as {got}, trained with {want}")
        else:
            log("config.json: Hugging Face reads back the trained geometry")
    except Exception as e:
        log(f"WARNING: HF could not read the exported config.json: {type(e).__name__}: {e}")


# ---------------------------------------------------------------------------------------------
# Fixtures

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


# ---------------------------------------------------------------------------------------------
# Bundle

def write_bundle(files, out_dir):
    """files: {repo-relative path: bytes}. Writes bundle.tar.partNN (<= 15 MiB each)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            info = tarfile.TarInfo(path)
            info.size = len(files[path])
            info.mtime = int(START)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[path]))
    data = buf.getvalue()
    parts = []
    for i in range(0, len(data), PART_BYTES):
        name = os.path.join(out_dir, f"bundle.tar.part{len(parts):02d}")
        with open(name, "wb") as f:
            f.write(data[i:i + PART_BYTES])
        parts.append(name)
    if len(parts) > 8:
        fail(f"bundle needs {len(parts)} parts, more than 8")
    return parts, hashlib.sha256(data).hexdigest(), len(data)


# ---------------------------------------------------------------------------------------------

def run_stage(name, failures, fn, *args):
    """Runs one fixture stage; a failure is reported and the remaining stages still run."""
    try:
        return fn(*args)
    except SystemExit as e:
        failures.append(f"{name}: {e}")
    except Exception as e:  # keep the checkpoint and the other fixtures
        import traceback
        traceback.print_exc()
        failures.append(f"{name}: {type(e).__name__}: {e}")
    log(f"stage '{name}' FAILED; continuing with the others")
    return None


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    __import__("numpy")  # fail now, not after training, if numpy is missing
    import tokenizers
    import torch
    import transformers
    import ds4_export
    import ds4_quant
    log(f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"tokenizers {tokenizers.__version__}")
    if not torch.cuda.is_available():
        fail("no CUDA device")
    device = torch.device("cuda")
    log(f"device {torch.cuda.get_device_name(0)}")

    rel8, rel4 = ds4_quant.check_codecs()
    log(f"codec self-check passed (random-weight relative error fp8 {rel8:.4f}, fp4 {rel4:.4f})")

    # -- corpus and tokenizer
    train_lines = corpus_data.read_lines(args.corpus, "train")
    heldout_lines = corpus_data.read_lines(args.corpus, "heldout")
    log(f"corpus: {len(train_lines)} train and {len(heldout_lines)} held-out paragraphs")
    if args.tokenizer:
        tokenizer = tokenizers.Tokenizer.from_file(args.tokenizer)
        log(f"tokenizer: {args.tokenizer} (reused)")
    else:
        tokenizer = corpus_data.train_tokenizer(train_lines, args.vocab)
    vocab = tokenizer.get_vocab_size()
    log(f"tokenizer: vocab {vocab}")
    train_ids = corpus_data.encode_stream(tokenizer, train_lines)
    heldout_ids = corpus_data.encode_stream(tokenizer, heldout_lines)
    stream = torch.tensor(train_ids, dtype=torch.long, device=device)
    heldout_stream = torch.tensor(heldout_ids, dtype=torch.long, device=device)
    log(f"tokens: {len(train_ids) / 1e6:.2f}M train, {len(heldout_ids) / 1e3:.1f}k held-out "
        f"({sum(map(len, train_lines)) / len(train_ids):.2f} chars/token)")

    # -- model and the checks that must pass before any training
    cfg = layout.PRESETS[args.preset](vocab)
    committed = args.preset == "tiny"  # only the tiny checkpoint is committed (size-limited)
    config, model = build_model(torch, transformers, cfg, args.seed)
    model.to(device)
    mtp = None
    if cfg["num_nextn_predict_layers"]:
        import ds4_mtp
        mtp = ds4_mtp.build_mtp(torch, transformers, model, cfg, args.seed).to(device)
        log(f"MTP block: {sum(p.numel() for p in mtp.parameters()) / 1e6:.1f}M parameters")
    params = sum(p.numel() for p in model.parameters())
    log(f"model: {params / 1e6:.1f}M parameters, layers {cfg['layer_types']}, mlp {cfg['mlp_layer_types']}")
    repo = os.path.join(args.out, "repo")
    model_dir = os.path.join(repo, "models", args.name)
    os.makedirs(model_dir, exist_ok=True)
    export_and_reload(torch, transformers, ds4_export, model, config, cfg, model_dir, "pre-training round trip",
                      mtp, committed)
    released = layout.released_config(cfg)
    check_hf_reads_config(transformers, released, cfg)

    # -- training
    tap = RouterTap(torch, model, cfg, mtp)
    autocast, experts = probe_training_mode(torch, model, stream, cfg)
    if mtp is not None:  # the MTP block has its own config object: give it the same experts path
        mtp.block.mlp.experts.config._experts_implementation = experts
    heldout_inputs, heldout_targets = heldout_windows(torch, heldout_stream, args.seq, 1 << 30)
    train_seconds = min(args.max_train_seconds, args.total_seconds - args.finish_reserve - (time.time() - START))
    if train_seconds < (20 if args.smoke else 60):
        fail(f"only {train_seconds:.0f}s left for training")
    log(f"training for {train_seconds:.0f}s: batch {args.batch} x {args.seq} tokens, peak lr {args.lr}")
    stats = train(torch, model, cfg, args, stream, heldout_inputs, heldout_targets, tap, autocast, train_seconds, mtp)
    float_nll = mean_nll(torch, model, heldout_inputs, heldout_targets, 16, autocast)
    log(f"trained: {stats['steps']} steps, {stats['tokens'] / 1e6:.1f}M tokens; float model held-out loss "
        f"{float_nll:.4f} (ppl {math.exp(float_nll):.2f})")
    tap.close()
    mtp_stats = None
    if mtp is not None:
        mtp_stats = mtp_accuracy(torch, model, mtp, heldout_inputs, heldout_targets, autocast)
        log(f"MTP (float model, {mtp_stats['positions']} held-out positions): next-token accuracy of the main head "
            f"{mtp_stats['main_next_token_accuracy']:.4f}; token-after-next accuracy of the MTP head "
            f"{mtp_stats['mtp_token_after_next_accuracy']:.4f}, MTP loss {mtp_stats['mtp_loss']:.4f}")

    # -- the shipped checkpoint; every number below comes from its dequantized weights
    qmodel, size = export_and_reload(torch, transformers, ds4_export, model, config, cfg, model_dir, "export",
                                     mtp, committed)
    del model
    qtap = RouterTap(torch, qmodel, cfg)
    set_experts_implementation(qmodel, "eager")
    q_nll = mean_nll(torch, qmodel, heldout_inputs, heldout_targets, 16, False)
    uni_nll = unigram_nll(torch, stream, heldout_targets, vocab)
    log(f"held-out ({heldout_targets.numel()} tokens): quantized model loss {q_nll:.4f} ppl {math.exp(q_nll):.2f}; "
        f"unigram ppl {math.exp(uni_nll):.2f}")
    if not q_nll < uni_nll:
        log("WARNING: the model is not better than the unigram baseline")

    files = {}
    failures = []
    name = args.name
    files[f"models/{name}/tokenizer.json"] = tokenizer.to_str(pretty=True).encode("utf-8")
    files[f"models/{name}/tokenizer_config.json"] = (
        json.dumps(corpus_data.tokenizer_config(4096), indent=2) + "\n").encode()
    files[f"models/{name}/config.json"] = (json.dumps(released, indent=2) + "\n").encode()
    files[f"models/{name}/generation_config.json"] = (json.dumps(
        {"bos_token_id": 0, "eos_token_id": 1, "do_sample": False, "max_new_tokens": 64}, indent=2) + "\n").encode()
    if committed:
        with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
            files[f"models/{name}/model.safetensors"] = f.read()
    else:
        log(f"checkpoint {os.path.join(model_dir, 'model.safetensors')} ({size / 1e6:.1f} MB) stays out of the bundle")

    fixture = None
    if not args.tokenizer:
        fixture = run_stage("tokenizer fixture", failures, tokenizer_fixture, tokenizer, heldout_lines,
                            args.fixture_lines)
    if fixture:
        files["tests/fixtures/tokenizer/heldout_ids.jsonl"] = fixture[0].encode("utf-8")
        log(f"tokenizer fixture: {fixture[1]} lines")

    routing = {}
    choices = run_stage("routing trace", failures, record_trace, torch, qmodel, qtap, heldout_stream, cfg, args)
    if choices:
        report, shares, rates, entropies = routing_trace.routing_report(choices, cfg["n_routed_experts"],
                                                                        cfg["mlp_layer_types"])
        for line in report:
            log(line)
        routing = {"top10_share": shares, "lru_25pct_hit_rate": rates, "load_entropy_bits": entropies,
                   "tokens": len(choices[0])}
        # The committed traces of larger models come from tools/train/routing_study.py (with predictions).
        packed = run_stage("trace packing", failures, pack_trace, choices, cfg, args) if committed else None
        if packed:
            trace_packed, kept = packed
            trace_path = f"tests/data/{name}-heldout.trace.xz"
            files[trace_path] = trace_packed
            routing.update({"trace": trace_path, "trace_tokens": kept})
            log(f"trace: {kept} tokens, {len(trace_packed) / 1e3:.0f} kB xz -> {trace_path}")

    logits = None
    if committed:  # a fixture of a checkpoint that is not committed would test nothing
        logits = run_stage("logits fixture", failures, logits_fixture, torch, qmodel, tokenizer, heldout_lines, cfg)
    if logits:
        logits_npy, logits_meta = logits
        logits_meta["model"] = f"models/{name}"
        files[f"tests/fixtures/{name}/logits.npy"] = logits_npy
        files[f"tests/fixtures/{name}/logits.json"] = (json.dumps(logits_meta, indent=1) + "\n").encode()

    sample = run_stage("sample continuation", failures, sample_continuation, torch, qmodel, tokenizer, heldout_lines)

    packages_file = os.path.join(args.corpus, "packages.txt")
    packages = None
    if os.path.exists(packages_file):
        with open(packages_file) as f:
            packages = [line for line in f.read().split("\n") if line]
    summary = {
        "model": name,
        "corpus": {"train_paragraphs": len(train_lines), "heldout_paragraphs": len(heldout_lines),
                   "train_tokens": len(train_ids), "heldout_tokens": len(heldout_ids),
                   "packages": packages},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "device": torch.cuda.get_device_name(0)},
        "config": cfg,
        "parameters": params,
        "checkpoint_bytes": size,
        "training": {**stats, "mode": {"bf16_autocast": autocast, "experts": experts}, "batch": args.batch,
                     "seq": args.seq, "peak_lr": args.lr, "seed": args.seed, "preset": args.preset,
                     "mtp_weight": args.mtp_weight if mtp is not None else None},
        "heldout": {"tokens": heldout_targets.numel(), "float_loss": float_nll, "float_ppl": math.exp(float_nll),
                    "quantized_loss": q_nll, "quantized_ppl": math.exp(q_nll), "unigram_ppl": math.exp(uni_nll)},
        "routing": routing,
        "mtp": mtp_stats,
        "sample": sample,
        "failed_stages": failures,
        "command": " ".join(sys.argv),
    }
    files[f"models/{name}/training.json"] = (json.dumps(summary, indent=1) + "\n").encode()
    log("writing the bundle")
    files[f"models/{name}/training_log.txt"] = ("\n".join(LOG_LINES) + "\n").encode()
    for path, data in files.items():
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
    bundle_dir = args.bundle_dir or args.out
    os.makedirs(bundle_dir, exist_ok=True)
    parts, digest, total = write_bundle(files, bundle_dir)
    log(f"bundle: {total / 1e6:.1f} MB in {len(parts)} parts, sha256 {digest}")
    for p in parts:
        log(f"  {p}")
    log("restore in the repository root with: cat bundle.tar.part* | tar -x")
    if failures:
        for f in failures:
            log(f"FAILED stage: {f}")
        log(f"finished WITH FAILURES in {time.time() - START:.0f}s")
        raise SystemExit(1)
    log(f"done in {time.time() - START:.0f}s")


if __name__ == "__main__":
    main()
