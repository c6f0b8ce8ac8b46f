#!/usr/bin/env bash
# The paged miss path on the H200 (issue 16): where the time of a paged token goes, arm by arm,
# under replayed real routing on the 12-layer Flash slice. One knob moves per arm:
#   chunking   pinned-async's chunk (staging / ring) and reader threads: 32 MiB chunks (one read per
#              expert part, the setting of every earlier run) against 4, 2 and 1 MiB chunks that
#              spread one expert's parts over many readers and overlap its reads with its copies
#   hits first the split acquire on and off (arch.hits_first) at the best chunking
#   budget      12.5% and 50% of the expert bytes at the best chunking
#   predictions the trace's recorded top-3 / top-6 predictions handed to the pager (what the
#              adapter-prefetch pager proposed when the trace was recorded)
#   io-uring    buffered reads from the page cache handed to kernel worker threads (workers: 16),
#               and O_DIRECT from the disk with larger windows
#
#   bench/gpu/pipeline-sweep.sh BUILD OUT MODEL_DIR [TOKENS] [COLD_TOKENS] [LAYERS] [TRACE]
# BUILD as for replay-decode.sh. Writes OUT/{<arm>.json, <arm>.log, bandwidth.json, weights.json,
# disk.txt, summary.txt}; bench/gpu/paged_bound.py turns them into the table against the bound.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-256}; cold_tokens=${5:-24}; layers=${6:-12}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/decode_arms.sh"
replay_arms "${7:-}" --set arch.replay_predictions=0

prepare_model "$layers" 1,8,16
quarter=$((expert_total / 4)); eighth=$((expert_total / 8)); half=$((expert_total / 2))
lru() { echo --set pager.plugin=lru --set "pager.budget=$1"; }
# pinned THREADS STAGING RING: chunk = STAGING / RING
pinned() { echo --set transport.plugin=pinned-async --set "transport.threads=$1" --set "transport.staging=$2" \
  --set "transport.ring=$3" --set transport.queue_depth=256; }

run_arm resident
# shellcheck disable=SC2046  # the helpers print words
{
  run_arm pa-t8-c32M $(lru $quarter) $(pinned 8 64MiB 2)
  run_arm pa-t8-c4M $(lru $quarter) $(pinned 8 64MiB 16)
  run_arm pa-t16-c2M $(lru $quarter) $(pinned 16 64MiB 32)
  run_arm pa-t16-c1M $(lru $quarter) $(pinned 16 32MiB 32)
  run_arm pa-t16-c2M-nosplit $(lru $quarter) $(pinned 16 64MiB 32) --set arch.hits_first=false
  run_arm pa-t16-c2M-12.5 $(lru $eighth) $(pinned 16 64MiB 32)
  run_arm pa-t16-c2M-50 $(lru $half) $(pinned 16 64MiB 32)
  run_arm pa-t16-c2M-predict3 $(lru $quarter) $(pinned 16 64MiB 32) --set arch.replay_predictions=3
  run_arm pa-t16-c2M-predict6 $(lru $quarter) $(pinned 16 64MiB 32) --set arch.replay_predictions=6
  run_arm pa-t16-c2M-12.5-predict3 $(lru $eighth) $(pinned 16 64MiB 32) --set arch.replay_predictions=3
  uring=(--set transport.plugin=io-uring --set transport.queue_depth=64 --set transport.buffers=64)
  run_arm uring-cached-w16 $(lru $quarter) "${uring[@]}" --set transport.buffer_size=2MiB --set transport.direct=off \
    --set transport.workers=16
  tokens=$cold_tokens
  run_arm uring-cold-4M $(lru $quarter) "${uring[@]}" --set transport.buffer_size=4MiB --set transport.direct=on
}

# The disk's O_DIRECT rate for the cold arm's fraction (dd, 16 MiB blocks, 4 GiB of the largest shard).
shard=$(ls -S "$model"/*.safetensors | head -1)
dd if="$shard" of=/dev/null bs=16M count=256 iflag=direct 2>&1 | tail -1 | tee "$out/disk.txt"
# Neutrality: every full-length arm prints the same ids; the cold arm's are their prefix.
full=$(grep -h '^token ids:' $(ls "$out"/*.log | grep -v uring-cold) | sort -u)
cold=$(grep -h '^token ids:' "$out"/uring-cold-4M.log)
echo "distinct token-id lines over the full-length arms (1 = neutral): $(echo "$full" | wc -l)" | tee -a "$out/summary.txt"
case "$full " in "$cold "*) verdict=yes ;; *) verdict=NO ;; esac
[ -n "$cold" ] || verdict=NO
echo "cold arm's ids a prefix of the others: $verdict" | tee -a "$out/summary.txt"
