"""The released spelling of a DeepSeek-V4 checkpoint, as make_fixtures.py writes it: FP8 dense
weights (e4m3 + e8m0 128x128 block scales), FP4 experts (I8 pairs, low nibble = even column, +
e8m0 per 32 inputs), BF16 / F32 for the rest as in DeepSeek-V4-Flash; sharded safetensors with an
index, checked byte for byte after writing. Returns the dequantized weights the reference uses."""
import json
import os
import struct

import numpy as np
import torch

# Attention kinds as Hugging Face spells them in layer_types.
CSA = "compressed_sparse_attention"
HCA = "heavily_compressed_attention"
SLIDING = "sliding_attention"

E2M1_MAGNITUDES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float64)


def e8m0_ceil(x):
    """Exponent byte of the smallest power of two >= x (x > 0)."""
    e = np.ceil(np.log2(np.maximum(x, 2.0 ** -126)))
    return np.clip(e + 127, 1, 254).astype(np.uint8)


def e8m0_value(b):
    return np.exp2(b.astype(np.float64) - 127)


def quantize_fp8(w):
    """w: float32 [rows, cols] -> (e4m3 bytes [rows, cols], e8m0 [ceil(r/128), ceil(c/128)], dequantized)."""
    rows, cols = w.shape
    br, bc = -(-rows // 128), -(-cols // 128)
    scale = np.zeros((br, bc), dtype=np.uint8)
    codes = np.zeros((rows, cols), dtype=np.uint8)
    deq = np.zeros((rows, cols), dtype=np.float32)
    for i in range(br):
        for j in range(bc):
            blk = w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            s = e8m0_ceil(np.abs(blk).max() / 448.0)
            scale[i, j] = s
            q = torch.from_numpy((blk / e8m0_value(s)).astype(np.float32)).to(torch.float8_e4m3fn)
            codes[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = q.view(torch.uint8).numpy()
            deq[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = (q.to(torch.float64).numpy() * e8m0_value(s)).astype(np.float32)
    return codes, scale, deq


def quantize_fp4(w):
    """w: float32 [rows, cols] -> (packed bytes [rows, cols/2], e8m0 [rows, cols/32], dequantized)."""
    rows, cols = w.shape
    assert cols % 32 == 0, "FP4 needs the input width to be a multiple of 32"
    groups = w.reshape(rows, cols // 32, 32).astype(np.float64)
    scale = e8m0_ceil(np.abs(groups).max(axis=2) / 6.0)
    x = groups / e8m0_value(scale)[:, :, None]
    mag = np.abs(x)
    code = np.abs(mag[..., None] - E2M1_MAGNITUDES).argmin(axis=-1).astype(np.uint8)  # nearest magnitude
    code = code | np.where(x < 0, 8, 0).astype(np.uint8)
    deq = (np.where(code & 8, -1.0, 1.0) * E2M1_MAGNITUDES[code & 7]) * e8m0_value(scale)[:, :, None]
    code = code.reshape(rows, cols)
    packed = (code[:, 0::2] | (code[:, 1::2] << 4)).astype(np.uint8)
    return packed, scale, deq.reshape(rows, cols).astype(np.float32)


def to_bf16(w):
    t = torch.from_numpy(np.ascontiguousarray(w)).to(torch.bfloat16)
    return t.view(torch.int16).numpy().view(np.uint16), t.to(torch.float32).numpy()


def released_tensors(model):
    """{released name: (safetensors dtype, numpy array)} and {HF param name: dequantized float32}."""
    cfg = model.config
    sd = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    used, out, deq = set(), {}, {}

    def take(hf):
        assert hf in sd, f"HF state dict has no {hf}"
        used.add(hf)
        return sd[hf].to(torch.float32).numpy() if sd[hf].is_floating_point() else sd[hf].numpy()

    def f32(name, hf):
        v = take(hf)
        out[name] = ("F32", v.astype(np.float32))
        deq[hf] = v.astype(np.float32)

    def bf16(name, hf):
        bits, back = to_bf16(take(hf))
        out[name] = ("BF16", bits)
        deq[hf] = back

    def fp8(name, hf):
        codes, scale, back = quantize_fp8(take(hf))
        out[name + ".weight"] = ("F8_E4M3", codes)
        out[name + ".scale"] = ("F8_E8M0", scale)
        deq[hf] = back

    bf16("embed.weight", "model.embed_tokens.weight")
    bf16("head.weight", "lm_head.weight")
    bf16("norm.weight", "model.norm.weight")
    for part in ("fn", "base", "scale"):
        f32(f"hc_head_{part}", f"model.hc_head.hc_{part}")
    I = cfg.moe_intermediate_size
    for L in range(cfg.num_hidden_layers):
        h, r = f"model.layers.{L}.", f"layers.{L}."
        for site, hf_site in (("attn", "attn_hc"), ("ffn", "ffn_hc")):
            for part in ("fn", "base", "scale"):
                f32(f"{r}hc_{site}_{part}", f"{h}{hf_site}.{part}")
        bf16(r + "attn_norm.weight", h + "input_layernorm.weight")
        bf16(r + "ffn_norm.weight", h + "post_attention_layernorm.weight")
        a = h + "self_attn."
        fp8(r + "attn.wq_a", a + "q_a_proj.weight")
        bf16(r + "attn.q_norm.weight", a + "q_a_norm.weight")
        fp8(r + "attn.wq_b", a + "q_b_proj.weight")
        fp8(r + "attn.wkv", a + "kv_proj.weight")
        bf16(r + "attn.kv_norm.weight", a + "kv_norm.weight")
        fp8(r + "attn.wo_a", a + "o_a_proj.weight")
        fp8(r + "attn.wo_b", a + "o_b_proj.weight")
        f32(r + "attn.attn_sink", a + "sinks")
        kind = cfg.layer_types[L]
        if kind != SLIDING:
            c = a + "compressor."
            bf16(r + "attn.compressor.wkv.weight", c + "kv_proj.weight")
            bf16(r + "attn.compressor.wgate.weight", c + "gate_proj.weight")
            f32(r + "attn.compressor.ape", c + "position_bias")
            bf16(r + "attn.compressor.norm.weight", c + "kv_norm.weight")
        if kind == CSA:
            i = a + "compressor.indexer."
            bf16(r + "attn.indexer.compressor.wkv.weight", i + "kv_proj.weight")
            bf16(r + "attn.indexer.compressor.wgate.weight", i + "gate_proj.weight")
            f32(r + "attn.indexer.compressor.ape", i + "position_bias")
            bf16(r + "attn.indexer.compressor.norm.weight", i + "kv_norm.weight")
            fp8(r + "attn.indexer.wq_b", i + "q_b_proj.weight")
            bf16(r + "attn.indexer.weights_proj.weight", i + "scorer.weights_proj.weight")
        m = h + "mlp."
        bf16(r + "ffn.gate.weight", m + "gate.weight")
        if cfg.mlp_layer_types[L] == "hash_moe":
            out[r + "ffn.gate.tid2eid"] = ("I64", take(m + "gate.tid2eid").astype(np.int64))
        else:
            f32(r + "ffn.gate.bias", m + "gate.e_score_correction_bias")
        fp8(r + "ffn.shared_experts.w1", m + "shared_experts.gate_proj.weight")
        fp8(r + "ffn.shared_experts.w3", m + "shared_experts.up_proj.weight")
        fp8(r + "ffn.shared_experts.w2", m + "shared_experts.down_proj.weight")
        gate_up, down = take(m + "experts.gate_up_proj"), take(m + "experts.down_proj")
        deq_gate_up, deq_down = np.zeros_like(gate_up), np.zeros_like(down)
        for e in range(cfg.n_routed_experts):
            for part, w, dst, rows in (("w1", gate_up[e, :I], deq_gate_up[e], slice(0, I)),
                                       ("w3", gate_up[e, I:], deq_gate_up[e], slice(I, 2 * I)),
                                       ("w2", down[e], deq_down[e], slice(None))):
                packed, scale, back = quantize_fp4(np.ascontiguousarray(w))
                out[f"{r}ffn.experts.{e}.{part}.weight"] = ("I8", packed.view(np.int8))
                out[f"{r}ffn.experts.{e}.{part}.scale"] = ("F8_E8M0", scale)
                dst[rows] = back
        deq[m + "experts.gate_up_proj"] = deq_gate_up
        deq[m + "experts.down_proj"] = deq_down
    missing = sorted(set(sd) - used)
    assert not missing, f"HF tensors left out of the released spelling: {missing}"
    return out, deq


def write_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        dtype, arr = tensors[name]
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def read_safetensors_raw(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return header, data


def write_released(dirpath, model, n_shards=3):
    tensors, deq = released_tensors(model)
    # Shard by layer so experts of one layer stay in one file (as the real checkpoint does).
    names = sorted(tensors)
    shard_of = {}
    for name in names:
        layer = int(name.split(".")[1]) if name.startswith("layers.") else -1
        shard_of[name] = 0 if layer < 0 else 1 + layer % (n_shards - 1)
    weight_map = {}
    for s in range(n_shards):
        fname = f"model-{s + 1:05d}-of-{n_shards:05d}.safetensors"
        part = {n: tensors[n] for n in names if shard_of[n] == s}
        write_safetensors(os.path.join(dirpath, fname), part)
        weight_map.update({n: fname for n in part})
    total = sum(np.asarray(a).nbytes for _, a in tensors.values())
    with open(os.path.join(dirpath, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1, sort_keys=True)
    # Self-check: what is on disk decodes to the dequantized weights the reference uses.
    for fname in sorted(set(weight_map.values())):
        header, data = read_safetensors_raw(os.path.join(dirpath, fname))
        for name, meta in header.items():
            dt, arr = tensors[name]
            b, e = meta["data_offsets"]
            assert meta["dtype"] == dt and meta["shape"] == list(arr.shape), name
            assert data[b:e] == np.ascontiguousarray(arr).tobytes(), f"{fname}:{name} bytes differ"
    return deq
