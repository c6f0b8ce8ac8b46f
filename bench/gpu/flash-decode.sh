#!/usr/bin/env bash
# The H200 decode benchmark of the GPU backend: a synthesized DeepSeek-V4-Flash-shaped model with 4
# layers (256 FP4 experts of 12.75 MiB each per layer), decoded resident and with the lru pager at
# 50% and 12.5% of the expert bytes, through the pinned-async transport (and pread and io-uring at
# 12.5%; io-uring reads buffered here, like the others, since the page cache is warmed below).
# Also measures the device-to-device copy bandwidth (the roofline), pinned host->device copies and
# page-cache reads with the transport's reader thread count (the miss path's two ceilings).
#
#   bench/gpu/flash-decode.sh BUILD OUT [TOKENS]
# BUILD holds bin/moepage, lib/moepage/plugins, bin/gpu_bandwidth and carry-lib (tools/device/build.sh).
# Writes OUT/{bandwidth.json, weights.json, <arm>.json, <arm>.log, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; tokens=${3:-128}
mkdir -p "$out"
export LD_LIBRARY_PATH="$build/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
moepage="$build/bin/moepage"
model=${FLASH_MODEL_DIR:-/tmp/flash4}
here=$(cd "$(dirname "$0")" && pwd)
threads=${READER_THREADS:-8}

if [ ! -f "$model/config.json" ]; then
  start=$SECONDS
  "$moepage" synth --preset flash --layers 4 --seed 7 --out "$model" --log-level warn || exit 1
  echo "synth: $((SECONDS - start)) s" | tee -a "$out/summary.txt"
fi
du -sb "$model" | tee -a "$out/summary.txt"
python3 "$here/weights_per_token.py" "$model" > "$out/weights.json"
cat "$model"/*.safetensors > /dev/null   # page cache warm: the paged arms read from memory
shard=$(ls -S "$model"/*.safetensors | head -1)
"$build/bin/gpu_bandwidth" --file "$shard" --threads 1,4,8,16 > "$out/bandwidth.json" 2> "$out/bandwidth.log"
cat "$out/bandwidth.json" >> "$out/summary.txt"

expert_total=$(python3 -c "import json; print(json.load(open('$out/weights.json'))['routed_bytes_all'])")
prompt=11,12,13,14   # a short prompt: the run is nearly all decode
run_arm() {  # run_arm NAME [--set k=v]...
  local name=$1; shift
  echo "== $name" | tee -a "$out/summary.txt"
  "$moepage" run --profile "$here/../../configs/default.yaml" --model "$model" --set device=hip \
    --prompt-ids "$prompt" --max-tokens "$tokens" \
    --stats-json "$out/$name.json" "$@" > "$out/$name.log" 2>&1
  echo "exit $?" >> "$out/$name.log"
  local ref=(); [ -f "$out/resident.json" ] && [ "$name" != resident ] && ref=("$out/resident.json")
  python3 "$here/summarize_arm.py" "$out/$name.json" "$out/weights.json" "$out/bandwidth.json" "${ref[@]}" | tee -a "$out/summary.txt"
}
half=$((expert_total / 2)); eighth=$((expert_total / 8))
async=(--set transport.plugin=pinned-async --set transport.threads=$threads --set transport.staging=64MiB --set transport.queue_depth=32)
run_arm resident
run_arm lru-50 --set pager.plugin=lru --set pager.budget=$half "${async[@]}"
run_arm lru-12.5 --set pager.plugin=lru --set pager.budget=$eighth "${async[@]}"
run_arm lru-12.5-pread --set pager.plugin=lru --set pager.budget=$eighth --set transport.plugin=pread --set transport.threads=$threads
run_arm lru-12.5-io-uring --set pager.plugin=lru --set pager.budget=$eighth --set transport.plugin=io-uring \
  --set transport.direct=off --set transport.queue_depth=64 --set transport.buffers=32 --set transport.buffer_size=4MiB
run_arm resident-again
# Neutrality on the big model too: every arm must print the same token ids.
echo "distinct token-id lines over all arms (1 = neutral): $(grep -h '^token ids:' "$out"/*.log | sort -u | wc -l)" | tee -a "$out/summary.txt"
