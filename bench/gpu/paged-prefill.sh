#!/usr/bin/env bash
# Paged prefill of one long prompt on the GPU (issue #16): the synthesized Flash slice, a prompt of
# LEN tokens in one chunk (arch.max_batch = LEN), resident and lru at 12.5%, 25% and 50% of the
# routed experts' bytes through the mapped transport. The bound for a chunk is streaming every
# routed expert of every layer once over the measured pinned copy rate; each arm's prefill is
# reported against it; each share once more with arch.prompt_staging=false (the hash layers' first
# bands hinted at the step's start, nothing staged per layer: the ablation of the per-layer
# staging), and 12.5% with bands of 16 experts (the default band is 32).
# Usage: bench/gpu/paged-prefill.sh BUILD OUT [LEN]   (env FLASH_MODEL_DIR, default /tmp/flash4;
# LAYERS 4; RUN_TIMEOUT per arm, default 120 s)
set -uo pipefail
build=$1 out=$2 len=${3:-2048}
model=${FLASH_MODEL_DIR:-/tmp/flash4}
tokens=1
# shellcheck source=decode_arms.sh
. "$(dirname "$0")/decode_arms.sh"
prepare_model "${LAYERS:-4}" 8
vocab=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$model/config.json")
prompt=$(python3 -c "import sys; n, v = int(sys.argv[1]), int(sys.argv[2]); print(','.join(str((i*7919+17)%v) for i in range(n)))" "$len" "$vocab")
# One warm-up prefill first: the measured one starts with the pool the warm-up left.
arm_args=(--set arch.plugin=deepseek4 --set "arch.max_batch=$len" --set "arch.max_context=$((len + 64))"
  --set generate.warmup_prefills=1 --set generate.ignore_eos=true)
prefill_arm() {
  local name=$1; shift
  timeout "${RUN_TIMEOUT:-120}" "$moepage" run --profile "$here/../../configs/default.yaml" --model "$model" \
    --set device=hip --prompt-ids "$prompt" --max-tokens "$tokens" "${arm_args[@]}" \
    --stats-json "$out/$name.json" "$@" > "$out/$name.log" 2>&1
  echo "exit $?" >> "$out/$name.log"
}
prefill_arm resident
for share in 12.5:8 25:4 50:2; do
  prefill_arm "lru-${share%%:*}" --set pager.plugin=lru --set "pager.budget=$((expert_total / ${share#*:}))" \
    --set transport.plugin=mapped
done
# Every share again without the per-layer staging, and 12.5% with bands of 16.
for share in 12.5:8 25:4 50:2; do
  prefill_arm "lru-${share%%:*}-nostage" --set pager.plugin=lru --set "pager.budget=$((expert_total / ${share#*:}))" \
    --set transport.plugin=mapped --set arch.prompt_staging=false
done
prefill_arm lru-12.5-band16 --set pager.plugin=lru --set "pager.budget=$((expert_total / 8))" \
  --set transport.plugin=mapped --set arch.paged_band=16
report_neutrality
python3 - "$out" "$len" <<'PY' | tee -a "$out/summary.txt"
import json, os, sys
out, n = sys.argv[1], int(sys.argv[2])
experts = json.load(open(os.path.join(out, "weights.json")))["routed_bytes_all"]
copy = json.load(open(os.path.join(out, "bandwidth.json")))["pinned_to_device"]["bytes_per_s"]
bound_s = experts / copy  # one chunk: every routed expert of every layer once
print(f"prompt {n} tokens in one chunk; routed experts {experts / 2**30:.2f} GiB; pinned copy {copy / 1e9:.1f} GB/s;"
      f" streaming bound {bound_s * 1e3:.1f} ms = {n / bound_s:.0f} tok/s")
print("| arm | prefill tok/s | prefill ms | expert bytes read per prefill | read rate | of the bound's tok/s |")
print("|---|---:|---:|---:|---:|---:|")
for arm in ["resident", "lru-12.5", "lru-25", "lru-50", "lru-12.5-nostage", "lru-25-nostage", "lru-50-nostage",
            "lru-12.5-band16"]:
    try:
        r = json.load(open(os.path.join(out, arm + ".json")))
    except Exception:
        print(f"| {arm} | failed | | | | |")
        continue
    s = r["run"]["prefill_seconds"]
    pager = r["pager"]
    per = (pager.get("bytes_read", 0) - pager.get("load_bytes_read", 0)) / 2  # the warm-up and the measured prefill
    rate = per / s / 1e9
    print(f"| {arm} | {n / s:.0f} | {s * 1e3:.1f} | {per / 2**30:.2f} GiB | {rate:.1f} GB/s | {bound_s / s:.0%} |")
PY
