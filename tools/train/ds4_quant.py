"""FP8 (e4m3 + e8m0 128x128 block scales) and FP4 (e2m1 + e8m0 per 32 inputs) codecs in torch.

Layouts as in docs/deepseek-v4.md §4.2:
- FP8: W[i,j] = e4m3(q[i,j]) * 2^(s[i//128, j//128] - 127).
- FP4: byte [i,k] holds element [i,2k] in its low nibble and [i,2k+1] in its high nibble;
  W[i,j] = e2m1(code) * 2^(s[i, j//32] - 127).
Scales are stored as raw e8m0 bytes (uint8), so no float8_e8m0 torch dtype is needed.
check_codecs() compares these against the scalar decoders in ds4_layout on random samples.
"""
import random

import torch

import ds4_layout as layout

E4M3_MAX = 448.0
E2M1_MAX = 6.0
_E2M1_MAGNITUDES = torch.tensor(layout.E2M1_MAGNITUDE, dtype=torch.float32)


def _power_of_two_exponent(amax, top):
    """Smallest e with amax / 2^e <= top (0 for all-zero blocks), clamped to e8m0's range."""
    safe = torch.where(amax > 0, amax, torch.ones_like(amax))
    exponent = torch.ceil(torch.log2(safe / top))
    # log2 of a float can land a hair below an exact power of two; step up where it did.
    exponent = torch.where(safe / torch.exp2(exponent) > top, exponent + 1, exponent)
    exponent = torch.where(amax > 0, exponent, torch.zeros_like(exponent))
    return exponent.clamp(-127, 127)


def quantize_fp8(weight):
    """[out, in] float -> (e4m3 codes as uint8 [out, in], e8m0 bytes [ceil(out/128), ceil(in/128)])."""
    w = weight.detach().float()
    rows, cols = w.shape
    b = layout.FP8_BLOCK
    br, bc = -(-rows // b), -(-cols // b)
    padded = torch.zeros(br * b, bc * b, dtype=torch.float32, device=w.device)
    padded[:rows, :cols] = w
    amax = padded.abs().view(br, b, bc, b).amax(dim=(1, 3))
    exponent = _power_of_two_exponent(amax, E4M3_MAX)
    scale = torch.exp2(exponent).repeat_interleave(b, 0).repeat_interleave(b, 1)[:rows, :cols]
    codes = (w / scale).to(torch.float8_e4m3fn).view(torch.uint8)
    return codes.contiguous(), (exponent + 127).to(torch.uint8).contiguous()


def dequantize_fp8(codes, scales):
    rows, cols = codes.shape
    b = layout.FP8_BLOCK
    values = codes.view(torch.float8_e4m3fn).float()
    scale = torch.exp2(scales.float() - 127).repeat_interleave(b, 0).repeat_interleave(b, 1)[:rows, :cols]
    return values * scale


def quantize_fp4(weight):
    """[out, in] float -> (packed int8 [out, in/2], e8m0 bytes [out, in/32])."""
    w = weight.detach().float()
    rows, cols = w.shape
    g = layout.FP4_GROUP
    if cols % g:
        raise ValueError(f"FP4 needs the input dim to be a multiple of {g}, got {cols}")
    groups = w.view(rows, cols // g, g)
    exponent = _power_of_two_exponent(groups.abs().amax(dim=-1), E2M1_MAX)
    scaled = groups / torch.exp2(exponent).unsqueeze(-1)
    magnitudes = _E2M1_MAGNITUDES.to(w.device)
    index = (scaled.abs().unsqueeze(-1) - magnitudes).abs().argmin(dim=-1).to(torch.uint8)
    negative = (scaled < 0) & (index > 0)
    codes = (index | (negative.to(torch.uint8) << 3)).view(rows, cols)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    return packed.view(torch.int8).contiguous(), (exponent + 127).to(torch.uint8).contiguous()


def dequantize_fp4(packed, scales):
    rows, half = packed.shape
    raw = packed.view(torch.uint8)
    codes = torch.stack([raw & 0xF, raw >> 4], dim=-1).view(rows, half * 2)
    magnitudes = _E2M1_MAGNITUDES.to(packed.device)[(codes & 7).long()]
    values = torch.where((codes & 8) != 0, -magnitudes, magnitudes)
    scale = torch.exp2(scales.float() - 127).repeat_interleave(layout.FP4_GROUP, dim=1)
    return values * scale


def check_codecs(seed=0):
    """Aborts unless the torch codecs agree with the scalar decoders and keep errors small."""
    gen = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    # Odd shapes exercise the partial FP8 blocks; the outlier column exercises per-block scales.
    w = torch.randn(300, 200, generator=gen) * 0.05
    w[:, 7] *= 40.0
    codes, scales = quantize_fp8(w)
    assert codes.shape == (300, 200) and scales.shape == (3, 2), (codes.shape, scales.shape)
    deq = dequantize_fp8(codes, scales)
    q_rows = codes.tolist()
    s_rows = scales.tolist()
    for _ in range(500):
        i, j = rng.randrange(300), rng.randrange(200)
        ref = layout.fp8_element(q_rows, s_rows, i, j)
        assert abs(ref - deq[i, j].item()) <= 1e-12 * max(1.0, abs(ref)), ("fp8 decode", i, j, ref, deq[i, j].item())
    rel = ((deq - w).norm() / w.norm()).item()
    assert rel < 0.05, f"fp8 relative error {rel}"
    # Quantizing the decoded values again must give the same values (the codes may differ when
    # rounding moved a block maximum across a power of two, which rescales exactly).
    assert torch.equal(dequantize_fp8(*quantize_fp8(deq)), deq), "fp8 is not idempotent"

    w4 = torch.randn(96, 128, generator=gen) * 0.02
    w4[3, 64:96] *= 30.0
    packed, scales4 = quantize_fp4(w4)
    assert packed.shape == (96, 64) and packed.dtype == torch.int8 and scales4.shape == (96, 4)
    deq4 = dequantize_fp4(packed, scales4)
    p_rows = packed.view(torch.uint8).tolist()
    s4_rows = scales4.tolist()
    for _ in range(500):
        i, j = rng.randrange(96), rng.randrange(128)
        ref = layout.fp4_element(p_rows[i], s4_rows[i], j)
        assert ref == deq4[i, j].item(), ("fp4 decode", i, j, ref, deq4[i, j].item())
    rel4 = ((deq4 - w4).norm() / w4.norm()).item()
    assert rel4 < 0.2, f"fp4 relative error {rel4}"
    assert torch.equal(dequantize_fp4(*quantize_fp4(deq4)), deq4), "fp4 is not idempotent"
    # The nibble order, pinned on a hand-made row: element 0 is 1.0 (code 2, low nibble) and
    # element 1 is -6.0 (code 0xF, high nibble); amax 6 gives scale 2^0 (byte 127).
    row = torch.zeros(1, 32)
    row[0, 0], row[0, 1] = 1.0, -6.0
    p, s = quantize_fp4(row)
    assert s[0, 0].item() == 127, s
    assert p.view(torch.uint8)[0, 0].item() == 0xF2, p.view(torch.uint8)[0, 0]
    return rel, rel4
