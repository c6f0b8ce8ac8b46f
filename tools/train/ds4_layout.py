"""The tiny DeepSeek-V4's shape and its released-checkpoint layout, in plain Python (no torch).

- tiny_config(): the hyper-parameters (Hugging Face DeepseekV4Config keyword arguments).
- released_config(): config.json in the released style plus the keys both readers need.
- released_name(): Hugging Face state_dict name -> released tensor name(s)
  (docs/deepseek-v4.md §4.1 and §4.3, inverted).
- storage_kind(): which dtype each released tensor is stored in.
- write_safetensors() / read_safetensors(): the file format, from raw bytes.
Everything here is checked by selftest.py on a machine without torch.
"""
import json
import math
import re
import struct

# ---------------------------------------------------------------------------------------------
# Hyper-parameters

SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
COMPRESS_RATE = {CSA: 4, HCA: 16}  # HCA is 128 in the real model; 16 gives entries in short text
FP8_BLOCK = 128
FP4_GROUP = 32
CHECKPOINT_LIMIT_BYTES = 30 * 1000 * 1000


def tiny_config(vocab_size):
    """DeepseekV4Config kwargs: the real layer schedule in miniature, sized for <= 30 MB."""
    layers = 8
    layer_types = [SLIDING, SLIDING] + [CSA if i % 2 == 0 else HCA for i in range(layers - 2)]
    return dict(
        vocab_size=vocab_size,
        hidden_size=256,
        # 128 would put the FP4 experts alone at ~27 MB; 64 keeps the checkpoint under 30 MB.
        moe_intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=64,
        partial_rotary_factor=16 / 64,  # qk_rope_head_dim 16
        q_lora_rank=128,
        o_groups=2,
        o_lora_rank=64,
        n_routed_experts=64,
        n_shared_experts=1,
        num_experts_per_tok=6,
        scoring_func="sqrtsoftplus",
        norm_topk_prob=True,
        routed_scaling_factor=1.5,
        swiglu_limit=10.0,
        sliding_window=64,
        layer_types=layer_types,
        compress_rates={CSA: COMPRESS_RATE[CSA], HCA: COMPRESS_RATE[HCA]},
        mlp_layer_types=["hash_moe"] * 3 + ["moe"] * (layers - 3),
        hc_mult=4,
        hc_sinkhorn_iters=20,
        hc_eps=1e-6,
        # 16 heads rather than 8: with few heads many entries score exactly 0 and top-k among
        # ties differs between implementations (reference §8).
        index_n_heads=16,
        index_head_dim=32,
        index_topk=16,
        num_nextn_predict_layers=0,
        rms_norm_eps=1e-6,
        max_position_embeddings=1048576,
        rope_theta=10000.0,
        compress_rope_theta=160000.0,
        rope_parameters=dict(rope_type="yarn", factor=16.0, original_max_position_embeddings=65536,
                             beta_fast=32.0, beta_slow=1.0),
        bos_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=False,
        hidden_act="silu",
        attention_bias=False,
        attention_dropout=0.0,
        initializer_range=0.02,
        output_router_logits=False,
        router_aux_loss_coef=0.001,
    )


def flash_routing_config(vocab_size):
    """DeepseekV4Config kwargs of the second trained model: DeepSeek-V4-Flash's routing shape.

    256 routed experts + 1 shared, top-6, sqrtsoftplus with the bias-corrected selection, 3 hash
    layers then scored ones, 12 layers in Flash's attention schedule (2 sliding, then CSA/HCA
    alternating), mHC with 4 streams and one MTP layer. Width, heads and expert width stay at the
    tiny model's sizes so the run fits a 10-minute budget; the checkpoint (~50 MB) is not committed.
    """
    cfg = tiny_config(vocab_size)
    layers = 12
    cfg.update(
        num_hidden_layers=layers,
        layer_types=[SLIDING, SLIDING] + [CSA if i % 2 == 0 else HCA for i in range(layers - 2)],
        mlp_layer_types=["hash_moe"] * 3 + ["moe"] * (layers - 3),
        n_routed_experts=256,
        # 32 rather than the tiny model's 64 keeps the checkpoint near 50 MB, small enough to
        # bring back from the GPU machine for CPU runs of the engine.
        moe_intermediate_size=32,
        num_nextn_predict_layers=1,
    )
    return cfg


