#!/usr/bin/env bash
# A short measuring round for kernel work on the GPU machine (build-gpu carried and unpacked):
# the gpu correctness suites, two resident decodes of the 4-layer flash model, the single-token
# kernel benchmarks and the kernel-time table of 16 decode steps. Everything lands in OUT/round.tar.gz (one file comes back).
#   tools/device/quick_round.sh OUT
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$1; work=$(mktemp -d); mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
b=build-gpu/bin
model=${FLASH_MODEL_DIR:-/tmp/flash4}
tools/device/run_all.sh "$work/all" device-hip ds4-hip-kernels ds4-hip-forward ds4-hip-run 2>&1 | tail -6
[ -f "$model/config.json" ] || $b/moepage synth --preset flash --layers 4 --seed 7 --out "$model" --log-level warn
for i in 1 2; do
  $b/moepage run --profile configs/default.yaml --model "$model" --set device=hip --prompt-ids 11,12,13,14 \
    --max-tokens 128 > "$work/resident-$i.txt" 2>&1
  grep -h "decode" "$work/resident-$i.txt" | cut -c1-160
done
$b/ds4-hip-bench --reps 50 --filter "T=1" 2>&1 | grep -v "T=8" | tee "$work/bench.txt" | grep -i "wq_b\|wo_b\|wq_a\|moe\|shared"
tools/device/step_kernels.sh "$b" "$model" "$work" 16; head -24 "$work/steps-table.txt"
tar czf "$out/round.tar.gz" -C "$work" .
