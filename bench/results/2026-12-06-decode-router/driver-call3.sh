#!/bin/bash
# Session 2026-12-06b call 3: suites, decode A/B at 4 and 12 layers against main's plugin, ncu at depth.
o=$1; mkdir -p $o
tar xJf build-carry/gpu.tar.xz
tools/device/baseline.sh unpack > $o/baseline.txt
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/gpu.txt; cat $o/gpu.txt
timeout 300 tools/device/focused_suites.sh build-gpu $o/suites.log '*route*,*normed_input*,*single-token*,*matmul*,*attention*,*moe*' 200
export FLASH_MODEL_DIR=/tmp/flash4
timeout 200 bench/gpu/decode-arms.sh $o/d4 256 4 3 base=build-z new=build-gpu > $o/d4.log 2>&1
grep -vE "^(synth|[0-9]+\s)" $o/d4/summary.txt | grep -o '^==.*\|"decode_tok_s": [0-9.]*\|"roofline_fraction": [0-9.]*\|distinct.*' | paste -sd' ' | sed 's/==/\n==/g'
echo
DEEP=150 timeout 100 bench/gpu/decode-gaps.sh build-gpu $o/gn 4 64 4 > $o/gn.log 2>&1
tail -1 $o/gn/summary.txt
export FLASH_MODEL_DIR=/tmp/flash12
timeout 330 bench/gpu/decode-arms.sh $o/d12 256 12 2 base=build-z new=build-gpu > $o/d12.log 2>&1
grep -vE "^(synth|[0-9]+\s)" $o/d12/summary.txt | grep -o '^==.*\|"decode_tok_s": [0-9.]*\|"roofline_fraction": [0-9.]*\|distinct.*' | paste -sd' ' | sed 's/==/\n==/g'
echo
tools/device/pack_out.sh $o
