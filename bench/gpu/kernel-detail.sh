#!/usr/bin/env bash
# ncu's detail sections (speed of light, occupancy, warp stalls, memory) for the first launches of
# the kernels named by a regex during one prefill of the synthesized Flash slice: where a kernel
# that the per-kernel table (prefill-vs-hf.sh PROFILE_LEN) shows as slow spends its time.
# Usage: bench/gpu/kernel-detail.sh BUILD OUT [KERNELS] [PROMPT_LEN]
#   KERNELS: space-separated name regexes, one ncu pass each (default 'expert_up expert_down
#   mma_matmul_kernel'); PROMPT_LEN 1024. Env FLASH_MODEL_DIR (default /tmp/flash4, synthesized
#   with 4 layers when absent), LAUNCHES (per pass, default 1), DETAIL_TIMEOUT (per pass, 150 s).
set -uo pipefail
build=$1 out=$2 kernels=${3:-'expert_up expert_down mma_matmul_kernel'} len=${4:-1024}
mkdir -p "$out"
model=${FLASH_MODEL_DIR:-/tmp/flash4}
. "$(dirname "$0")/flash_prompt.sh"
flash_prompt "$build" "$model" "$len"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in $kernels; do
  timeout "${DETAIL_TIMEOUT:-150}" "$ncu" --kernel-name-base function -k "regex:$k" \
    --launch-count "${LAUNCHES:-1}" --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis ${NCU_EXTRA:-} \
    "$moepage" run --profile "$(dirname "$0")/../../configs/default.yaml" --model "$model" --set device=hip \
    --set arch.plugin=deepseek4 --set "arch.max_context=$((len + 64))" --set "arch.max_batch=$len" \
    --prompt-ids "$ids" --max-tokens 1 > "$out/detail-$k.txt" 2> "$out/detail-$k.log"
  echo "exit $?" >> "$out/detail-$k.log"
done
