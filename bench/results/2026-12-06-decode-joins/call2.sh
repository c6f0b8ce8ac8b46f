#!/usr/bin/env bash
# Call 2 (2026-12-06 afternoon): joins (next/decode-joins-2) vs early (next/weights-early at 624de2f: the dense, router and mHC
# products load their first step of weights before the wait; the expert products as before), suites, API trace at 12 layers.
set -uo pipefail
OUT=$1
tar xJf build-carry/gpu.tar.xz
plugin=lib/moepage/plugins/libmoepage-arch-deepseek4.so
for b in joins; do rm -rf build-$b; cp -r build-gpu build-$b; cp baselines/$b.so build-$b/$plugin; done
cat baselines/*.txt
nvidia-smi -L | tee $OUT/gpu.txt
tools/device/focused_suites.sh build-gpu $OUT/suites.log '*matmul*,*attention*,*route*,*moe*,*single*,*expert*,*swiglu*' 200 | tee $OUT/suites.txt
grep -E "FAILED|ERROR" $OUT/suites.log | head -20
timeout 200 env FLASH_MODEL_DIR=/tmp/flash4 bench/gpu/decode-arms.sh $OUT/arms4 256 4 3 joins=build-joins early=build-gpu > $OUT/arms4.txt 2>&1
cp $OUT/arms4/summary.txt $OUT/arms4-summary.txt
grep -E "^== |tok_s|distinct" $OUT/arms4/summary.txt | tail -30
timeout 180 env FLASH_MODEL_DIR=/tmp/flash12 bench/gpu/decode-arms.sh $OUT/arms12 256 12 3 joins=build-joins early=build-gpu > $OUT/arms12.txt 2>&1
cp $OUT/arms12/summary.txt $OUT/arms12-summary.txt
grep -E "^== |tok_s|distinct" $OUT/arms12/summary.txt | tail -30
timeout 150 env MOEPAGE_KERNEL_TRACE_API=1 FLASH_MODEL_DIR=/tmp/flash12 bench/gpu/decode-trace.sh build-gpu $OUT/t12 12 256 100 200 > $OUT/t12.txt 2>&1
cp $OUT/t12/step-boundary.txt $OUT/step-boundary12.txt
xz -T8 -6 $OUT/t12/kernels.csv; ls -la $OUT/t12/
head -3 $OUT/t12/trace-table.txt; head -60 $OUT/step-boundary12.txt
tools/device/pack_out.sh $OUT
