#!/usr/bin/env bash
# Paged decode under replayed real routing with two option sets of one build (issues 16 and 17):
# the 12-layer Flash slice, mapped transport, resident and lru at 12.5%, 25% and 50% of the expert
# bytes (25% also with the trace's recorded predictions, top 3), each arm under SET_A and SET_B in
# turn. Then every arm against its bound (paged_bound.py) and one table of B / A.
#
#   SET_A="--set k=v ..." SET_B="--set k=v ..." bench/gpu/replay-options-ab.sh BUILD OUT MODEL_DIR [TOKENS] [LAYERS] [TRACE]
# Writes OUT/{<arm>-{a,b}.json, .log, bandwidth.json, weights.json, bound.txt, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-256}; layers=${5:-12}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/decode_arms.sh"
replay_arms "${6:-}"
read -r -a set_a <<< "${SET_A:-}"
read -r -a set_b <<< "${SET_B:-}"
prepare_model "$layers" 1,8,16
echo "A: ${SET_A:-defaults}; B: ${SET_B:-defaults}" | tee -a "$out/summary.txt"
run_arm resident "${set_a[@]}"
run_arm resident-b "${set_b[@]}"
for share in 12.5:8 25:4 50:2; do
  name=${share%%:*}; budget=$((expert_total / ${share#*:}))
  lru=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
  run_arm "lru-$name-a" "${lru[@]}" --set arch.replay_predictions=0 "${set_a[@]}"
  run_arm "lru-$name-b" "${lru[@]}" --set arch.replay_predictions=0 "${set_b[@]}"
  if [ "$name" = 25 ]; then
    run_arm "lru-$name-predict3-a" "${lru[@]}" --set arch.replay_predictions=3 "${set_a[@]}"
    run_arm "lru-$name-predict3-b" "${lru[@]}" --set arch.replay_predictions=3 "${set_b[@]}"
  fi
done
report_neutrality
python3 "$here/paged_bound.py" "$out" | tee "$out/bound.txt"
python3 "$here/arm_ratios.py" "$out" resident=resident,resident-b lru-12.5=lru-12.5-a,lru-12.5-b \
  lru-25=lru-25-a,lru-25-b lru-25-predict3=lru-25-predict3-a,lru-25-predict3-b lru-50=lru-50-a,lru-50-b \
  | tee -a "$out/summary.txt"
