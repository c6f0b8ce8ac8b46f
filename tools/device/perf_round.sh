#!/usr/bin/env bash
# One measuring round on the GPU machine, for kernel work: correctness suites, kernel benchmarks,
# end-to-end decode of the 4-layer flash model and an ncu kernel-time table.
#   tools/device/perf_round.sh OUT_DIR      (build-gpu as tools/device/build.sh made it)
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
b=build-gpu/bin
. tools/device/test_env.sh build-gpu   # where the test binaries find fixtures and plugins
model=${FLASH_MODEL_DIR:-/tmp/flash4}
{ $b/ds4-hip-kernels; echo "rc $?"; } > "$out/kernels.txt" 2>&1; tail -4 "$out/kernels.txt"
{ $b/ds4-hip-forward; echo "rc $?"; } > "$out/forward.txt" 2>&1; tail -4 "$out/forward.txt"
$b/ds4-hip-bench --reps 100 --filter matmul > "$out/bench-matmul.txt" 2>&1
$b/ds4-hip-bench --reps 50 --filter moe > "$out/bench-moe.txt" 2>&1
$b/ds4-hip-bench --reps 200 --filter hc > "$out/bench-hc.txt" 2>&1
$b/ds4-hip-bench --reps 100 --filter attention > "$out/bench-attention.txt" 2>&1
[ -f "$model/config.json" ] || $b/moepage synth --preset flash --layers 4 --seed 7 --out "$model" --log-level warn
$b/moepage run --profile configs/default.yaml --model "$model" --set device=hip --prompt-ids 11,12,13,14 \
  --max-tokens 128 > "$out/e2e.txt" 2>&1
grep -h "decode\|token ids" "$out/e2e.txt" | cut -c1-200
tools/device/step_kernels.sh "$b" "$model" "$out" 16; head -30 "$out/steps-table.txt"
