#!/usr/bin/env bash
# Kernel time of decode steps late in a run, where attention sees a full window and compressed keys:
# ncu skips the kernels of the first SKIP_STEPS steps (estimated from a short profiled run's kernels
# per step) and times the next STEPS steps' kernels, caches and clocks left alone.
#   tools/device/late_steps.sh BIN MODEL OUT [SKIP_STEPS] [STEPS] -> OUT/late.csv, OUT/late-table.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$1; model=$2; out=$3; skip_steps=${4:-150}; steps=${5:-4}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin/../carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
run=("$bin/moepage" run --profile configs/default.yaml --model "$model" --set device=hip --prompt-ids 11)
# Kernels per step: a 4-step profiled run (the first step is the one-token prompt, like the rest).
"$ncu" --csv --metrics gpu__time_duration.sum --log-file "$out/probe.csv" "${run[@]}" --max-tokens 4 > /dev/null 2>&1
per_step=$(( $(grep -c '"gpu__time_duration.sum"' "$out/probe.csv") / 4 ))
"$ncu" --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum \
  --launch-skip $((per_step * skip_steps)) --launch-count $((per_step * steps)) --log-file "$out/late.csv" \
  "${run[@]}" --max-tokens $((skip_steps + steps + 2)) > "$out/late-run.txt" 2>&1
echo "kernels per step: $per_step; skipped $((per_step * skip_steps)), timed $((per_step * steps))" > "$out/late-table.txt"
python3 tools/device/ncu_table.py "$out/late.csv" >> "$out/late-table.txt" 2>&1
