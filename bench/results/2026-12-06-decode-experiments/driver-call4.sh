#!/bin/bash
# Session 2026-12-06c call 4: FP4 single-token products through the ring (835ee75) against the integer register path (ea2314d).
o=$1; mkdir -p $o
tar xJf build-carry/gpu.tar.xz
tools/device/baseline.sh unpack > $o/baseline.txt
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/gpu.txt; cat $o/gpu.txt
timeout 150 tools/device/focused_suites.sh build-gpu $o/suites.log '*single-token*,*moe*,*fp4*,*ring*' 120
grep -E "test cases|max rel error" $o/suites.log | head
summ() { grep -vE "^(synth|[0-9]+\s)" $1/summary.txt | grep -o '^==.*\|"decode_tok_s": [0-9.]*\|"roofline_fraction": [0-9.]*\|distinct.*' | paste -sd' ' | sed 's/==/\n==/g'; echo; }
export FLASH_MODEL_DIR=/tmp/flash4
timeout 240 bench/gpu/decode-arms.sh $o/d4 256 4 2 z=build-z r3=build-gpu r2=build-gpu:"--set arch.gemv_stages=2" r4=build-gpu:"--set arch.gemv_stages=4" > $o/d4.log 2>&1
summ $o/d4
DEEP=150 timeout 100 bench/gpu/decode-gaps.sh build-gpu $o/gn 4 64 4 > $o/gn.log 2>&1
head -8 $o/gn/deep-table.txt
tools/device/pack_out.sh $o
