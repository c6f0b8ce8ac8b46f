#!/usr/bin/env bash
# Where decode time goes, for kernel work on the GPU machine (build-gpu from tools/device/build.sh):
#   tools/device/kernel_profile.sh OUT_DIR
# 1. ncu sections (speed of light, occupancy, launch, warp states) on one call of the MoE, mHC and
#    FP8/BF16 product benchmarks: memory- or issue-bound, and why.
# 2. Kernel time per decode step without cache flushing, against the wall time of the same steps:
#    what the GPU is busy with and how much of a step it idles (launch gaps, host round trips).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
b=build-gpu/bin
model=${FLASH_MODEL_DIR:-/tmp/flash4}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
for filter in moe "hc site" "matmul wq_b F8_E4M3 32768x1024 T=1" "matmul wq_a F8_E4M3 1024x4096 T=1"; do
  tag=$(echo "$filter" | tr ' =' '__' | cut -c1-24)
  "$ncu" --clock-control none $sections --launch-skip 3 --launch-count 8 \
    $b/ds4-hip-bench --reps 1 --filter "$filter" > "$out/ncu-$tag.txt" 2>&1
  echo "== $filter: $(grep -c 'Duration' "$out/ncu-$tag.txt") kernels profiled"
done
[ -f "$model/config.json" ] || $b/moepage synth --preset flash --layers 4 --seed 7 --out "$model" --log-level warn
steps=${STEPS:-16}
$b/moepage run --profile configs/default.yaml --model "$model" --set device=hip --prompt-ids 11 \
  --max-tokens "$steps" --stats-json "$out/wall.json" > "$out/wall-run.txt" 2>&1
tools/device/step_kernels.sh "$b" "$model" "$out" "$steps"
head -30 "$out/steps-table.txt"
grep -o '"decode[^,]*' "$out/wall.json" | head -5
