"""Export and reload: the trained weights in the released layout, reloaded dequantized into a
fresh model whose errors are checked; and the exported config.json as Hugging Face reads it."""
import os

import ds4_layout as layout
from train_log import fail, log


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
