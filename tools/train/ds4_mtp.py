"""DeepSeek-V4's multi-token-prediction (MTP) block, for training beside the Hugging Face model.

Hugging Face's DeepseekV4ForCausalLM has no MTP block (it ignores `mtp.*` keys), so the trainer
builds one from the model's own modules, as the released checkpoint lays it out
(docs/deepseek-v4.md, "MTP block"):

    x     = h_proj(hnorm(X)) + e_proj(enorm(embed(t+1)))     X: the main model's final streams
    x     = one decoder block (sliding attention, scored MoE with its bias) on the streams
    logit = head(norm(hc_head(x)))                           the shared output head

At position t it predicts token t+2 from the main model's state at t and the embedding of the
true token t+1 (teacher forcing). Exported as `mtp.0.*` next to the main model's tensors.
"""
import torch
from torch import nn

import ds4_layout as layout

# Hugging Face keys of the MTP's own tensors -> released names (inside mtp.0.).
_OWN = {
    "enorm.weight": "enorm.weight",
    "hnorm.weight": "hnorm.weight",
    "norm.weight": "norm.weight",
    "e_proj.weight": "e_proj.weight",
    "h_proj.weight": "h_proj.weight",
    "hc_head.hc_fn": "hc_head_fn",
    "hc_head.hc_base": "hc_head_base",
    "hc_head.hc_scale": "hc_head_scale",
}
# The keyword arguments a decoder layer receives from DeepseekV4Model.forward that the MTP
# block needs too (the same positions, rope tables and sliding-window mask).
_LAYER_KWARGS = ("position_embeddings", "position_ids", "attention_mask")


def mtp_config(transformers, cfg):
    """The config the MTP block is built from: one more layer, sliding attention, scored MoE."""
    extended = dict(cfg)
    extended["num_hidden_layers"] = cfg["num_hidden_layers"] + 1
    extended["layer_types"] = list(cfg["layer_types"]) + [layout.SLIDING]
    extended["mlp_layer_types"] = list(cfg["mlp_layer_types"]) + ["moe"]
    return transformers.DeepseekV4Config(**extended)


class MtpBlock(nn.Module):
    def __init__(self, transformers, cfg):
        super().__init__()
        modeling = transformers.models.deepseek_v4.modeling_deepseek_v4
        config = mtp_config(transformers, cfg)
        d, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
        self.layer_index = cfg["num_hidden_layers"]
        self.enorm = modeling.DeepseekV4RMSNorm(d, eps=eps)
        self.hnorm = modeling.DeepseekV4RMSNorm(d, eps=eps)
        self.e_proj = nn.Linear(d, d, bias=False)
        self.h_proj = nn.Linear(d, d, bias=False)
        self.block = modeling.DeepseekV4DecoderLayer(config, self.layer_index)
        self.hc_head = modeling.DeepseekV4HyperHead(config)
        self.norm = modeling.DeepseekV4RMSNorm(d, eps=eps)

    def forward(self, streams, next_embeds, layer_kwargs):
        """streams [B,S,N,D] (the last main layer's output), next_embeds [B,S,D] -> [B,S,D]."""
        x = self.h_proj(self.hnorm(streams)) + self.e_proj(self.enorm(next_embeds)).unsqueeze(2)
        x = self.block(x, **{k: layer_kwargs[k] for k in _LAYER_KWARGS if k in layer_kwargs})
        return self.norm(self.hc_head(x))


class FinalStreamsTap:
    """Hooks on the last main layer: its output streams and the keyword arguments it was given."""

    def __init__(self, model):
        last = model.model.layers[-1]
        self.streams = None
        self.kwargs = None
        self.handles = [last.register_forward_pre_hook(self._pre, with_kwargs=True),
                        last.register_forward_hook(self._post)]

    def _pre(self, module, args, kwargs):
        self.kwargs = kwargs

    def _post(self, module, inputs, output):
        self.streams = output

    def close(self):
        for h in self.handles:
            h.remove()


def build_mtp(torch_module, transformers, model, cfg, seed):
    """An MTP block initialised by the model's own initialiser (HF leaves some tensors empty)."""
    torch_module.manual_seed(seed + 17)
    mtp = MtpBlock(transformers, cfg)
    with torch.no_grad():
        for module in mtp.modules():
            model._init_weights(module)
    return mtp


def mtp_logits(model, mtp, tap, targets):
    """MTP logits [B,S,V] after a main forward that filled `tap`: position t predicts targets[t+1]."""
    next_embeds = model.model.embed_tokens(targets)
    return model.lm_head(mtp(tap.streams, next_embeds, tap.kwargs))


def export_names(mtp_state, main_layers):
    """{released name: tensor} plus stacked-expert entries, in the names ds4_export understands.

    Block tensors are renamed to the Hugging Face spelling of layer `main_layers` so the shared
    exporter quantizes them like any layer; rename_exported() then moves them under mtp.0.
    """
    hf_state, own = {}, {}
    for key, tensor in mtp_state.items():
        if key.startswith("block."):
            hf_state[f"model.layers.{main_layers}.{key[len('block.'):]}"] = tensor
        elif key in _OWN:
            own[f"mtp.0.{_OWN[key]}"] = tensor
        else:
            raise SystemExit(f"MTP export: no released name for {key}")
    return hf_state, own


def rename_exported(entries, main_layers):
    """Moves exported entries of layer `main_layers` under mtp.0."""
    prefix = f"layers.{main_layers}."
    out = []
    for name, dtype, shape, data in entries:
        if not name.startswith(prefix):
            raise SystemExit(f"MTP export: unexpected tensor {name}")
        out.append(("mtp.0." + name[len(prefix):], dtype, shape, data))
    return out
