#!/usr/bin/env bash
# Call C16 (2026-12-07, H100 warm after B16): deferral off; 25%: lru, lfru2, lfru2split, lfru3split x3;
# 50%: lru, lfru3, lfru2, lfru2split x2.
set -uo pipefail
T0=$SECONDS
[ -x build-gpu/bin/moepage ] || tar xJf build-carry/gpu.tar.xz
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpu.txt"; date -u | tee -a "$OUT/gpu.txt"
build=$(pwd)/build-gpu; out=$OUT/q; model=/tmp/flash12; tokens=256
source bench/gpu/decode_arms.sh
replay_arms "" --set arch.defer_acquire_finish=false
prepare_model 12 1,8 > /dev/null
split_trace=/tmp/split-tail.trace
[ -s "$split_trace" ] || xz -dcf "$trace" | awk 'NR == 1 { print; next } /^t / { tok = $2 } tok >= 25600' > "$split_trace"
run_arm resident > /dev/null
for rep in 1 2 3; do
  for share in 25:4 50:2; do
    name=${share%%:*}; budget=$((expert_total / ${share#*:}))
    [ "$name" = 50 ] && [ $rep = 3 ] && continue
    [ $((SECONDS - T0)) -lt 500 ] || break 2
    paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
    sp=(--set pager.split=trace --set "pager.split_trace=$split_trace")
    run_arm "lru-$name-r$rep" "${paged[@]}" --set arch.replay_predictions=0 > /dev/null
    run_arm "lfru2-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=2 > /dev/null
    run_arm "lfru2split-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=2 "${sp[@]}" > /dev/null
    if [ "$name" = 25 ]; then run_arm "lfru3split-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3 "${sp[@]}" > /dev/null
    else run_arm "lfru3-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3 > /dev/null; fi
  done
done
report_neutrality
python3 bench/gpu/paged_bound.py "$out" > "$out/bound.txt"
sed 's/"bound_tok_s.*"hit_rate"/"hit_rate"/; s/, "mb_read.*//' "$out/bound.txt"
tools/device/pack_out.sh "$out" q
echo "end t=$((SECONDS - T0))"
