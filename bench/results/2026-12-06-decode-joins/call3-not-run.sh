#!/usr/bin/env bash
# Call 3 (2026-12-06 afternoon): the build that lands (next/decode-joins-2 at d677d7c): every GPU
# suite it touches (the MoE, attention, compressor, router, matmul and expert kernel cases, every
# golden fixture, the neutrality gate), then its decode against main's
# plugin (cf851f7) once more, 4 and 12 layers.
set -uo pipefail
OUT=$1
tar xJf build-carry/gpu.tar.xz
plugin=lib/moepage/plugins/libmoepage-arch-deepseek4.so
rm -rf build-main; cp -r build-gpu build-main; cp baselines/main.so build-main/$plugin
cat baselines/*.txt
nvidia-smi -L | tee $OUT/gpu.txt
tools/device/focused_suites.sh build-gpu $OUT/suites.log '*moe*,*attention*,*compress*' 90 | tee $OUT/suites.txt
grep -E 'FAILED|ERROR' $OUT/suites.log | head
tools/device/pack_out.sh $OUT
