#!/usr/bin/env bash
# NOT RUN (2026-12-07c): no machine could be started for it; the device time ran out.
# Session 2026-12-07c call 3 (H200 only): issue 16's paged prefill of a 2,048-token prompt
# (bench/gpu/paged-prefill.sh, 4-layer Flash slice) and the io-uring transport reading experts
# cold from the disk beside the disk's own O_DIRECT rate (bench/gpu/uring-cold-sweep.sh), on
# main's build (e6ddb68's GPU code).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o" H200 || exit 0
mkdir -p "$o/pp"
FLASH_MODEL_DIR=/tmp/flash4 timeout 230 bench/gpu/paged-prefill.sh build-gpu "$o/pp" 2048 > "$o/pp/pp.log" 2>&1
echo "paged prefill rc=$? t=$((SECONDS - T0))"
tail -25 "$o/pp/pp.log"; cat "$o/pp/summary.txt" 2>/dev/null | tail -20
tools/device/pack_out.sh "$o/pp" pp
left=$((430 - (SECONDS - T0)))
if [ $left -gt 90 ]; then
  mkdir -p "$o/uc"
  timeout $left bench/gpu/uring-cold-sweep.sh build-gpu "$o/uc" /tmp/flash4 16 4 > "$o/uc/uc.log" 2>&1
  echo "uring cold rc=$? t=$((SECONDS - T0))"
  cat "$o/uc/summary.txt" 2>/dev/null || tail -20 "$o/uc/uc.log"
  tools/device/pack_out.sh "$o/uc" uc
fi
echo "end t=$((SECONDS - T0))"
