#!/usr/bin/env bash
# Written 2026-12-07 (second session), NOT RUN (no H200 came). On an H200: issue 17's must-shows
# for main's build (GPU suites with the golden and long-prompt fixtures and the neutrality gate,
# prefill of 1,024 and 4,096 tokens beside HF transformers, resident decode at 4 and 12 layers).
# On any other card: the deferral's driver (2026-12-07-deferral-and-top-m/next-call.sh).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee "$o/gpu.txt"
date -u | tee -a "$o/gpu.txt"
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200: next-call.sh"; exec bash tmp-drivers/next-call.sh
fi
tar xJf build-carry/gpu.tar.xz
timeout 90 tools/device/run_all.sh "$o/s" ds4-hip-kernels ds4-hip-forward ds4-hip-run > "$o/suites.log" 2>&1; mv "$o/suites.log" "$o/s/"
tail -6 "$o/s/suites.log"; echo "t=$((SECONDS - T0))"
tools/device/pack_out.sh "$o/s" suites
FLASH_MODEL_DIR=/tmp/flash4 REPS=2 timeout 230 bench/gpu/prefill-arms.sh build-gpu "$o/pa" 1024,4096 4096 main= > "$o/pa.log" 2>&1
cat "$o/pa/table.md" 2>/dev/null; echo "t=$((SECONDS - T0))"
mv "$o/pa.log" "$o/pa/" 2>/dev/null; tools/device/pack_out.sh "$o/pa" pa
FLASH_MODEL_DIR=/tmp/flash4 timeout 80 bench/gpu/decode-arms.sh "$o/d4" 256 4 3 main=build-gpu > "$o/d4.log" 2>&1
grep -oE '^== .*|"decode_tok_s": [0-9.]+|"roofline_fraction": [0-9.]+|distinct.*|identical.*' "$o/d4/summary.txt" 2>/dev/null | paste - - - ; echo "t=$((SECONDS - T0))"
mv "$o/d4.log" "$o/d4/" 2>/dev/null; tools/device/pack_out.sh "$o/d4" d4
left=$((${S1_LIMIT:-560} - (SECONDS - T0)))
[ $left -gt 60 ] && FLASH_MODEL_DIR=/tmp/flash12 timeout $left bench/gpu/decode-arms.sh "$o/d12" 256 12 2 main=build-gpu > "$o/d12.log" 2>&1
grep -oE '^== .*|"decode_tok_s": [0-9.]+|"roofline_fraction": [0-9.]+|distinct.*|identical.*' "$o/d12/summary.txt" 2>/dev/null | paste - - - ; echo "t=$((SECONDS - T0))"
mv "$o/d12.log" "$o/d12/" 2>/dev/null; tools/device/pack_out.sh "$o/d12" d12
