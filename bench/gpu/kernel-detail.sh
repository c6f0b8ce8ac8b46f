#!/usr/bin/env bash
# ncu's detail sections (speed of light, occupancy, warp stalls, memory) for the first launches of
# the kernels named by a regex during one prefill of the synthesized Flash slice: where a kernel
# that the per-kernel table (prefill-vs-hf.sh PROFILE_LEN) shows as slow spends its time. With
# SOURCE=1, also ncu's per-instruction counters (warp stall samples and executed instructions for
# every SASS line) as OUT/source-KERNEL-sass.csv.xz, which sass_stalls.py sums up.
# Usage: bench/gpu/kernel-detail.sh BUILD OUT [KERNELS] [PROMPT_LEN]
#   KERNELS: space-separated name regexes, one ncu pass each (default 'expert_up expert_down
#   mma_matmul_kernel'); PROMPT_LEN 1024. Env FLASH_MODEL_DIR (default /tmp/flash4, synthesized
#   with 4 layers when absent), LAUNCHES (per pass, default 1), SKIP (launches of each kernel
#   skipped first, default 0), SOURCE (1: the per-instruction counters), DETAIL_TIMEOUT (per pass,
#   150 s), MOEPAGE_SET (extra --set words for the run, e.g. "arch.gemv_stages=2"). PROMPT_LEN 1
#   profiles decode's single-token kernels.
set -uo pipefail
build=$1 out=$2 kernels=${3:-'expert_up expert_down mma_matmul_kernel'} len=${4:-1024}
mkdir -p "$out"
model=${FLASH_MODEL_DIR:-/tmp/flash4}
. "$(dirname "$0")/flash_prompt.sh"
flash_prompt "$build" "$model" "$len"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sections=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
  --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis)
extra=()
for kv in ${MOEPAGE_SET:-}; do extra+=(--set "$kv"); done
for k in $kernels; do
  report=()
  [ "${SOURCE:-0}" = 1 ] && report=(--section SourceCounters --section InstructionStats --import-source no -f -o
    "$out/source-$k")
  timeout "${DETAIL_TIMEOUT:-150}" "$ncu" --kernel-name-base function -k "regex:$k" --launch-skip "${SKIP:-0}" \
    --launch-count "${LAUNCHES:-1}" "${sections[@]}" "${report[@]}" ${NCU_EXTRA:-} \
    "$moepage" run --profile "$(dirname "$0")/../../configs/default.yaml" --model "$model" --set device=hip \
    --set arch.plugin=deepseek4 --set "arch.max_context=$((len + 64))" --set "arch.max_batch=$len" \
    --prompt-ids "$ids" --max-tokens 1 "${extra[@]}" > "$out/detail-$k.txt" 2> "$out/detail-$k.log"
  echo "exit $?" >> "$out/detail-$k.log"
  if [ "${SOURCE:-0}" = 1 ] && [ -f "$out/source-$k.ncu-rep" ]; then
    # With -o the sections go to the report: print them, then the per-instruction page.
    "$ncu" -i "$out/source-$k.ncu-rep" --page details >> "$out/detail-$k.txt" 2>&1
    "$ncu" -i "$out/source-$k.ncu-rep" --page source --csv --print-source sass > "$out/source-$k-sass.csv" 2>> "$out/detail-$k.log"
    xz -f "$out/source-$k-sass.csv"
    rm -f "$out/source-$k.ncu-rep"
  fi
done
