#!/usr/bin/env bash
# The live predictor's observe before or after the next layer's attention launch (issue 16): the
# 12-layer Flash slice, its own routers (not a replay: a replay's observe never waits, so only a
# live predictor shows the stall), adapter-prefetch with a random rank-128 adapter of the slice's
# geometry (its guesses are poor; both arms make the same ones), lru at 25% of the expert bytes,
# mapped transport. Arms: resident, lru alone, the adapter with arch.observe_after_attention
# false (the GPU idle while the host scores) and true, and the adapter scored on the device
# (arch.predictor_on_device: only the scores come back), observed early and late. Same ids in
# every arm.
#
#   bench/gpu/observe-timing-ab.sh BUILD OUT MODEL_DIR [TOKENS] [LAYERS] [REPS]
# Writes OUT/{<arm>.json, <arm>.log, adapter.hfadpt, bandwidth.json, weights.json, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-256}; layers=${5:-12}; reps=${6:-2}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/decode_arms.sh"
prompt=11
arm_args=(--set arch.plugin=deepseek4 --set generate.ignore_eos=true)
prepare_model "$layers" 1,8,16
"$moepage" adapter --random --model "$model" --rank 128 --seed 5 --out "$out/adapter.hfadpt" --log-level warn || exit 1
budget=$((expert_total / 4))
paged=(--set "pager.budget=$budget" --set transport.plugin=mapped)
adapter=(--set pager.plugin=adapter-prefetch --set "pager.adapter=$out/adapter.hfadpt" --set pager.top_m=3)
run_arm resident
rows=()
for rep in $(seq 1 "$reps"); do
  run_arm "lru-$rep" --set pager.plugin=lru "${paged[@]}"
  run_arm "adapter-early-$rep" "${adapter[@]}" "${paged[@]}" --set arch.observe_after_attention=false
  run_arm "adapter-late-$rep" "${adapter[@]}" "${paged[@]}" --set arch.observe_after_attention=true
  run_arm "device-early-$rep" "${adapter[@]}" "${paged[@]}" --set arch.predictor_on_device=true
  run_arm "device-late-$rep" "${adapter[@]}" "${paged[@]}" --set arch.predictor_on_device=true \
    --set arch.observe_after_attention=true
  rows+=("rep-$rep=lru-$rep,adapter-early-$rep,adapter-late-$rep,device-early-$rep,device-late-$rep")
done
report_neutrality
python3 "$here/arm_ratios.py" "$out" "${rows[@]}" | tee -a "$out/summary.txt"
