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
import json
import math
import os
import platform
import sys
import time
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_data  # noqa: E402
import ds4_layout as layout  # noqa: E402
import routing_trace  # noqa: E402
import train_fixtures as fixtures  # noqa: E402
from train_bundle import write_bundle  # noqa: E402
from train_export import check_hf_reads_config, export_and_reload  # noqa: E402
from train_log import LOG_LINES, START, fail, log  # noqa: E402
from train_loop import heldout_windows, mean_nll, mtp_accuracy, probe_training_mode, train, unigram_nll  # noqa: E402
from train_model import RouterTap, build_model, set_experts_implementation  # noqa: E402


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
# The stages of one run, in order. Each takes what the earlier ones made; `lib` holds the
# imported libraries (torch and friends are imported only here, so selftest.py runs without them).

def import_libraries():
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
    return SimpleNamespace(tokenizers=tokenizers, torch=torch, transformers=transformers, ds4_export=ds4_export,
                           device=device)


def load_corpus(args, lib):
    """The corpus, the tokenizer (trained or reused) and both token streams on the device."""
    c = SimpleNamespace()
    c.train_lines = corpus_data.read_lines(args.corpus, "train")
    c.heldout_lines = corpus_data.read_lines(args.corpus, "heldout")
    log(f"corpus: {len(c.train_lines)} train and {len(c.heldout_lines)} held-out paragraphs")
    if args.tokenizer:
        c.tokenizer = lib.tokenizers.Tokenizer.from_file(args.tokenizer)
        log(f"tokenizer: {args.tokenizer} (reused)")
    else:
        c.tokenizer = corpus_data.train_tokenizer(c.train_lines, args.vocab)
    c.vocab = c.tokenizer.get_vocab_size()
    log(f"tokenizer: vocab {c.vocab}")
    c.train_ids = corpus_data.encode_stream(c.tokenizer, c.train_lines)
    c.heldout_ids = corpus_data.encode_stream(c.tokenizer, c.heldout_lines)
    c.stream = lib.torch.tensor(c.train_ids, dtype=lib.torch.long, device=lib.device)
    c.heldout_stream = lib.torch.tensor(c.heldout_ids, dtype=lib.torch.long, device=lib.device)
    log(f"tokens: {len(c.train_ids) / 1e6:.2f}M train, {len(c.heldout_ids) / 1e3:.1f}k held-out "
        f"({sum(map(len, c.train_lines)) / len(c.train_ids):.2f} chars/token)")
    return c


def prepare_model(args, lib, vocab):
    """The model (and MTP block), and the checks that must pass before any training."""
    torch, transformers = lib.torch, lib.transformers
    m = SimpleNamespace(mtp=None)
    m.cfg = layout.PRESETS[args.preset](vocab)
    m.committed = args.preset == "tiny"  # only the tiny checkpoint is committed (size-limited)
    m.config, m.model = build_model(torch, transformers, m.cfg, args.seed)
    m.model.to(lib.device)
    if m.cfg["num_nextn_predict_layers"]:
        import ds4_mtp
        m.mtp = ds4_mtp.build_mtp(torch, transformers, m.model, m.cfg, args.seed).to(lib.device)
        log(f"MTP block: {sum(p.numel() for p in m.mtp.parameters()) / 1e6:.1f}M parameters")
    m.params = sum(p.numel() for p in m.model.parameters())
    log(f"model: {m.params / 1e6:.1f}M parameters, layers {m.cfg['layer_types']}, mlp {m.cfg['mlp_layer_types']}")
    m.repo = os.path.join(args.out, "repo")
    m.model_dir = os.path.join(m.repo, "models", args.name)
    os.makedirs(m.model_dir, exist_ok=True)
    export_and_reload(torch, transformers, lib.ds4_export, m.model, m.config, m.cfg, m.model_dir,
                      "pre-training round trip", m.mtp, m.committed)
    m.released = layout.released_config(m.cfg)
    check_hf_reads_config(transformers, m.released, m.cfg)
    return m


