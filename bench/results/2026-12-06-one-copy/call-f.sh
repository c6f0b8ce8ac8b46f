#!/usr/bin/env bash
# Device call F: main's build, the 12-layer replayed grid's 50% cells (lru, lfru with the recorded top 3).
set -uo pipefail
tar xJf build-carry/gpu.tar.xz
build=$(pwd)/build-gpu; out=$OUT/f; model=/tmp/flash12; tokens=256
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8
run_arm resident
budget=$((expert_total / 2))
p=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
run_arm lru-50 "${p[@]}" --set arch.replay_predictions=0
run_arm lfru-50-predict3 "${p[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
run_arm lru-50-r2 "${p[@]}" --set arch.replay_predictions=0
run_arm lfru-50-predict3-r2 "${p[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
report_neutrality
python3 bench/gpu/paged_bound.py "$out" | tee "$out/bound.txt"
tools/device/pack_out.sh "$out" f
