#!/usr/bin/env bash
# Call 2 (2026-12-06): gathered one-token projection + urgent side streams, against main's plugin.
set -uo pipefail
OUT=$1
tar xJf build-carry/gpu.tar.xz && tools/device/baseline.sh unpack > /dev/null
nvidia-smi -L
tools/device/focused_suites.sh build-gpu $OUT/suites.log '*matmul_many*,*attention*,*route*' 240
FLASH_MODEL_DIR=/tmp/flash4 bench/gpu/decode-arms.sh $OUT/arms4 256 4 3 base=build-z new=build-gpu urgent=build-gpu:"--set arch.urgent_side_streams=true" > $OUT/arms4.txt 2>&1
grep -E "^== |tok_s|ids" $OUT/arms4/summary.txt | tail -30
FLASH_MODEL_DIR=/tmp/flash4 bench/gpu/decode-trace.sh build-gpu $OUT/t4 4 256 100 200 > $OUT/t4.txt 2>&1
head -3 $OUT/t4/trace-table.txt
MOEPAGE_SET="arch.urgent_side_streams=true" FLASH_MODEL_DIR=/tmp/flash4 bench/gpu/decode-trace.sh build-gpu $OUT/t4u 4 256 100 200 > $OUT/t4u.txt 2>&1
head -3 $OUT/t4u/trace-table.txt
FLASH_MODEL_DIR=/tmp/flash12 bench/gpu/decode-arms.sh $OUT/arms12 256 12 2 base=build-z new=build-gpu urgent=build-gpu:"--set arch.urgent_side_streams=true" > $OUT/arms12.txt 2>&1
grep -E "^== |tok_s|ids" $OUT/arms12/summary.txt | tail -20
FLASH_MODEL_DIR=/tmp/flash12 bench/gpu/decode-trace.sh build-gpu $OUT/t12 12 256 100 200 > $OUT/t12.txt 2>&1
head -3 $OUT/t12/trace-table.txt
tools/device/pack_out.sh $OUT
