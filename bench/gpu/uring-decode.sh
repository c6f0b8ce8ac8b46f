#!/usr/bin/env bash
# The io-uring transport on the H200 (issue 16, item 4) beside pinned-async, under replayed real
# routing: the 12-layer Flash slice, lru at 25% of the expert bytes. Arms:
#   pinned-async    reader threads from the page cache (the reference transport)
#   uring-cached    io-uring with direct=off: buffered reads, from the page cache
#   uring-cold      io-uring with direct=on: O_DIRECT, every miss read from the disk (COLD_TOKENS
#                   tokens: at disk speed a token takes a fraction of a second)
# and the disk's own O_DIRECT rate at queue depths 1-64 (disk_direct_rate.sh, 2 MiB reads of the
# largest shard), so the cold arm's read rate can be stated as a fraction of the disk's best.
#
#   bench/gpu/uring-decode.sh BUILD OUT MODEL_DIR [TOKENS] [COLD_TOKENS] [LAYERS] [TRACE]
# BUILD as for replay-decode.sh. Writes OUT/{<arm>.json, <arm>.log, disk.jsonl, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-256}; cold_tokens=${5:-24}; layers=${6:-12}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/decode_arms.sh"
replay_arms "${7:-}" --set arch.replay_predictions=0

prepare_model "$layers" 1,8
quarter=$((expert_total / 4))
lru=(--set pager.plugin=lru --set pager.budget=$quarter)
uring=(--set transport.plugin=io-uring)  # its defaults: 8 reads of 8 MiB in flight
run_arm resident
run_arm pinned-async "${lru[@]}" --set transport.plugin=pinned-async --set transport.threads=8 \
  --set transport.staging=64MiB --set transport.queue_depth=32
run_arm uring-cached "${lru[@]}" "${uring[@]}" --set transport.direct=off
tokens=$cold_tokens
run_arm uring-cold "${lru[@]}" "${uring[@]}" --set transport.direct=on

# The disk's O_DIRECT rate (disk_direct_rate.sh: 2 MiB reads at depths 1 to 64), and the cold
# arm's read rate against the best of it (cold_rate.py).
shard=$(ls -S "$model"/*.safetensors | head -1)
"$here/disk_direct_rate.sh" "$shard" 1,4,16,64 | tee "$out/disk.jsonl"
python3 "$here/cold_rate.py" "$out" disk.jsonl -- uring-cold | tee -a "$out/summary.txt"
# Neutrality: the full-length arms print identical ids; the cold arm's (fewer tokens) are their prefix.
full=$(grep -h '^token ids:' "$out"/resident.log "$out"/pinned-async.log "$out"/uring-cached.log | sort -u)
cold=$(grep -h '^token ids:' "$out"/uring-cold.log)
echo "distinct token-id lines over the full-length arms (1 = neutral): $(echo "$full" | wc -l)" | tee -a "$out/summary.txt"
case "$full " in "$cold "*) verdict=yes ;; *) verdict=NO ;; esac
[ -n "$cold" ] || verdict=NO
echo "cold arm's ids a prefix of the others: $verdict" | tee -a "$out/summary.txt"