PRESETS = {"tiny": tiny_config, "flash-routing": flash_routing_config}


def released_config(cfg):
    """config.json as DeepSeek ships it (legacy keys) plus layer_types/compress_rates.

    compress_ratios holds this model's per-layer ratios (0, 4, 16). Readers that only know the
    released ratios 0/4/128 would refuse the 16, so layer_types and compress_rates are written
    too: Hugging Face and the engine both read layer_types first.
    """
    rates = cfg["compress_rates"]
    qk_rope = int(round(cfg["head_dim"] * cfg["partial_rotary_factor"]))
    rope = cfg["rope_parameters"]
    return {
        "architectures": ["DeepseekV4ForCausalLM"],
        "model_type": "deepseek_v4",
        "vocab_size": cfg["vocab_size"],
        "hidden_size": cfg["hidden_size"],
        "moe_intermediate_size": cfg["moe_intermediate_size"],
        "num_hidden_layers": cfg["num_hidden_layers"],
        "num_attention_heads": cfg["num_attention_heads"],
        "num_key_value_heads": cfg["num_key_value_heads"],
        "head_dim": cfg["head_dim"],
        "qk_rope_head_dim": qk_rope,
        "q_lora_rank": cfg["q_lora_rank"],
        "o_groups": cfg["o_groups"],
        "o_lora_rank": cfg["o_lora_rank"],
        "n_routed_experts": cfg["n_routed_experts"],
        "n_shared_experts": cfg["n_shared_experts"],
        "num_experts_per_tok": cfg["num_experts_per_tok"],
        "num_hash_layers": cfg["mlp_layer_types"].count("hash_moe"),
        "norm_topk_prob": cfg["norm_topk_prob"],
        "routed_scaling_factor": cfg["routed_scaling_factor"],
        "scoring_func": cfg["scoring_func"],
        "topk_method": "noaux_tc",
        "swiglu_limit": cfg["swiglu_limit"],
        "hc_mult": cfg["hc_mult"],
        "hc_sinkhorn_iters": cfg["hc_sinkhorn_iters"],
        "hc_eps": cfg["hc_eps"],
        "sliding_window": cfg["sliding_window"],
        "index_n_heads": cfg["index_n_heads"],
        "index_head_dim": cfg["index_head_dim"],
        "index_topk": cfg["index_topk"],
        "compress_ratios": [rates.get(t, 0) for t in cfg["layer_types"]],
        "layer_types": list(cfg["layer_types"]),
        "compress_rates": dict(rates),
        "compress_rope_theta": cfg["compress_rope_theta"],
        "rope_theta": cfg["rope_theta"],
        "rope_scaling": {"type": rope["rope_type"], "factor": rope["factor"],
                         "original_max_position_embeddings": rope["original_max_position_embeddings"],
                         "beta_fast": rope["beta_fast"], "beta_slow": rope["beta_slow"]},
        "max_position_embeddings": cfg["max_position_embeddings"],
        "num_nextn_predict_layers": cfg["num_nextn_predict_layers"],
        "rms_norm_eps": cfg["rms_norm_eps"],
        "bos_token_id": cfg["bos_token_id"],
        "eos_token_id": cfg["eos_token_id"],
        "tie_word_embeddings": cfg["tie_word_embeddings"],
        "hidden_act": cfg["hidden_act"],
        "attention_bias": cfg["attention_bias"],
        "attention_dropout": cfg["attention_dropout"],
        "initializer_range": cfg["initializer_range"],
        "torch_dtype": "bfloat16",
        "expert_dtype": "fp4",
        "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                "scale_fmt": "ue8m0", "weight_block_size": [FP8_BLOCK, FP8_BLOCK]},
    }


# ---------------------------------------------------------------------------------------------
# Tensor names

