#!/bin/bash
# experiment driver (not committed)
o=$1; layers=${2:-4}; reps=${3:-3}; mkdir -p $o
tar xJf build-carry/gpu.tar.xz
rm -rf build-z && cp -r build-gpu build-z && xz -dc build-carry/old-arch.so.xz > build-z/lib/moepage/plugins/libmoepage-arch-deepseek4.so
if [ "${SUITES:-1}" = 1 ]; then
( export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64"; . tools/device/test_env.sh build-gpu
  timeout 200 build-gpu/bin/ds4-hip-kernels -tc='*single-token*,*fp16 expert tiles*,*attention*'
  timeout 90 build-gpu/bin/ds4-hip-forward; timeout 60 build-gpu/bin/ds4-hip-run ) > $o/suites.log 2>&1
grep -h "test cases:" $o/suites.log
fi
export FLASH_MODEL_DIR=/tmp/flash$layers
timeout 330 bench/gpu/decode-arms.sh $o/d$layers 256 $layers $reps z=build-z cuda=build-gpu "mma=build-gpu:--set arch.matrix_single_token=true" > $o/arms.log 2>&1
grep -vE "^(synth|[0-9]+\s)" $o/d$layers/summary.txt | cut -c1-240
if [ "${GAPS:-1}" = 1 ]; then
timeout 90 bench/gpu/decode-gaps.sh build-gpu $o/gc $layers 32 4 > $o/gc.log 2>&1
head -16 $o/gc/steps-table.txt
fi
tools/device/pack_out.sh $o
