#!/bin/bash
# Session 2026-12-06b call 2 (warm, after call 1): decode A/B at 12 layers against main's plugin.
o=$1; mkdir -p $o
[ -d build-gpu/bin ] || tar xJf build-carry/gpu.tar.xz
[ -d build-z/bin ] || tools/device/baseline.sh unpack > $o/baseline.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $o/gpu.txt; cat $o/gpu.txt
export FLASH_MODEL_DIR=/tmp/flash12
timeout 560 bench/gpu/decode-arms.sh $o/d12 256 12 2 base=build-z new=build-gpu > $o/d12.log 2>&1
grep -vE "^(synth|[0-9]+\s)" $o/d12/summary.txt | cut -c1-200
tools/device/pack_out.sh $o
