#!/bin/bash
# Session 2026-12-06c call 1: the prefetched single-token products (exp/gemv-prefetch) against main's plugin.
o=$1; mkdir -p $o
tar xJf build-carry/gpu.tar.xz
tools/device/baseline.sh unpack > $o/baseline.txt
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/gpu.txt; cat $o/gpu.txt
timeout 200 tools/device/focused_suites.sh build-gpu $o/suites.log '*normed_input*,*single-token*,*matmul*,*moe*,*route*' 150
tail -3 $o/suites.log
summ() { grep -vE "^(synth|[0-9]+\s)" $1/summary.txt | grep -o '^==.*\|"decode_tok_s": [0-9.]*\|"roofline_fraction": [0-9.]*\|distinct.*' | paste -sd' ' | sed 's/==/\n==/g'; echo; }
export FLASH_MODEL_DIR=/tmp/flash4
timeout 200 bench/gpu/decode-arms.sh $o/d4 256 4 3 base=build-z new=build-gpu > $o/d4.log 2>&1
summ $o/d4
DEEP=150 timeout 100 bench/gpu/decode-gaps.sh build-gpu $o/gn 4 64 4 > $o/gn.log 2>&1
DEEP=150 timeout 100 bench/gpu/decode-gaps.sh build-z $o/gb 4 64 4 > $o/gb.log 2>&1
tail -1 $o/gn/summary.txt $o/gb/summary.txt
export FLASH_MODEL_DIR=/tmp/flash12
timeout 330 bench/gpu/decode-arms.sh $o/d12 256 12 2 base=build-z new=build-gpu > $o/d12.log 2>&1
summ $o/d12
tools/device/pack_out.sh $o
