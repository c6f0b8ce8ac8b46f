#!/bin/bash
# Session 2026-12-06c call 6: expert single-token products sized to whole waves (exp/expert-waves) against main's decode.
o=$1; mkdir -p $o
tar xJf build-carry/gpu.tar.xz
tools/device/baseline.sh unpack > $o/baseline.txt
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/gpu.txt; cat $o/gpu.txt
summ() { grep -vE "^(synth|[0-9]+\s)" $1/summary.txt | grep -o '^==.*\|"decode_tok_s": [0-9.]*\|"roofline_fraction": [0-9.]*\|distinct.*' | paste -sd' ' | sed 's/==/\n==/g'; echo; }
export FLASH_MODEL_DIR=/tmp/flash4
timeout 150 bench/gpu/decode-arms.sh $o/d4 256 4 3 base=build-z:"--set arch.l2_prefetch=false" new=build-gpu > $o/d4.log 2>&1
summ $o/d4
timeout 100 tools/device/focused_suites.sh build-gpu $o/suites.log '*moe*,*single-token*' 90
grep -E "test cases" $o/suites.log | head -4
export FLASH_MODEL_DIR=/tmp/flash12
timeout 200 bench/gpu/decode-arms.sh $o/d12 256 12 2 base=build-z:"--set arch.l2_prefetch=false" new=build-gpu > $o/d12.log 2>&1
summ $o/d12
export FLASH_MODEL_DIR=/tmp/flash4
DEEP=150 timeout 80 bench/gpu/decode-gaps.sh build-gpu $o/gn 4 64 4 > $o/gn.log 2>&1
head -8 $o/gn/deep-table.txt
tools/device/pack_out.sh $o
