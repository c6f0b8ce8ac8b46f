"""Data windows, losses and the training loop of train.py: batches from the token stream,
held-out windows, mean negative log-likelihood, the unigram baseline, the first training mode
that runs here, AdamW under a wall-clock budget, and the MTP head's held-out accuracy."""
import math
import time

from train_log import fail, log
from train_model import balance_router_bias, set_experts_implementation


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
