#!/usr/bin/env bash
# Device call E (2026-12-06 evening): issue 17's must-shows on an H200 for main's build, in what
# the session's device time still allows (about 270 s): the golden-fixture and neutrality suites,
# prefill of the 4-layer slice beside HF transformers, resident decode at 4 layers. Anything but an
# H200 stops at once (its H100 figures are recorded).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee "$o/gpu.txt"
date -u | tee -a "$o/gpu.txt"
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then echo "not an H200: nothing run"; exit 0; fi
tar xJf build-carry/gpu.tar.xz
timeout 40 tools/device/run_all.sh "$o/s" ds4-hip-forward ds4-hip-run > "$o/suites.log" 2>&1
tail -4 "$o/suites.log"; echo "t=$((SECONDS - T0))"
FLASH_MODEL_DIR=/tmp/flash4 REPS=1 timeout 150 bench/gpu/prefill-arms.sh build-gpu "$o/pa" 1024,4096 4096 main= > "$o/pa.log" 2>&1
cat "$o/pa/table.md" 2>/dev/null; echo "t=$((SECONDS - T0))"
left=$((250 - (SECONDS - T0)))
[ $left -gt 30 ] && FLASH_MODEL_DIR=/tmp/flash4 timeout $left bench/gpu/decode-arms.sh "$o/d4" 256 4 2 main=build-gpu > "$o/d4.log" 2>&1
grep -oE '^== .*|"decode_tok_s": [0-9.]+|"roofline_fraction": [0-9.]+|distinct.*' "$o/d4/summary.txt" 2>/dev/null | paste - - - ; echo "t=$((SECONDS - T0))"
tools/device/pack_out.sh "$o"
