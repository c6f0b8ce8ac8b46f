#!/usr/bin/env bash
# Call 3 (2026-12-06), cut to what the device time left allows: the GPU suites the change touches
# (attention and matmul_many kernel cases, every golden fixture, the neutrality gate), then its
# 4-layer decode against main's plugin. Summaries copied to the top of OUT as they come.
set -uo pipefail
OUT=$1
tar xJf build-carry/gpu.tar.xz && tools/device/baseline.sh unpack > /dev/null
nvidia-smi -L | tee $OUT/gpu.txt
tools/device/focused_suites.sh build-gpu $OUT/suites.log '*matmul_many*,*attention*' 120
FLASH_MODEL_DIR=/tmp/flash4 bench/gpu/decode-arms.sh $OUT/arms4 256 4 2 base=build-z new=build-gpu > $OUT/arms4.txt 2>&1
cp $OUT/arms4/summary.txt $OUT/arms4-summary.txt
grep -E "^== |tok_s|distinct" $OUT/arms4/summary.txt | tail -9
