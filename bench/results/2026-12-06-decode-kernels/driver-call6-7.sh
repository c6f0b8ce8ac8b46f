#!/bin/bash
# experiment driver (not committed): final build's suites, decode against the session's start, prefill beside HF
o=$1; mkdir -p $o
tar xJf build-carry/gpu.tar.xz
rm -rf build-z && cp -r build-gpu build-z && xz -dc build-carry/old-arch.so.xz > build-z/lib/moepage/plugins/libmoepage-arch-deepseek4.so
if [ "${SUITES:-1}" = 1 ]; then
  timeout 240 tools/device/run_all.sh $o/s ds4-hip-kernels ds4-hip-forward ds4-hip-run > $o/suites.log 2>&1
  tail -6 $o/suites.log
fi
for L in ${LAYERS:-4 12}; do
  reps=3; [ $L = 12 ] && reps=2
  FLASH_MODEL_DIR=/tmp/flash$L timeout 300 bench/gpu/decode-arms.sh $o/d$L 256 $L $reps z=build-z cuda=build-gpu > $o/arms$L.log 2>&1
  grep -vE "^(synth|[0-9]+\s)" $o/d$L/summary.txt | cut -c1-200
done
if [ "${PREFILL:-0}" = 1 ]; then
  FLASH_MODEL_DIR=/tmp/flash4 REPS=2 timeout 400 bench/gpu/prefill-arms.sh build-gpu $o/pa 1024,4096 4096 final= > $o/pa.log 2>&1
  cat $o/pa/table.md
fi
tools/device/pack_out.sh $o
