#!/bin/bash
# Call B: late release (exp/late-release): router only (lateroute) and router + the query's first
# product on compressed layers (lateboth, build-gpu) against main; suites on lateboth.
o=$1; mkdir -p $o
T0=$SECONDS
tar xJf build-carry/gpu.tar.xz
plugin=lib/moepage/plugins/libmoepage-arch-deepseek4.so
for b in main lateroute; do rm -rf build-$b; cp -r build-gpu build-$b; cp baselines/$b.so build-$b/$plugin; done; cat baselines/*.txt
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $o/gpu.txt
date -u | tee -a $o/gpu.txt
tools/device/focused_suites.sh build-gpu $o/suites.log '*matmul*,*attention*,*route*,*moe*,*single*,*expert*' 150; echo "t=$((SECONDS-T0))"
FLASH_MODEL_DIR=/tmp/flash4 timeout 130 bench/gpu/decode-arms.sh $o/d4 256 4 3 main=build-main lateroute=build-lateroute lateboth=build-gpu > $o/d4.log 2>&1
grep -oE '^== .*|"decode_tok_s": [0-9.]+|"roofline_fraction": [0-9.]+' $o/d4/summary.txt | paste - - -; grep distinct $o/d4/summary.txt; echo "t=$((SECONDS-T0))"
left=$((560 - (SECONDS-T0)))
FLASH_MODEL_DIR=/tmp/flash12 timeout $left bench/gpu/decode-arms.sh $o/d12 256 12 3 main=build-main lateroute=build-lateroute lateboth=build-gpu > $o/d12.log 2>&1
grep -oE '^== .*|"decode_tok_s": [0-9.]+|"roofline_fraction": [0-9.]+' $o/d12/summary.txt | paste - - -; grep distinct $o/d12/summary.txt; echo "t=$((SECONDS-T0))"
tools/device/pack_out.sh $o
