"""The model train.py trains: a DeepseekV4ForCausalLM built from a ds4_layout preset and checked
against the layout the exporter expects, the experts implementation, and the router taps that
balance the scored routers and record routes for traces."""
import ds4_layout as layout
from train_log import fail, log


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
