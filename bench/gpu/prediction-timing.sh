#!/usr/bin/env bash
# When a prediction is handed over, and what it buys (issue 16): the 12-layer Flash slice under
# replayed real routing, mapped transport, lru at 12.5%, 25% and 50% of the expert bytes, each
# with no predictions, with the trace's recorded adapter proposals (top 3) at observe (after the
# layer before: the recorded predictor's own timing), and the same proposals right after the
# layer before's acquire (arch.replay_predictions_at=acquire: the timing a predictor of that
# layer's MoE input would have; a what-if, since the proposals are the output predictor's).
# ARMS=launched (the default) swaps the acquire arm for three others, the ones
# bench/routing/pipeline_model.py ranks best: the proposals under lfru eviction (pager.policy=lfru,
# which reads the fewest bytes with them in `moepage simulate`), and handed over once layer l's
# experts are launched, before the host waits for its reads (arch.replay_predictions_at=launched)
# with every copy on one stream (transport.prefetch_lane=shared: the model says prefetches issued
# while the layer's demand copies run must not share the link with them), under lru and lfru.
# ARMS=acquire keeps the 2026-12-04 grid. ARMS=policy separates eviction from prediction: lru, lfru
# and lfru with the proposals (observe). ARMS=split adds per-layer slot splits (pager.split=trace)
# to lfru with the proposals: split for the fewest reads (the default objective) and for the
# fewest misses, each made from the tail of the trace (tokens from 25,600 on; the replay runs its
# first tokens), so the split is out of sample. Then every arm against its bound (paged_bound.py).
#
#   bench/gpu/prediction-timing.sh BUILD OUT MODEL_DIR [TOKENS] [LAYERS] [TRACE]
# Writes OUT/{<arm>.json, <arm>.log, bandwidth.json, weights.json, bound.txt, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-256}; layers=${5:-12}
here=$(cd "$(dirname "$0")" && pwd)
arms=${ARMS:-launched}
case "$arms" in launched|acquire|policy|split) ;; *) echo "prediction-timing.sh: ARMS=$arms: expected launched, acquire, policy or split" >&2; exit 2 ;; esac
source "$here/decode_arms.sh"
replay_arms "${6:-}"
prepare_model "$layers" 1,8,16
if [ "$arms" = split ]; then
  # The trace's header, then its rows of tokens 25,600 and later.
  split_trace=$out/split-tail.trace
  xz -dcf "$trace" | awk 'NR == 1 { print; next } /^t / { tok = $2 } tok >= 25600' > "$split_trace"
  echo "split trace: $(wc -l < "$split_trace") lines of $trace from token 25,600" | tee -a "$out/summary.txt"
fi
run_arm resident
rows=()
for share in 12.5:8 25:4 50:2; do
  name=${share%%:*}; budget=$((expert_total / ${share#*:}))
  lru=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
  run_arm "lru-$name" "${lru[@]}" --set arch.replay_predictions=0
  if [ "$arms" = policy ]; then
    run_arm "lfru-$name" "${lru[@]}" --set pager.policy=lfru --set arch.replay_predictions=0
    run_arm "lfru-$name-predict3" "${lru[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
    rows+=("$name%=lru-$name,lfru-$name,lfru-$name-predict3")
    continue
  fi
  if [ "$arms" = split ]; then
    lfru3=("${lru[@]}" --set pager.policy=lfru --set arch.replay_predictions=3)
    run_arm "lfru-$name-predict3" "${lfru3[@]}"
    run_arm "lfru-$name-predict3-split" "${lfru3[@]}" --set pager.split=trace --set "pager.split_trace=$split_trace"
    run_arm "lfru-$name-predict3-split-misses" "${lfru3[@]}" --set pager.split=trace \
      --set "pager.split_trace=$split_trace" --set pager.split_objective=misses
    run_arm "lfru-$name-split" "${lru[@]}" --set pager.policy=lfru --set arch.replay_predictions=0 \
      --set pager.split=trace --set "pager.split_trace=$split_trace"
    rows+=("$name%=lru-$name,lfru-$name-predict3,lfru-$name-predict3-split,lfru-$name-predict3-split-misses,lfru-$name-split")
    continue
  fi
  run_arm "lru-$name-predict3" "${lru[@]}" --set arch.replay_predictions=3
  if [ "$arms" = acquire ]; then
    run_arm "lru-$name-predict3-early" "${lru[@]}" --set arch.replay_predictions=3 \
      --set arch.replay_predictions_at=acquire
    rows+=("$name%=lru-$name,lru-$name-predict3,lru-$name-predict3-early")
  else
    launched=(--set arch.replay_predictions=3 --set arch.replay_predictions_at=launched
      --set transport.prefetch_lane=shared)
    run_arm "lfru-$name-predict3" "${lru[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
    run_arm "lru-$name-predict3-launched" "${lru[@]}" "${launched[@]}"
    run_arm "lfru-$name-predict3-launched" "${lru[@]}" --set pager.policy=lfru "${launched[@]}"
    rows+=("$name%=lru-$name,lru-$name-predict3,lfru-$name-predict3,lru-$name-predict3-launched,lfru-$name-predict3-launched")
  fi
done
report_neutrality
python3 "$here/paged_bound.py" "$out" | tee "$out/bound.txt"
python3 "$here/arm_ratios.py" "$out" "${rows[@]}" | tee -a "$out/summary.txt"
