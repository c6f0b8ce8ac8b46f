#!/usr/bin/env bash
# The start every device-call driver shares: names the card, driver and time in OUT/gpu.txt (and on
# stdout), refuses (exit 3, nothing else done) when a card of NEED was asked for and another came,
# and unpacks build-carry/gpu.tar.xz into build-gpu/ unless a build is there already.
#   bash tools/device/call_start.sh OUT [NEED]      e.g. NEED=H200; a driver then does `|| exit 0`
set -uo pipefail
out=${1:?usage: tools/device/call_start.sh OUT [NEED]}
need=${2:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
if [ -n "$need" ] && ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "$need"; then
  echo "not an $need: nothing run"
  exit 3
fi
[ -x build-gpu/bin/moepage ] || tar xJf build-carry/gpu.tar.xz
