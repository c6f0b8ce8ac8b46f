#!/bin/bash
# Session 2026-12-06b call 1: suites on the route / folded-norm build, decode A/B at 4 layers
# against main's plugin, ncu tables at depth of both.
o=$1; mkdir -p $o
tar xJf build-carry/gpu.tar.xz
tools/device/baseline.sh unpack > $o/baseline.txt
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/gpu.txt; cat $o/gpu.txt
timeout 330 tools/device/focused_suites.sh build-gpu $o/suites.log '*route*,*normed_input*,*single-token*,*matmul*' 200
export FLASH_MODEL_DIR=/tmp/flash4
timeout 200 bench/gpu/decode-arms.sh $o/d4 256 4 3 base=build-z new=build-gpu > $o/d4.log 2>&1
grep -vE "^(synth|[0-9]+\s)" $o/d4/summary.txt | cut -c1-200
DEEP=150 timeout 100 bench/gpu/decode-gaps.sh build-gpu $o/gn 4 64 4 > $o/gn.log 2>&1
DEEP=150 timeout 100 bench/gpu/decode-gaps.sh build-z $o/gb 4 64 4 > $o/gb.log 2>&1
tail -1 $o/gn/summary.txt; tail -1 $o/gb/summary.txt
head -24 $o/gn/deep-table.txt
tools/device/pack_out.sh $o