# Hugging Face module path (inside model.layers.L.) -> released path (inside layers.L.).
# Order matters: the longest, most specific prefixes first.
_LAYER_RENAMES = [
    ("self_attn.compressor.indexer.scorer.weights_proj.weight", "attn.indexer.weights_proj.weight"),
    ("self_attn.compressor.indexer.q_b_proj.weight", "attn.indexer.wq_b.weight"),
    ("self_attn.compressor.indexer.kv_proj.weight", "attn.indexer.compressor.wkv.weight"),
    ("self_attn.compressor.indexer.gate_proj.weight", "attn.indexer.compressor.wgate.weight"),
    ("self_attn.compressor.indexer.position_bias", "attn.indexer.compressor.ape"),
    ("self_attn.compressor.indexer.kv_norm.weight", "attn.indexer.compressor.norm.weight"),
    ("self_attn.compressor.kv_proj.weight", "attn.compressor.wkv.weight"),
    ("self_attn.compressor.gate_proj.weight", "attn.compressor.wgate.weight"),
    ("self_attn.compressor.position_bias", "attn.compressor.ape"),
    ("self_attn.compressor.kv_norm.weight", "attn.compressor.norm.weight"),
    ("self_attn.q_a_proj.weight", "attn.wq_a.weight"),
    ("self_attn.q_a_norm.weight", "attn.q_norm.weight"),
    ("self_attn.q_b_proj.weight", "attn.wq_b.weight"),
    ("self_attn.kv_proj.weight", "attn.wkv.weight"),
    ("self_attn.kv_norm.weight", "attn.kv_norm.weight"),
    ("self_attn.o_a_proj.weight", "attn.wo_a.weight"),
    ("self_attn.o_b_proj.weight", "attn.wo_b.weight"),
    ("self_attn.sinks", "attn.attn_sink"),
    ("mlp.gate.weight", "ffn.gate.weight"),
    ("mlp.gate.e_score_correction_bias", "ffn.gate.bias"),
    ("mlp.gate.tid2eid", "ffn.gate.tid2eid"),
    ("mlp.shared_experts.gate_proj.weight", "ffn.shared_experts.w1.weight"),
    ("mlp.shared_experts.up_proj.weight", "ffn.shared_experts.w3.weight"),
    ("mlp.shared_experts.down_proj.weight", "ffn.shared_experts.w2.weight"),
    ("input_layernorm.weight", "attn_norm.weight"),
    ("post_attention_layernorm.weight", "ffn_norm.weight"),
    ("attn_hc.fn", "hc_attn_fn"),
    ("attn_hc.base", "hc_attn_base"),
    ("attn_hc.scale", "hc_attn_scale"),
    ("ffn_hc.fn", "hc_ffn_fn"),
    ("ffn_hc.base", "hc_ffn_base"),
    ("ffn_hc.scale", "hc_ffn_scale"),
]
_GLOBAL_RENAMES = {
    "model.embed_tokens.weight": "embed.weight",
    "lm_head.weight": "head.weight",
    "model.norm.weight": "norm.weight",
    "model.hc_head.hc_fn": "hc_head_fn",
    "model.hc_head.hc_base": "hc_head_base",
    "model.hc_head.hc_scale": "hc_head_scale",
}
# Stacked experts: split per expert on export, restacked on reload.
EXPERTS_GATE_UP = "mlp.experts.gate_up_proj"
EXPERTS_DOWN = "mlp.experts.down_proj"
_LAYER_PREFIX = re.compile(r"^model\.layers\.(\d+)\.(.+)$")


def released_name(hf_name):
    """The released name of a non-expert tensor, or None when the name is unknown."""
    if hf_name in _GLOBAL_RENAMES:
        return _GLOBAL_RENAMES[hf_name]
    m = _LAYER_PREFIX.match(hf_name)
    if not m:
        return None
    layer, rest = m.group(1), m.group(2)
    for hf_part, released_part in _LAYER_RENAMES:
        if rest == hf_part:
            return f"layers.{layer}.{released_part}"
    return None


def expert_layer(hf_name):
    """(layer, 'gate_up' | 'down') for a stacked-experts tensor, else None."""
    m = _LAYER_PREFIX.match(hf_name)
    if not m:
        return None
    if m.group(2) == EXPERTS_GATE_UP:
        return int(m.group(1)), "gate_up"
    if m.group(2) == EXPERTS_DOWN:
        return int(m.group(1)), "down"
    return None


def expert_weight_name(layer, expert, part):
    return f"layers.{layer}.ffn.experts.{expert}.{part}.weight"


def scale_name(weight_name):
    assert weight_name.endswith(".weight"), weight_name
    return weight_name[: -len(".weight")] + ".scale"


