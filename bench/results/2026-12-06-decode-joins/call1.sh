#!/usr/bin/env bash
# Call 1 (2026-12-06 afternoon): main vs joins (next/decode-joins-2) vs joins + weights before the
# wait (next/weights-early), suites on the newest build, then traces of it.
set -uo pipefail
OUT=$1
tar xJf build-carry/gpu.tar.xz
plugin=lib/moepage/plugins/libmoepage-arch-deepseek4.so
for b in main joins; do rm -rf build-$b; cp -r build-gpu build-$b; cp baselines/$b.so build-$b/$plugin; done
cat baselines/*.txt
nvidia-smi -L | tee $OUT/gpu.txt
tools/device/focused_suites.sh build-gpu $OUT/suites.log '*matmul*,*attention*,*route*,*moe*,*single*,*expert*,*swiglu*' 200 | tee $OUT/suites.txt
grep -E "FAILED|ERROR" $OUT/suites.log | head -20
timeout 240 env FLASH_MODEL_DIR=/tmp/flash4 bench/gpu/decode-arms.sh $OUT/arms4 256 4 3 main=build-main joins=build-joins early=build-gpu > $OUT/arms4.txt 2>&1
cp $OUT/arms4/summary.txt $OUT/arms4-summary.txt
grep -E "^== |tok_s|distinct" $OUT/arms4/summary.txt | tail -30
timeout 200 env FLASH_MODEL_DIR=/tmp/flash12 bench/gpu/decode-arms.sh $OUT/arms12 256 12 2 main=build-main joins=build-joins early=build-gpu > $OUT/arms12.txt 2>&1
cp $OUT/arms12/summary.txt $OUT/arms12-summary.txt
grep -E "^== |tok_s|distinct" $OUT/arms12/summary.txt | tail -30
timeout 60 env FLASH_MODEL_DIR=/tmp/flash4 bench/gpu/decode-trace.sh build-gpu $OUT/t4 4 256 100 200 > $OUT/t4.txt 2>&1
head -3 $OUT/t4/trace-table.txt
tools/device/pack_out.sh $OUT