def run_training(args, lib, m, c):
    """Trains for what the wall-clock budget leaves; the float model's held-out numbers."""
    torch = lib.torch
    t = SimpleNamespace(mtp_stats=None)
    tap = RouterTap(torch, m.model, m.cfg, m.mtp)
    t.autocast, t.experts = probe_training_mode(torch, m.model, c.stream, m.cfg)
    if m.mtp is not None:  # the MTP block has its own config object: give it the same experts path
        m.mtp.block.mlp.experts.config._experts_implementation = t.experts
    t.heldout_inputs, t.heldout_targets = heldout_windows(torch, c.heldout_stream, args.seq, 1 << 30)
    train_seconds = min(args.max_train_seconds, args.total_seconds - args.finish_reserve - (time.time() - START))
    if train_seconds < (20 if args.smoke else 60):
        fail(f"only {train_seconds:.0f}s left for training")
    log(f"training for {train_seconds:.0f}s: batch {args.batch} x {args.seq} tokens, peak lr {args.lr}")
    t.stats = train(torch, m.model, m.cfg, args, c.stream, t.heldout_inputs, t.heldout_targets, tap, t.autocast,
                    train_seconds, m.mtp)
    t.float_nll = mean_nll(torch, m.model, t.heldout_inputs, t.heldout_targets, 16, t.autocast)
    log(f"trained: {t.stats['steps']} steps, {t.stats['tokens'] / 1e6:.1f}M tokens; float model held-out loss "
        f"{t.float_nll:.4f} (ppl {math.exp(t.float_nll):.2f})")
    tap.close()
    if m.mtp is not None:
        s = mtp_accuracy(torch, m.model, m.mtp, t.heldout_inputs, t.heldout_targets, t.autocast)
        log(f"MTP (float model, {s['positions']} held-out positions): next-token accuracy of the main head "
            f"{s['main_next_token_accuracy']:.4f}; token-after-next accuracy of the MTP head "
            f"{s['mtp_token_after_next_accuracy']:.4f}, MTP loss {s['mtp_loss']:.4f}")
        t.mtp_stats = s
    return t


def export_and_evaluate(lib, m, c, t):
    """The shipped checkpoint; every number after this comes from its dequantized weights."""
    torch = lib.torch
    q = SimpleNamespace()
    q.model, q.size = export_and_reload(torch, lib.transformers, lib.ds4_export, m.model, m.config, m.cfg,
                                        m.model_dir, "export", m.mtp, m.committed)
    m.model = None  # the float model is done with: free its memory before the fixtures run
    q.tap = RouterTap(torch, q.model, m.cfg)
    set_experts_implementation(q.model, "eager")
    q.nll = mean_nll(torch, q.model, t.heldout_inputs, t.heldout_targets, 16, False)
    q.unigram_nll = unigram_nll(torch, c.stream, t.heldout_targets, c.vocab)
    log(f"held-out ({t.heldout_targets.numel()} tokens): quantized model loss {q.nll:.4f} ppl {math.exp(q.nll):.2f}; "
        f"unigram ppl {math.exp(q.unigram_nll):.2f}")
    if not q.nll < q.unigram_nll:
        log("WARNING: the model is not better than the unigram baseline")
    return q


def model_files(args, m, c, q):
    """{repo path: bytes} of the model folder: tokenizer, configs, and the committed checkpoint."""
    name = args.name
    files = {f"models/{name}/tokenizer.json": c.tokenizer.to_str(pretty=True).encode("utf-8")}
    files[f"models/{name}/tokenizer_config.json"] = (
        json.dumps(corpus_data.tokenizer_config(4096), indent=2) + "\n").encode()
    files[f"models/{name}/config.json"] = (json.dumps(m.released, indent=2) + "\n").encode()
    files[f"models/{name}/generation_config.json"] = (json.dumps(
        {"bos_token_id": 0, "eos_token_id": 1, "do_sample": False, "max_new_tokens": 64}, indent=2) + "\n").encode()
    if m.committed:
        with open(os.path.join(m.model_dir, "model.safetensors"), "rb") as f:
            files[f"models/{name}/model.safetensors"] = f.read()
    else:
        log(f"checkpoint {os.path.join(m.model_dir, 'model.safetensors')} ({q.size / 1e6:.1f} MB) stays out of the bundle")
    return files


def routing_stage(args, lib, m, c, q, files, failures):
    """The routing report of the held-out trace (and, for the committed model, the packed trace)."""
    choices = run_stage("routing trace", failures, fixtures.record_trace, lib.torch, q.model, q.tap,
                        c.heldout_stream, m.cfg, args)
    if not choices:
        return {}
    report, shares, rates, entropies = routing_trace.routing_report(choices, m.cfg["n_routed_experts"],
                                                                    m.cfg["mlp_layer_types"])
    for line in report:
        log(line)
    routing = {"top10_share": shares, "lru_25pct_hit_rate": rates, "load_entropy_bits": entropies,
               "tokens": len(choices[0])}
    # The committed traces of larger models come from tools/train/routing_study.py (with predictions).
    packed = run_stage("trace packing", failures, fixtures.pack_trace, choices, m.cfg, args) if m.committed else None
    if packed:
        trace_packed, kept = packed
        trace_path = f"tests/data/{args.name}-heldout.trace.xz"
        files[trace_path] = trace_packed
        routing.update({"trace": trace_path, "trace_tokens": kept})
        log(f"trace: {kept} tokens, {len(trace_packed) / 1e3:.0f} kB xz -> {trace_path}")
    return routing


