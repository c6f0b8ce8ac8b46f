#!/usr/bin/env bash
# Where inside a kernel the time goes: ncu's per-instruction counters (warp stall samples and
# executed instructions for every SASS line) of the first launch of each kernel named by a regex,
# during one prefill of the synthesized Flash slice, as CSV beside the report's speed-of-light and
# warp-state sections. For a kernel the per-kernel table shows as slow, after kernel-detail.sh.
# Usage: bench/gpu/kernel-source.sh BUILD OUT [KERNELS] [PROMPT_LEN]
#   KERNELS: space-separated name regexes, one ncu pass each (default 'expert_up'); PROMPT_LEN
#   1024. Env FLASH_MODEL_DIR (default /tmp/flash4, synthesized with 4 layers when absent),
#   SKIP (launches of each kernel skipped before the profiled one, default 0), SOURCE_TIMEOUT (per
#   pass, 150 s).
set -uo pipefail
build=$1 out=$2 kernels=${3:-expert_up} len=${4:-1024}
mkdir -p "$out"
model=${FLASH_MODEL_DIR:-/tmp/flash4}
. "$(dirname "$0")/flash_prompt.sh"
flash_prompt "$build" "$model" "$len"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in $kernels; do
  rep="$out/source-$k"
  timeout "${SOURCE_TIMEOUT:-150}" "$ncu" --kernel-name-base function -k "regex:$k" --launch-skip "${SKIP:-0}" --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats \
    --import-source no -f -o "$rep" \
    "$moepage" run --profile "$(dirname "$0")/../../configs/default.yaml" --model "$model" --set device=hip \
    --set arch.plugin=deepseek4 --set "arch.max_context=$((len + 64))" --set "arch.max_batch=$len" \
    --prompt-ids "$ids" --max-tokens 1 > "$rep.log" 2>&1
  echo "exit $?" >> "$rep.log"
  "$ncu" -i "$rep.ncu-rep" --page details > "$rep-details.txt" 2>&1
  "$ncu" -i "$rep.ncu-rep" --page source --csv --print-source sass > "$rep-sass.csv" 2>&1
  xz -f "$rep-sass.csv"
  rm -f "$rep.ncu-rep"
done
