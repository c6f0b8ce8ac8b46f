#!/usr/bin/env bash
# Call B16 (2026-12-07): the build of call A (deferral on by default): at 12.5% and 25%, lru,
# lfru + top 3, lfru + top 2 (the model puts top 2 +0.9% over top 3 at 12.5%), lfru + top 3 with
# the per-layer split from the trace's tail (out of sample), interleaved over 2 repetitions.
set -uo pipefail
T0=$SECONDS
[ -x build-gpu/bin/moepage ] || tar xJf build-carry/gpu.tar.xz
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpu.txt"; date -u | tee -a "$OUT/gpu.txt"
build=$(pwd)/build-gpu; out=$OUT/p; model=/tmp/flash12; tokens=256
source bench/gpu/decode_arms.sh
replay_arms "" --set arch.defer_acquire_finish=false
prepare_model 12 1,8
split_trace=/tmp/split-tail.trace
xz -dcf "$trace" | awk 'NR == 1 { print; next } /^t / { tok = $2 } tok >= 25600' > "$split_trace"
run_arm resident; cp "$out/resident.json" "$out/resident-r1.json"
for rep in 1 2; do
  for share in 12.5:8 25:4; do
    name=${share%%:*}; budget=$((expert_total / ${share#*:}))
    [ $((SECONDS - T0)) -lt 540 ] || break 2
    paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
    run_arm "lru-$name-r$rep" "${paged[@]}" --set arch.replay_predictions=0
    run_arm "lfru2split-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=2 --set pager.split=trace --set "pager.split_trace=$split_trace"
    run_arm "lfru3-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
    run_arm "lfru2-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=2
    run_arm "lfru3split-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3 \
      --set pager.split=trace --set "pager.split_trace=$split_trace"
  done
done
report_neutrality
python3 bench/gpu/paged_bound.py "$out" | tee "$out/bound.txt"
grep -E "^== |decode_tok_s" "$out/summary.txt" | paste - - | sed 's/"hit_rate.*//' | tail -20
tools/device/pack_out.sh "$out" p
echo "end t=$((SECONDS - T0))"
