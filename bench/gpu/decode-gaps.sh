#!/usr/bin/env bash
# Where a resident decode token's wall time goes on the GPU machine: the token's wall time from a
# plain run beside the sum of its kernels' times under ncu (each kernel serialised, caches and
# clocks left alone). The serialised sum counts the side streams' kernels too (the mHC Sinkhorn,
# the shared expert), which run beside the main stream's; wall minus (sum minus those) is what no
# kernel accounts for: launch gaps, copies in the stream, the host round trip of each scored
# layer's routing.
#   bench/gpu/decode-gaps.sh BUILD OUT [LAYERS] [TOKENS] [STEPS]
# Environment: FLASH_MODEL_DIR (default /tmp/flash<LAYERS>; synthesized when absent), MOEPAGE_SET
# (extra --set words for both runs, e.g. "arch.matrix_single_token=true"), DEEP=N: also profile
# STEPS steps after the first N (decode at depth: the split attention, the compressors' entries;
# the launches to skip are N times the first profile's launches per step, so the window may start
# inside a step: its table is per step by the greedy launches it holds, deep-table.txt).
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
build=$(cd "$1" && pwd) out=$2 layers=${3:-4} tokens=${4:-256} steps=${5:-8}
model=${FLASH_MODEL_DIR:-/tmp/flash$layers}
prompt=11
source "$(dirname "$0")/decode_arms.sh"
extra=()
for kv in ${MOEPAGE_SET:-}; do extra+=(--set "$kv"); done

prepare_model "$layers" 8
arm_args=("${extra[@]}")
run_arm resident
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$ncu" --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum \
  --log-file "$out/steps.csv" "$moepage" run --profile "$root/configs/default.yaml" --model "$model" \
  --set device=hip --prompt-ids "$prompt" --max-tokens "$steps" "${extra[@]}" > "$out/steps-run.txt" 2>&1
python3 "$root/tools/device/ncu_table.py" "$out/steps.csv" > "$out/steps-table.txt" 2>&1
python3 - "$out/resident.json" "$out/steps-table.txt" "$steps" <<'PY' | tee -a "$out/summary.txt"
import json, sys
run = json.load(open(sys.argv[1]))["run"]
wall_us = 1e6 * run["decode_seconds"] / max(1, run["generated_tokens"])
total_us = float(open(sys.argv[2]).readline().split()[1])
# The ncu run made `steps` forward calls of one token each (the one-token prompt, then steps - 1).
kernel_us = total_us / int(sys.argv[3])
print(f"per token: wall {wall_us:.1f} us, kernels {kernel_us:.1f} us (serialised sum, side streams "
      f"included), wall minus that sum {wall_us - kernel_us:.1f} us ({100 * (wall_us - kernel_us) / wall_us:.1f}%)")
PY

# Decode at depth: skip about DEEP steps' launches, then profile STEPS steps' worth.
if [ "${DEEP:-0}" -gt 0 ]; then
  per_step=$(python3 -c "import sys; print(int(sys.argv[1].split()[4]) // int(sys.argv[2]))" \
    "$(head -1 "$out/steps-table.txt")" "$steps")
  "$ncu" --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum \
    --launch-skip $((per_step * DEEP)) --launch-count $((per_step * steps)) \
    --log-file "$out/deep.csv" "$moepage" run --profile "$root/configs/default.yaml" --model "$model" \
    --set device=hip --prompt-ids "$prompt" --max-tokens $((DEEP + steps + 2)) "${extra[@]}" > "$out/deep-run.txt" 2>&1
  python3 "$root/tools/device/ncu_table.py" "$out/deep.csv" > "$out/deep-table.txt" 2>&1
  python3 - "$out/deep-table.txt" "$DEEP" <<'PY' | tee -a "$out/summary.txt"
import sys
lines = open(sys.argv[1]).read().splitlines()
total_us = float(lines[0].split()[1])
steps = sum(int(l.split()[2]) for l in lines[1:] if "greedy_kernel" in l)
print(f"after about {sys.argv[2]} steps: kernels {total_us / max(1, steps):.1f} us per step (serialised, "
      f"side streams included, over the {steps} greedy launches of the window)")
PY
fi
