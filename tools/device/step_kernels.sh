#!/usr/bin/env bash
# Kernel time of decode steps on the GPU machine: ncu times every kernel of a `moepage run` of
# STEPS tokens on MODEL (clocks and caches left alone, so the times are those of a real run, each
# kernel serialised) and ncu_table.py sums them by name.
#   tools/device/step_kernels.sh BIN MODEL OUT STEPS   -> OUT/steps.csv, OUT/steps-table.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$1; model=$2; out=$3; steps=$4
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$ncu" --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum --log-file "$out/steps.csv" \
  "$bin/moepage" run --profile configs/default.yaml --model "$model" --set device=hip --prompt-ids 11 \
  --max-tokens "$steps" > "$out/steps-run.txt" 2>&1
python3 tools/device/ncu_table.py "$out/steps.csv" > "$out/steps-table.txt" 2>&1
