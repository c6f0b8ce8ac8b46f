#!/bin/bash
# experiment driver (not committed): decode arms + per-kernel tables for each single-token variant
o=$1; mkdir -p $o
export FLASH_MODEL_DIR=/tmp/flash4
arms=(cuda=build-gpu)
for v in 0 1 2 3 4 5; do arms+=("v$v=build-gpu:--set arch.matrix_single_token=true --set arch.single_token_variant=$v"); done
timeout 330 bench/gpu/decode-arms.sh $o/d4 256 4 2 "${arms[@]}" > $o/arms.log 2>&1
grep -vE "^(synth|[0-9]+\s)" $o/d4/summary.txt | cut -c1-120
for v in c 0 1 2 3 4 5; do
  if [ $v = c ]; then set=""; else set="arch.matrix_single_token=true arch.single_token_variant=$v"; fi
  MOEPAGE_SET="$set" timeout 60 bench/gpu/decode-gaps.sh build-gpu $o/g$v 4 32 4 > $o/g$v.log 2>&1
  echo "== $v $(grep -E 'expert_(up|down)' $o/g$v/steps-table.txt | awk '{printf "%s %s  ", $1, $NF}')"
done
tools/device/pack_out.sh $o
