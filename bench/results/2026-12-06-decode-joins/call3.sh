#!/usr/bin/env bash
# Call 3 (2026-12-06 afternoon): the build that lands (next/decode-joins-2 at d677d7c): every GPU
# suite (device-hip, ds4-hip-kernels, ds4-hip-forward, ds4-hip-run), then its decode against main's
# plugin (cf851f7) once more, 4 and 12 layers.
set -uo pipefail
OUT=$1
tar xJf build-carry/gpu.tar.xz
plugin=lib/moepage/plugins/libmoepage-arch-deepseek4.so
rm -rf build-main; cp -r build-gpu build-main; cp baselines/main.so build-main/$plugin
cat baselines/*.txt
nvidia-smi -L | tee $OUT/gpu.txt
timeout 330 tools/device/run_all.sh $OUT/suites device-hip ds4-hip-kernels ds4-hip-forward ds4-hip-run 2>&1 | tail -12 | tee $OUT/suites.txt
timeout 130 env FLASH_MODEL_DIR=/tmp/flash4 bench/gpu/decode-arms.sh $OUT/arms4 256 4 3 main=build-main joins=build-gpu > $OUT/arms4.txt 2>&1
cp $OUT/arms4/summary.txt $OUT/arms4-summary.txt
grep -E "^== |tok_s|distinct" $OUT/arms4/summary.txt | tail -30
tools/device/pack_out.sh $OUT
