#!/usr/bin/env bash
# Why the decode kernels run below the bytes' rate, on the GPU machine: ncu sections (speed of
# light, warp states, instruction mix, occupancy) on a few launches of each named kernel of a real
# resident decode (not a micro-benchmark), past the first steps, plus the late-step time table.
#   tools/device/decode_diag.sh BUILD OUT [LAYERS]
# Environment: KERNELS (space-separated name regexes, default the usual six), MOEPAGE_SET (extra
# --set words for every run, e.g. "arch.matrix_single_token=true"), LATE=0 (skip the late table).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "$1" && pwd); out=$2; layers=${3:-4}
mkdir -p "$out"
export LD_LIBRARY_PATH="$build/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
model=${FLASH_MODEL_DIR:-/tmp/flash$layers}
[ -f "$model/config.json" ] || "$build/bin/moepage" synth --preset flash --layers "$layers" --seed 7 --out "$model" \
  --log-level warn
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sections="--section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats"
sections+=" --section MemoryWorkloadAnalysis --section SchedulerStats"
extra=()
for kv in ${MOEPAGE_SET:-}; do extra+=(--set "$kv"); done
for k in ${KERNELS:-expert_up_gemv expert_down_gemv attend_kernel matmul_gemv_kernel hc_mix_kernel route_kernel}; do
  "$ncu" --clock-control none $sections -k "regex:$k" --launch-skip 200 --launch-count 4 \
    "$build/bin/moepage" run --profile configs/default.yaml --model "$model" --set device=hip --prompt-ids 11 \
    --max-tokens 80 "${extra[@]}" > "$out/ncu-$k.txt" 2>&1
  echo "== $k: $(grep -c 'Duration' "$out/ncu-$k.txt") launches profiled"
done
[ "${LATE:-1}" = 0 ] && exit 0
tools/device/late_steps.sh "$build/bin" "$model" "$out" 150 4
head -30 "$out/late-table.txt"
