#!/usr/bin/env bash
# The io-uring transport reading experts cold from the disk (direct=on) under several ring shapes,
# beside the disk's own O_DIRECT rate measured before and after the arms (disk_direct_rate.sh,
# depths 1-64 up then down, each on a region no other measurement read). Replayed real routing,
# lru at 25% of the expert bytes, COLD_TOKENS tokens per arm. The first shape runs again last: if
# it is much faster the second time, something below the guest (the host's cache) served it.
#
#   bench/gpu/uring-cold-sweep.sh BUILD OUT MODEL_DIR [COLD_TOKENS] [LAYERS]
# Writes OUT/{<arm>.json, <arm>.log, disk-before.jsonl, disk-after.jsonl, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-16}; layers=${5:-4}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/decode_arms.sh"
replay_arms "" --set arch.replay_predictions=0
prepare_model "$layers" 1
lru=(--set pager.plugin=lru --set pager.budget=$((expert_total / 4)) --set transport.plugin=io-uring
  --set transport.direct=on)
shard=$(ls -S "$model"/*.safetensors | head -1)
region=$((256 << 20))
"$here/disk_direct_rate.sh" "$shard" 1,4,16,64 "$region" | tee "$out/disk-before.jsonl"
# ring shapes: queue depth x staging buffers x buffer size
shapes=("qd64-2MiB 64 64 2MiB" "qd16-4MiB 16 32 4MiB" "qd8-8MiB 8 16 8MiB" "qd4-16MiB 4 8 16MiB" "qd64-2MiB-again 64 64 2MiB")
for s in "${shapes[@]}"; do
  read -r name qd bufs size <<< "$s"
  run_arm "$name" "${lru[@]}" --set transport.queue_depth="$qd" --set transport.buffers="$bufs" \
    --set transport.buffer_size="$size"
done
# The depths again, deepest first, on the four regions after the first pass's.
"$here/disk_direct_rate.sh" "$shard" 64,16,4,1 "$region" $((2 << 20)) $((4 * region)) | tee "$out/disk-after.jsonl"
names=(); for s in "${shapes[@]}"; do names+=("${s%% *}"); done
python3 "$here/cold_rate.py" "$out" disk-before.jsonl disk-after.jsonl -- "${names[@]}" | tee -a "$out/summary.txt"
report_neutrality
