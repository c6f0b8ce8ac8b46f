"""Hugging Face DeepseekV4ForCausalLM state_dict <-> released-layout safetensors (torch).

export_tensors(): quantizes and renames every tensor (FP8 dense projections, FP4 experts,
BF16 / F32 / I64 for the rest) and refuses any name it does not know.
load_dequantized(): reads the written file back into a Hugging Face state_dict of float32
(and int64) tensors, so the reference model is exactly what the engine will load.
"""
import re

import torch

import ds4_layout as layout
import ds4_quant as quant

_DTYPE_NAME = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64"}


def _raw(tensor):
    return tensor.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()


def _entry(name, dtype_name, tensor):
    return (name, dtype_name, tuple(tensor.shape), _raw(tensor))


def export_one(name, tensor, out):
    kind = layout.storage_kind(name)
    if kind == "fp8":
        codes, scales = quant.quantize_fp8(tensor)
        out.append(_entry(name, "F8_E4M3", codes))
        out.append(_entry(layout.scale_name(name), "F8_E8M0", scales))
    elif kind == "fp4":
        packed, scales = quant.quantize_fp4(tensor)
        out.append(_entry(name, "I8", packed))
        out.append(_entry(layout.scale_name(name), "F8_E8M0", scales))
    elif kind == "bf16":
        out.append(_entry(name, "BF16", tensor.detach().to(torch.bfloat16)))
    elif kind == "f32":
        out.append(_entry(name, "F32", tensor.detach().float()))
    elif kind == "i64":
        out.append(_entry(name, "I64", tensor.detach().to(torch.int64)))
    else:
        raise AssertionError(kind)


def export_tensors(state_dict, intermediate_size):
    """[(released name, dtype, shape, bytes)] for every tensor of the Hugging Face state_dict."""
    out = []
    unknown = []
    for hf_name, tensor in state_dict.items():
        experts = layout.expert_layer(hf_name)
        if experts is not None:
            layer, which = experts
            for e in range(tensor.shape[0]):
                if which == "gate_up":  # rows [0, I) are W1 (gate), rows [I, 2I) are W3 (up)
                    export_one(layout.expert_weight_name(layer, e, "w1"), tensor[e, :intermediate_size], out)
                    export_one(layout.expert_weight_name(layer, e, "w3"), tensor[e, intermediate_size:], out)
                else:
                    export_one(layout.expert_weight_name(layer, e, "w2"), tensor[e], out)
            continue
        released = layout.released_name(hf_name)
        if released is None:
            unknown.append(hf_name)
            continue
        export_one(released, tensor, out)
    if unknown:
        raise SystemExit(f"export: no released name for {len(unknown)} tensors: {unknown[:8]}")
    return out


def _tensor(dtype, shape, data):
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    view = {"F32": torch.float32, "BF16": torch.bfloat16, "I64": torch.int64, "I8": torch.int8,
            "F8_E4M3": torch.uint8, "F8_E8M0": torch.uint8}[dtype]
    return raw.view(view).reshape(shape)


_EXPERT = re.compile(r"^layers\.(\d+)\.ffn\.experts\.(\d+)\.(w[123])\.weight$")


def load_dequantized(path, hf_names, ignore_prefix=None):
    """Reads the released file and returns a Hugging Face state_dict covering exactly hf_names.

    Tensors whose names start with ignore_prefix (e.g. "mtp.", a block HF does not build) are skipped.
    """
    tensors, _ = layout.read_safetensors(path)
    weights = {}
    for name, (dtype, shape, data) in tensors.items():
        if name.endswith(".scale") or (ignore_prefix and name.startswith(ignore_prefix)):
            continue
        t = _tensor(dtype, shape, data)
        if dtype == "F8_E4M3":
            sd, ss, sdata = tensors[layout.scale_name(name)]
            weights[name] = quant.dequantize_fp8(t, _tensor(sd, ss, sdata))
        elif dtype == "I8":
            sd, ss, sdata = tensors[layout.scale_name(name)]
            weights[name] = quant.dequantize_fp4(t, _tensor(sd, ss, sdata))
        elif dtype == "I64":
            weights[name] = t.clone()
        else:
            weights[name] = t.float()
    experts = {}
    for name in list(weights):
        m = _EXPERT.match(name)
        if m:
            experts[(int(m.group(1)), int(m.group(2)), m.group(3))] = weights.pop(name)
    state = {}
    for hf_name in hf_names:
        which = layout.expert_layer(hf_name)
        if which is not None:
            layer, part = which
            count = 1 + max(e for (l, e, _) in experts if l == layer)
            if part == "gate_up":
                state[hf_name] = torch.stack([torch.cat([experts[(layer, e, "w1")], experts[(layer, e, "w3")]], 0)
                                              for e in range(count)])
            else:
                state[hf_name] = torch.stack([experts[(layer, e, "w2")] for e in range(count)])
            continue
        released = layout.released_name(hf_name)
        if released not in weights:
            raise SystemExit(f"reload: {path} has no tensor {released} (for {hf_name})")
        state[hf_name] = weights.pop(released)
    if weights:
        raise SystemExit(f"reload: {path} has tensors the model does not use: {sorted(weights)[:8]}")
    return state
