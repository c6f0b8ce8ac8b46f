#!/usr/bin/env bash
# Written 2026-12-07 (second session), NOT RUN (H200 only): where the resident decode step goes on an H200, 4 and 12
# layers (bench/gpu/decode-trace.sh, steps 100-199), the kernel CSVs kept compressed.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/gpu.txt"; date -u | tee -a "$o/gpu.txt"
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
[ -x build-gpu/bin/moepage ] || tar xJf build-carry/gpu.tar.xz
for n in 4 12; do
  [ $((SECONDS - T0)) -lt 400 ] || break
  FLASH_MODEL_DIR=/tmp/flash$n timeout 200 bench/gpu/decode-trace.sh build-gpu "$o/t$n" $n 256 100 200 > "$o/t$n.log" 2>&1
  echo "layers $n rc=$? t=$((SECONDS - T0))"
  head -45 "$o/t$n/trace-table.txt" 2>/dev/null || tail "$o/t$n.log"
  xz -T8 -6 "$o/t$n/kernels.csv" 2>/dev/null; mv "$o/t$n.log" "$o/t$n/"
  tools/device/pack_out.sh "$o/t$n" "t$n"
done
