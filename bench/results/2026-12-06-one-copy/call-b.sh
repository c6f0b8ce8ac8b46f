#!/usr/bin/env bash
# Device call B: the same machine, warm, right after call A (build-base, build-gpu and /tmp/flash12
# still there): the grid again, two repetitions.
ls /tmp/flash12 | head -2 && nvidia-smi --query-gpu=name --format=csv,noheader &&
  bench/gpu/replay-builds-ab.sh build-base build-gpu "$OUT/ab2" /tmp/flash12 256 2 > "$OUT/ab2.txt" 2>&1
tail -25 "$OUT/ab2.txt"
tools/device/pack_out.sh "$OUT/ab2" ab2