def fixture_stages(args, lib, m, c, q, files, failures):
    """Every fixture stage into `files`; a failed stage is listed and the others still run.
    Returns (routing report, sample continuation)."""
    torch, name = lib.torch, args.name
    fixture = None
    if not args.tokenizer:
        fixture = run_stage("tokenizer fixture", failures, fixtures.tokenizer_fixture, c.tokenizer, c.heldout_lines,
                            args.fixture_lines)
    if fixture:
        files["tests/fixtures/tokenizer/heldout_ids.jsonl"] = fixture[0].encode("utf-8")
        log(f"tokenizer fixture: {fixture[1]} lines")
    routing = routing_stage(args, lib, m, c, q, files, failures)
    logits = None
    if m.committed:  # a fixture of a checkpoint that is not committed would test nothing
        logits = run_stage("logits fixture", failures, fixtures.logits_fixture, torch, q.model, c.tokenizer,
                           c.heldout_lines, m.cfg)
    if logits:
        logits_npy, logits_meta = logits
        logits_meta["model"] = f"models/{name}"
        files[f"tests/fixtures/{name}/logits.npy"] = logits_npy
        files[f"tests/fixtures/{name}/logits.json"] = (json.dumps(logits_meta, indent=1) + "\n").encode()
    sample = run_stage("sample continuation", failures, fixtures.sample_continuation, torch, q.model, c.tokenizer,
                       c.heldout_lines)
    return routing, sample


def run_summary(args, lib, m, c, t, q, routing, sample, failures):
    """training.json: every number of the run."""
    packages_file = os.path.join(args.corpus, "packages.txt")
    packages = None
    if os.path.exists(packages_file):
        with open(packages_file) as f:
            packages = [line for line in f.read().split("\n") if line]
    torch = lib.torch
    return {
        "model": args.name,
        "corpus": {"train_paragraphs": len(c.train_lines), "heldout_paragraphs": len(c.heldout_lines),
                   "train_tokens": len(c.train_ids), "heldout_tokens": len(c.heldout_ids),
                   "packages": packages},
        "versions": {"torch": torch.__version__, "transformers": lib.transformers.__version__,
                     "tokenizers": lib.tokenizers.__version__, "device": torch.cuda.get_device_name(0)},
        "config": m.cfg,
        "parameters": m.params,
        "checkpoint_bytes": q.size,
        "training": {**t.stats, "mode": {"bf16_autocast": t.autocast, "experts": t.experts}, "batch": args.batch,
                     "seq": args.seq, "peak_lr": args.lr, "seed": args.seed, "preset": args.preset,
                     "mtp_weight": args.mtp_weight if m.mtp is not None else None},
        "heldout": {"tokens": t.heldout_targets.numel(), "float_loss": t.float_nll,
                    "float_ppl": math.exp(t.float_nll), "quantized_loss": q.nll, "quantized_ppl": math.exp(q.nll),
                    "unigram_ppl": math.exp(q.unigram_nll)},
        "routing": routing,
        "mtp": t.mtp_stats,
        "sample": sample,
        "failed_stages": failures,
        "command": " ".join(sys.argv),
    }


def write_outputs(args, repo, files, failures):
    """The files under OUT/repo and the bundle; exits 1 when a stage failed."""
    log("writing the bundle")
    files[f"models/{args.name}/training_log.txt"] = ("\n".join(LOG_LINES) + "\n").encode()
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
    lib = import_libraries()
    corpus = load_corpus(args, lib)
    model = prepare_model(args, lib, corpus.vocab)
    trained = run_training(args, lib, model, corpus)
    shipped = export_and_evaluate(lib, model, corpus, trained)
    files = model_files(args, model, corpus, shipped)
    failures = []
    routing, sample = fixture_stages(args, lib, model, corpus, shipped, files, failures)
    summary = run_summary(args, lib, model, corpus, trained, shipped, routing, sample, failures)
    files[f"models/{args.name}/training.json"] = (json.dumps(summary, indent=1) + "\n").encode()
    write_outputs(args, model.repo, files, failures)


if __name__ == "__main__":
    main()
