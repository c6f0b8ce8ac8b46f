#!/usr/bin/env bash
# Ran 2026-12-07 (fourth session) call 2, 08:58 UTC, on an H100 (asked as nvidia-h200): the probe only (not an H200).
# Results: ../2026-12-07-control-latency.md
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
for i in 1 2 3; do build-gpu/bin/control_latency --reps 400 | tee "$o/control-latency-$i.json"; done
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash tmp-drivers/next-prefill-and-uring.sh
fi
echo "end t=$((SECONDS - T0))"
