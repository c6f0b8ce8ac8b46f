#!/usr/bin/env bash
# Device call C: the same machine, warm: the one-copy build alone, lru against lfru with the
# recorded proposals (top 3) handed over at observe, and handed over at launch with one copy
# stream, at 12.5% and 25%, two repetitions each.
build=$(pwd)/build-gpu; out=$OUT/lt; model=/tmp/flash12; tokens=256
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8
run_arm resident
for share in 12.5:8 25:4; do
  name=${share%%:*}; budget=$((expert_total / ${share#*:}))
  p=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
  for r in 1 2; do
    run_arm "lru-$name-r$r" "${p[@]}" --set arch.replay_predictions=0
    run_arm "lfru-$name-predict3-r$r" "${p[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
    run_arm "lfru-$name-predict3-launched-shared-r$r" "${p[@]}" --set pager.policy=lfru --set arch.replay_predictions=3 \
      --set arch.replay_predictions_at=launched --set transport.prefetch_lane=shared
  done
done
report_neutrality
