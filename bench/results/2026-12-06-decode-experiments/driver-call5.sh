#!/bin/bash
# Session 2026-12-06c call 5: decode with wq_b and wo_a prefetched into L2 (arch.l2_prefetch) against the same build without.
o=$1; mkdir -p $o
tar xJf build-carry/gpu.tar.xz
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/gpu.txt; cat $o/gpu.txt
summ() { grep -vE "^(synth|[0-9]+\s)" $1/summary.txt | grep -o '^==.*\|"decode_tok_s": [0-9.]*\|"roofline_fraction": [0-9.]*\|distinct.*' | paste -sd' ' | sed 's/==/\n==/g'; echo; }
export FLASH_MODEL_DIR=/tmp/flash4
timeout 200 bench/gpu/decode-arms.sh $o/d4 256 4 3 off=build-gpu:"--set arch.l2_prefetch=false" on=build-gpu > $o/d4.log 2>&1
summ $o/d4
export FLASH_MODEL_DIR=/tmp/flash12
timeout 300 bench/gpu/decode-arms.sh $o/d12 256 12 2 off=build-gpu:"--set arch.l2_prefetch=false" on=build-gpu > $o/d12.log 2>&1
summ $o/d12
timeout 120 tools/device/focused_suites.sh build-gpu $o/suites.log '*attention*' 100
grep -E "test cases" $o/suites.log | head -4
tools/device/pack_out.sh $o