_FP8_SUFFIXES = ("attn.wq_a.weight", "attn.wq_b.weight", "attn.wkv.weight", "attn.wo_a.weight",
                 "attn.wo_b.weight", "attn.indexer.wq_b.weight", "ffn.shared_experts.w1.weight",
                 "ffn.shared_experts.w2.weight", "ffn.shared_experts.w3.weight",
                 ".e_proj.weight", ".h_proj.weight")  # the last two: the MTP block
_F32_PATTERN = re.compile(r"(hc_(attn|ffn)_(fn|base|scale)|hc_head_(fn|base|scale)|\.ape|attn_sink|ffn\.gate\.bias)$")


def storage_kind(name):
    """'fp8' | 'fp4' | 'bf16' | 'f32' | 'i64' for a released weight name (not a .scale)."""
    if re.search(r"\.ffn\.experts\.\d+\.w[123]\.weight$", name):
        return "fp4"
    if name.endswith(_FP8_SUFFIXES):
        return "fp8"
    if name.endswith("ffn.gate.tid2eid"):
        return "i64"
    if _F32_PATTERN.search(name):
        return "f32"
    return "bf16"


def stored_bytes(kind, shape):
    """Bytes of a tensor and its scale as exported (for the size budget)."""
    n = math.prod(shape)
    if kind == "fp8":
        rows, cols = shape
        return n + math.ceil(rows / FP8_BLOCK) * math.ceil(cols / FP8_BLOCK)
    if kind == "fp4":
        rows, cols = shape
        return n // 2 + rows * (cols // FP4_GROUP)
    return n * {"bf16": 2, "f32": 4, "i64": 8}[kind]


# ---------------------------------------------------------------------------------------------
# safetensors, from raw bytes

DTYPE_SIZE = {"F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "I64": 8, "I32": 4}


def write_safetensors(path, tensors, metadata=None):
    """tensors: iterable of (name, dtype, shape, data bytes). Written in name order."""
    header = {}
    blobs = []
    offset = 0
    for name, dtype, shape, data in sorted(tensors, key=lambda t: t[0]):
        expected = math.prod(shape) * DTYPE_SIZE[dtype]
        if len(data) != expected:
            raise ValueError(f"{name}: {len(data)} bytes for {dtype}{list(shape)}, expected {expected}")
        if name in header:
            raise ValueError(f"{name}: written twice")
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)
    return 8 + len(encoded) + offset


def read_safetensors(path):
    """{name: (dtype, shape, bytes)} and the metadata dict."""
    with open(path, "rb") as f:
        raw = f.read()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_len])
    metadata = header.pop("__metadata__", {})
    base = 8 + header_len
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        out[name] = (info["dtype"], tuple(info["shape"]), raw[base + begin:base + end])
    return out, metadata


# ---------------------------------------------------------------------------------------------
# Scalar decoders, written from the format definitions; the torch codecs are checked against them.

E2M1_MAGNITUDE = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def e4m3_to_float(byte):
    sign = -1.0 if byte & 0x80 else 1.0
    exponent = (byte >> 3) & 0xF
    mantissa = byte & 0x7
    if exponent == 0xF and mantissa == 0x7:
        return math.nan
    if exponent == 0:
        return sign * (mantissa / 8.0) * 2.0 ** -6
    return sign * (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7)


def e8m0_to_float(byte):
    return math.nan if byte == 0xFF else 2.0 ** (byte - 127)


def e2m1_to_float(code):
    magnitude = E2M1_MAGNITUDE[code & 7]
    return -magnitude if code & 8 else magnitude


