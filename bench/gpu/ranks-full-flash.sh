#!/usr/bin/env bash
# Full DeepSeek-V4-Flash geometry (43 layers, about 150 GB: more than one H200's 139 GiB) decoded
# with every expert resident, spread over two GPU ranks, beside the one-GPU attempt (which must
# fail for want of memory), then the two ranks paging with lru at 12.5% and 25% of their own
# expert bytes. For the two-GPU machine (nvidia-h200-x2): the model is synthesized into /dev/shm,
# grown to hold it, since it is also larger than that machine's disk. LAYERS < 43 runs the same
# steps on a smaller slice (to try the script on one GPU, where the ranks share it).
#   bench/gpu/ranks-full-flash.sh BUILD OUT [TOKENS] [LAYERS]
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
build=$(cd "$1" && pwd); out=$2; tokens=${3:-64}; layers=${4:-43}
model=${FLASH_MODEL_DIR:-/dev/shm/flash$layers}
prompt=11,12,13,14
source "$(dirname "$0")/decode_arms.sh"

# tmpfs takes half the memory by default; the model needs 150 GB of it at 43 layers.
need_gib=$((layers * 35 / 10 + 8))
mount -o remount,size=${need_gib}G /dev/shm 2>&1 | tee -a "$out/summary.txt"
df -h /dev/shm | tee -a "$out/summary.txt"
nvidia-smi --query-gpu=index,name,memory.total --format=csv | tee -a "$out/summary.txt"
prepare_model "$layers" 8
rank_arms
rank_eighth=$((expert_total / 2 / 8)) rank_quarter=$((expert_total / 2 / 4))

# One GPU: at 43 layers the resident pager cannot place every expert (its error is the result).
echo "== one-gpu" | tee -a "$out/summary.txt"
"$moepage" run --profile "$root/configs/default.yaml" --model "$model" --set device=hip --prompt-ids "$prompt" \
  --max-tokens "$tokens" > "$out/one-gpu.log" 2>&1
echo "exit $? ; $(grep -v '^\[' "$out/one-gpu.log" | tail -1)" | tee -a "$out/summary.txt"
run_arm ranks2 --set parallel.ranks=2 "${library[@]}"
grep -h "expert-parallel ranks" "$out/ranks2.log" | tee -a "$out/summary.txt"
collective_share ranks2
# Where the bytes were: each rank's expert pool and the dense weights its model holds.
python3 -c "import json; j = json.load(open('$out/ranks2.json'))
print(json.dumps({'rank_pool_bytes': [r['pager']['pool_bytes'] for r in j.get('ranks', [])]}))" | tee -a "$out/summary.txt"
grep -h "GPU forward pass" "$out/ranks2.log" | tee -a "$out/summary.txt"
run_arm ranks2-lru-12.5 --set parallel.ranks=2 --set pager.plugin=lru --set pager.budget=$rank_eighth "${async[@]}" \
  "${library[@]}"
collective_share ranks2-lru-12.5
run_arm ranks2-lru-25 --set parallel.ranks=2 --set pager.plugin=lru --set pager.budget=$rank_quarter "${async[@]}" \
  "${library[@]}"
collective_share ranks2-lru-25
report_neutrality
