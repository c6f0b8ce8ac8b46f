#!/bin/bash
# Call A: suites (golden fixtures, neutrality) on join and comp builds; decode main vs join vs comp at
# 4 and 12 layers (main's figure is also the must-show one on this card); prefill beside HF.
o=$1; mkdir -p $o
T0=$SECONDS
tar xJf build-carry/gpu.tar.xz
plugin=lib/moepage/plugins/libmoepage-arch-deepseek4.so
for b in main join; do rm -rf build-$b; cp -r build-gpu build-$b; cp baselines/$b.so build-$b/$plugin; done; cat baselines/*.txt
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $o/gpu.txt
date -u | tee -a $o/gpu.txt
timeout 150 tools/device/run_all.sh $o/s ds4-hip-kernels ds4-hip-forward ds4-hip-run > $o/suites.log 2>&1
tail -5 $o/suites.log
tools/device/focused_suites.sh build-join $o/suites-join.log '*attention*' 60; echo "t=$((SECONDS-T0))"
FLASH_MODEL_DIR=/tmp/flash4 timeout 120 bench/gpu/decode-arms.sh $o/d4 256 4 3 main=build-main join=build-join comp=build-gpu > $o/d4.log 2>&1
grep -vE "^(synth|[0-9]+\s)" $o/d4/summary.txt | cut -c1-220; echo "t=$((SECONDS-T0))"
left=$((440 - (SECONDS-T0)))
FLASH_MODEL_DIR=/tmp/flash12 timeout $left bench/gpu/decode-arms.sh $o/d12 256 12 2 main=build-main join=build-join comp=build-gpu > $o/d12.log 2>&1
grep -vE "^(synth|[0-9]+\s)" $o/d12/summary.txt | cut -c1-220; echo "t=$((SECONDS-T0))"
left=$((570 - (SECONDS-T0)))
[ $left -gt 100 ] && FLASH_MODEL_DIR=/tmp/flash4 REPS=1 timeout $left bench/gpu/prefill-arms.sh build-gpu $o/pa 1024,4096 4096 comp= > $o/pa.log 2>&1
cat $o/pa/table.md 2>/dev/null; echo "t=$((SECONDS-T0))"
tools/device/pack_out.sh $o