def fp4_element(packed_row, scales_row, column):
    """Logical element `column` of one FP4 row: byte column//2, low nibble for even columns."""
    byte = packed_row[column // 2] & 0xFF
    code = byte & 0xF if column % 2 == 0 else byte >> 4
    return e2m1_to_float(code) * e8m0_to_float(scales_row[column // FP4_GROUP] & 0xFF)


def fp8_element(q, scales, row, column):
    return e4m3_to_float(q[row][column]) * e8m0_to_float(scales[row // FP8_BLOCK][column // FP8_BLOCK])


# ---------------------------------------------------------------------------------------------
# The Hugging Face state_dict this config produces (checked against the real model on the GPU
# machine before training, so a layout change in transformers stops the run at once).

def hf_param_shapes(cfg):
    v, d, n = cfg["vocab_size"], cfg["hidden_size"], cfg["hc_mult"]
    h, hd, q = cfg["num_attention_heads"], cfg["head_dim"], cfg["q_lora_rank"]
    g, ol = cfg["o_groups"], cfg["o_lora_rank"]
    e, inter, k = cfg["n_routed_experts"], cfg["moe_intermediate_size"], cfg["num_experts_per_tok"]
    ih, ihd = cfg["index_n_heads"], cfg["index_head_dim"]
    mix = (2 + n) * n
    shapes = {
        "model.embed_tokens.weight": (v, d), "lm_head.weight": (v, d), "model.norm.weight": (d,),
        "model.hc_head.hc_fn": (n, n * d), "model.hc_head.hc_base": (n,), "model.hc_head.hc_scale": (1,),
    }
    for layer, (attn, mlp) in enumerate(zip(cfg["layer_types"], cfg["mlp_layer_types"])):
        p = f"model.layers.{layer}."
        shapes.update({
            p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
            p + "attn_hc.fn": (mix, n * d), p + "attn_hc.base": (mix,), p + "attn_hc.scale": (3,),
            p + "ffn_hc.fn": (mix, n * d), p + "ffn_hc.base": (mix,), p + "ffn_hc.scale": (3,),
            p + "self_attn.q_a_proj.weight": (q, d), p + "self_attn.q_a_norm.weight": (q,),
            p + "self_attn.q_b_proj.weight": (h * hd, q), p + "self_attn.kv_proj.weight": (hd, d),
            p + "self_attn.kv_norm.weight": (hd,), p + "self_attn.o_a_proj.weight": (g * ol, h * hd // g),
            p + "self_attn.o_b_proj.weight": (d, g * ol), p + "self_attn.sinks": (h,),
            p + "mlp.gate.weight": (e, d),
            p + "mlp.experts.gate_up_proj": (e, 2 * inter, d), p + "mlp.experts.down_proj": (e, d, inter),
            p + "mlp.shared_experts.gate_proj.weight": (inter, d), p + "mlp.shared_experts.up_proj.weight": (inter, d),
            p + "mlp.shared_experts.down_proj.weight": (d, inter),
        })
        c = p + "self_attn.compressor."
        if attn == CSA:
            rate = cfg["compress_rates"][CSA]
            shapes.update({
                c + "kv_proj.weight": (2 * hd, d), c + "gate_proj.weight": (2 * hd, d),
                c + "position_bias": (rate, 2 * hd), c + "kv_norm.weight": (hd,),
                c + "indexer.kv_proj.weight": (2 * ihd, d), c + "indexer.gate_proj.weight": (2 * ihd, d),
                c + "indexer.position_bias": (rate, 2 * ihd), c + "indexer.kv_norm.weight": (ihd,),
                c + "indexer.q_b_proj.weight": (ih * ihd, q), c + "indexer.scorer.weights_proj.weight": (ih, d),
            })
        elif attn == HCA:
            rate = cfg["compress_rates"][HCA]
            shapes.update({
                c + "kv_proj.weight": (hd, d), c + "gate_proj.weight": (hd, d),
                c + "position_bias": (rate, hd), c + "kv_norm.weight": (hd,),
            })
        if mlp == "hash_moe":
            shapes[p + "mlp.gate.tid2eid"] = (v, k)
        else:
            shapes[p + "mlp.gate.e_score_correction_bias"] = (e,)
    return shapes


def released_shapes(cfg):
    """{released weight name: (kind, logical shape)} for the same model."""
    inter = cfg["moe_intermediate_size"]
    out = {}
    for hf_name, shape in hf_param_shapes(cfg).items():
        which = expert_layer(hf_name)
        if which is not None:
            layer, part = which
            for e in range(shape[0]):
                if part == "gate_up":
                    out[expert_weight_name(layer, e, "w1")] = ("fp4", (inter, shape[2]))
                    out[expert_weight_name(layer, e, "w3")] = ("fp4", (inter, shape[2]))
                else:
                    out[expert_weight_name(layer, e, "w2")] = ("fp4", (shape[1], shape[2]))
            continue
        name = released_name(hf_name)
        if name is None:
            raise ValueError(f"no released name for {hf_name}")
        out[name] = (storage_kind(name), shape)
    return out


def estimated_checkpoint_bytes(cfg):
    return sum(stored_bytes(kind, shape) for kind, shape in released_shapes(cfg).values())
