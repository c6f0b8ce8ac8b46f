#!/usr/bin/env python3
"""Times the vendor BLAS (through PyTorch) on the dense prefill products of the Flash geometry:
bf16 operands, x split in two bf16 parts (2 x tokens columns), float sums. A what-if for issue 17:
how long the dense products of one layer would take on cuBLAS once the FP8 weights are bf16.
Usage: blas-shapes.py TOKENS [REPS]"""
import sys, torch

tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
dev = "cuda"
# (name, rows, cols, groups): y[t, r] = W[r] . x[t]; groups split rows and x's columns alike.
shapes = [("wq_a", 1024, 4096, 1), ("wq_b", 32768, 1024, 1), ("wkv", 512, 4096, 1),
          ("wo_a", 8192, 4096, 8), ("wo_b", 4096, 8192, 1), ("shared w1", 2048, 4096, 1),
          ("shared w3", 2048, 4096, 1), ("shared w2", 4096, 2048, 1)]
total = 0.0
for name, rows, cols, groups in shapes:
    w = torch.randn(groups, rows // groups, cols, device=dev).to(torch.bfloat16)
    x = torch.randn(groups, 2 * tokens, cols, device=dev).to(torch.bfloat16)
    out = torch.empty(groups, 2 * tokens, rows // groups, device=dev, dtype=torch.float32)
    def run():
        # float output as in the engine: bf16 inputs, float sums
        try:
            torch.bmm(x, w.transpose(1, 2), out_dtype=torch.float32, out=out)
        except TypeError:
            out.copy_(torch.bmm(x, w.transpose(1, 2)))
    for _ in range(3): run()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps): run()
    e.record(); torch.cuda.synchronize()
    us = s.elapsed_time(e) * 1000 / reps
    flop = 2.0 * 2 * tokens * rows * cols
    total += us
    print(f"{name:10s} rows {rows:6d} cols {cols:5d} groups {groups}: {us:8.1f} us  {flop / us / 1e6:6.1f} TFLOP/s")
# the dequantization a layer would add: read FP8 (1 B) + scale, write bf16 (2 B) per weight
print(f"layer total {total:.1f} us for {tokens} tokens (x split: {2 * tokens} columns)")
