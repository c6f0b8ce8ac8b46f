#!/usr/bin/env bash
# Device call D (2026-12-06 evening, main at da82f1a: one copy per expert): the replayed 12-layer
# grid on main's build with the predictor's proposal count swept (lfru with the recorded top 2, 3
# and 4 at 12.5% and 25%, top 3 at 50%), resident and lru beside it. On an H200 also the prefill of
# the 4-layer slice beside HF transformers (issue 17), when the time allows.
set -uo pipefail
out=${OUT:?}
start=$SECONDS
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu" | tee "$out/gpu.txt"
tar xJf build-carry/gpu.tar.xz
build=$(pwd)/build-gpu; out_grid=$out/grid; model=/tmp/flash12; tokens=256
(
  out=$out_grid
  source bench/gpu/decode_arms.sh
  replay_arms
  prepare_model 12 1,8
  run_arm resident
  for share in 12.5:8 25:4 50:2; do
    name=${share%%:*}; budget=$((expert_total / ${share#*:}))
    p=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
    run_arm "lru-$name" "${p[@]}" --set arch.replay_predictions=0
    tops="2 3 4"; [ "$name" = 50 ] && tops=3
    for m in $tops; do
      run_arm "lfru-$name-predict$m" "${p[@]}" --set pager.policy=lfru --set arch.replay_predictions=$m
    done
  done
  report_neutrality
  python3 bench/gpu/paged_bound.py "$out" > "$out/bound.txt"
)
echo "grid done at $((SECONDS - start)) s"
grep -E "^== |decode_tok_s|distinct" "$out_grid/summary.txt" | sed 's/, "prefill.*//'
cat "$out_grid/bound.txt" | sed 's/"bound_ms[^,]*, //; s/, "mb_read.*//'
tools/device/pack_out.sh "$out_grid" grid
if [[ "$gpu" == *H200* ]] && [ $((SECONDS - start)) -lt 330 ]; then
  rm -rf /tmp/flash12
  FLASH_MODEL_DIR=/tmp/flash4 REPS=1 bench/gpu/prefill-arms.sh build-gpu "$out/prefill" 1024,4096 4096 main= \
    > "$out/prefill.txt" 2>&1
  cat "$out/prefill/table.md"
  echo "prefill done at $((SECONDS - start)) s"
  tools/device/pack_out.sh "$out/prefill" prefill
fi
