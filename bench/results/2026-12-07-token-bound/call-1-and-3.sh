#!/usr/bin/env bash
# Session 2026-12-07b call 2: issue 16's grid (bench/gpu/replay-grid.sh, two repetitions) on the
# 12-layer Flash slice under the held-out trace's routing, mapped transport.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$o/gpu.txt"; date -u | tee -a "$o/gpu.txt"
[ -x build-gpu/bin/moepage ] || tar xJf build-carry/gpu.tar.xz
REPS=${REPS:-2} timeout 570 bench/gpu/replay-grid.sh build-gpu "$o/g" /tmp/flash12 256 12 > "$o/g.log" 2>&1
echo "rc=$? t=$((SECONDS - T0))"
cat "$o/g/grid.md" 2>/dev/null || tail -20 "$o/g.log"
head -1 "$o/g/bound.txt" 2>/dev/null
mv "$o/g.log" "$o/g/"; tools/device/pack_out.sh "$o/g" grid
