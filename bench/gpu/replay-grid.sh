#!/usr/bin/env bash
# The paged-decode grid of issue 16 on the H200, under replayed real routing (the 12-layer Flash
# slice: 3 hash-routed and 9 scored layers): resident; lru at 12.5%, 25% and 50% of the expert
# bytes; the same with the trace's recorded adapter predictions handed to the pager (top 3: what
# the live adapter-prefetch pager proposes), and lru at 25% with hits first turned off. One
# transport setting for every paged arm (TRANSPORT, words of --set; default: pinned-async, 8
# reader threads, 32 MiB chunks, the fastest of bench/gpu/pipeline-sweep.sh). Then the miss paths
# measured alone (gpu_bandwidth --paths 1) and every arm against its bound (paged_bound.py).
#
# COMPARE (words of --set, optional): a second transport setting, run on lru 25% with and without
# predictions as arms compare-lru-25*, so two transports are compared in one run.
#
#   bench/gpu/replay-grid.sh BUILD OUT MODEL_DIR [TOKENS] [LAYERS] [TRACE]
# Writes OUT/{<arm>.json, <arm>.log, bandwidth.json, paths.json, weights.json, bound.txt, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-256}; layers=${5:-12}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/decode_arms.sh"
replay_arms "${6:-}"
read -r -a transport <<<"${TRANSPORT:---set transport.plugin=pinned-async --set transport.threads=8 --set transport.staging=64MiB --set transport.ring=2 --set transport.queue_depth=256}"

prepare_model "$layers" 1,8,16
run_arm resident
for share in 12.5:8 25:4 50:2; do
  name=${share%%:*}; budget=$((expert_total / ${share#*:}))
  lru=(--set pager.plugin=lru --set "pager.budget=$budget" "${transport[@]}")
  run_arm "lru-$name" "${lru[@]}" --set arch.replay_predictions=0
  run_arm "lru-$name-predict3" "${lru[@]}" --set arch.replay_predictions=3
done
run_arm lru-25-nosplit --set pager.plugin=lru --set "pager.budget=$((expert_total / 4))" "${transport[@]}" \
  --set arch.replay_predictions=0 --set arch.hits_first=false
if [ -n "${COMPARE:-}" ]; then
  read -r -a compare <<<"$COMPARE"
  lru=(--set pager.plugin=lru --set "pager.budget=$((expert_total / 4))" "${compare[@]}")
  run_arm compare-lru-25 "${lru[@]}" --set arch.replay_predictions=0
  run_arm compare-lru-25-predict3 "${lru[@]}" --set arch.replay_predictions=3
fi
report_neutrality
shard=$(ls -S "$model"/*.safetensors | head -1)
"$build/bin/gpu_bandwidth" --file "$shard" --threads 8 --reps 3 --paths 1 > "$out/paths.json" 2> "$out/paths.log"
python3 "$here/paged_bound.py" "$out" | tee "$out/bound.txt"
