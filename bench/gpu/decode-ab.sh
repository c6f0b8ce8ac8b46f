#!/usr/bin/env bash
# Resident decode of two builds side by side on the synthesized Flash slice, interleaved over
# repetitions in one run: build A, A with the single-token expert products on the matrix cores
# (arch.matrix_single_token=true, the same binary), and build B. One line per arm with tok/s
# and the fraction of the HBM roofline (weights one token touches over the device-to-device copy
# rate measured here); every arm must print the same token ids.
#   bench/gpu/decode-ab.sh BUILD_A BUILD_B OUT [TOKENS] [LAYERS] [REPS]
# Environment: FLASH_MODEL_DIR (default /tmp/flash<LAYERS>; synthesized when absent).
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,8p' "$0"; exit 2; }
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd) out=$3 tokens=${4:-256} layers=${5:-4} reps=${6:-2}
build=$a
model=${FLASH_MODEL_DIR:-/tmp/flash$layers}
prompt=11,12,13,14
source "$(dirname "$0")/decode_arms.sh"

prepare_model "$layers" 8
for rep in $(seq "$reps"); do
  moepage=$a/bin/moepage
  run_arm "a-$rep"
  run_arm "a-matrix-single-$rep" --set arch.matrix_single_token=true
  moepage=$b/bin/moepage
  run_arm "b-$rep"
done
report_neutrality
