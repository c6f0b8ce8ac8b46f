#!/usr/bin/env bash
# Session 2026-12-07c call 2 (H200 only): issue 16's grid (bench/gpu/replay-grid.sh, two
# repetitions) on the 12-layer Flash slice under the held-out trace's routing, mapped transport;
# then, with the time left, the resident decode traces of next-h200-traces.sh (4 and 12 layers).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$o/gpu.txt"; date -u | tee -a "$o/gpu.txt"
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
[ -x build-gpu/bin/moepage ] || tar xJf build-carry/gpu.tar.xz
REPS=${REPS:-2} timeout 400 bench/gpu/replay-grid.sh build-gpu "$o/g" /tmp/flash12 256 12 > "$o/g.log" 2>&1
echo "grid rc=$? t=$((SECONDS - T0))"
cat "$o/g/grid.md" 2>/dev/null || tail -20 "$o/g.log"
head -1 "$o/g/bound.txt" 2>/dev/null
mv "$o/g.log" "$o/g/"; tools/device/pack_out.sh "$o/g" grid
for n in 4 12; do
  left=$((560 - (SECONDS - T0)))
  [ $left -gt 90 ] || break
  FLASH_MODEL_DIR=/tmp/flash$n timeout $left bench/gpu/decode-trace.sh build-gpu "$o/t$n" $n 256 100 200 > "$o/t$n.log" 2>&1
  echo "trace layers $n rc=$? t=$((SECONDS - T0))"
  head -45 "$o/t$n/trace-table.txt" 2>/dev/null || tail "$o/t$n.log"
  xz -T8 -6 "$o/t$n/kernels.csv" 2>/dev/null; mv "$o/t$n.log" "$o/t$n/"
  tools/device/pack_out.sh "$o/t$n" "t$n"
done
echo "end t=$((SECONDS - T0))"
